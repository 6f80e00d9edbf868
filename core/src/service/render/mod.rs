//! Response bodies: the wire shape of each record, with exactly the keys the README's
//! *Endpoints* lists and
//! never a secret (the stored types hold secrets; these views have no field for them).
//!
//! One file per aggregate: `databases`, `dashboards`, `access` (permissions and data
//! protection), `queries`, `deliveries`, `audit` and `me` (the caller, and the databases it may
//! query); `fields` holds the schemas of the fields whose Rust type says less than the answer.
//! Here: the page of a listing.

mod access;
mod audit;
mod dashboards;
mod databases;
mod deliveries;
mod fields;
mod me;
mod queries;
mod users;

use schemars::JsonSchema;
use serde::Serialize;

pub(crate) use access::{DataProtectionView, PermissionsView};
pub(crate) use audit::AuditEventView;
pub(crate) use dashboards::DashboardView;
pub(crate) use databases::DatabaseView;
pub(crate) use deliveries::{DeliveryProgressView, DeliveryView};
pub(crate) use me::{MayView, MeView, MySessionView, QueryableDatabaseView};
pub(crate) use queries::{QueryView, SavedQueryView};
pub(crate) use users::{InvitationView, PasskeyView, UserView};

/// One page of a listing: `{"data": [...], "next": "<id>" | null}`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "{T}Page", deny_unknown_fields)]
pub(crate) struct PageView<T> {
    pub(crate) data: Vec<T>,
    /// The id to pass as `after` for the next page; null when nothing follows.
    pub(crate) next: Option<String>,
}
