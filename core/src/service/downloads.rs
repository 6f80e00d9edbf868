//! "Run to CSV" (docs/console.md, "The screens"): a browser can't send the header its cookie
//! needs on a navigation, and must not build a file of rows in memory, so it asks first.
//!
//! - `POST …/queries/{id}/download` (header-checked like every cookie request) answers a URL
//!   that holds a ticket: the query, who asked (user, role, groups) and when it ends (one
//!   minute), sealed with the server's key (authenticated encryption: it can't be forged or
//!   changed, and every node that shares the key reads it).
//! - `GET /api/v1/console/downloads/csv?ticket=…` needs no other credential: it runs the query as
//!   the ticket's principal, under every rule of a run, and streams the CSV as an attachment.
//!   The ticket is single use because the query is: its one run is a compare-and-swap, so a
//!   second download is 409. The ticket sits in the query string, which no request log writes.
//! - `POST /v1/dashboards/{id}/panels/{panel_id}/download` with the panel's `inputs` does the
//!   same for a dashboard panel: its ticket holds the dashboard, the panel and the inputs too, and
//!   the download runs the panel (as many times as the link is followed within its minute: a
//!   panel runs again and again anyway).

use std::time::Duration;

use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use crate::model::{Principal, Role, Timestamp};
use crate::run::Format;
use crate::seal::Place;

use super::admission::Admission;
use super::call::{Answer, Call, principal_of};
use super::error::ApiError;
use super::panels::Panels;
use super::response::json_response;
use super::runs::Runs;
use crate::seal::Sealer;

/// What downloads read: the sealer of their tickets, admission, and the runs of queries and
/// panels their CSV comes from.
#[derive(Debug)]
pub(crate) struct Downloads {
    /// Seals and opens the tickets.
    pub(crate) sealer: Sealer,
    /// Who may run what.
    pub(crate) admission: Admission,
    /// Runs a stored query.
    pub(crate) runs: Runs,
    /// Runs a panel.
    pub(crate) panels: Panels,
}

/// How long a download URL works.
pub(crate) const TICKET_LIFETIME: Duration = Duration::from_secs(60);

/// Where the tickets' seals are bound (their additional data).
fn place() -> Place {
    Place::from_parts(&["console", "download-ticket"])
}

/// What a ticket seals, as JSON: each field encoded, never joined by a separator (a group
/// name holding a control character stays one group).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Ticket {
    /// The format's version: 2.
    v: u8,
    /// What it downloads.
    download: Download,
    /// Who it is for: user, role, groups, and whether an agent.
    user: String,
    role: String,
    groups: Vec<String>,
    /// When it ends (µs).
    expires: i64,
}

/// The version of [`Ticket`] written and read.
const TICKET_VERSION: u8 = 2;

/// What a ticket downloads.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Download {
    /// A stored query's one run.
    Query {
        /// The query's id.
        query: String,
    },
    /// A dashboard panel, with these inputs and this time range.
    Panel {
        dashboard: String,
        panel: String,
        inputs: serde_json::Value,
        #[serde(default)]
        time_range: serde_json::Value,
    },
}

/// The text a ticket for `download` by `principal` until `expires` seals.
fn ticket_text(download: Download, principal: &Principal, expires: Timestamp) -> String {
    let ticket = Ticket {
        v: TICKET_VERSION,
        download,
        user: principal.user.clone(),
        role: principal.role.as_str().to_owned(),
        groups: principal.groups.clone(),
        expires: expires.as_micros(),
    };
    serde_json::to_string(&ticket).unwrap_or_default()
}

/// What a ticket's text downloads, and for whom, while it lasts.
fn read_any_ticket(text: &str, now: Timestamp) -> Option<(Download, Principal)> {
    let ticket: Ticket = serde_json::from_str(text).ok()?;
    if ticket.v != TICKET_VERSION || now >= Timestamp::from_micros(ticket.expires) {
        return None;
    }
    let role: Role = ticket.role.parse().ok()?;
    let mut principal = Principal::member(ticket.user).role(role);
    principal.groups = ticket.groups;
    Some((ticket.download, principal))
}

impl Downloads {
    /// `POST …/queries/{id}/download`: `{"url"}`, where the query's CSV downloads once within a
    /// minute. Refused (as its run would be) when the caller may not run it now.
    pub(crate) async fn create_download(&self, call: Call<'_>) -> Answer {
        let principal = principal_of(call.caller)?.clone();
        if principal.agent {
            return Err(ApiError::Denied(
                "AI agents read results through their own tools".to_owned(),
            ));
        }
        let (query, _) = self
            .admission
            .query_in_reach(&principal, call.param("id"))
            .await?;
        if !crate::model::identity::same(&query.author, &principal.user)
            && principal.role != Role::SuperAdmin
        {
            return Err(ApiError::Denied(
                "only the query's author runs it (or a super admin)".to_owned(),
            ));
        }
        let expires = Timestamp::now().plus(TICKET_LIFETIME);
        let download = Download::Query {
            query: query.id.as_str().to_owned(),
        };
        self.ticket_url(&ticket_text(download, &principal, expires))
    }

