//! The audit events of the storage contract's writes: every backend builds the event of a write
//! with these, from the records as they are in the writing transaction, and stores it in that
//! transaction. What an event says changed is decided here, once: field names only (the wire
//! names of the API), never a value, so a secret appears only as the name of what changed
//! (`credentials[reader].password`, `ssl_key`).

use crate::model::{
    AccessControl, AuditAction, AuditEvent, CallerKey, Credential, Dashboard, Database, Origin,
    Retention, Timestamp, TlsField,
};

use super::DatabaseKey;

/// Pushes `name` when the field changed from `old` (`None`: the record is new) to `new`.
fn differs<T: PartialEq>(changes: &mut Vec<String>, name: &str, old: Option<&T>, new: &T) {
    if old != Some(new) {
        changes.push(name.to_owned());
    }
}

/// What changed between `old` (`None` for a create) and `new`, by field name: for a create, the
/// fields it set (those not at their create default; `adapter`, required, always). The fields
/// are [`crate::model::DATABASE_FIELDS`] (the secrets and TLS material by name only).
pub fn database_changes(old: Option<&Database>, new: &Database) -> Vec<String> {
    let created = old.is_none();
    let unset;
    let old = match old {
        Some(old) => old,
        None => {
            let mut blank = crate::validate::blank_database(new.inserted_at);
            blank.adapter = new.adapter;
            unset = blank;
            &unset
        }
    };
    let mut changes = Vec::new();
    let c = &mut changes;
    if created {
        c.push("adapter".to_owned());
    }
    // Every field a change names (model::DATABASE_FIELDS), then the TLS material by its body
    // key and the credentials by username.
    c.extend(new.changed_fields(old).map(str::to_owned));
    for field in TlsField::ALL {
        // Sealed bytes: a new value seals differently even when it is the same text, so a
        // certificate sent again counts as changed.
        if old.tls.get(field) != new.tls.get(field) {
            c.push(field.body_key().to_owned());
        }
    }
    credential_changes(c, &old.credentials, &new.credentials);
    changes
}

/// Credentials by id: added, removed, and the fields of those kept that changed, each named
/// `credentials[<username>]` or `credentials[<username>].<field>`.
fn credential_changes(changes: &mut Vec<String>, old: &[Credential], new: &[Credential]) {
    let item = |credential: &Credential| format!("credentials[{}]", credential.username);
    for credential in new {
        let name = item(credential);
        match old.iter().find(|o| o.id == credential.id) {
            None => {
                changes.push(name.clone());
                if credential.password.is_some() {
                    changes.push(format!("{name}.password"));
                }
            }
            Some(stored) => {
                changes.extend(
                    credential
                        .changed_fields(stored)
                        .map(|field| format!("{name}.{field}")),
                );
            }
        }
    }
    for stored in old {
        if !new.iter().any(|n| n.id == stored.id) {
            changes.push(item(stored));
        }
    }
}

/// What changed between `old` (`None` for a create) and `new`, by field name.
pub fn dashboard_changes(old: Option<&Dashboard>, new: &Dashboard) -> Vec<String> {
    let mut changes = Vec::new();
    let c = &mut changes;
    differs(c, "name", old.map(|o| &o.name), &new.name);
    differs(
        c,
        "restricted_access",
        old.map(|o| &o.restricted_access),
        &new.restricted_access,
    );
    differs(
        c,
        "archived_at",
        old.map(|o| &o.archived_at),
        &new.archived_at,
    );
    differs(c, "panels", old.map(|o| &o.panels), &new.panels);
    // The presentation, by part: who edits and views it is named apart from how it looks.
    // A create names the parts it set.
    let empty = crate::model::Presentation::default();
    let (o, n) = (old.map_or(&empty, |o| &o.presentation), &new.presentation);
    differs(c, "presentation.editors", Some(&o.editors), &n.editors);
    differs(c, "presentation.viewers", Some(&o.viewers), &n.viewers);
    differs(
        c,
        "presentation.time_range",
        Some(&o.time_range),
        &n.time_range,
    );
    differs(c, "presentation.panels", Some(&o.panels), &n.panels);
    differs(c, "presentation.inputs", Some(&o.inputs), &n.inputs);
    changes
}

/// What changed in a database's access control, by document and field.
pub fn access_changes(old: &AccessControl, new: &AccessControl) -> Vec<String> {
    let mut changes = Vec::new();
    let c = &mut changes;
    differs(c, "permissions", Some(&old.permissions), &new.permissions);
    differs(
        c,
        "data_protection.policies",
        Some(&old.data_protection.policies),
        &new.data_protection.policies,
    );
    differs(
        c,
        "data_protection.inherits_from",
        Some(&old.data_protection.inherits_from),
        &new.data_protection.inherits_from,
    );
    // The provisioning login reads every value: a change of it (its password included, never
    // named) is named.
    differs(
        c,
        "data_protection.provisioning",
        Some(&old.data_protection.provisioning),
        &new.data_protection.provisioning,
    );
    changes
}

/// The event of a database created by `insert_database`.
pub fn database_created(origin: &Origin, new: &Database) -> AuditEvent {
    let changes = database_changes(None, new);
    AuditEvent::new(
        origin,
        AuditAction::DatabaseCreate,
        new.id.as_str(),
        changes,
    )
}

