//! `GET …/databases/{id}/check-connection/{username}`: plain-text answers.

use http::{Response, StatusCode};

use super::Shared;
use crate::check::{CheckTarget, not_built_message, scrub_message, tunnel};
use crate::error::{ApiError, text_response};
use crate::service::ResponseBody;

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
        let target = CheckTarget {
            adapter: db.adapter,
            host: credential
                .hostname
                .clone()
                .unwrap_or_else(|| db.hostname.clone()),
            port: db.effective_port(),
            database: db.database.clone(),
            username: credential.username.clone(),
            password: credential.password.clone(),
            ssl: db.ssl,
            verify_server_hostname: db.verify_server_hostname,
            ca_cert: db.tls.ca_cert.clone(),
            client_cert: db.tls.client_cert.clone(),
            client_key: db.tls.client_key.clone(),
            connection_parameters: db.connection_parameters.clone(),
            tunnel_id: db.tunnel_id.clone(),
            connect_via: None,
            timeout: credential
                .timeout
                .map(|secs| std::time::Duration::from_secs(u64::from(secs)))
                .unwrap_or(self.check_timeout),
        };
        let Some(checker) = self.checkers.get(target.adapter) else {
            return Ok(text_response(
                StatusCode::OK,
                not_built_message(target.adapter),
            ));
        };
        let dialer = self.tunnel_dialer.as_deref();
        let check = tunnel::check_through(checker.as_ref(), &target, dialer);
        let answer = match tokio::time::timeout(target.timeout, check).await {
            Ok(Ok(())) => "ok".to_owned(),
            Ok(Err(message)) => scrub_message(&message, target.secrets()),
            Err(_) => format!(
                "connection timed out after {} s",
                target.timeout.as_secs_f64()
            ),
        };
        Ok(text_response(StatusCode::OK, answer))
    }
}
