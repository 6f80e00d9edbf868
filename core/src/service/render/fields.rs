//! The schemas of the fields whose Rust type says less than the answer (a wire name, an id's
//! shape, a timestamp's format), for the derived `JsonSchema` of the views
//! (`#[schemars(schema_with = "…")]`).

use schemars::{Schema, SchemaGenerator, json_schema};

/// A value of one of `names`.
fn one_of(names: impl IntoIterator<Item = &'static str>) -> Schema {
    let names: Vec<&str> = names.into_iter().collect();
    json_schema!({ "type": "string", "enum": names })
}

/// An id with `prefix`, as the store makes them; never sent by a client.
fn id(prefix: &str) -> Schema {
    json_schema!({ "type": "string", "pattern": format!("^{prefix}_[0-9a-z]{{26}}$"), "readOnly": true })
}

/// An RFC 3339 UTC time; never sent by a client.
pub(super) fn timestamp(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "format": "date-time", "readOnly": true })
}

/// An RFC 3339 UTC time, or null; never sent by a client.
pub(super) fn timestamp_or_null(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["string", "null"], "format": "date-time", "readOnly": true })
}

/// A database's id (`db_…`).
pub(super) fn database_id(_: &mut SchemaGenerator) -> Schema {
    id("db")
}

/// A credential's id (`crd_…`).
pub(super) fn credential_id(_: &mut SchemaGenerator) -> Schema {
    id("crd")
}

/// A dashboard's id (`dash_…`).
pub(super) fn dashboard_id(_: &mut SchemaGenerator) -> Schema {
    id("dash")
}

/// A panel's id (`pl_…`).
pub(super) fn panel_id(_: &mut SchemaGenerator) -> Schema {
    id("pl")
}

/// A row action's id (`act_…`).
pub(super) fn action_id(_: &mut SchemaGenerator) -> Schema {
    id("act")
}

/// A panel's type: `query`, the only one.
pub(super) fn panel_type(_: &mut SchemaGenerator) -> Schema {
    one_of(["query"])
}

macro_rules! wire_names {
    ($($name:ident: $type:ty),* $(,)?) => {
        $(#[doc = concat!("One of the wire names of [`", stringify!($type), "`].")]
        pub(super) fn $name(_: &mut SchemaGenerator) -> Schema {
            one_of(<$type>::ALL.map(<$type>::as_str))
        })*
    };
}

wire_names! {
    adapter: crate::model::Adapter,
    audit_action: crate::model::AuditAction,
    run_outcome: crate::model::RunOutcome,
    resource_kind: crate::model::ResourceKind,
    subject_kind: crate::model::SubjectKind,
    access_level: crate::model::AccessLevel,
    column_action: crate::model::ColumnAction,
    mask_kind: crate::model::MaskKind,
    query_status: crate::model::QueryStatus,
    decision: crate::model::Decision,
    target_kind: crate::model::TargetKind,
    delivery_status: crate::model::DeliveryStatus,
    scope: crate::model::Scope,
}

/// A role's wire name, or null.
pub(super) fn role(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": ["string", "null"], "enum": [
        crate::model::Role::SuperAdmin.as_str(), crate::model::Role::Member.as_str(), null
    ] })
}

/// A saved query's sharing: `author`, `groups` or `database`.
pub(super) fn sharing(_: &mut SchemaGenerator) -> Schema {
    one_of(["author", "groups", "database"])
}
