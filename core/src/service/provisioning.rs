//! Provisioning (docs/data-protection.md, "Provisioning"): with the data protection document's
//! provisioning credential, `GET …/data-protection/plan` computes the statements that give each
//! of the database's credentials what the policies allow (and no more than the provisioning
//! login reads), each with its reason, and `POST …/data-protection/apply` runs them (PostgreSQL:
//! one transaction, serialized across nodes by an advisory lock, the plan computed again under
//! it), with one `data_protection.apply` audit event naming what changed.
//! `GET …/data-protection/provisioning/check-connection` tries the login as check-connection
//! tries a credential.

use std::sync::Arc;
use std::time::Duration;

use http::StatusCode;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use super::admission::{Admission, Guarded};
use super::call::{Answer, Call};
use super::error::ApiError;
use super::launch::Launcher;
use super::response::{json_response, text_response};
use crate::check::{CheckTarget, TunnelDialer, scrub_message};
use crate::model::{AuditAction, AuditEvent, Provisioning};
use crate::run::protect::Protection;
use crate::run::protect::plan::{Plan, Provision, ProvisionError};
use crate::run::provision::provision;
use crate::seal::Sealer;
use crate::storage::Storage;
use crate::validate::ValidationErrors;

/// The longest a plan or an apply may take (connecting takes at most the check timeout): an
/// apply cut short is rolled back with its connection.
const WORK_TIMEOUT: Duration = Duration::from_secs(120);

/// What the provisioning routes read (the status reads it too: a plan out of date).
#[derive(Clone, Debug)]
pub(crate) struct Provisioner {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Reads the database with its access control.
    pub(crate) admission: Admission,
    /// The protection chain of a database.
    pub(crate) launcher: Launcher,
    /// Opens the provisioning password.
    pub(crate) sealer: Sealer,
    /// Dials a database's tunnel.
    pub(crate) tunnel_dialer: Option<Arc<dyn TunnelDialer>>,
    /// How long connecting (and each plan or apply) may take.
    pub(crate) timeout: Duration,
}

/// A database ready to provision: it, its provisioning credential, the logins to provision and
/// the protection they get.
pub(crate) struct Ready {
    guarded: Guarded,
    /// The provisioning credential and its settings.
    pub(crate) provisioning: Provisioning,
    /// The logins provisioned: the database's credentials but the provisioning one.
    pub(crate) roles: Vec<String>,
    protection: Protection,
}

impl Provisioner {
    /// `GET …/databases/{id}/data-protection/plan`.
    pub(crate) async fn get_data_protection_plan(&self, call: Call<'_>) -> Answer {
        let ready = self.ready(call.caller, call.param("id")).await?;
        let plan = self.provision(&ready, Provision::Plan).await?;
        Ok(json_response(StatusCode::OK, &answer(&ready, &plan)))
    }

    /// `POST …/databases/{id}/data-protection/apply`.
    pub(crate) async fn apply_data_protection(&self, call: Call<'_>) -> Answer {
        let ready = self.ready(call.caller, call.param("id")).await?;
        let plan = self.apply(&ready, call.origin).await?;
        let mut body = answer(&ready, &plan);
        body["applied"] = json!(plan.len());
        Ok(json_response(StatusCode::OK, &body))
    }

    /// `GET …/databases/{id}/data-protection/catalog`: the columns the provisioning login sees
    /// in the schemas provisioned (the console's column picker).
    pub(crate) async fn get_data_protection_catalog(&self, call: Call<'_>) -> Answer {
        let ready = self.ready(call.caller, call.param("id")).await?;
        let plan = self.provision(&ready, Provision::Catalog).await?;
        Ok(json_response(
            StatusCode::OK,
            &json!({ "database_id": ready.guarded.db.id.as_str(), "columns": plan.catalog }),
        ))
    }

    /// Applies `ready`'s plan: what it applied, with one audit event by `origin` when it
    /// changed something.
    pub(crate) async fn apply(
        &self,
        ready: &Ready,
        origin: &crate::model::Origin,
    ) -> Result<Plan, ApiError> {
        let lock = lock_key(ready.guarded.db.id.as_str());
        let plan = self.provision(ready, Provision::Apply(lock)).await?;
        if !plan.is_empty() {
            let changes = plan
                .roles
                .iter()
                .filter(|r| !r.steps.is_empty())
                .map(|r| format!("{}: {} statements", r.role, r.steps.len()))
                .collect();
            let event = AuditEvent::new(
                origin,
                AuditAction::ProtectionApply,
                ready.guarded.db.id.as_str(),
                changes,
            );
            self.storage.append_log(event.into()).await?;
        }
        Ok(plan)
    }

    /// `GET …/databases/{id}/data-protection/provisioning/check-connection`.
    pub(crate) async fn check_provisioning_connection(&self, call: Call<'_>) -> Answer {
        let ready = self.ready(call.caller, call.param("id")).await?;
        let text = match self.provision(&ready, Provision::Connect).await {
            Ok(_) => "ok".to_owned(),
            Err(ApiError::BadGateway(message) | ApiError::GatewayTimeout(message)) => message,
            Err(other) => return Err(other),
        };
        Ok(text_response(StatusCode::OK, text))
    }

