//! The caller's own view: `GET …/me` (who it is, what it may do) and `GET …/me/databases` (the
//! databases it may query, with the credentials it may run as). What a console needs to draw
//! its screens for a member, whose key may not read the database list itself.

use http::StatusCode;

use super::admission::{Admission, WALK_PAGE};
use super::call::Answer;
use super::call::{Call, principal_of};
use super::render::{MayView, MeView, PageView, QueryableDatabaseView};
use super::response::json_response;
use super::who::Who;
use crate::auth::Caller;
use crate::model::{Role, Scope};

/// What the caller's own view reads: admission (the databases it may query) and the storage
/// (the user's settings).
#[derive(Debug)]
pub(crate) struct Me {
    /// Who may query which database.
    pub(crate) admission: Admission,
    /// The storage: the user's record, whose settings are the person's own.
    pub(crate) storage: std::sync::Arc<dyn crate::storage::Storage>,
}

/// A person's settings as the console reads them: `{"theme", "time_zone"}`.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "Settings", deny_unknown_fields)]
pub(crate) struct SettingsView<'a> {
    /// `light`, `dark`, or null: the system's (the browser's `prefers-color-scheme`).
    #[schemars(schema_with = "theme_schema")]
    theme: Option<&'a str>,
    /// `UTC`, or null: the browser's time zone. Every time on every screen is shown in it,
    /// with its zone.
    #[schemars(schema_with = "zone_schema")]
    time_zone: Option<&'a str>,
}

fn theme_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"], "enum": ["light", "dark", null] })
}

fn zone_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["string", "null"], "enum": ["UTC", null] })
}

impl Me {
    /// `GET …/me/settings`: the caller's settings (the defaults when its user has no record).
    pub(crate) async fn get_my_settings(&self, call: Call<'_>) -> Answer {
        let principal = call.principal()?;
        let user = self.storage.user(&principal.user).await?;
        let settings = user.map(|u| u.settings).unwrap_or_default();
        Ok(json_response(
            StatusCode::OK,
            &SettingsView {
                theme: settings.theme.as_deref(),
                time_zone: settings.time_zone.as_deref(),
            },
        ))
    }

    /// `PUT …/me/settings`: `{"theme", "time_zone"}`, both replaced (null: the browser's);
    /// 409 when the caller's user has no record to keep them in.
    pub(crate) async fn put_my_settings(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let body = call.json().await?;
        let settings = crate::validate::settings_of(&body)?;
        for _ in 0..8 {
            let Some(stored) = self.storage.user(&principal.user).await? else {
                return Err(super::error::ApiError::Conflict(
                    "settings are kept in the caller's user record, and this caller has none"
                        .to_owned(),
                ));
            };
            if stored.settings == settings {
                return self.get_my_settings(call).await;
            }
            let mut changes = Vec::new();
            if stored.settings.theme != settings.theme {
                changes.push("settings.theme".to_owned());
            }
            if stored.settings.time_zone != settings.time_zone {
                changes.push("settings.time_zone".to_owned());
            }
            let mut user = stored.clone();
            user.settings = settings.clone();
            user.updated_at = crate::model::Timestamp::now().not_before_next(stored.updated_at);
            let event = crate::model::AuditEvent::new(
                call.origin,
                crate::model::AuditAction::UserUpdate,
                &user.name,
                changes,
            );
            match self
                .storage
                .put_user(user, Some(stored.updated_at), Some(event.into()))
                .await
            {
                Ok(()) => return self.get_my_settings(call).await,
                Err(crate::storage::StorageError::Conflict) => continue,
                Err(error) => return Err(error.into()),
            }
        }
        Err(super::error::ApiError::Conflict(
            "the user record kept changing: try again".to_owned(),
        ))
    }
}

impl Me {
    /// `GET …/me`.
    pub(crate) async fn get_me(&self, call: Call<'_>) -> Answer {
        // The route's mount takes a credential: without one the router answered 401.
        let caller = call.caller.ok_or(super::error::ApiError::Forbidden)?;
        Ok(json_response(StatusCode::OK, &me_view(caller)))
    }

    /// `GET …/me/databases`: every database the caller may query, by id, each with the
    /// credentials it may run as (an AI agent: `ai_enabled` databases and `ai_allowed`
    /// credentials only); restricted ones only where a permission names the user or a group.
    pub(crate) async fn list_my_databases(&self, call: Call<'_>) -> Answer {
        let principal = principal_of(call.caller)?;
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self.admission.databases_after(after.as_deref()).await?;
            let full = page.len() == WALK_PAGE;
            after = page.last().map(|db| db.id.to_string());
            for db in page {
                if principal.agent && !db.ai_enabled {
                    continue;
                }
                if self.admission.may_query(principal, &db).await? {
                    all.push(db);
                }
            }
            if !full {
                break;
            }
        }
        let data = all
            .iter()
            .map(|db| QueryableDatabaseView::of(db, |c| !principal.agent || c.ai_allowed))
            .collect();
        Ok(json_response(
            StatusCode::OK,
            &PageView { data, next: None },
        ))
    }
}

/// Who `caller` is and what it may do: `GET …/me`'s answer, and a sign-in's.
pub(crate) fn me_view(caller: &Caller) -> MeView<'_> {
    let principal = caller.principal.as_ref();
    let querier = Who::Querier.permits(caller) && principal.is_some();
    let super_admin = principal.is_some_and(|p| p.role == Role::SuperAdmin);
    let agent = principal.is_some_and(|p| p.agent);
    let full = caller.scope == Scope::Full;
    MeView {
        user: principal.map(|p| p.user.as_str()),
        groups: principal.map_or_else(Vec::new, |p| p.groups.iter().map(String::as_str).collect()),
        role: principal.map(|p| p.role.as_str()),
        agent,
        scope: caller.scope.as_str(),
        may: MayView {
            query: querier,
            review: querier && !agent,
            bypass_reviews: querier && !agent && super_admin,
            manage_databases: full,
            manage_dashboards: full,
            make_dashboards: Who::Editor.permits(caller) && principal.is_some() && !agent,
            read_audit: full,
        },
    }
}
