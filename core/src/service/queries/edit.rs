//! Changing a query (`PATCH …/queries/{id}`, docs/queries.md, "Reviews"): its author changes
//! its title, description or statement before it runs. A new statement, or any change once a
//! reviewer asked for changes, is a new revision: its approvals are counted from none, and its
//! reviewers are asked again.

use http::StatusCode;

use crate::model::{AuditAction, AuditEvent, EditRefusal};
use crate::run::statement::{self, Dialect};
use crate::storage::{Edits as _, WriteLog};
use crate::validate::{ValidationErrors, query_edit};

use super::super::admission::target_of;
use super::super::call::{Answer, Call};
use super::super::error::ApiError;
use super::super::render::QueryView;
use super::super::response::json_response;
use super::Queries;

impl Queries {
    /// `PATCH …/queries/{id}`.
    pub(crate) async fn update_query(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let body = call.json().await?;
        let id = call.param("id").to_owned();
        // 404 before 422: an unknown query is unknown whatever the body says.
        let (query, guarded) = self.admission.query_in_reach(&principal, &id).await?;
        let edit = query_edit(&body)?;
        if principal.agent {
            return Err(ApiError::Denied(
                "AI agents do not change queries: a person does".to_owned(),
            ));
        }
        let (guarded, credential) = target_of(&query, guarded)?;
        let db = guarded.db;
        if let Some(text) = &edit.query
            && let Err(why) = statement::single(text, Dialect::of(db.adapter))
        {
            return Err(ApiError::Invalid(ValidationErrors::single("query", why)));
        }
        let required = credential.reviews_required;
        let origin = call.origin.without_idempotency();
        // Whether the change that landed asked the reviewers again (the outbox is woken then).
        let mut asked = false;
        let changed = self
            .storage
            .change_query(query, |stored| {
                let next = stored.edited(
                    &principal.user,
                    edit.clone(),
                    required,
                    crate::model::Timestamp::now(),
                )?;
                let changes: Vec<String> = [
                    ("title", next.title != stored.title),
                    ("description", next.description != stored.description),
                    ("query", next.query != stored.query),
                    ("revision", next.revision != stored.revision),
                    ("status", next.status != stored.status),
                ]
                .into_iter()
                .filter(|(_, changed)| *changed)
                .map(|(field, _)| field.to_owned())
                .collect();
                asked = false;
                if changes.is_empty() {
                    return Ok((next, None));
                }
                let event = AuditEvent::new(&origin, AuditAction::QueryEdit, &id, changes);
                // A new revision asks its reviewers again, as a new query does.
                let outbox: Vec<_> = if next.revision == stored.revision {
                    Vec::new()
                } else {
                    self.outbox
                        .review_request(&db, &next, required)
                        .into_iter()
                        .collect()
                };
                asked = !outbox.is_empty();
                Ok((
                    next,
                    Some(WriteLog {
                        event,
                        answer: None,
                        outbox,
                    }),
                ))
            })
            .await?;
        match changed {
            Ok(query) => {
                if asked {
                    self.outbox.wake();
                }
                Ok(json_response(StatusCode::OK, &QueryView::from(&query)))
            }
            Err(refusal @ EditRefusal::NotAuthor) => Err(ApiError::Denied(refusal.to_string())),
            Err(refusal) => Err(ApiError::Conflict(refusal.to_string())),
        }
    }
}
