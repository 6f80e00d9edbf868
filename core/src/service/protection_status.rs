//! `GET …/databases/{id}/data-protection/status`: whether each credential of a protected
//! database may run, checked the way a run checks it (docs/data-protection.md, "How it is
//! enforced"). Each credential runs `SELECT 1` under the database's policies, read-only: its
//! session is verified before anything of the statement reaches the server, so the answer is
//! `verified`, or `refused` with the database's own list of what to change and the statements
//! that change it, or `unreachable`, or `unsupported` (an adapter whose data protection is not
//! enforced by the database yet). One `data_protection.check` event per credential.

use http::StatusCode;
use serde_json::{Value, json};

use crate::run::Format;

use super::admission::{Admission, Guarded};
use super::call::{Answer, Call};
use super::error::ApiError;
use super::launch::{Launcher, Record, Run};
use super::provisioning::Provisioner;
use super::response::json_response;

/// What the status reads: admission (the database with its access control) and
/// the launcher each credential's probe runs through.
#[derive(Debug)]
pub(crate) struct ProtectionStatus {
    /// Reads the database with its access control.
    pub(crate) admission: Admission,
    /// Runs the probes.
    pub(crate) launcher: Launcher,
    /// The provisioning plan, when the document names a provisioning credential.
    pub(crate) provisioner: Provisioner,
}

/// The statement each credential runs.
const PROBE: &str = "SELECT 1";

impl ProtectionStatus {
    /// `GET …/databases/{id}/data-protection/status`.
    pub(crate) async fn get_data_protection_status(&self, call: Call<'_>) -> Answer {
        let guarded = self
            .admission
            .administered(call.caller, call.param("id"))
            .await?;
        // The plan first (applied first when the document says auto_apply), so that the
        // probes check the logins as they are after it.
        let planned = match self.provisioner.plan_of(&guarded, call.origin).await {
            Ok(planned) => Ok(planned),
            Err(error @ (ApiError::Unavailable | ApiError::StorageFull | ApiError::Internal)) => {
                return Err(error);
            }
            Err(other) => Err(other.body()["errors"].clone()),
        };
        let provisioning = match &planned {
            Ok(None) => Value::Null,
            Ok(Some((ready, plan))) => json!({
                "username": ready.provisioning.credential.username,
                "empty": plan.is_empty(),
                "unmatched": plan.unmatched,
                "notes": plan.notes,
            }),
            Err(errors) => json!({ "error": errors }),
        };
        let steps_of = |username: &str| {
            let Ok(Some((ready, plan))) = &planned else {
                return None;
            };
            ready.roles.iter().any(|r| r == username).then(|| {
                plan.roles
                    .iter()
                    .find(|r| r.role == username)
                    .map(|r| r.steps.clone())
                    .unwrap_or_default()
            })
        };
        if self.launcher.protection_of(&guarded).await?.is_none() {
            return Ok(json_response(
                StatusCode::OK,
                &json!({ "database_id": guarded.db.id.as_str(), "protected": false, "credentials": [], "provisioning": provisioning }),
            ));
        }
        let mut credentials = Vec::new();
        for credential in guarded.db.credentials.clone() {
            let outcome = self.probe(&guarded, credential.clone(), call.origin).await;
            let (status, message) = match outcome {
                Ok(()) => ("verified", None),
                Err(ApiError::Invalid(errors)) => (
                    "refused",
                    Some(serde_json::to_value(&errors).unwrap_or(Value::Null)),
                ),
                Err(ApiError::BadGateway(text) | ApiError::GatewayTimeout(text)) => {
                    ("unreachable", Some(json!(text)))
                }
                Err(ApiError::NotImplemented(text)) => ("unsupported", Some(json!(text))),
                Err(
                    error @ (ApiError::Unavailable | ApiError::StorageFull | ApiError::Internal),
                ) => {
                    return Err(error);
                }
                Err(other) => ("refused", Some(other.body()["errors"].clone())),
            };
            let steps = steps_of(&credential.username);
            // Verified, but the plan would still change it (a new table, a new column): out
            // of date.
            let status = match &steps {
                Some(steps) if status == "verified" && !steps.is_empty() => "out_of_date",
                _ => status,
            };
            credentials.push(json!({
                "credential_id": credential.id.as_str(),
                "username": credential.username,
                "status": status,
                "problems": message,
                "managed": steps.is_some(),
                "plan": steps.unwrap_or_default(),
            }));
        }
        Ok(json_response(
            StatusCode::OK,
            &json!({ "database_id": guarded.db.id.as_str(), "protected": true, "credentials": credentials, "provisioning": provisioning }),
        ))
    }

    /// Runs [`PROBE`] as `credential` under the database's data protection.
    async fn probe(
        &self,
        guarded: &Guarded,
        credential: crate::model::Credential,
        origin: &crate::model::Origin,
    ) -> Result<(), ApiError> {
        let runner = self.launcher.runner_for(guarded.db.adapter)?;
        let protection = self
            .launcher
            .protection_for_run(guarded, &*runner, PROBE, true, None)
            .await?
            .protection;
        let record = Record::ProtectionCheck {
            database_id: guarded.db.id.as_str().to_owned(),
            credential_id: credential.id.as_str().to_owned(),
            origin: origin.clone(),
        };
        let answer = self
            .launcher
            .run_collected(Run {
                runner,
                db: guarded.db.clone(),
                credential,
                statement: PROBE.to_owned(),
                inputs: None,
                max_rows: 1,
                read_only: true,
                format: Format::Json,
                record,
                protection,
                shorter_timeout: None,
                row_stamp: None,
            })
            .await?;
        match answer.error {
            None => Ok(()),
            Some(detail) => Err(ApiError::BadGateway(detail)),
        }
    }
}
