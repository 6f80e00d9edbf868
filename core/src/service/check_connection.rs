//! `GET …/databases/{id}/check-connection/{username}`: plain-text answers.

use http::{Response, StatusCode};

use super::Shared;
use super::error::ApiError;
use super::metrics;
use super::response::{ResponseBody, text_response};
use crate::check::{CheckTarget, not_built_message, scrub_message, tunnel};
use crate::model::{SealedSecret, TlsField};
use crate::seal::Place;

impl Shared {
    pub(super) async fn check_connection(
        &self,
        id: &str,
        username: &str,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let not_found = || text_response(StatusCode::NOT_FOUND, "not found".to_owned());
        let Some(db) = self.storage.database(id).await? else {
            return Ok(not_found());
        };
        let Some(credential) = db.credential_by_username(username) else {
            return Ok(not_found());
        };
        let Some(checker) = self.checkers.get(db.adapter) else {
            return Ok(text_response(StatusCode::OK, not_built_message(db.adapter)));
        };
        // The only place secrets are opened.
        let open = |sealed: Option<&SealedSecret>, place: Place| {
            sealed
                .map(|sealed| self.sealer.open(sealed, &place))
                .transpose()
                .map_err(|error| {
                    tracing::error!(%error, "a stored secret does not open");
                    ApiError::Internal
                })
        };
        let password = open(
            credential.password.as_ref(),
            Place::password(db.id.as_str(), credential.id.as_str()),
        )?;
        let tls = |field| open(db.tls.get(field), Place::tls(db.id.as_str(), field));
        let target = CheckTarget {
            adapter: db.adapter,
            host: credential
                .hostname
                .clone()
                .unwrap_or_else(|| db.hostname.clone()),
            port: db.effective_port(),
            database: db.database.clone(),
            username: credential.username.clone(),
            password,
            ssl: db.ssl,
            verify_server_hostname: db.verify_server_hostname,
            ca_cert: tls(TlsField::CaCert)?,
            client_cert: tls(TlsField::ClientCert)?,
            client_key: tls(TlsField::ClientKey)?,
            connection_parameters: db.connection_parameters.clone(),
            tunnel_id: db.tunnel_id.clone(),
            connect_via: None,
            timeout: credential
                .timeout
                .map(|secs| std::time::Duration::from_secs(u64::from(secs)))
                .unwrap_or(self.check_timeout),
        };
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
