//! Queries (docs/queries.md, "Running queries"): the query history (`…/queries`), storing a query,
//! its author changing it, and reading one back. Running one is `runs`, reviewing one `reviews`; who may do what is
//! `admission`, starting a run `launch`.

mod create;
pub(crate) use create::SavedLink;
mod edit;
mod history;

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;

use super::admission::Admission;
use super::call::{Answer, Call};
use super::outbox::OutboxTargets;
use super::render::QueryView;
use super::response::json_response;
use crate::storage::Storage;

pub use crate::validate::DEFAULT_ROW_LIMIT;

/// The most rows a run may return unless the service is built with another maximum.
pub const DEFAULT_MAX_ROWS: u32 = 100_000;

/// Statement timeout when the credential sets none.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// What the query history reads and writes: the storage, admission, the outbox (review
/// requests) and the most rows a run may return.
#[derive(Clone, Debug)]
pub(crate) struct Queries {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Who may see which query.
    pub(crate) admission: Admission,
    /// Where review requests go.
    pub(crate) outbox: OutboxTargets,
    /// The most rows a run may return.
    pub(crate) max_rows: u32,
}

impl Queries {
    /// `GET …/queries`: the history.
    pub(crate) async fn list_queries(&self, call: Call<'_>) -> Answer {
        self.query_history(call.principal()?, call.query.as_deref())
            .await
    }

    /// `POST …/queries`: store a query.
    pub(crate) async fn create_query(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let body = call.json().await?;
        let query = self.store_query(&principal, body, call.origin).await?;
        Ok(json_response(StatusCode::OK, &QueryView::from(&query)))
    }

    /// `GET …/queries/{id}`.
    pub(crate) async fn get_query(&self, call: Call<'_>) -> Answer {
        let query = self
            .admission
            .visible_query(call.principal()?, call.param("id"))
            .await?;
        Ok(json_response(StatusCode::OK, &QueryView::from(&query)))
    }
}
