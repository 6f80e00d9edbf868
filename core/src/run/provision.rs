//! Provisioning, for whichever adapter builds it (docs/data-protection.md, "Provisioning"): the
//! one entry the service calls ([`provision`]); the plan's types are
//! [`super::protect::plan`], each adapter's work its own (`run::postgres::provision`, `run::mysql::provision`).

use super::protect::Protection;
use super::protect::plan::{Plan, Provision, ProvisionError};

/// Connects to `target` (the provisioning credential, through its tunnel when `connect_via`
/// says so) and does `what` for `roles` under `protection`, in `schemas` (empty: all).
pub async fn provision(
    target: &crate::check::CheckTarget,
    protection: &Protection,
    roles: &[String],
    schemas: &[String],
    what: Provision,
) -> Result<Plan, ProvisionError> {
    #[cfg(feature = "postgres")]
    if target.adapter == crate::model::Adapter::Postgres {
        return crate::run::postgres::provision::run(target, protection, roles, schemas, what)
            .await;
    }
    #[cfg(feature = "mysql")]
    if target.adapter == crate::model::Adapter::Mysql {
        return crate::run::mysql::provision::run(target, protection, roles, schemas, what).await;
    }
    let _ = (target, protection, roles, schemas, what);
    Err(ProvisionError::NotBuilt)
}
