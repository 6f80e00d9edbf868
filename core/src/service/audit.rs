//! `GET …/audit`: the audit trail, newest first, in keyset pages, filtered on the server by
//! record, database (its own events and its queries'), actor, action and time (docs/api.md, "The
//! audit trail").

use std::collections::BTreeSet;

use http::StatusCode;

use super::call::Answer;
use super::call::Call;
use super::call::{both, split_page};
use super::error::ApiError;
use super::render::{AuditEventView, PageView};
use super::response::json_response;
use std::sync::Arc;

use crate::storage::{AuditFilter, AuditQuery, Page, QueryFilter, Storage};
use crate::validate::{parse_audit_filter, parse_audit_query};

/// The most queries of one database whose events a `database=` filter follows.
const DATABASE_QUERIES_MAX: usize = 100_000;

/// What these routes read: the storage alone.
#[derive(Debug)]
pub(crate) struct Audit {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
}

impl Audit {
    /// `GET …/audit`.
    pub(crate) async fn list_audit(&self, call: Call<'_>) -> Answer {
        let query = call.query.as_deref();
        let ((page, resource), filter) = both(parse_audit_query(query), parse_audit_filter(query))?;
        let records = match &filter.database {
            Some(database) => Some(self.database_records(database).await?),
            None => None,
        };
        let events = self
            .storage
            .list_audit(AuditQuery {
                resource: resource.as_deref(),
                after: page.after.as_deref(),
                // One more tells whether a next page exists.
                limit: page.limit + 1,
                filter: AuditFilter {
                    any_of: records.as_ref(),
                    action: filter.action,
                    actor: filter.actor.as_deref(),
                    since: filter.since,
                    until: filter.until,
                },
            })
            .await?;
        let (events, next) = split_page(events, &page, |event| event.id.to_string());
        let data = events.iter().map(AuditEventView::from).collect();
        Ok(json_response(StatusCode::OK, &PageView { data, next }))
    }

    /// The records whose events are a database's: the database and each of its queries.
    async fn database_records(&self, database: &str) -> Result<BTreeSet<String>, ApiError> {
        let mut records = BTreeSet::from([database.to_owned()]);
        let mut after: Option<String> = None;
        loop {
            let found = self
                .storage
                .list_queries(
                    Page {
                        after: after.as_deref(),
                        limit: 500,
                    },
                    QueryFilter {
                        database_id: Some(database),
                        ..QueryFilter::default()
                    },
                )
                .await?;
            let Some(last) = found.last() else { break };
            after = Some(last.id.as_str().to_owned());
            let full = found.len() == 500;
            records.extend(found.into_iter().map(|query| query.id.as_str().to_owned()));
            if !full || records.len() > DATABASE_QUERIES_MAX {
                break;
            }
        }
        Ok(records)
    }
}
