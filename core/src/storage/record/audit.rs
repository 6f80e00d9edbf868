//! Audit events as stored: versions 1 to 4 (change names as small numbers from 2, run facts from
//! 3, the rows a write changed from 4).

#[allow(clippy::wildcard_imports)]
use super::*;
use crate::model;

/// An audit event as stored (version 1).
#[derive(Serialize, Deserialize)]
pub(super) struct AuditEventV1 {
    pub(super) id: String,
    pub(super) at: i64,
    /// The action's wire name (`database.update`…).
    pub(super) action: String,
    pub(super) resource_id: String,
    pub(super) actor_id: Option<String>,
    pub(super) actor_name: String,
    pub(super) request_id: Option<String>,
    pub(super) changes: Vec<String>,
}

/// The version byte of audit events written now: [`AuditEventV2`], with compact changes.
pub(super) const EVENT_V2: u8 = 2;

/// The field names an audit event's changes are made of, stored as their index: a format, so
/// **append only** (a stored index never changes meaning). The database's fields are
/// [`model::DATABASE_FIELDS`] in its order (a test holds the two together: a field added to the
/// model is appended here too, or stored by its name); a credential's field is stored by its
/// index in [`model::CREDENTIAL_FIELDS`], which is append-only for the same reason.
pub(super) const CHANGE_NAMES: &[&str] = &[
    "api_id",
    "name",
    "adapter",
    "hostname",
    "port",
    "database",
    "ssl",
    "verify_server_hostname",
    "restrict_access",
    "review_bypass_allowed",
    "group",
    "slack_channel",
    "tunnel_id",
    "ai_enabled",
    "ai_max_rows",
    "connection_parameters",
    "ssl_ca_cert",
    "ssl_cert",
    "ssl_key",
    "restricted_access",
    "archived_at",
    "panels",
    "permissions",
    "data_protection.policies",
    "data_protection.inherits_from",
    "kind",
    "scope",
    "data_protection.provisioning",
];

/// One change of an event as stored (version 2): a known name by its index, a credential by its
/// username (with a field's index), or any other name as it is.
#[derive(Serialize, Deserialize)]
pub(super) enum ChangeV2 {
    Name(u8),
    Credential(String),
    CredentialField(String, u8),
    Other(String),
}

impl ChangeV2 {
    /// The compact form of `change`; [`ChangeV2::expand`] gives back exactly `change`.
    fn of(change: &str) -> Self {
        let index = |names: &[&str], name: &str| {
            names
                .iter()
                .position(|n| *n == name)
                .and_then(|i| u8::try_from(i).ok())
        };
        if let Some(i) = index(CHANGE_NAMES, change) {
            return ChangeV2::Name(i);
        }
        if let Some(rest) = change.strip_prefix("credentials[") {
            if let Some(username) = rest.strip_suffix(']') {
                return ChangeV2::Credential(username.to_owned());
            }
            if let Some((username, field)) = rest.rsplit_once("].")
                && let Some(i) = index(model::CREDENTIAL_FIELDS, field)
            {
                return ChangeV2::CredentialField(username.to_owned(), i);
            }
        }
        ChangeV2::Other(change.to_owned())
    }

    fn expand(self) -> Result<String, RecordError> {
        let name = |names: &[&'static str], i: u8| {
            names
                .get(usize::from(i))
                .copied()
                .ok_or(RecordError::UnknownValue("audit change"))
        };
        Ok(match self {
            ChangeV2::Name(i) => name(CHANGE_NAMES, i)?.to_owned(),
            ChangeV2::Credential(username) => format!("credentials[{username}]"),
            ChangeV2::CredentialField(username, i) => {
                format!(
                    "credentials[{username}].{}",
                    name(model::CREDENTIAL_FIELDS, i)?
                )
            }
            ChangeV2::Other(change) => change,
        })
    }
}

/// An audit event as stored (version 2): as version 1, with compact changes.
#[derive(Serialize, Deserialize)]
pub(super) struct AuditEventV2 {
    pub(super) id: String,
    pub(super) at: i64,
    /// The action's wire name (`database.update`…).
    pub(super) action: String,
    pub(super) resource_id: String,
    pub(super) actor_id: Option<String>,
    pub(super) actor_name: String,
    pub(super) request_id: Option<String>,
    pub(super) changes: Vec<ChangeV2>,
}

/// The version byte of audit events written now: [`AuditEventV3`].
pub(super) const EVENT_V3: u8 = 3;

/// An audit event as stored (version 3): version 2, and the facts of a run.
#[derive(Serialize, Deserialize)]
pub(super) struct AuditEventV3 {
    pub(super) event: AuditEventV2,
    pub(super) run: Option<RunFactsV1>,
}

