//! Reviewing a query (`POST …/queries/{id}/reviews`, docs/queries.md, "Reviews"): one decision per
//! reviewer and revision, counted against what the credential requires at the time; and its
//! thread (`POST …/queries/{id}/comments`), where its author and its reviewers talk.

use http::{Response, StatusCode};
use serde_json::Value;

use crate::model::{
    AuditAction, AuditEvent, Comment, Origin, Principal, Review, ReviewRefusal, Timestamp,
};
use crate::storage::{Edits as _, WriteLog};
use crate::validate::{comment_of, review_of};

use std::sync::Arc;

use super::admission::{Admission, Guarded, target_of};
use super::call::{Answer, Call};
use super::error::ApiError;
use super::render::QueryView;
use super::response::{ResponseBody, json_response};
use crate::storage::Storage;

/// What a review reads: the storage and admission (who may review the query).
#[derive(Debug)]
pub(crate) struct Reviews {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Who may see and review the query.
    pub(crate) admission: Admission,
}

impl Reviews {
    /// `POST …/queries/{id}/reviews`: approve or reject.
    pub(crate) async fn review_query(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let body = call.json().await?;
        self.review(&principal, call.param("id"), body, call.origin)
            .await
    }

    pub(crate) async fn review(
        &self,
        principal: &Principal,
        id: &str,
        body: serde_json::Map<String, Value>,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError> {
        // 404 before 422: an unknown query is unknown whatever the body says.
        let (query, guarded) = self.admission.query_in_reach(principal, id).await?;
        let (decision, comment) = review_of(&body)?;
        if principal.agent {
            return Err(ApiError::Denied(
                "AI agents do not review queries: a person does".to_owned(),
            ));
        }
        let (Guarded { db, access }, credential) = target_of(&query, guarded)?;
        if !principal.may_review(&db, access.as_ref()) {
            return Err(ApiError::Denied(format!(
                "{} may not review queries on database {}: it restricts access, and no review or \
                 admin permission names the user or one of its groups",
                principal.user, db.id
            )));
        }
        let required = credential.reviews_required;
        let reviewed = self
            .storage
            .change_query(query, |stored| {
                let review = Review {
                    reviewer: principal.user.clone(),
                    decision,
                    comment: comment.clone(),
                    at: Timestamp::now(),
                    revision: stored.revision,
                };
                let next = stored.reviewed(review, required)?;
                let mut changes = vec!["reviews".to_owned()];
                if next.status != stored.status {
                    changes.push("status".to_owned());
                }
                let event = AuditEvent::new(
                    &origin.without_idempotency(),
                    AuditAction::QueryReview,
                    id,
                    changes,
                );
                Ok((next, Some(WriteLog::from(event))))
            })
            .await?;
        match reviewed {
            Ok(query) => Ok(json_response(StatusCode::OK, &QueryView::from(&query))),
            Err(refusal @ ReviewRefusal::OwnQuery) => Err(ApiError::Denied(refusal.to_string())),
            Err(refusal) => Err(ApiError::Conflict(refusal.to_string())),
        }
    }

    /// `POST …/queries/{id}/comments`: a comment of its author, or of someone who may review
    /// it, whatever its status.
    pub(crate) async fn comment_on_query(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let body = call.json().await?;
        let id = call.param("id").to_owned();
        let (query, guarded) = self.admission.query_in_reach(&principal, &id).await?;
        let text = comment_of(&body)?;
        if principal.agent {
            return Err(ApiError::Denied(
                "AI agents do not comment on queries: a person does".to_owned(),
            ));
        }
        let (Guarded { db, access }, _) = target_of(&query, guarded)?;
        let author = crate::model::identity::same(&principal.user, &query.author);
        if !author && !principal.may_review(&db, access.as_ref()) {
            return Err(ApiError::Denied(format!(
                "{} may not comment on queries on database {}: only their author and those who \
                 may review them do",
                principal.user, db.id
            )));
        }
        let origin = call.origin.without_idempotency();
        let commented = self
            .storage
            .change_query(query, |stored| {
                let next = stored.commented(Comment {
                    author: principal.user.clone(),
                    text: text.clone(),
                    at: Timestamp::now(),
                });
                let event = AuditEvent::new(
                    &origin,
                    AuditAction::QueryComment,
                    &id,
                    vec!["comments".to_owned()],
                );
                Ok::<_, std::convert::Infallible>((next, Some(WriteLog::from(event))))
            })
            .await?;
        let Ok(query) = commented;
        Ok(json_response(StatusCode::CREATED, &QueryView::from(&query)))
    }
}
