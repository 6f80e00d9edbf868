//! Storing a query (`POST …/queries`): checked against its database and credential, pinned to
//! where it runs (its target digest), waiting for reviews when its credential requires them
//! (with a title and a description for its reviewers).

use serde_json::Value;

use crate::model::{
    AuditAction, AuditEvent, Origin, Principal, Query, QueryId, QueryStatus, Timestamp,
};
use crate::run::statement::{self, Dialect};
use crate::storage::WriteLog;
use crate::validate::{QueryDraft, query_draft};

use super::super::admission::admit;
use super::super::error::ApiError;
use super::Queries;

/// What links a query to the saved query it is a run of.
#[derive(Clone, Debug)]
pub(crate) struct SavedLink {
    /// The saved query's id.
    pub(crate) id: String,
    /// The values of its statement's parameters, in their order.
    pub(crate) params: Vec<(String, String)>,
}

impl Queries {
    /// Stores the query `body` describes, by `principal`.
    pub(crate) async fn store_query(
        &self,
        principal: &Principal,
        body: serde_json::Map<String, Value>,
        origin: &Origin,
    ) -> Result<Query, ApiError> {
        self.store_linked_query(principal, body, origin, None).await
    }

    /// Stores the query `body` describes, by `principal`, as a run of the saved query `link`
    /// names when it names one.
    pub(crate) async fn store_linked_query(
        &self,
        principal: &Principal,
        body: serde_json::Map<String, Value>,
        origin: &Origin,
        link: Option<SavedLink>,
    ) -> Result<Query, ApiError> {
        let QueryDraft {
            database_id,
            credential_id,
            query: query_text,
            limit,
            title,
            description,
            mut errors,
        } = query_draft(&body, self.max_rows);
        let db = match &database_id {
            Some(id) => self.storage.database(id).await?,
            None => None,
        };
        if database_id.is_some() && db.is_none() {
            errors.add("database_id", "does not name a database");
        }
        let credential = match (&db, &credential_id) {
            (Some(db), Some(id)) => {
                let found = db.credentials.iter().find(|c| c.id.as_str() == id);
                if found.is_none() {
                    errors.add(
                        "credential_id",
                        "does not name a credential of this database",
                    );
                }
                found.cloned()
            }
            _ => None,
        };
        if let (Some(db), Some(text)) = (&db, &query_text)
            && let Err(why) = statement::single(text, Dialect::of(db.adapter))
        {
            errors.add("query", why);
        }
        // A request for review says what it is for and why: its reviewers read that first.
        if let Some(credential) = credential.as_ref().filter(|c| c.reviews_required > 0) {
            for (field, given) in [("title", &title), ("description", &description)] {
                if given.is_none() && errors.get(field).is_none() {
                    errors.add(
                        field,
                        format!(
                            "can't be blank: credential {} needs reviews, and its reviewers read \
                             what the query is for and why",
                            credential.username
                        ),
                    );
                }
            }
        }
        let (Some(db), Some(credential), Some(query_text)) = (db, credential, query_text) else {
            return Err(ApiError::Invalid(errors));
        };
        if !errors.is_empty() {
            return Err(ApiError::Invalid(errors));
        }
        // An agent's query keeps the agent's cap, whoever runs it later.
        let grants = self.admission.grants_for(principal, &db).await?;
        let limit = admit(principal, &db, grants.as_ref(), &credential, limit)?;
        let now = Timestamp::now();
        let query = Query {
            target: Some(db.target_digest(&credential)),
            id: QueryId::generate(),
            database_id: db.id.as_str().to_owned(),
            credential_id: credential.id.as_str().to_owned(),
            title: title.unwrap_or_else(|| crate::model::title_of(&query_text)),
            description: description.unwrap_or_default(),
            query: query_text,
            limit,
            author: principal.user.clone(),
            by_agent: principal.agent,
            status: if credential.reviews_required > 0 {
                QueryStatus::AwaitingReview
            } else {
                QueryStatus::Ready
            },
            reviews: Vec::new(),
            revision: 0,
            comments: Vec::new(),
            saved_query: link.as_ref().map(|link| link.id.clone()),
            params: link.map(|link| link.params).unwrap_or_default(),
            bypass: None,
            run: None,
            inserted_at: now,
            updated_at: now,
        };
        let mut changes: Vec<String> = [
            "database_id",
            "credential_id",
            "query",
            "limit",
            "title",
            "description",
        ]
        .map(str::to_owned)
        .to_vec();
        if query.saved_query.is_some() {
            changes.extend(["saved_query_id", "params"].map(str::to_owned));
        }
        let event = AuditEvent::new(origin, AuditAction::QueryCreate, query.id.as_str(), changes);
        // A query that waits for reviews asks for them in its database's Slack channel, through
        // the outbox, in the same change (docs/workflows.md, "Workflows and notifications").
        let outbox: Vec<_> = self
            .outbox
            .review_request(&db, &query, credential.reviews_required)
            .into_iter()
            .collect();
        let notify = !outbox.is_empty();
        let log = WriteLog {
            event,
            answer: origin.answer(crate::model::Written::Query(&query)),
            outbox,
        };
        self.storage.create_query(query.clone(), log).await?;
        if notify {
            self.outbox.wake();
        }
        Ok(query)
    }
}
