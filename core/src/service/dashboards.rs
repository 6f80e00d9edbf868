//! Dashboard endpoints: list, create, retrieve, update, delete.

use http::StatusCode;

use super::cache::CacheKey;
use super::call::Call;
use super::conditional::{IfMatch, tagged};
use super::render::{DashboardView, PageView};
use super::response::{json_bytes, json_response};
use super::router::Answer;
use super::{Shared, page_request, split_page};
use crate::model::{Dashboard, Timestamp};
use crate::storage::{DashboardFilter, Edits};
use crate::validate::{dashboard_from_body, parse_dashboard_filter};

/// A dashboard's answer, with its version.
fn dashboard_response(dashboard: &Dashboard) -> Answer {
    let response = json_response(StatusCode::OK, &DashboardView::from(dashboard));
    Ok(tagged(response, dashboard.updated_at))
}

/// The header that says which panels of a saved dashboard query a restricted database while the
/// dashboard is not restricted: they run only for those granted the database (docs/api.md,
/// "Dashboards").
pub(crate) const NOTICE: &str = "dbconsole-notice";

impl Shared {
    /// `GET /v1/dashboards`: a page, by id, filtered.
    pub(super) async fn list_dashboards(&self, call: Call<'_>) -> Answer {
        let query = call.page_query()?;
        let filter = parse_dashboard_filter(call.query.as_deref());
        let filter = DashboardFilter {
            name_prefix: filter.name_prefix.as_deref(),
        };
        let items = self
            .storage
            .list_dashboards(page_request(&query), filter)
            .await?;
        let (items, next) = split_page(items, &query, |d| d.id.to_string());
        let data = items.iter().map(DashboardView::from).collect();
        Ok(json_response(StatusCode::OK, &PageView { data, next }))
    }

    /// `POST /v1/dashboards`.
    pub(super) async fn create_dashboard(&self, mut call: Call<'_>) -> Answer {
        let body = call.json(self).await?;
        let dashboard = dashboard_from_body(None, &body, Timestamp::now())?;
        self.storage
            .insert_dashboard(dashboard.clone(), call.origin)
            .await?;
        self.with_notice(&dashboard, dashboard_response(&dashboard))
            .await
    }

    /// `answer`, with [`NOTICE`] when a panel of unrestricted `dashboard` queries a restricted
    /// database.
    async fn with_notice(&self, dashboard: &Dashboard, answer: Answer) -> Answer {
        let mut response = answer?;
        if dashboard.restricted_access {
            return Ok(response);
        }
        let mut restricted = Vec::new();
        for panel in &dashboard.panels {
            let crate::model::PanelDetails::Query { credential_id, .. } = &panel.details;
            if let Some(db) = self.database_of_credential(credential_id).await?
                && db.restrict_access
            {
                restricted.push(format!("{} ({})", panel.id, db.id));
            }
        }
        if !restricted.is_empty() {
            let notice = format!(
                "panels query restricted databases and run only for those granted them: {}",
                restricted.join(", ")
            );
            if let Ok(value) = http::HeaderValue::from_str(&notice) {
                response.headers_mut().insert(NOTICE, value);
            }
        }
        Ok(response)
    }

    /// `GET /v1/dashboards/{id}`, through the read cache.
    pub(super) async fn get_dashboard(&self, call: Call<'_>) -> Answer {
        let id = call.param("id");
        self.read_through(
            CacheKey::Dashboard(id.to_owned()),
            &call.headers,
            self.storage.dashboard(id),
            |record| json_bytes(&DashboardView::from(record)),
            |record| record.updated_at,
        )
        .await
    }

    /// `PUT /v1/dashboards/{id}` (and `PATCH` on the compatibility path): fields left out stay.
    pub(super) async fn update_dashboard(&self, mut call: Call<'_>) -> Answer {
        let condition = IfMatch::of(&call.headers)?;
        let body = call.json(self).await?;
        let edit = move |stored: &Dashboard| {
            if let Some(condition) = &condition {
                condition.check(stored.updated_at)?;
            }
            Ok(dashboard_from_body(Some(stored), &body, Timestamp::now())?)
        };
        let dashboard = self
            .storage
            .update_dashboard(call.param("id"), Box::new(edit), call.origin)
            .await?;
        self.with_notice(&dashboard, dashboard_response(&dashboard))
            .await
    }

    /// `DELETE /v1/dashboards/{id}`: answers the deleted dashboard.
    pub(super) async fn delete_dashboard(&self, call: Call<'_>) -> Answer {
        let check =
            IfMatch::delete_check(IfMatch::of(&call.headers)?, |d: &Dashboard| d.updated_at);
        let deleted = self
            .storage
            .delete_dashboard(call.param("id"), check, call.origin)
            .await?;
        // Gone: no version to carry.
        Ok(json_response(
            StatusCode::OK,
            &DashboardView::from(&deleted),
        ))
    }
}
