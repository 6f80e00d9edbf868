//! Check-connection, answered in plain text: of a stored database
//! (`GET …/databases/{id}/check-connection/{username}`), and before saving, of a database in the
//! body (`POST …/databases/check-connection`) or of a stored one with the body's changes
//! (`POST …/databases/{id}/check-connection`). All three run [`CheckConnection::check_credential`].

use http::{Response, StatusCode};
use serde_json::Value;

use super::call::Answer;
use super::call::Call;
use super::error::ApiError;
use super::response::{ResponseBody, text_response};
use std::sync::Arc;
use std::time::Duration;

use crate::check::{CheckTarget, Checkers, TunnelDialer, not_built_message, scrub_message, tunnel};
use crate::metrics;
use crate::model::{Credential, Database, Timestamp};
use crate::seal::Sealer;
use crate::storage::Storage;
use crate::validate::{DatabaseBody, ValidationErrors, database_from_body, message};

/// The 422 message when `username` names no credential of the database checked.
pub(crate) const NO_SUCH_CREDENTIAL: &str = "does not name a credential of this database";

/// What check-connection reads: the storage, the sealer that opens the secrets, the checkers,
/// the tunnel dialer, the default timeout and whether checks are measured.
#[derive(Debug)]
pub(crate) struct CheckConnection {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Opens (and, for a body's secrets, seals) the credentials' secrets.
    pub(crate) sealer: Sealer,
    /// One checker per adapter.
    pub(crate) checkers: Checkers,
    /// How a database behind a tunnel is reached.
    pub(crate) tunnel_dialer: Option<Arc<dyn TunnelDialer>>,
    /// The timeout when the credential sets none.
    pub(crate) check_timeout: Duration,
    /// Whether checks are measured.
    pub(crate) metrics: bool,
}

impl CheckConnection {
    /// `GET …/databases/{id}/check-connection/{username}`.
    pub(crate) async fn check_connection(&self, call: Call<'_>) -> Answer {
        let (id, username) = (call.param("id"), call.param("username"));
        let not_found = || text_response(StatusCode::NOT_FOUND, "not found".to_owned());
        let Some(db) = self.storage.database(id).await? else {
            return Ok(not_found());
        };
        let Some(credential) = db.credential_by_username(username) else {
            return Ok(not_found());
        };
        self.check_credential(&db, credential).await
    }

    /// `POST …/databases/check-connection`: a database described in the body, unsaved.
    pub(crate) async fn check_unsaved(&self, call: Call<'_>) -> Answer {
        self.check_body(None, call).await
    }

    /// `POST …/databases/{id}/check-connection`: the stored database with the body's changes
    /// merged over it, unsaved.
    pub(crate) async fn check_edited(&self, call: Call<'_>) -> Answer {
        let id = call.param("id").to_owned();
        self.check_body(Some(&id), call).await
    }

    /// Checks a database that is not stored: the body validated as a create (`stored` is
    /// `None`) or as an update of the stored database `stored` (the changes merged over it), with
    /// `username` naming the credential to try (left out: the default credential, else the
    /// first). Nothing is stored; the secrets of the body are
    /// sealed and opened exactly as those of a stored database are.
    async fn check_body(&self, stored: Option<&str>, mut call: Call<'_>) -> Answer {
        let body = DatabaseBody::from(call.json().await?);
        let base = match stored {
            Some(id) => Some(self.storage.database(id).await?.ok_or(ApiError::NotFound)?),
            None => None,
        };
        let mut errors = ValidationErrors::new();
        // `None`: left out, the default credential is tried.
        let mut username = None;
        match body.get("username") {
            None => {}
            Some(Value::String(name)) if !name.trim().is_empty() => username = Some(name.as_str()),
            Some(Value::Null | Value::String(_)) => errors.add("username", message::BLANK),
            Some(_) => errors.add("username", message::INVALID),
        }
        let db = database_from_body(base.as_ref(), &body, Timestamp::now(), &self.sealer);
        let db = match db {
            Ok(db) if errors.is_empty() => db,
            Ok(_) => return Err(ApiError::Invalid(errors)),
            Err(found) => {
                errors.merge(found);
                return Err(ApiError::Invalid(errors));
            }
        };
        let credential = match username {
            Some(username) => db.credential_by_username(username),
            None => db
                .credentials
                .iter()
                .find(|credential| credential.default_credential)
                .or_else(|| db.credentials.first()),
        }
        .ok_or_else(|| ValidationErrors::single("username", NO_SUCH_CREDENTIAL))?;
        self.check_credential(&db, credential).await
    }

    /// Opens a real connection with `credential` of `db`: `ok`, the driver's error in one line
    /// (its secrets scrubbed), or the timeout.
    async fn check_credential(
        &self,
        db: &Database,
        credential: &Credential,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let Some(checker) = self.checkers.get(db.adapter) else {
            return Ok(text_response(StatusCode::OK, not_built_message(db.adapter)));
        };
        let timeout = credential
            .timeout
            .map(|secs| std::time::Duration::from_secs(u64::from(secs)))
            .unwrap_or(self.check_timeout);
        let target = CheckTarget::open(&self.sealer, db, credential, timeout)
            .map_err(|error| error.answer("password"))?;
        let dialer = self.tunnel_dialer.as_deref();
        let check = tunnel::check_through(checker.as_ref(), &target, dialer);
        let started = std::time::Instant::now();
        let (outcome, answer) = match tokio::time::timeout(target.timeout, check).await {
            Ok(Ok(())) => ("ok", "ok".to_owned()),
            Ok(Err(message)) => ("error", scrub_message(&message, target.secrets())),
            Err(_) => (
                "timeout",
                format!(
                    "connection timed out after {} s",
                    target.timeout.as_secs_f64()
                ),
            ),
        };
        if self.metrics {
            metrics::record_check(db.adapter.as_str(), outcome, started.elapsed());
        }
        Ok(text_response(StatusCode::OK, answer))
    }
}
