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

/// Who a ticket is for and until when: user, role, groups, expiry (µs), one a line.
fn holder_lines(principal: &Principal, expires: Timestamp) -> String {
    let groups = principal.groups.join("\u{1f}");
    format!(
        "{}\n{}\n{groups}\n{}",
        principal.user,
        principal.role.as_str(),
        expires.as_micros()
    )
}

/// The text a ticket seals: version, query, then the [`holder_lines`].
fn ticket_text(query: &str, principal: &Principal, expires: Timestamp) -> String {
    format!("v1\n{query}\n{}", holder_lines(principal, expires))
}

/// The text a panel's ticket seals: version, dashboard, panel, the [`holder_lines`], and the
/// inputs as JSON (one line: JSON escapes its newlines).
fn panel_ticket_text(
    dashboard: &str,
    panel: &str,
    principal: &Principal,
    expires: Timestamp,
    inputs: &serde_json::Value,
) -> String {
    format!(
        "p1\n{dashboard}\n{panel}\n{}\n{inputs}",
        holder_lines(principal, expires)
    )
}

/// What a ticket downloads.
#[derive(Debug, PartialEq)]
enum Download {
    /// A stored query's one run.
    Query(String),
    /// A dashboard panel, with these inputs.
    Panel {
        dashboard: String,
        panel: String,
        inputs: serde_json::Value,
    },
}

/// What a ticket's text downloads, and for whom, while it lasts.
fn read_any_ticket(text: &str, now: Timestamp) -> Option<(Download, Principal)> {
    if let Some(rest) = text.strip_prefix("p1\n") {
        let (head, inputs) = rest.rsplit_once('\n')?;
        let (dashboard, head) = head.split_once('\n')?;
        let (panel, head) = head.split_once('\n')?;
        let (_, principal) = read_ticket(&format!("v1\n-\n{head}"), now)?;
        let inputs: serde_json::Value = serde_json::from_str(inputs).ok()?;
        let download = Download::Panel {
            dashboard: dashboard.to_owned(),
            panel: panel.to_owned(),
            inputs,
        };
        return Some((download, principal));
    }
    read_ticket(text, now).map(|(query, principal)| (Download::Query(query), principal))
}

/// The query and principal of a ticket's text, while it lasts.
fn read_ticket(text: &str, now: Timestamp) -> Option<(String, Principal)> {
    let mut lines = text.split('\n');
    if lines.next()? != "v1" {
        return None;
    }
    let query = lines.next()?.to_owned();
    let user = lines.next()?.to_owned();
    let role: Role = lines.next()?.parse().ok()?;
    let groups = lines.next()?;
    let expires = Timestamp::from_micros(lines.next()?.parse().ok()?);
    if now >= expires || lines.next().is_some() {
        return None;
    }
    let mut principal = Principal::member(user).role(role);
    principal.groups = groups
        .split('\u{1f}')
        .filter(|g| !g.is_empty())
        .map(str::to_owned)
        .collect();
    Some((query, principal))
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
        self.ticket_url(&ticket_text(query.id.as_str(), &principal, expires))
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
        crate::validate::panel_inputs(panel, &body)?;
        let crate::model::PanelDetails::Query { credential_id, .. } = &panel.details;
        self.admission
            .panel_access(&principal, credential_id, 1)
            .await?;
        let inputs = body
            .get("inputs")
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        let expires = Timestamp::now().plus(TICKET_LIFETIME);
        let text = panel_ticket_text(
            dashboard.id.as_str(),
            panel.id.as_str(),
            &principal,
            expires,
            &inputs,
        );
        self.ticket_url(&text)
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
            Download::Query(query) => {
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
            } => {
                let mut body = serde_json::Map::new();
                body.insert("inputs".to_owned(), inputs);
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
        let text = ticket_text("qry_1", &ann, now.plus(TICKET_LIFETIME));
        let (query, principal) = read_ticket(&text, now).expect("a live ticket");
        assert_eq!((query.as_str(), principal), ("qry_1", ann.clone()));
        assert!(
            read_ticket(&text, now.plus(TICKET_LIFETIME)).is_none(),
            "ended"
        );
        assert!(read_ticket(&format!("{text}\nmore"), now).is_none());
        assert!(read_ticket(&text.replacen("v1", "v2", 1), now).is_none());
    }

    #[test]
    fn a_panel_ticket_reads_back_with_its_inputs() {
        let ann = Principal::member("ann@example.com").groups(["a"]);
        let now = Timestamp::now();
        let inputs = json!({"since": "line\nbreak", "n": 3});
        let text = panel_ticket_text("dash_1", "pl_1", &ann, now.plus(TICKET_LIFETIME), &inputs);
        let (download, principal) = read_any_ticket(&text, now).expect("a live ticket");
        assert_eq!(principal, ann);
        assert_eq!(
            download,
            Download::Panel {
                dashboard: "dash_1".to_owned(),
                panel: "pl_1".to_owned(),
                inputs,
            }
        );
        assert!(
            read_any_ticket(&text, now.plus(TICKET_LIFETIME)).is_none(),
            "ended"
        );
        let query = ticket_text("qry_1", &ann, now.plus(TICKET_LIFETIME));
        assert_eq!(
            read_any_ticket(&query, now).map(|(d, _)| d),
            Some(Download::Query("qry_1".to_owned()))
        );
    }
}
