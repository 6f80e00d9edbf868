//! Who may do what with a query, decided before anything runs (docs/api.md, "Who may do what"): a
//! principal is needed, a restricted database needs a grant, reviewing needs a `review` or
//! `admin` grant there, and an AI agent needs an `ai_enabled` database and an `ai_allowed`
//! credential and gets at most `ai_max_rows` rows.
//!
//! A run or a review reads its query, its database and the database's access control once each
//! ([`Guarded`]): the grants decide admission and the policies start the data protection chain,
//! from the same read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::model::{AccessControl, Credential, Dashboard, Database, Principal, Query, Role};
use crate::storage::{DatabaseFilter, Page, Storage};
use crate::validate::ValidationErrors;

use super::error::ApiError;

/// Databases read per storage page by the routes that walk them all.
pub(crate) const WALK_PAGE: usize = 500;

/// What admission reads: the storage, and the database of each panel credential found so far.
#[derive(Clone, Debug)]
pub(crate) struct Admission {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Credential id → the id of its database, as panel runs found them.
    credential_index: Arc<Mutex<HashMap<String, String>>>,
}

/// A database with its access control (its grants and policies), read once.
#[derive(Clone, Debug)]
pub(crate) struct Guarded {
    /// The database.
    pub(crate) db: Database,
    /// Its access control, when it has any.
    pub(crate) access: Option<AccessControl>,
}

impl Guarded {
    /// Whether `principal` may query it.
    pub(crate) fn admits(&self, principal: &Principal) -> bool {
        principal.may_query(&self.db, self.access.as_ref())
    }

    /// 403 unless `principal` may query it as `credential`, with the AI limits of an agent; the
    /// most rows `principal` may get of `limit`.
    pub(crate) fn admit(
        &self,
        principal: &Principal,
        credential: &Credential,
        limit: u32,
    ) -> Result<u32, ApiError> {
        admit(principal, &self.db, self.access.as_ref(), credential, limit)
    }
}

/// 403 unless `principal` may query `db` (whose access control is `access`) as `credential`,
/// with the AI limits of an agent; the most rows `principal` may get of `limit`.
pub(crate) fn admit(
    principal: &Principal,
    db: &Database,
    access: Option<&AccessControl>,
    credential: &Credential,
    limit: u32,
) -> Result<u32, ApiError> {
    if !principal.may_query(db, access) {
        return Err(ApiError::Denied(format!(
            "{} has no access to database {}: it restricts access, and no permission names the \
             user or one of its groups",
            principal.user, db.id
        )));
    }
    if principal.agent {
        if !db.ai_enabled {
            return Err(ApiError::Denied(format!(
                "AI agents may not query database {}: its ai_enabled is false",
                db.id
            )));
        }
        if !credential.ai_allowed {
            return Err(ApiError::Denied(format!(
                "AI agents may not query as credential {}: its ai_allowed is false",
                credential.id
            )));
        }
        return Ok(limit.min(db.ai_max_rows));
    }
    Ok(limit)
}

impl Admission {
    /// Admission over `storage`.
    pub(crate) fn new(storage: Arc<dyn Storage>) -> Self {
        Self {
            storage,
            credential_index: Arc::default(),
        }
    }

    /// The next [`WALK_PAGE`] databases by id after `after` (the first ones without it), for
    /// the routes that walk them all; fewer than a page: the last.
    pub(crate) async fn databases_after(
        &self,
        after: Option<&str>,
    ) -> Result<Vec<Database>, ApiError> {
        Ok(self
            .storage
            .list_databases(
                Page {
                    after,
                    limit: WALK_PAGE,
                },
                DatabaseFilter::default(),
            )
            .await?)
    }

    /// `db` with its access control.
    pub(crate) async fn guarded(&self, db: Database) -> Result<Guarded, ApiError> {
        let access = self.storage.access_control(db.id.as_str()).await?;
        Ok(Guarded { db, access })
    }

    /// Database `id` with its access control, when `caller` administers it: a full-scope
    /// caller, or one whose principal is a super admin or named by an `admin` permission
    /// (403 saying so otherwise; 404 when there is no such database).
    pub(crate) async fn administered(
        &self,
        caller: Option<&crate::auth::Caller>,
        id: &str,
    ) -> Result<Guarded, ApiError> {
        let db = self.storage.database(id).await?.ok_or(ApiError::NotFound)?;
        let guarded = self.guarded(db).await?;
        if caller.is_some_and(|c| c.scope == crate::model::Scope::Full) {
            return Ok(guarded);
        }
        let principal = super::call::principal_of(caller)?;
        if principal.may_administer(guarded.access.as_ref()) {
            return Ok(guarded);
        }
        Err(ApiError::Denied(format!(
            "{} needs an admin grant on this database (or a super admin, or a full-scope key)",
            "a database's data protection plan and status"
        )))
    }

    /// `db`'s access control when `principal`'s access to it depends on it (a member on a
    /// restricted database), read then only.
    pub(crate) async fn grants_for(
        &self,
        principal: &Principal,
        db: &Database,
    ) -> Result<Option<AccessControl>, ApiError> {
        if principal.role == Role::SuperAdmin || !db.restrict_access {
            return Ok(None);
        }
        Ok(self.storage.access_control(db.id.as_str()).await?)
    }

    /// Whether `principal` may query `db` (docs/api.md, "Who may do what"); the access control is
    /// read only when the database restricts access.
    pub(crate) async fn may_query(
        &self,
        principal: &Principal,
        db: &Database,
    ) -> Result<bool, ApiError> {
        let access = self.grants_for(principal, db).await?;
        Ok(principal.may_query(db, access.as_ref()))
    }

