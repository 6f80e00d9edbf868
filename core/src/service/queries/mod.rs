//! Running queries (docs/queries.md, "Running queries"): the query history (`…/queries`), running a
//! stored query once (`…/queries/{id}/run`), and running a dashboard panel
//! (`…/dashboards/{id}/panels/{panel_id}/run`).
//!
//! Who may run what is decided here, before any connection opens: a principal is needed, a
//! restricted database needs a grant, an AI agent needs an `ai_enabled` database and an
//! `ai_allowed` credential and gets at most `ai_max_rows` rows. Then a run is spawned: it
//! streams its rows into the response body and records its outcome (the query's status, one
//! audit event, the metrics) when it ends, whether the client stayed or not.

mod admission;
mod create;
mod download;
mod history;
mod outcome;
mod panel;
mod reviews;
mod run;
mod start;
mod verify;

use std::time::Duration;

use http::StatusCode;

use crate::run::Format;

use super::Shared;
use super::call::Call;
use super::render::QueryView;
use super::response::json_response;
use super::router::Answer;

pub use crate::validate::DEFAULT_ROW_LIMIT;
pub(in crate::service) use admission::{Guarded, principal_of};
pub(in crate::service) use outcome::Record;
pub(in crate::service) use start::Run;

/// The most rows a run may return unless the service is built with another maximum.
pub const DEFAULT_MAX_ROWS: u32 = 100_000;

/// Statement timeout when the credential sets none.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

impl Shared {
    /// `GET …/queries`: the history.
    pub(in crate::service) async fn list_queries(&self, call: Call<'_>) -> Answer {
        self.query_history(call.principal()?, call.query.as_deref())
            .await
    }

    /// `POST …/queries`: store a query.
    pub(in crate::service) async fn create_query(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let body = call.json(self).await?;
        let query = self.store_query(&principal, body, call.origin).await?;
        Ok(json_response(StatusCode::OK, &QueryView::from(&query)))
    }

    /// `GET …/queries/{id}`.
    pub(in crate::service) async fn get_query(&self, call: Call<'_>) -> Answer {
        let query = self
            .visible_query(call.principal()?, call.param("id"))
            .await?;
        Ok(json_response(StatusCode::OK, &QueryView::from(&query)))
    }

    /// `POST …/queries/{id}/run`: its rows, streamed.
    pub(in crate::service) async fn run_query(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let format = Format::from_accept(call.accept());
        let body = call.optional_json(self).await?;
        self.run_stored(&principal, call.param("id"), &body, format, call.origin)
            .await
    }

    /// `POST …/queries/{id}/reviews`: approve or reject.
    pub(in crate::service) async fn review_query(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let body = call.json(self).await?;
        self.review(&principal, call.param("id"), body, call.origin)
            .await
    }

    /// `POST /v1/dashboards/test-run`: an unsaved panel, run by its editor.
    pub(in crate::service) async fn test_run_panel(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let format = Format::from_accept(call.accept());
        let body = call.json(self).await?;
        self.run_unsaved_panel(&principal, body, format, call.origin)
            .await
    }

    /// `POST …/dashboards/{id}/panels/{panel_id}/run`: its rows, streamed.
    pub(in crate::service) async fn run_panel(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let format = Format::from_accept(call.accept());
        let body = call.json(self).await?;
        let (dashboard, panel) = (call.param("id"), call.param("panel_id"));
        self.run_dashboard_panel(&principal, dashboard, panel, body, format, call.origin)
            .await
    }
}
