//! Saved queries (`…/saved-queries`, docs/queries.md, "Saved queries"): a statement kept under a
//! name, listed and searched by whoever it is shared with, changed and deleted by its author
//! (deleted by a super admin too), and run as a new query that links back to it and holds its
//! parameters' values — stored, reviewed and run exactly as a typed query is.

use std::collections::HashMap;
use std::sync::Arc;

use http::StatusCode;
use serde_json::Map;

use super::admission::Admission;
use super::call::{Answer, Call};
use super::error::ApiError;
use super::queries::{Queries, SavedLink};
use super::render::{PageView, QueryView, SavedQueryView};
use super::response::json_response;
use crate::model::{AuditAction, AuditEvent, Principal, Role, SavedQuery, SavedQueryId, Timestamp};
use crate::run::statement::{self, Dialect};
use crate::storage::{Storage, StorageError};
use crate::validate::{SavedDraft, ValidationErrors, row_limit, saved_draft, saved_params};

/// What the saved queries read and write: the storage, admission (who may query which
/// database) and the query history (where a run is stored).
#[derive(Clone, Debug)]
pub(crate) struct SavedQueries {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Who may query which database.
    pub(crate) admission: Admission,
    /// Stores a run as a query.
    pub(crate) queries: Queries,
}

impl SavedQueries {
    /// `GET …/saved-queries`: every saved query the caller sees, by name; `search` keeps those
    /// with each of its words in the name, description, statement or tags, `tag` those with
    /// that tag.
    pub(crate) async fn list_saved_queries(&self, call: Call<'_>) -> Answer {
        let principal = call.principal()?;
        let (mut search, mut tag) = (String::new(), None::<String>);
        for (key, value) in form_urlencoded::parse(call.query.as_deref().unwrap_or("").as_bytes()) {
            match key.as_ref() {
                "search" => search = value.into_owned(),
                "tag" => tag = Some(value.to_lowercase()),
                _ => {}
            }
        }
        let all = self.storage.list_saved_queries().await?;
        let mut may_query: HashMap<String, bool> = HashMap::new();
        let mut seen = Vec::new();
        for saved in all {
            if !saved.matches(&search)
                || tag
                    .as_ref()
                    .is_some_and(|tag| !saved.tags.iter().any(|t| t.to_lowercase() == *tag))
            {
                continue;
            }
            let may = match may_query.get(&saved.database_id) {
                Some(may) => *may,
                None => {
                    let may = self.may_query(principal, &saved.database_id).await?;
                    may_query.insert(saved.database_id.clone(), may);
                    may
                }
            };
            if saved.visible_to(principal, may) {
                seen.push(saved);
            }
        }
        seen.sort_by(|a, b| {
            a.name
                .to_lowercase()
                .cmp(&b.name.to_lowercase())
                .then_with(|| a.id.cmp(&b.id))
        });
        let data: Vec<SavedQueryView<'_>> = seen
            .iter()
            .map(|saved| SavedQueryView::new(saved, principal, parameters(saved)))
            .collect();
        Ok(json_response(
            StatusCode::OK,
            &PageView { data, next: None },
        ))
    }

    /// `POST …/saved-queries`: save a query (201).
    pub(crate) async fn create_saved_query(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let body = call.json().await?;
        refuse_agent(&principal)?;
        let draft = saved_draft(&body, true)?;
        let now = Timestamp::now();
        let (Some(name), Some(query), Some(database_id), Some(credential_id), Some(sharing)) = (
            draft.name.clone(),
            draft.query.clone(),
            draft.database_id.clone(),
            draft.credential_id.clone(),
            draft.sharing.clone(),
        ) else {
            // saved_draft answers every required field of a create, or an error.
            return Err(ApiError::Invalid(ValidationErrors::single(
                "name",
                "can't be blank",
            )));
        };
        let saved = SavedQuery {
            id: SavedQueryId::generate(),
            name,
            description: draft.description.clone().unwrap_or_default(),
            query,
            database_id,
            credential_id,
            tags: draft.tags.clone().unwrap_or_default(),
            sharing,
            author: principal.user.clone(),
            created_at: now,
            updated_at: now,
        };
        self.check_target(&principal, &saved).await?;
        let event = AuditEvent::new(
            call.origin,
            AuditAction::SavedQueryCreate,
            saved.id.as_str(),
            given_fields(&draft),
        );
        self.storage
            .put_saved_query(saved.id.as_str(), Some(saved.clone()), None, event.into())
            .await?;
        Ok(json_response(
            StatusCode::CREATED,
            &SavedQueryView::new(&saved, &principal, parameters(&saved)),
        ))
    }

