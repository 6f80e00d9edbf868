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

use std::time::Duration;

use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use crate::model::{Principal, Role, Timestamp};
use crate::run::Format;
use crate::seal::Place;

use super::super::Shared;
use super::super::call::Call;
use super::super::error::ApiError;
use super::super::response::json_response;
use super::super::router::Answer;
use super::admission::principal_of;

/// How long a download URL works.
pub(in crate::service) const TICKET_LIFETIME: Duration = Duration::from_secs(60);

/// Where the tickets' seals are bound (their additional data).
fn place() -> Place {
    Place::from_parts(&["console", "download-ticket"])
}

/// The text a ticket seals: version, query, user, role, groups, expiry (µs).
fn ticket_text(query: &str, principal: &Principal, expires: Timestamp) -> String {
    let groups = principal.groups.join("\u{1f}");
    format!(
        "v1\n{query}\n{}\n{}\n{groups}\n{}",
        principal.user,
        principal.role.as_str(),
        expires.as_micros()
    )
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

impl Shared {
    /// `POST …/queries/{id}/download`: `{"url"}`, where the query's CSV downloads once within a
    /// minute. Refused (as its run would be) when the caller may not run it now.
    pub(in crate::service) async fn create_download(&self, call: Call<'_>) -> Answer {
        let principal = principal_of(call.caller)?.clone();
        if principal.agent {
            return Err(ApiError::Denied(
                "AI agents read results through their own tools".to_owned(),
            ));
        }
        let (query, _) = self.query_in_reach(&principal, call.param("id")).await?;
        if !crate::model::identity::same(&query.author, &principal.user)
            && principal.role != Role::SuperAdmin
        {
            return Err(ApiError::Denied(
                "only the query's author runs it (or a super admin)".to_owned(),
            ));
        }
        let expires = Timestamp::now().plus(TICKET_LIFETIME);
        let text = ticket_text(query.id.as_str(), &principal, expires);
        let ticket = self.sealer.seal_token(&text, &place()).map_err(|error| {
            tracing::error!(%error, "a download ticket could not be sealed");
            ApiError::Internal
        })?;
        Ok(json_response(
            StatusCode::OK,
            &json!({ "url": format!("/api/v1/console/downloads/csv?ticket={ticket}") }),
        ))
    }

    /// `GET /api/v1/console/downloads/csv?ticket=…`: the query's one run, as CSV, an attachment.
    pub(in crate::service) async fn download_csv(&self, call: Call<'_>) -> Answer {
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
        let (query, principal) = read_ticket(text, Timestamp::now()).ok_or_else(gone)?;
        let mut origin = call.origin.clone();
        origin.actor = crate::model::Actor::named(principal.user.clone());
        let mut response = self
            .run_stored(
                &principal,
                &query,
                &serde_json::Map::new(),
                Format::Csv,
                &origin,
            )
            .await?;
        let disposition = format!("attachment; filename=\"{query}.csv\"");
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
}
