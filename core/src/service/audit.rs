//! `GET …/audit`: the audit trail, newest first, in keyset pages (docs/api.md, "The audit trail").

use http::StatusCode;

use super::call::Call;
use super::render::{AuditEventView, PageView};
use super::response::json_response;
use super::router::Answer;
use super::{Shared, split_page};
use crate::storage::AuditQuery;
use crate::validate::parse_audit_query;

impl Shared {
    /// `GET …/audit`.
    pub(super) async fn list_audit(&self, call: Call<'_>) -> Answer {
        let (page, resource) = parse_audit_query(call.query.as_deref())?;
        let events = self
            .storage
            .list_audit(AuditQuery {
                resource: resource.as_deref(),
                after: page.after.as_deref(),
                // One more tells whether a next page exists.
                limit: page.limit + 1,
            })
            .await?;
        let (events, next) = split_page(events, &page, |event| event.id.to_string());
        let data = events.iter().map(AuditEventView::from).collect();
        Ok(json_response(StatusCode::OK, &PageView { data, next }))
    }
}