/// The event of a database updated by `update_database`.
pub fn database_updated(origin: &Origin, old: &Database, new: &Database) -> AuditEvent {
    let changes = database_changes(Some(old), new);
    AuditEvent::new(
        origin,
        AuditAction::DatabaseUpdate,
        new.id.as_str(),
        changes,
    )
}

/// The event of an `upsert_database_by_api_id` (a create when `old` is `None`).
pub fn database_set_up(origin: &Origin, old: Option<&Database>, new: &Database) -> AuditEvent {
    let changes = database_changes(old, new);
    AuditEvent::new(origin, AuditAction::DatabaseSetup, new.id.as_str(), changes)
}

/// The event of a database deleted by `delete_database` through `key`.
pub fn database_deleted(origin: &Origin, key: DatabaseKey<'_>, old: &Database) -> AuditEvent {
    let action = match key {
        DatabaseKey::Id(_) => AuditAction::DatabaseDelete,
        DatabaseKey::ApiId(_) => AuditAction::DatabaseRemove,
    };
    AuditEvent::new(origin, action, old.id.as_str(), Vec::new())
}

/// The event of an `update_access_control` of database `database_id`.
pub fn access_updated(
    origin: &Origin,
    database_id: &str,
    old: &AccessControl,
    new: &AccessControl,
) -> AuditEvent {
    let changes = access_changes(old, new);
    AuditEvent::new(origin, AuditAction::AccessUpdate, database_id, changes)
}

/// The event of a dashboard created by `insert_dashboard`.
pub fn dashboard_created(origin: &Origin, new: &Dashboard) -> AuditEvent {
    let changes = dashboard_changes(None, new);
    AuditEvent::new(
        origin,
        AuditAction::DashboardCreate,
        new.id.as_str(),
        changes,
    )
}

/// The event of a dashboard updated by `update_dashboard`.
pub fn dashboard_updated(origin: &Origin, old: &Dashboard, new: &Dashboard) -> AuditEvent {
    let changes = dashboard_changes(Some(old), new);
    AuditEvent::new(
        origin,
        AuditAction::DashboardUpdate,
        new.id.as_str(),
        changes,
    )
}

/// The event of a dashboard deleted by `delete_dashboard`.
pub fn dashboard_deleted(origin: &Origin, old: &Dashboard) -> AuditEvent {
    AuditEvent::new(
        origin,
        AuditAction::DashboardDelete,
        old.id.as_str(),
        Vec::new(),
    )
}

/// The event of a caller key stored by `insert_caller_key` (its digest is not named: it is
/// not a field anyone sets).
pub fn caller_key_created(origin: &Origin, key: &CallerKey) -> AuditEvent {
    let changes = ["name", "kind", "scope"].map(str::to_owned).to_vec();
    AuditEvent::new(
        origin,
        AuditAction::CallerKeyCreate,
        key.id.as_str(),
        changes,
    )
}

/// The event of a caller key revoked by `delete_caller_key`.
pub fn caller_key_revoked(origin: &Origin, key: &CallerKey) -> AuditEvent {
    AuditEvent::new(
        origin,
        AuditAction::CallerKeyRevoke,
        key.id.as_str(),
        Vec::new(),
    )
}

/// The time before which `retention` keeps no event, as of `now` (`None`: no age bound).
pub fn cutoff(retention: Retention, now: Timestamp) -> Option<Timestamp> {
    const MICROS_PER_DAY: i64 = 86_400 * 1_000_000;
    retention.max_age_days.map(|days| {
        Timestamp::from_micros(
            now.as_micros()
                .saturating_sub(i64::from(days).saturating_mul(MICROS_PER_DAY)),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Timestamp;
    use crate::seal::Sealer;
    use crate::validate::database_from_body;

    fn created(body: serde_json::Value) -> Vec<String> {
        let body = body.as_object().unwrap().clone();
        let sealer = Sealer::ephemeral().unwrap();
        let db = database_from_body(None, &body.clone().into(), Timestamp::now(), &sealer).unwrap();
        database_changes(None, &db)
    }

    #[test]
    fn a_create_names_only_what_it_set() {
        let minimal = serde_json::json!({
            "name": "Orders", "adapter": "postgres", "hostname": "db.internal",
            "database": "orders", "credentials": [{"username": "reader", "password": "pw"}],
        });
        assert_eq!(
            created(minimal.clone()),
            [
                "adapter",
                "name",
                "hostname",
                "database",
                "credentials[reader]",
                "credentials[reader].password"
            ]
        );
        let mut more = minimal;
        more["port"] = serde_json::json!(5433);
        more["group"] = serde_json::json!("prod");
        more["ai_enabled"] = serde_json::json!(true);
        let changes = created(more);
        for field in ["port", "group", "ai_enabled"] {
            assert!(
                changes.contains(&field.to_owned()),
                "{field} in {changes:?}"
            );
        }
        assert!(!changes.contains(&"slack_channel".to_owned()));
        assert!(!changes.contains(&"ai_max_rows".to_owned()));
    }
}
