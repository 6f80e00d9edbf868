//! Dashboard endpoints: list, create, retrieve, update, delete.

use http::{Method, Response, StatusCode};
use http_body::Body;

use super::cache::CacheKey;
use super::conditional::{IfMatch, tagged};
use super::error::ApiError;
use super::render::{DashboardView, PageView};
use super::response::{ResponseBody, json_bytes, json_response};
use super::router::Route;
use super::{Call, Shared, page_request, split_page};
use crate::model::{Dashboard, Origin, Timestamp};
use crate::storage::{DashboardFilter, Edits};
use crate::validate::{dashboard_from_body, parse_dashboard_filter};

impl Shared {
    pub(super) async fn dashboards<B>(
        &self,
        route: Route<'_>,
        call: Call<B>,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError>
    where
        B: Body,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let storage = &self.storage;
        let dashboard = match (route, &call.method) {
            (Route::Dashboards { .. }, &Method::GET) => {
                let query = call.page_query()?;
                let filter = parse_dashboard_filter(call.query.as_deref());
                let filter = DashboardFilter {
                    name_prefix: filter.name_prefix.as_deref(),
                };
                let items = storage
                    .list_dashboards(page_request(&query), filter)
                    .await?;
                let (items, next) = split_page(items, &query, |d| d.id.to_string());
                let data = items.iter().map(DashboardView::from).collect();
                return Ok(json_response(StatusCode::OK, &PageView { data, next }));
            }
            (Route::Dashboards { .. }, &Method::POST) => {
                let body = call.json(self).await?;
                let dashboard = dashboard_from_body(None, &body, Timestamp::now())?;
                storage.insert_dashboard(dashboard.clone(), origin).await?;
                dashboard
            }
            (Route::Dashboard { id, .. }, &Method::GET) => {
                let key = CacheKey::Dashboard(id.to_string());
                return self
                    .read_through(
                        key,
                        &call.headers,
                        storage.dashboard(&id),
                        |record| json_bytes(&DashboardView::from(record)),
                        |record| record.updated_at,
                    )
                    .await;
            }
            (Route::Dashboard { id, .. }, &Method::DELETE) => {
                let check = IfMatch::delete_check(IfMatch::of(&call.headers)?, |d: &Dashboard| {
                    d.updated_at
                });
                let deleted = storage.delete_dashboard(&id, check, origin).await?;
                // Gone: no version to carry.
                return Ok(json_response(
                    StatusCode::OK,
                    &DashboardView::from(&deleted),
                ));
            }
            (Route::Dashboard { id, .. }, &Method::PUT | &Method::PATCH) => {
                let condition = IfMatch::of(&call.headers)?;
                let body = call.json(self).await?;
                let edit = move |stored: &Dashboard| {
                    if let Some(condition) = &condition {
                        condition.check(stored.updated_at)?;
                    }
                    Ok(dashboard_from_body(Some(stored), &body, Timestamp::now())?)
                };
                storage
                    .update_dashboard(&id, Box::new(edit), origin)
                    .await?
            }
            (route, _) => return Err(ApiError::MethodNotAllowed(route.allowed_methods())),
        };
        let response = json_response(StatusCode::OK, &DashboardView::from(&dashboard));
        Ok(tagged(response, dashboard.updated_at))
    }
}