    /// `GET …/saved-queries/{id}`: 404 unless the caller sees it.
    pub(crate) async fn get_saved_query(&self, call: Call<'_>) -> Answer {
        let principal = call.principal()?;
        let saved = self.visible(principal, call.param("id")).await?;
        Ok(json_response(
            StatusCode::OK,
            &SavedQueryView::new(&saved, principal, parameters(&saved)),
        ))
    }

    /// `PATCH …/saved-queries/{id}`: its author renames, describes, shares or changes it; each
    /// field left out stays. The runs made before keep the text they ran.
    pub(crate) async fn update_saved_query(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let body = call.json().await?;
        let stored = self.visible(&principal, call.param("id")).await?;
        let draft = saved_draft(&body, false)?;
        refuse_agent(&principal)?;
        if !stored.is_authors(&principal) {
            return Err(ApiError::Denied(
                "only its author changes a saved query (copy it to make your own)".to_owned(),
            ));
        }
        let mut next = stored.clone();
        if let Some(name) = &draft.name {
            next.name.clone_from(name);
        }
        if let Some(description) = &draft.description {
            next.description.clone_from(description);
        }
        if let Some(query) = &draft.query {
            next.query.clone_from(query);
        }
        if let Some(id) = &draft.database_id {
            next.database_id.clone_from(id);
        }
        if let Some(id) = &draft.credential_id {
            next.credential_id.clone_from(id);
        }
        if let Some(tags) = &draft.tags {
            next.tags.clone_from(tags);
        }
        if let Some(sharing) = &draft.sharing {
            next.sharing = sharing.clone();
        }
        let changes: Vec<String> = [
            ("name", next.name != stored.name),
            ("description", next.description != stored.description),
            ("query", next.query != stored.query),
            ("database_id", next.database_id != stored.database_id),
            ("credential_id", next.credential_id != stored.credential_id),
            ("tags", next.tags != stored.tags),
            ("sharing", next.sharing != stored.sharing),
        ]
        .into_iter()
        .filter(|(_, changed)| *changed)
        .map(|(field, _)| field.to_owned())
        .collect();
        if changes.is_empty() {
            return Ok(json_response(
                StatusCode::OK,
                &SavedQueryView::new(&stored, &principal, parameters(&stored)),
            ));
        }
        self.check_target(&principal, &next).await?;
        next.updated_at = Timestamp::now().not_before_next(stored.updated_at);
        let event = AuditEvent::new(
            call.origin,
            AuditAction::SavedQueryUpdate,
            stored.id.as_str(),
            changes,
        );
        self.storage
            .put_saved_query(
                stored.id.as_str(),
                Some(next.clone()),
                Some(stored.updated_at),
                event.into(),
            )
            .await
            .map_err(changed_meanwhile)?;
        Ok(json_response(
            StatusCode::OK,
            &SavedQueryView::new(&next, &principal, parameters(&next)),
        ))
    }

    /// `DELETE …/saved-queries/{id}`: its author (or a super admin) deletes it; the runs made
    /// of it stay in the history. Answers it as it was.
    pub(crate) async fn delete_saved_query(&self, call: Call<'_>) -> Answer {
        let principal = call.principal()?;
        let stored = self.visible(principal, call.param("id")).await?;
        refuse_agent(principal)?;
        if !stored.is_authors(principal) && principal.role != Role::SuperAdmin {
            return Err(ApiError::Denied(
                "only its author (or a super admin) deletes a saved query".to_owned(),
            ));
        }
        let event = AuditEvent::new(
            call.origin,
            AuditAction::SavedQueryDelete,
            stored.id.as_str(),
            Vec::new(),
        );
        self.storage
            .put_saved_query(
                stored.id.as_str(),
                None,
                Some(stored.updated_at),
                event.into(),
            )
            .await
            .map_err(changed_meanwhile)?;
        Ok(json_response(
            StatusCode::OK,
            &SavedQueryView::new(&stored, principal, parameters(&stored)),
        ))
    }

