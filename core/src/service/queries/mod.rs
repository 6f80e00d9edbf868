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
mod history;
mod outcome;
mod panel;
mod reviews;
mod run;
mod start;

use std::time::Duration;

use http::{Method, Response, StatusCode, header};
use http_body::Body;

use crate::auth::Caller;
use crate::model::Origin;
use crate::run::Format;

use super::error::ApiError;
use super::render::QueryView;
use super::response::{ResponseBody, json_response};
use super::router::Route;
use super::{Call, Shared};

pub use crate::validate::{DEFAULT_ROW_LIMIT, REASON_MAX};
pub(in crate::service) use outcome::Record;
pub(in crate::service) use start::Run;

/// The most rows a run may return unless the service is built with another maximum.
pub const DEFAULT_MAX_ROWS: u32 = 100_000;

/// Statement timeout when the credential sets none.
pub const DEFAULT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

impl Shared {
    pub(in crate::service) async fn queries<B>(
        &self,
        route: Route<'_>,
        call: Call<B>,
        caller: &Caller,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError>
    where
        B: Body,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let principal = self.principal(caller)?;
        match (route, &call.method) {
            (Route::Queries, &Method::POST) => {
                let body = call.json(self).await?;
                let query = self.create_query(principal, body, origin).await?;
                Ok(json_response(StatusCode::OK, &QueryView::from(&query)))
            }
            (Route::Queries, _) => self.list_queries(principal, call.query.as_deref()).await,
            (Route::Query(id), _) => {
                let query = self.visible_query(principal, &id).await?;
                Ok(json_response(StatusCode::OK, &QueryView::from(&query)))
            }
            (Route::QueryRun(id), _) => {
                let format = Format::from_accept(accept(&call.headers));
                let body = call.optional_json(self).await?;
                self.run_query(principal, &id, &body, format, origin).await
            }
            (Route::QueryReviews(id), _) => {
                let body = call.json(self).await?;
                self.review_query(principal, &id, body, origin).await
            }
            (
                Route::PanelRun {
                    dashboard, panel, ..
                },
                _,
            ) => {
                let format = Format::from_accept(accept(&call.headers));
                let body = call.json(self).await?;
                self.run_panel(principal, &dashboard, &panel, body, format, origin)
                    .await
            }
            _ => Err(ApiError::NotFound),
        }
    }
}

fn accept(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok())
}
