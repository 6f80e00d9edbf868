//! Dashboard endpoints: list, create, retrieve, update, delete; and the presentation document
//! ([`presentation`]). Who may see and change a dashboard (docs/dashboards.md, "Who edits and
//! views") is decided here.

mod presentation;

use std::collections::HashMap;

use http::StatusCode;

use std::sync::Arc;

use super::admission::Admission;
use super::cache::{CacheKey, ReadCache, read_through};
use super::call::Answer;
use super::call::Call;
use super::call::principal_of;
use super::call::{page_request, split_page};
use super::conditional::{IfMatch, tagged};
use super::error::ApiError;
use super::render::{DashboardView, PageView};
use super::response::{json_bytes, json_response};
use crate::auth::Caller;
use crate::model::{
    Dashboard, Member, MemberKind, Panel, PanelDetails, Principal, Role, Scope, Timestamp,
};
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
        if !dashboard.restricted_access
            || principal.role == Role::SuperAdmin
            || dashboard.presentation.is_member(principal)
        {
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

    /// `POST /v1/dashboards`: by a full-scope caller, or by anyone who may run each panel's
    /// credential. A person who creates a dashboard is its first editor.
    pub(crate) async fn create_dashboard(&self, mut call: Call<'_>) -> Answer {
        let body = call.json().await?;
        let mut dashboard = dashboard_from_body(None, &body, Timestamp::now())?;
        if let Some(principal) = call.caller.and_then(|c| c.principal.as_ref()) {
            dashboard.presentation.editors.push(Member {
                kind: MemberKind::User,
                name: principal.user.clone(),
            });
        }
        if !full_scope(call.caller) {
            let principal = principal_of(call.caller)?;
            self.may_save_panels(principal, None, &dashboard.panels)
                .await?;
        }
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
            return dashboard_response(&self.visible(call.caller, id).await?);
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
    /// By a full-scope caller, or an editor who may run the credential of each panel the change
    /// adds or alters.
    pub(crate) async fn update_dashboard(&self, mut call: Call<'_>) -> Answer {
        let condition = IfMatch::of(&call.headers)?;
        let body = call.json().await?;
        let checked = match full_scope(call.caller) {
            true => None,
            false => {
                let stored = self.editable(call.caller, call.param("id")).await?;
                let changed = dashboard_from_body(Some(&stored), &body, Timestamp::now())?;
                let principal = principal_of(call.caller)?;
                self.may_save_panels(principal, Some(&stored), &changed.panels)
                    .await?;
                Some(stored.updated_at)
            }
        };
        let edit = move |stored: &Dashboard| {
            if let Some(condition) = &condition {
                condition.check(stored.updated_at)?;
            }
            // What was checked is what is changed: a change in between is a conflict.
            if checked.is_some_and(|checked| checked != stored.updated_at) {
                return Err(crate::storage::StorageError::Conflict);
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

    /// `DELETE /v1/dashboards/{id}`: answers the deleted dashboard. By a full-scope caller or
    /// an editor.
    pub(crate) async fn delete_dashboard(&self, call: Call<'_>) -> Answer {
        if !full_scope(call.caller) {
            self.editable(call.caller, call.param("id")).await?;
        }
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

    /// Dashboard `id` when `caller` may see it: 404 when it is not there, 403 when it is
    /// restricted from the caller ([`Self::may_see`]).
    async fn visible(&self, caller: Option<&Caller>, id: &str) -> Result<Dashboard, ApiError> {
        let dashboard = self
            .storage
            .dashboard(id)
            .await?
            .ok_or(ApiError::NotFound)?;
        if self
            .may_see(caller, &dashboard, &mut HashMap::new())
            .await?
        {
            Ok(dashboard)
        } else {
            Err(hidden(id))
        }
    }

    /// Dashboard `id` when `caller` may change it: a super admin, or one of its editors (404
    /// when it is not there; 403 when it is hidden from the caller, or saying who may change
    /// it).
    async fn editable(&self, caller: Option<&Caller>, id: &str) -> Result<Dashboard, ApiError> {
        let principal = principal_of(caller)?;
        let dashboard = self.visible(caller, id).await?;
        if principal.role == Role::SuperAdmin || dashboard.presentation.is_editor(principal) {
            return Ok(dashboard);
        }
        Err(ApiError::Denied(format!(
            "dashboard {id} is changed by its editors and super admins: ask one of its editors \
             to add you"
        )))
    }

    /// Whether `principal` may save `panels`: each one that is new, or whose query or
    /// credential differs from `stored`'s panel of its id, must be on a credential it may run
    /// (what a test run checks: 422 for a credential that is gone or needs reviews, 403 when
    /// its database is not the principal's to query). A panel kept as it was stays, whoever
    /// made it.
    async fn may_save_panels(
        &self,
        principal: &Principal,
        stored: Option<&Dashboard>,
        panels: &[Panel],
    ) -> Result<(), ApiError> {
        let mut checked = HashMap::new();
        for (index, panel) in panels.iter().enumerate() {
            let kept = stored
                .and_then(|d| d.panels.iter().find(|p| p.id == panel.id))
                .is_some_and(|old| old.details == panel.details);
            let PanelDetails::Query { credential_id, .. } = &panel.details;
            if kept || checked.contains_key(credential_id) {
                continue;
            }
            if let Err(error) = self
                .admission
                .panel_access(principal, credential_id, 1)
                .await
            {
                return Err(match error {
                    ApiError::Invalid(errors) => {
                        let mut item = crate::validate::ValidationErrors::new();
                        item.add_nested(&format!("panels.{index}.details"), errors);
                        ApiError::Invalid(item)
                    }
                    other => other,
                });
            }
            checked.insert(credential_id.clone(), ());
        }
        Ok(())
    }
}

/// Whether `caller` has full scope (a full key, the static token, a super admin's session).
fn full_scope(caller: Option<&Caller>) -> bool {
    caller.is_some_and(|caller| caller.scope == Scope::Full)
}

/// The refusal of a restricted dashboard to someone it is not shown to.
fn hidden(id: &str) -> ApiError {
    ApiError::Denied(format!(
        "dashboard {id} restricts access: it is shown to super admins, its editors and viewers, \
         and those who may query the database of each of its panels"
    ))
}