    /// The plan of `guarded`, when its document names a provisioning credential: applied
    /// first when the document says `auto_apply` (by `origin`). `None` without one.
    pub(crate) async fn plan_of(
        &self,
        guarded: &Guarded,
        origin: &crate::model::Origin,
    ) -> Result<Option<(Ready, Plan)>, ApiError> {
        let Some(ready) = self.ready_of(guarded.clone()).await? else {
            return Ok(None);
        };
        let plan = self.provision(&ready, Provision::Plan).await?;
        if ready.provisioning.auto_apply && !plan.is_empty() {
            self.apply(&ready, origin).await?;
            let plan = self.provision(&ready, Provision::Plan).await?;
            return Ok(Some((ready, plan)));
        }
        Ok(Some((ready, plan)))
    }

    /// Database `id` (which `caller` administers) with a provisioning credential.
    async fn ready(
        &self,
        caller: Option<&crate::auth::Caller>,
        id: &str,
    ) -> Result<Ready, ApiError> {
        let guarded = self.admission.administered(caller, id).await?;
        self.ready_of(guarded).await?.ok_or_else(|| {
            ValidationErrors::single(
                "provisioning",
                "the data protection document names no provisioning credential: PUT one \
                 (username and password) first",
            )
            .into()
        })
    }

    /// `guarded` with its provisioning credential; `None` without one.
    async fn ready_of(&self, guarded: Guarded) -> Result<Option<Ready>, ApiError> {
        let Some(provisioning) = guarded
            .access
            .as_ref()
            .and_then(|access| access.data_protection.provisioning.clone())
        else {
            return Ok(None);
        };
        let roles: Vec<String> = guarded
            .db
            .credentials
            .iter()
            .map(|c| c.username.clone())
            .filter(|name| *name != provisioning.credential.username)
            .collect();
        let protection = self
            .launcher
            .protection_of(&guarded)
            .await?
            .map(|p| (*p).clone())
            .unwrap_or_default();
        Ok(Some(Ready {
            guarded,
            provisioning,
            roles,
            protection,
        }))
    }

    /// Connects as the provisioning credential (through the database's tunnel when it has
    /// one) and does `what`, within the timeout. A connection that fails is 502 with the
    /// driver's message, secrets scrubbed; what the database refuses is 422.
    async fn provision(&self, ready: &Ready, what: Provision) -> Result<Plan, ApiError> {
        let target = CheckTarget::open(
            &self.sealer,
            &ready.guarded.db,
            &ready.provisioning.credential,
            self.timeout,
        )
        .map_err(|error| error.answer("provisioning"))?;
        let work = async {
            let mut through = target.clone();
            let endpoint = match target.tunnel_id.as_deref() {
                None => None,
                Some(tunnel) => {
                    let dialer = self.tunnel_dialer.as_deref().ok_or_else(|| {
                        ProvisionError::Connect(crate::check::tunnel::no_dialer_message(tunnel))
                    })?;
                    let endpoint = dialer
                        .forward(tunnel, &target.host, target.port)
                        .await
                        .map_err(|e| {
                            ProvisionError::Connect(format!(
                                "tunnel \"{tunnel}\" could not forward: {e}"
                            ))
                        })?;
                    through.connect_via = Some(endpoint.local_addr());
                    Some(endpoint)
                }
            };
            let done = provision(
                &through,
                &ready.protection,
                &ready.roles,
                &ready.provisioning.schemas,
                what,
            )
            .await;
            drop(endpoint);
            done
        };
        let scrub = |message: &str| scrub_message(message, target.secrets());
        match tokio::time::timeout(self.timeout.max(WORK_TIMEOUT), work).await {
            Ok(Ok(plan)) => Ok(plan),
            Ok(Err(ProvisionError::Connect(message))) => Err(ApiError::BadGateway(format!(
                "the provisioning login could not connect: {}",
                scrub(&message)
            ))),
            Ok(Err(ProvisionError::Refused(message))) => {
                Err(ValidationErrors::single("provisioning", scrub(&message)).into())
            }
            Ok(Err(ProvisionError::NotBuilt)) => Err(ValidationErrors::single(
                "provisioning",
                format!(
                    "provisioning is built for PostgreSQL and MariaDB; on {} the roles are made by hand and \
                     verified (docs/data-protection.md)",
                    ready.guarded.db.adapter.as_str()
                ),
            )
            .into()),
            Err(_) => Err(ApiError::GatewayTimeout(format!(
                "provisioning did not finish within {} s",
                self.timeout.max(WORK_TIMEOUT).as_secs_f64()
            ))),
        }
    }
}

/// The advisory lock of database `id`'s apply: the same on every node.
fn lock_key(id: &str) -> i64 {
    let digest = Sha256::digest(format!("dbconsole provisioning {id}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

/// A plan as answered.
fn answer(ready: &Ready, plan: &Plan) -> serde_json::Value {
    json!({
        "database_id": ready.guarded.db.id.as_str(),
        "provisioning_username": ready.provisioning.credential.username,
        "empty": plan.is_empty(),
        "roles": plan.roles,
        "unmatched": plan.unmatched,
        "notes": plan.notes,
    })
}