    /// `POST /v1/dashboards/{id}/panels/{panel_id}/download`: `{"url"}`, where the panel's CSV
    /// (with the body's `inputs`) downloads within a minute. Refused (as its run would be) when
    /// the caller may not run the panel, or the inputs don't fit it.
    pub(crate) async fn create_panel_download(&self, mut call: Call<'_>) -> Answer {
        let principal = principal_of(call.caller)?.clone();
        if principal.agent {
            return Err(ApiError::Denied(
                "AI agents read results through their own tools".to_owned(),
            ));
        }
        let body = call.json().await?;
        let (dashboard, index) = self
            .admission
            .dashboard_panel(call.param("id"), call.param("panel_id"))
            .await?;
        let panel = &dashboard.panels[index];
        crate::validate::panel_inputs(
            panel,
            &body,
            &dashboard.presentation,
            crate::run::statement::Dialect::Postgres,
            chrono::Utc::now(),
        )?;
        let crate::model::PanelDetails::Query { credential_id, .. } = &panel.details;
        self.admission
            .panel_access(&principal, credential_id, 1)
            .await?;
        let inputs = body
            .get("inputs")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        let time_range = body
            .get("time_range")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        let expires = Timestamp::now().plus(TICKET_LIFETIME);
        let download = Download::Panel {
            dashboard: dashboard.id.as_str().to_owned(),
            panel: panel.id.as_str().to_owned(),
            inputs,
            time_range,
        };
        self.ticket_url(&ticket_text(download, &principal, expires))
    }

    /// The download URL of a ticket that seals `text`.
    fn ticket_url(&self, text: &str) -> Answer {
        let ticket = self.sealer.seal_token(text, &place()).map_err(|error| {
            tracing::error!(%error, "a download ticket could not be sealed");
            ApiError::Internal
        })?;
        Ok(json_response(
            StatusCode::OK,
            &json!({ "url": format!("/api/v1/console/downloads/csv?ticket={ticket}") }),
        ))
    }

    /// `GET /api/v1/console/downloads/csv?ticket=…`: the query's one run (or the panel's run),
    /// as CSV, an attachment.
    pub(crate) async fn download_csv(&self, call: Call<'_>) -> Answer {
        let gone = || {
            ApiError::Gone("the download link has expired or is not valid: ask again".to_owned())
        };
        let ticket = call
            .query
            .as_deref()
            .and_then(|query| {
                form_urlencoded::parse(query.as_bytes())
                    .find(|(name, _)| name == "ticket")
                    .map(|(_, value)| value.into_owned())
            })
            .ok_or_else(gone)?;
        let opened = self.sealer.open_token(&ticket, &place()).ok_or_else(gone)?;
        let text = opened.expose_str().ok_or_else(gone)?;
        let (download, principal) = read_any_ticket(text, Timestamp::now()).ok_or_else(gone)?;
        let mut origin = crate::model::Origin::clone(call.origin);
        origin.actor = crate::model::Actor::named(principal.user.clone());
        let (mut response, name) = match download {
            Download::Query { query } => {
                let response = self
                    .runs
                    .run_stored(
                        &principal,
                        &query,
                        &serde_json::Map::new(),
                        Format::Csv,
                        &origin,
                    )
                    .await?;
                (response, query)
            }
            Download::Panel {
                dashboard,
                panel,
                inputs,
                time_range,
            } => {
                let mut body = serde_json::Map::new();
                body.insert("inputs".to_owned(), inputs);
                body.insert("time_range".to_owned(), time_range);
                let response = self
                    .panels
                    .run_dashboard_panel(&principal, &dashboard, &panel, body, Format::Csv, &origin)
                    .await?;
                (response, panel)
            }
        };
        let disposition = format!("attachment; filename=\"{name}.csv\"");
        if let Ok(value) = HeaderValue::from_str(&disposition) {
            response
                .headers_mut()
                .insert(header::CONTENT_DISPOSITION, value);
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_reads_back_until_it_ends() {
        let ann = Principal::member("ann@example.com")
            .groups(["a", "b"])
            .role(Role::SuperAdmin);
        let now = Timestamp::now();
        let query = || Download::Query {
            query: "qry_1".to_owned(),
        };
        let text = ticket_text(query(), &ann, now.plus(TICKET_LIFETIME));
        let (download, principal) = read_any_ticket(&text, now).expect("a live ticket");
        assert_eq!((download, principal), (query(), ann.clone()));
        assert!(
            read_any_ticket(&text, now.plus(TICKET_LIFETIME)).is_none(),
            "ended"
        );
        assert!(read_any_ticket(&format!("{text}\nmore"), now).is_none());
        assert!(read_any_ticket(&text.replacen("\"v\":2", "\"v\":1", 1), now).is_none());
    }

    #[test]
    fn a_group_holding_a_separator_stays_one_group() {
        // A member of "ops\u{1f}admins" is not a member of "admins" (nor of "ops").
        let eve = Principal::member("eve\n@example.com").groups(["ops\u{1f}admins", "x\ny"]);
        let now = Timestamp::now();
        let text = ticket_text(
            Download::Query {
                query: "qry_1".to_owned(),
            },
            &eve,
            now.plus(TICKET_LIFETIME),
        );
        let (_, principal) = read_any_ticket(&text, now).expect("a live ticket");
        assert_eq!(principal.groups, ["ops\u{1f}admins", "x\ny"]);
        assert_eq!(principal.user, "eve\n@example.com");
    }

    #[test]
    fn a_panel_ticket_reads_back_with_its_inputs() {
        let ann = Principal::member("ann@example.com").groups(["a"]);
        let now = Timestamp::now();
        let inputs = json!({"since": "line\nbreak", "n": 3});
        let panel = || Download::Panel {
            dashboard: "dash_1".to_owned(),
            panel: "pl_1".to_owned(),
            inputs: inputs.clone(),
            time_range: json!({"from": "2026-12-01T00:00:00Z", "to": "2026-12-02T00:00:00Z"}),
        };
        let text = ticket_text(panel(), &ann, now.plus(TICKET_LIFETIME));
        let (download, principal) = read_any_ticket(&text, now).expect("a live ticket");
        assert_eq!((download, principal), (panel(), ann));
        assert!(
            read_any_ticket(&text, now.plus(TICKET_LIFETIME)).is_none(),
            "ended"
        );
    }
}