/// Version 4 of an audit event: version 3 with the rows its run's write changed.
pub(super) const EVENT_V4: u8 = 4;

/// An audit event as stored (version 4).
#[derive(Serialize, Deserialize)]
pub(super) struct AuditEventV4 {
    pub(super) v3: AuditEventV3,
    pub(super) affected_rows: Option<u64>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct RunFactsV1 {
    pub(super) database_id: String,
    pub(super) credential_id: String,
    pub(super) statement_sha256: String,
    pub(super) statement_length: u64,
    pub(super) rows: u64,
    pub(super) duration_ms: u64,
    /// The outcome's wire name.
    pub(super) outcome: String,
}

/// Encodes an audit event (version 4).
pub fn encode_audit_event(event: &AuditEvent) -> Result<Vec<u8>, RecordError> {
    let affected = event.run.as_ref().and_then(|run| run.affected_rows);
    let run = event.run.as_ref().map(|run| RunFactsV1 {
        database_id: run.database_id.clone(),
        credential_id: run.credential_id.clone(),
        statement_sha256: run.statement_sha256.clone(),
        statement_length: run.statement_length,
        rows: run.rows,
        duration_ms: run.duration_ms,
        outcome: run.outcome.as_str().to_owned(),
    });
    let event = AuditEventV2 {
        id: event.id.as_str().to_owned(),
        at: event.at.as_micros(),
        action: event.action.as_str().to_owned(),
        resource_id: event.resource_id.clone(),
        actor_id: event.actor.id.clone(),
        actor_name: event.actor.name.clone(),
        request_id: event.request_id.clone(),
        changes: event.changes.iter().map(|c| ChangeV2::of(c)).collect(),
    };
    let affected_rows = affected;
    framed(
        EVENT_V4,
        &AuditEventV4 {
            v3: AuditEventV3 { event, run },
            affected_rows,
        },
    )
}

/// Decodes the audit event stored under `key` (version 1 to 4).
pub fn decode_audit_event(key: &str, bytes: &[u8]) -> Result<AuditEvent, RecordError> {
    let (version, body) = unframed(bytes)?;
    let mut affected_rows = None;
    let (v2, run) = match version {
        RECORD_V1 => (None, None),
        EVENT_V2 => (Some(postcard::from_bytes::<AuditEventV2>(body)?), None),
        EVENT_V3 => {
            let v3: AuditEventV3 = postcard::from_bytes(body)?;
            (Some(v3.event), v3.run)
        }
        EVENT_V4 => {
            let v4: AuditEventV4 = postcard::from_bytes(body)?;
            affected_rows = v4.affected_rows;
            (Some(v4.v3.event), v4.v3.run)
        }
        version => return Err(RecordError::UnknownVersion(version)),
    };
    let stored = match v2 {
        None => postcard::from_bytes::<AuditEventV1>(body)?,
        Some(v2) => AuditEventV1 {
            id: v2.id,
            at: v2.at,
            action: v2.action,
            resource_id: v2.resource_id,
            actor_id: v2.actor_id,
            actor_name: v2.actor_name,
            request_id: v2.request_id,
            changes: v2
                .changes
                .into_iter()
                .map(ChangeV2::expand)
                .collect::<Result<_, _>>()?,
        },
    };
    if stored.id != key {
        return Err(key_mismatch(key, stored.id));
    }
    Ok(AuditEvent {
        action: parse::<AuditAction>(&stored.action, "audit action")?,
        id: EventId::from_stored(stored.id),
        at: Timestamp::from_micros(stored.at),
        resource_id: stored.resource_id,
        actor: Actor {
            id: stored.actor_id,
            name: stored.actor_name,
        },
        request_id: stored.request_id,
        changes: stored.changes,
        run: match run {
            Some(run) => Some(RunFacts {
                outcome: parse::<RunOutcome>(&run.outcome, "run outcome")?,
                database_id: run.database_id,
                credential_id: run.credential_id,
                statement_sha256: run.statement_sha256,
                statement_length: run.statement_length,
                rows: run.rows,
                affected_rows,
                duration_ms: run.duration_ms,
            }),
            None => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_a_change_names_has_its_stored_number() {
        let database = model::DATABASE_FIELDS;
        assert_eq!(
            &CHANGE_NAMES[..16],
            &database[..16],
            "the first 16 stored numbers are the database's first 16 fields, in order"
        );
        for field in database {
            assert!(CHANGE_NAMES.contains(field), "{field} has no stored number");
        }
        assert_eq!(
            &model::CREDENTIAL_FIELDS[..7],
            [
                "username",
                "password",
                "hostname",
                "ai_allowed",
                "timeout",
                "reviews_required",
                "default_credential"
            ],
            "a credential's fields keep their stored numbers (append only)"
        );
    }
}