    /// `POST …/saved-queries/{id}/queries`: a run of it, stored as a new query with `params`'
    /// values (`{"params": {…}, "limit"}`): awaiting its reviews where its credential needs
    /// them, ready otherwise; run it with `POST …/queries/{id}/run`.
    pub(crate) async fn create_saved_query_run(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let body = call.optional_json().await?;
        let saved = self.visible(&principal, call.param("id")).await?;
        let declared = parameters(&saved);
        let params = saved_params(&body, &declared)?;
        let mut query = Map::new();
        query.insert("database_id".to_owned(), saved.database_id.clone().into());
        query.insert(
            "credential_id".to_owned(),
            saved.credential_id.clone().into(),
        );
        query.insert("query".to_owned(), saved.query.clone().into());
        query.insert("title".to_owned(), saved.name.clone().into());
        let description = if saved.description.trim().is_empty() {
            format!("A run of the saved query “{}”.", saved.name)
        } else {
            saved.description.clone()
        };
        query.insert("description".to_owned(), description.into());
        if let Some(limit) = body.get("limit") {
            row_limit(&body, u32::MAX).map_err(|why| ValidationErrors::single("limit", why))?;
            query.insert("limit".to_owned(), limit.clone());
        }
        let link = SavedLink {
            id: saved.id.as_str().to_owned(),
            params,
        };
        let stored = self
            .queries
            .store_linked_query(&principal, query, call.origin, Some(link))
            .await?;
        Ok(json_response(StatusCode::OK, &QueryView::from(&stored)))
    }

    /// The saved query `id` if `principal` sees it; 404 otherwise (one they may not see is
    /// not told apart from one that does not exist).
    async fn visible(&self, principal: &Principal, id: &str) -> Result<SavedQuery, ApiError> {
        let saved = self
            .storage
            .saved_query(id)
            .await?
            .ok_or(ApiError::NotFound)?;
        let may = self.may_query(principal, &saved.database_id).await?;
        if saved.visible_to(principal, may) {
            Ok(saved)
        } else {
            Err(ApiError::NotFound)
        }
    }

    /// Whether `principal` may query the database `id` (false when it is gone).
    async fn may_query(&self, principal: &Principal, id: &str) -> Result<bool, ApiError> {
        match self.storage.database(id).await? {
            Some(db) => self.admission.may_query(principal, &db).await,
            None => Ok(false),
        }
    }

    /// 422 unless `saved` names a database `principal` may query, one of its credentials, and
    /// one statement whose parameters bind.
    async fn check_target(
        &self,
        principal: &Principal,
        saved: &SavedQuery,
    ) -> Result<(), ApiError> {
        let mut errors = ValidationErrors::new();
        let db = self.storage.database(&saved.database_id).await?;
        let db = match db {
            Some(db) if self.admission.may_query(principal, &db).await? => db,
            _ => {
                errors.add("database_id", "does not name a database you may query");
                return Err(ApiError::Invalid(errors));
            }
        };
        if !db
            .credentials
            .iter()
            .any(|c| c.id.as_str() == saved.credential_id)
        {
            errors.add(
                "credential_id",
                "does not name a credential of this database",
            );
        }
        let dialect = Dialect::of(db.adapter);
        match statement::single(&saved.query, dialect) {
            Err(why) => errors.add("query", why),
            Ok(_) => {
                if let Err(why) = statement::input_keys(&saved.query, dialect) {
                    errors.add("query", why);
                }
            }
        }
        errors.into_result(()).map_err(ApiError::Invalid)
    }
}

/// The names of `saved`'s `${name}` parameters, each once (none when its statement does not
/// parse: a create or change refuses that, so only a database's adapter changing could).
fn parameters(saved: &SavedQuery) -> Vec<String> {
    statement::input_keys(&saved.query, Dialect::Postgres).unwrap_or_default()
}

/// 403 for an AI agent: saved queries are people's.
fn refuse_agent(principal: &Principal) -> Result<(), ApiError> {
    if principal.agent {
        return Err(ApiError::Denied(
            "AI agents do not save, change or delete saved queries: a person does".to_owned(),
        ));
    }
    Ok(())
}

/// The fields a create gave, for its event.
fn given_fields(draft: &SavedDraft) -> Vec<String> {
    [
        ("name", draft.name.is_some()),
        ("description", draft.description.is_some()),
        ("query", draft.query.is_some()),
        ("database_id", draft.database_id.is_some()),
        ("credential_id", draft.credential_id.is_some()),
        ("tags", draft.tags.is_some()),
        ("sharing", draft.sharing.is_some()),
    ]
    .into_iter()
    .filter(|(_, given)| *given)
    .map(|(field, _)| field.to_owned())
    .collect()
}

/// A change or removal that lost a race to another: 409, to be read again.
fn changed_meanwhile(error: StorageError) -> ApiError {
    match error {
        StorageError::Conflict | StorageError::NotFound => ApiError::Conflict(
            "the saved query changed meanwhile: read it again and retry".to_owned(),
        ),
        other => other.into(),
    }
}
