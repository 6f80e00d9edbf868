//! The door's routes (docs/door.md): a person's door passwords (minted from their browser
//! session, shown once, stored as a digest, listed and revoked) and their open door sessions
//! (listed and ended).
//!
//! - `GET …/me/door`: where the door is, the longest lifetime a password may have, the
//!   person's passwords and open sessions.
//! - `POST …/me/door/passwords`: `{"lifetime_days": n}` (default 30, at most the server's
//!   maximum); 201 with the password, once.
//! - `DELETE …/me/door/passwords/{id}`: revokes one (its open sessions end).
//! - `DELETE …/me/door/sessions/{id}`: ends an open session (what it runs is cancelled).

use std::time::Duration;

use http::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::Door;
use super::live::DoorSessionView;
use crate::model::{AuditAction, AuditEvent, Principal, Scope, Session, SessionKind, Timestamp};
use crate::service::browser::no_content;
use crate::service::call::{Answer, Call, principal_of};
use crate::service::error::ApiError;
use crate::service::response::json_response;
use crate::storage::WriteLog;
use crate::validate::ValidationErrors;

/// The most live door passwords one person holds.
pub(crate) const MAX_PASSWORDS: usize = 20;

const DAY: u64 = 24 * 3600;

#[derive(Serialize)]
struct PasswordView {
    id: String,
    created_at: String,
    expires_at: String,
}

#[derive(Serialize)]
struct DoorView {
    /// `host:port`, or `null` when the door is off.
    address: Option<String>,
    max_password_lifetime_days: u64,
    passwords: Vec<PasswordView>,
    sessions: Vec<DoorSessionView>,
}

#[derive(Serialize)]
struct MintedView {
    id: String,
    password: String,
    expires_at: String,
}

impl Door {
    /// The person a door route serves: a person signed in to the console (an AI agent's door
    /// is MCP).
    fn person<'c>(&self, call: &'c Call<'_>) -> Result<&'c Principal, ApiError> {
        let principal = principal_of(call.caller)?;
        if principal.agent {
            return Err(ApiError::Denied(
                "AI agents have no door: theirs is MCP".to_owned(),
            ));
        }
        Ok(principal)
    }

    /// `user`'s live door passwords, oldest first.
    async fn passwords_of(&self, user: &str) -> Result<Vec<Session>, ApiError> {
        let now = Timestamp::now();
        let mut mine: Vec<Session> = self
            .storage
            .list_sessions()
            .await?
            .into_iter()
            .filter(|s| {
                s.kind == SessionKind::DoorPassword
                    && crate::model::identity::same(&s.principal.user, user)
                    && s.expires_at > now
            })
            .collect();
        mine.sort_by_key(|s| s.created_at);
        Ok(mine)
    }

    /// `GET …/me/door`.
    pub(crate) async fn get_my_door(&self, call: Call<'_>) -> Answer {
        let principal = self.person(&call)?;
        let passwords = self
            .passwords_of(&principal.user)
            .await?
            .iter()
            .map(|s| PasswordView {
                id: s.id.as_str().to_owned(),
                created_at: s.created_at.to_string(),
                expires_at: s.expires_at.to_string(),
            })
            .collect();
        Ok(json_response(
            StatusCode::OK,
            &DoorView {
                address: self.options.address.clone(),
                max_password_lifetime_days: self.options.max_password_lifetime.as_secs() / DAY,
                passwords,
                sessions: self.live.of_user(&principal.user),
            },
        ))
    }

    /// `POST …/me/door/passwords`: from the person's browser session only (a key is itself a
    /// door password; a leaked one must not mint more).
    pub(crate) async fn create_door_password(&self, mut call: Call<'_>) -> Answer {
        let principal = self.person(&call)?.clone();
        let refused = || {
            ApiError::Denied(
                "a door password is minted in the console, signed in (not with a key)".to_owned(),
            )
        };
        let caller = call.caller.ok_or_else(refused)?;
        let session_id = caller.actor.id.clone().ok_or_else(refused)?;
        let body = call.json().await?;
        if let Some(key) = body.keys().find(|k| k.as_str() != "lifetime_days") {
            return Err(ValidationErrors::single(key, "is not a field of a door password").into());
        }
        let max_days = (self.options.max_password_lifetime.as_secs() / DAY).max(1);
        let days = match body.get("lifetime_days") {
            None | Some(Value::Null) => {
                (super::DEFAULT_PASSWORD_LIFETIME.as_secs() / DAY).min(max_days)
            }
            // A whole number, however JSON writes it (`32` or `32.0`).
            Some(value) => value
                .as_u64()
                .or_else(|| {
                    value
                        .as_f64()
                        .filter(|f| f.fract() == 0.0 && (1.0..=3650.0).contains(f))
                        .map(|f| f as u64)
                })
                .filter(|d| (1..=max_days).contains(d))
                .ok_or_else(|| {
                    ValidationErrors::single(
                        "lifetime_days",
                        format!("must be a whole number of days from 1 to {max_days}"),
                    )
                })?,
        };
        let session = self
            .storage
            .list_sessions()
            .await?
            .into_iter()
            .find(|s| s.kind == SessionKind::Browser && s.id.as_str() == session_id)
            .ok_or_else(refused)?;
        if self.passwords_of(&principal.user).await?.len() >= MAX_PASSWORDS {
            return Err(ApiError::Conflict(format!(
                "a person holds at most {MAX_PASSWORDS} door passwords: revoke one first"
            )));
        }
        let (minted, secret) = Session::mint(
            SessionKind::DoorPassword,
            Principal {
                agent: false,
                ..principal
            },
            Scope::Query,
            session.method,
            Duration::from_secs(days * DAY),
        );
        let event = AuditEvent::new(
            call.origin,
            AuditAction::DoorPasswordCreate,
            minted.id.as_str(),
            vec![
                format!("for {}", minted.principal.user),
                format!("{days} days"),
            ],
        );
        let view = MintedView {
            id: minted.id.as_str().to_owned(),
            password: secret.expose_str().unwrap_or_default().to_owned(),
            expires_at: minted.expires_at.to_string(),
        };
        self.storage
            .create_session(minted, None, WriteLog::from(event))
            .await?;
        Ok(json_response(StatusCode::CREATED, &view))
    }

    /// `DELETE …/me/door/passwords/{id}`: revokes one of the person's door passwords (404 for
    /// anyone else's); the sessions it opened end.
    pub(crate) async fn revoke_door_password(&self, call: Call<'_>) -> Answer {
        let principal = self.person(&call)?;
        let id = call.param("id");
        let mine = self.passwords_of(&principal.user).await?;
        let Some(password) = mine.iter().find(|s| s.id.as_str() == id) else {
            return Err(ApiError::NotFound);
        };
        let event = AuditEvent::new(
            call.origin,
            AuditAction::DoorPasswordRevoke,
            password.id.as_str(),
            vec!["by its user".to_owned()],
        );
        match self
            .storage
            .remove_session(password.id.as_str(), WriteLog::from(event))
            .await
        {
            Ok(()) | Err(crate::storage::StorageError::NotFound) => {}
            Err(error) => return Err(error.into()),
        }
        self.live.end_password(id);
        Ok(no_content())
    }

    /// `DELETE …/me/door/sessions/{id}`: ends one of the person's open door sessions on this
    /// node (404 for anyone else's, or one on another node).
    pub(crate) async fn end_door_session(&self, call: Call<'_>) -> Answer {
        let principal = self.person(&call)?;
        if self.live.end(&principal.user, call.param("id")) {
            Ok(no_content())
        } else {
            Err(ApiError::NotFound)
        }
    }
}
