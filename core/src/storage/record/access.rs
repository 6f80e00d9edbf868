//! A database's access control as stored: its permissions and data protection policies.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A database's access control as stored (version 1), under the database's id.
#[derive(Serialize, Deserialize)]
pub(super) struct AccessControlV1 {
    pub(super) database_id: String,
    pub(super) permissions: Vec<PermissionV1>,
    pub(super) inherits_from: Option<String>,
    pub(super) policies: Vec<PolicyV1>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct PermissionV1 {
    /// `user` or `group`.
    pub(super) subject_kind: String,
    pub(super) subject: String,
    /// `query`, `review` or `admin`.
    pub(super) access: String,
}

#[derive(Serialize, Deserialize)]
pub(super) struct PolicyV1 {
    pub(super) name: String,
    pub(super) description: Option<String>,
    /// Column and action (`hide` or `mask`).
    pub(super) columns: Vec<(String, String)>,
}

impl Keyed for AccessControlV1 {
    fn stored_key(&self) -> &str {
        &self.database_id
    }
}

/// Encodes the access control of the database `database_id`.
pub fn encode_access_control(
    database_id: &str,
    access: &AccessControl,
) -> Result<Vec<u8>, RecordError> {
    let stored = AccessControlV1 {
        database_id: database_id.to_owned(),
        permissions: access
            .permissions
            .iter()
            .map(|p| PermissionV1 {
                subject_kind: p.subject_kind.as_str().to_owned(),
                subject: p.subject.clone(),
                access: p.access.as_str().to_owned(),
            })
            .collect(),
        inherits_from: access.data_protection.inherits_from.clone(),
        policies: access
            .data_protection
            .policies
            .iter()
            .map(|policy| PolicyV1 {
                name: policy.name.clone(),
                description: policy.description.clone(),
                columns: policy
                    .columns
                    .iter()
                    .map(|rule| (rule.column.clone(), stored_action(rule)))
                    .collect(),
            })
            .collect(),
    };
    framed(RECORD_V1, &stored)
}

/// Decodes the access control stored under the database id `key`.
pub fn decode_access_control(key: &str, bytes: &[u8]) -> Result<AccessControl, RecordError> {
    let stored: AccessControlV1 = decode_keyed(key, bytes)?;
    let permissions = stored
        .permissions
        .into_iter()
        .map(|p| {
            Ok(Permission {
                subject_kind: parse::<SubjectKind>(&p.subject_kind, "subject kind")?,
                subject: p.subject,
                access: parse::<AccessLevel>(&p.access, "access level")?,
            })
        })
        .collect::<Result<Vec<_>, RecordError>>()?;
    let policies = stored
        .policies
        .into_iter()
        .map(|policy| {
            Ok(Policy {
                name: policy.name,
                description: policy.description,
                columns: policy
                    .columns
                    .into_iter()
                    .map(|(column, action)| {
                        let (action, mask) = match action.split_once(':') {
                            Some((action, mask)) => (
                                action,
                                Mask::decode(mask).ok_or(RecordError::UnknownValue("mask"))?,
                            ),
                            None => (action.as_str(), Mask::default()),
                        };
                        Ok(ColumnRule {
                            column,
                            action: parse::<ColumnAction>(action, "column action")?,
                            mask,
                        })
                    })
                    .collect::<Result<Vec<_>, RecordError>>()?,
            })
        })
        .collect::<Result<Vec<_>, RecordError>>()?;
    Ok(AccessControl {
        permissions,
        data_protection: DataProtection {
            inherits_from: stored.inherits_from,
            policies,
        },
    })
}

/// A column rule's stored action: `hide`, `mask`, or `mask:<mask>` ([`Mask::encode`]) for a
/// mask other than the full one (records written before masks had kinds read as full).
fn stored_action(rule: &ColumnRule) -> String {
    match (rule.action, rule.mask.encode()) {
        (ColumnAction::Mask, Some(mask)) => format!("mask:{mask}"),
        (action, _) => action.as_str().to_owned(),
    }
}
