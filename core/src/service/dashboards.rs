//! Dashboard endpoints: list, create, retrieve, update, delete.

use std::collections::HashMap;

use http::StatusCode;

use std::sync::Arc;

use super::admission::Admission;
use super::cache::{CacheKey, ReadCache, read_through};
use super::call::Answer;
use super::call::Call;
use super::call::{page_request, split_page};
use super::conditional::{IfMatch, tagged};
use super::error::ApiError;
use super::render::{DashboardView, PageView};
use super::response::{json_bytes, json_response};
use crate::auth::Caller;
use crate::model::{Dashboard, PanelDetails, Role, Scope, Timestamp};
use crate::storage::{DashboardFilter, Edits, Storage};
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

/// What the dashboard routes read: the storage, the read cache of rendered dashboards, and
/// admission (who may see a restricted dashboard).
#[derive(Debug)]
pub(crate) struct Dashboards {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// The rendered dashboards of recent reads.
    pub(crate) read_cache: Option<Arc<ReadCache>>,
    /// Who may query the databases of the panels.
    pub(crate) admission: Admission,
}

impl Dashboards {
    /// Whether `caller` may see `dashboard` (docs/api.md, "Dashboards"): a full-scope caller sees
    /// every dashboard; any principal an unrestricted one; a restricted one, super admins and
    /// principals who may query the database of every panel (a panel whose credential names no
    /// stored credential hides it). 403 for a caller of another scope without a principal.
    /// `known` remembers, by credential id, whether the caller may query its database: a
    /// listing reads each database and its access control once, however many panels use it.
    async fn may_see(
        &self,
        caller: Option<&Caller>,
        dashboard: &Dashboard,
        known: &mut HashMap<String, bool>,
    ) -> Result<bool, ApiError> {
        if caller.is_some_and(|caller| caller.scope == Scope::Full) {
            return Ok(true);
        }
        let principal = super::call::principal_of(caller)?;
        if !dashboard.restricted_access || principal.role == Role::SuperAdmin {
            return Ok(true);
        }
        for panel in &dashboard.panels {
            let PanelDetails::Query { credential_id, .. } = &panel.details;
            let may = match known.get(credential_id) {
                Some(may) => *may,
                None => {
                    let may = match self.admission.database_of_credential(credential_id).await? {
                        Some(db) => self.admission.may_query(principal, &db).await?,
                        None => false,
                    };
                    known.insert(credential_id.clone(), may);
                    may
                }
            };
            if !may {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// `GET /v1/dashboards`: a page, by id, filtered; of the dashboards the caller may see (a
    /// page may then hold fewer than `limit`; its `next` is still right).
    pub(crate) async fn list_dashboards(&self, call: Call<'_>) -> Answer {
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
        let mut data = Vec::with_capacity(items.len());
        let mut known = HashMap::new();
        for dashboard in &items {
            if self.may_see(call.caller, dashboard, &mut known).await? {
                data.push(DashboardView::from(dashboard));
            }
        }
        Ok(json_response(StatusCode::OK, &PageView { data, next }))
    }

    /// `POST /v1/dashboards`.
    pub(crate) async fn create_dashboard(&self, mut call: Call<'_>) -> Answer {
        let body = call.json().await?;
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
            if let Some(db) = self.admission.database_of_credential(credential_id).await?
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

    /// `GET /v1/dashboards/{id}`, through the read cache for a full-scope caller; 403 for a
    /// restricted dashboard the caller may not see.
    pub(crate) async fn get_dashboard(&self, call: Call<'_>) -> Answer {
        let id = call.param("id");
        if call.caller.is_none_or(|caller| caller.scope != Scope::Full) {
            let dashboard = self
                .storage
                .dashboard(id)
                .await?
                .ok_or(ApiError::NotFound)?;
            if !self
                .may_see(call.caller, &dashboard, &mut HashMap::new())
                .await?
            {
                return Err(ApiError::Denied(format!(
                    "dashboard {id} restricts access: it is shown to super admins and to those \
                     who may query the database of each of its panels"
                )));
            }
            return dashboard_response(&dashboard);
        }
        read_through(
            self.read_cache.as_deref(),
            CacheKey::Dashboard(id),
            &call.headers,
            || self.storage.dashboard(id),
            |record| json_bytes(&DashboardView::from(record)),
            |record| record.updated_at,
        )
        .await
    }

    /// `PUT /v1/dashboards/{id}` (and `PATCH` on the compatibility path): fields left out stay.
    pub(crate) async fn update_dashboard(&self, mut call: Call<'_>) -> Answer {
        let condition = IfMatch::of(&call.headers)?;
        let body = call.json().await?;
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
    pub(crate) async fn delete_dashboard(&self, call: Call<'_>) -> Answer {
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