    /// Whether `principal` may review queries on `db` (docs/queries.md, "Reviews").
    pub(crate) async fn may_review(
        &self,
        principal: &Principal,
        db: &Database,
    ) -> Result<bool, ApiError> {
        if principal.agent {
            return Ok(false);
        }
        let access = self.grants_for(principal, db).await?;
        Ok(principal.may_review(db, access.as_ref()))
    }

    /// The query `id` if `principal` may see it (its author, a super admin, or one who may
    /// query its database); 404 otherwise.
    pub(crate) async fn visible_query(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Query, ApiError> {
        let query = self.storage.query(id).await?.ok_or(ApiError::NotFound)?;
        if principal.sees_without_grant(&query) {
            return Ok(query);
        }
        match self.storage.database(&query.database_id).await? {
            Some(db) if self.may_query(principal, &db).await? => Ok(query),
            _ => Err(ApiError::NotFound),
        }
    }

    /// The query `id` if `principal` may see it (404 otherwise), with its database as it is
    /// now (`None` when deleted) and the database's access control: one read of each, for a
    /// run or a review to decide from.
    pub(crate) async fn query_in_reach(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<(Query, Option<Guarded>), ApiError> {
        let query = self.storage.query(id).await?.ok_or(ApiError::NotFound)?;
        let guarded = match self.storage.database(&query.database_id).await? {
            Some(db) => Some(self.guarded(db).await?),
            None => None,
        };
        let visible = principal.sees_without_grant(&query)
            || guarded.as_ref().is_some_and(|db| db.admits(principal));
        if !visible {
            return Err(ApiError::NotFound);
        }
        Ok((query, guarded))
    }
    /// The database a panel's `credential_id` belongs to (credential ids are unique across
    /// databases), remembered once found.
    pub(crate) async fn database_of_credential(
        &self,
        credential_id: &str,
    ) -> Result<Option<Database>, ApiError> {
        let known = self
            .credential_index
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(credential_id)
            .cloned();
        if let Some(id) = known
            && let Some(db) = self.storage.database(&id).await?
            && db
                .credentials
                .iter()
                .any(|c| c.id.as_str() == credential_id)
        {
            return Ok(Some(db));
        }
        let mut after: Option<String> = None;
        loop {
            let page = self.databases_after(after.as_deref()).await?;
            let Some(last) = page.last() else {
                return Ok(None);
            };
            after = Some(last.id.as_str().to_owned());
            if let Some(db) = page.into_iter().find(|db| {
                db.credentials
                    .iter()
                    .any(|c| c.id.as_str() == credential_id)
            }) {
                self.credential_index
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(credential_id.to_owned(), db.id.as_str().to_owned());
                return Ok(Some(db));
            }
        }
    }

    /// The database and credential a panel runs as (`credential_id`), and the
    /// most rows it may give `principal` of `limit`: 422 when the credential is gone or needs
    /// reviews, 403 when `principal` may not run it (docs/queries.md, "Running queries"). The database
    /// comes with its access control, read once for admission and data protection.
    pub(crate) async fn panel_access(
        &self,
        principal: &Principal,
        credential_id: &str,
        limit: u32,
    ) -> Result<(Guarded, Credential, u32), ApiError> {
        let db = self
            .database_of_credential(credential_id)
            .await?
            .ok_or_else(|| {
                ValidationErrors::single(
                    "credential_id",
                    format!("the panel's credential {credential_id} names no stored credential"),
                )
            })?;
        let credential = db
            .credentials
            .iter()
            .find(|c| c.id.as_str() == credential_id)
            .cloned()
            .ok_or(ApiError::NotFound)?;
        if credential.reviews_required > 0 {
            return Err(ValidationErrors::single(
                "credential_id",
                "the panel's credential requires reviews: panels run only as credentials with \
                 reviews_required 0",
            )
            .into());
        }
        // A panel runs only for those who may query its database, whatever the dashboard's
        // flag (which decides who sees the dashboard); an agent keeps to the AI limits.
        let guarded = self.guarded(db).await?;
        let max_rows = guarded.admit(principal, &credential, limit)?;
        Ok((guarded, credential, max_rows))
    }

    /// Dashboard `dashboard_id` and the index of its panel `panel_id`: 404 when either is
    /// missing.
    pub(crate) async fn dashboard_panel(
        &self,
        dashboard_id: &str,
        panel_id: &str,
    ) -> Result<(Dashboard, usize), ApiError> {
        let dashboard = self
            .storage
            .dashboard(dashboard_id)
            .await?
            .ok_or(ApiError::NotFound)?;
        let panel = dashboard
            .panels
            .iter()
            .position(|p| p.id.as_str() == panel_id)
            .ok_or(ApiError::NotFound)?;
        Ok((dashboard, panel))
    }
}

/// The query's database and credential as they are now: 409 when either was deleted (the
/// request is sound; the query can no longer be reviewed or run).
pub(crate) fn target_of(
    query: &Query,
    guarded: Option<Guarded>,
) -> Result<(Guarded, Credential), ApiError> {
    let gone = |what: &str| {
        ApiError::Conflict(format!(
            "the query's {what} was deleted: it can no longer be reviewed or run"
        ))
    };
    let guarded = guarded.ok_or_else(|| gone("database"))?;
    let credential = guarded
        .db
        .credentials
        .iter()
        .find(|c| c.id.as_str() == query.credential_id)
        .cloned()
        .ok_or_else(|| gone("credential"))?;
    Ok((guarded, credential))
}
