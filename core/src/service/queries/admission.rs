//! Who may do what with a query, decided before anything runs (docs/api.md, "Who may do what"): a
//! principal is needed, a restricted database needs a grant, reviewing needs a `review` or
//! `admin` grant there, and an AI agent needs an `ai_enabled` database and an `ai_allowed`
//! credential and gets at most `ai_max_rows` rows.
//!
//! A run or a review reads its query, its database and the database's access control once each
//! ([`Guarded`]): the grants decide admission and the policies start the data protection chain,
//! from the same read.

use crate::auth::Caller;
use crate::model::{AccessControl, Credential, Database, Principal, Query, Role};

use super::super::Shared;
use super::super::error::ApiError;

/// A database with its access control (its grants and policies), read once.
#[derive(Debug)]
pub(in crate::service) struct Guarded {
    /// The database.
    pub(in crate::service) db: Database,
    /// Its access control, when it has any.
    pub(in crate::service) access: Option<AccessControl>,
}

impl Guarded {
    /// Whether `principal` may query it.
    pub(in crate::service) fn admits(&self, principal: &Principal) -> bool {
        principal.may_query(&self.db, self.access.as_ref())
    }

    /// 403 unless `principal` may query it as `credential`, with the AI limits of an agent; the
    /// most rows `principal` may get of `limit`.
    pub(in crate::service) fn admit(
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
pub(super) fn admit(
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

/// The principal of a caller of the query routes: 403 without one (or without a caller).
pub(in crate::service) fn principal_of(caller: Option<&Caller>) -> Result<&Principal, ApiError> {
    caller
        .and_then(|caller| caller.principal.as_ref())
        .ok_or_else(|| {
            ApiError::Denied(
                "running queries needs a user: a key or token bound to one (dbconsole keys create \
                 --user …), or a principal the embedding program vouches for"
                    .to_owned(),
            )
        })
}

impl Shared {
    /// `db` with its access control.
    pub(in crate::service) async fn guarded(&self, db: Database) -> Result<Guarded, ApiError> {
        let access = self.storage.access_control(db.id.as_str()).await?;
        Ok(Guarded { db, access })
    }

    /// `db`'s access control when `principal`'s access to it depends on it (a member on a
    /// restricted database), read then only.
    pub(super) async fn grants_for(
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
    pub(in crate::service) async fn may_query(
        &self,
        principal: &Principal,
        db: &Database,
    ) -> Result<bool, ApiError> {
        let access = self.grants_for(principal, db).await?;
        Ok(principal.may_query(db, access.as_ref()))
    }

    /// Whether `principal` may review queries on `db` (docs/queries.md, "Reviews").
    pub(super) async fn may_review(
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
    pub(super) async fn visible_query(
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
    pub(super) async fn query_in_reach(
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
}

/// The query's database and credential as they are now: 409 when either was deleted (the
/// request is sound; the query can no longer be reviewed or run).
pub(super) fn target_of(
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
