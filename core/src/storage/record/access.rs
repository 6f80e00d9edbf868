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

/// Version 2 of the access control: version 1 and the data protection's provisioning
/// credential (its password sealed, with its seal key's id).
const ACCESS_V2: u8 = 2;

/// Version 3: version 2 with where the provisioning password was given for
/// ([`ProvisioningV3::password_for`]).
const ACCESS_V3: u8 = 3;

#[derive(Serialize, Deserialize)]
pub(super) struct AccessControlV2<P = ProvisioningV3> {
    pub(super) database_id: String,
    pub(super) permissions: Vec<PermissionV1>,
    pub(super) inherits_from: Option<String>,
    pub(super) policies: Vec<PolicyV2>,
    pub(super) provisioning: Option<P>,
}

/// A policy as version 2 stores it: version 1's and its exemptions.
#[derive(Serialize, Deserialize)]
pub(super) struct PolicyV2 {
    pub(super) name: String,
    pub(super) description: Option<String>,
    /// Column and action (`hide`, `mask` or `mask:<mask>`).
    pub(super) columns: Vec<(String, String)>,
    /// Subject kind (`user` or `group`) and subject.
    pub(super) exempt: Vec<(String, String)>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct ProvisioningV1 {
    pub(super) credential_id: String,
    pub(super) username: String,
    pub(super) password: Option<Vec<u8>>,
    pub(super) schemas: Vec<String>,
    pub(super) auto_apply: bool,
}

#[derive(Serialize, Deserialize)]
pub(super) struct ProvisioningV3 {
    pub(super) credential_id: String,
    pub(super) username: String,
    pub(super) password: Option<Vec<u8>>,
    pub(super) schemas: Vec<String>,
    pub(super) auto_apply: bool,
    pub(super) password_for: Option<[u8; 32]>,
}

/// Encodes the access control of the database `database_id`.
pub fn encode_access_control(
    database_id: &str,
    access: &AccessControl,
) -> Result<Vec<u8>, RecordError> {
    let stored = AccessControlV2 {
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
            .map(|policy| PolicyV2 {
                name: policy.name.clone(),
                description: policy.description.clone(),
                columns: policy
                    .columns
                    .iter()
                    .map(|rule| (rule.column.clone(), stored_action(rule)))
                    .collect(),
                exempt: policy
                    .exempt
                    .iter()
                    .map(|e| (e.subject_kind.as_str().to_owned(), e.subject.clone()))
                    .collect(),
            })
            .collect(),
        provisioning: access
            .data_protection
            .provisioning
            .as_ref()
            .map(|p| ProvisioningV3 {
                password_for: p.credential.password_for,
                credential_id: p.credential.id.as_str().to_owned(),
                username: p.credential.username.clone(),
                password: stored_secret(p.credential.password.as_ref()),
                schemas: p.schemas.clone(),
                auto_apply: p.auto_apply,
            }),
    };
    framed(ACCESS_V3, &stored)
}

/// Decodes the access control stored under the database id `key`.
pub fn decode_access_control(key: &str, bytes: &[u8]) -> Result<AccessControl, RecordError> {
    let (version, body) = unframed(bytes)?;
    let stored = match version {
        RECORD_V1 => {
            let v1: AccessControlV1 = decode_keyed(key, bytes)?;
            AccessControlV2 {
                database_id: v1.database_id,
                permissions: v1.permissions,
                inherits_from: v1.inherits_from,
                policies: v1
                    .policies
                    .into_iter()
                    .map(|p| PolicyV2 {
                        name: p.name,
                        description: p.description,
                        columns: p.columns,
                        exempt: Vec::new(),
                    })
                    .collect(),
                provisioning: None,
            }
        }
        ACCESS_V2 => {
            let v2: AccessControlV2<ProvisioningV1> = postcard::from_bytes(body)?;
            AccessControlV2 {
                database_id: v2.database_id,
                permissions: v2.permissions,
                inherits_from: v2.inherits_from,
                policies: v2.policies,
                provisioning: v2.provisioning.map(|p| ProvisioningV3 {
                    credential_id: p.credential_id,
                    username: p.username,
                    password: p.password,
                    schemas: p.schemas,
                    auto_apply: p.auto_apply,
                    // Stored before bindings: held back until given again (a database
                    // update can't bind it, as it binds its credentials').
                    password_for: Some(crate::model::HELD),
                }),
            }
        }
        ACCESS_V3 => postcard::from_bytes(body)?,
        version => return Err(RecordError::UnknownVersion(version)),
    };
    if stored.database_id != key {
        return Err(key_mismatch(key, stored.database_id));
    }
    let provisioning = stored
        .provisioning
        .map(|p| {
            Ok::<_, RecordError>(Provisioning {
                credential: Credential {
                    id: CredentialId::from_stored(p.credential_id),
                    username: p.username,
                    password: sealed_secret(ACCESS_V2, p.password)?,
                    password_for: p.password_for,
                    hostname: None,
                    ai_allowed: false,
                    timeout: None,
                    reviews_required: 0,
                    default_credential: false,
                },
                schemas: p.schemas,
                auto_apply: p.auto_apply,
            })
        })
        .transpose()?;
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
                exempt: policy
                    .exempt
                    .into_iter()
                    .map(|(kind, subject)| {
                        Ok(Exemption {
                            subject_kind: parse::<SubjectKind>(&kind, "subject kind")?,
                            subject,
                        })
                    })
                    .collect::<Result<Vec<_>, RecordError>>()?,
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
            provisioning,
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
