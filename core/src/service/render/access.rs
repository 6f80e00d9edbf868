//! A database's access control, as its two routes answer it: its permissions
//! ([`PermissionsView`]) and its data protection policies ([`DataProtectionView`]).

use schemars::JsonSchema;
use serde::Serialize;

use super::fields::{access_level, column_action, mask_kind, subject_kind};
use crate::model::{AccessControl, ColumnAction, MaskKind};

/// `GET|PUT …/permissions`: `{"database_id", "permissions": [{"subject_kind", "subject",
/// "access"}]}`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Permissions", deny_unknown_fields)]
pub(crate) struct PermissionsView<'a> {
    database_id: &'a str,
    permissions: Vec<PermissionView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Permission", deny_unknown_fields)]
struct PermissionView<'a> {
    #[schemars(schema_with = "subject_kind")]
    subject_kind: &'static str,
    subject: &'a str,
    #[schemars(schema_with = "access_level")]
    access: &'static str,
}

impl<'a> PermissionsView<'a> {
    /// The permissions of `access`, the access control of database `database_id`.
    pub(crate) fn new(database_id: &'a str, access: &'a AccessControl) -> Self {
        Self {
            database_id,
            permissions: access
                .permissions
                .iter()
                .map(|p| PermissionView {
                    subject_kind: p.subject_kind.as_str(),
                    subject: &p.subject,
                    access: p.access.as_str(),
                })
                .collect(),
        }
    }
}

/// `GET|PUT …/data-protection`: `{"database_id", "inherits_from", "policies": [{"name",
/// "description", "columns": [{"column", "action"}]}]}`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "DataProtection", deny_unknown_fields)]
pub(crate) struct DataProtectionView<'a> {
    database_id: &'a str,
    inherits_from: Option<&'a str>,
    policies: Vec<PolicyView<'a>>,
    /// The provisioning credential, without its password; absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    provisioning: Option<ProvisioningView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Provisioning", deny_unknown_fields)]
struct ProvisioningView<'a> {
    /// The login dbconsole provisions the protected roles with.
    username: &'a str,
    /// The schemas provisioned (empty: every schema the login sees but the system ones).
    schemas: &'a [String],
    /// Whether a plan that is out of date is applied without waiting.
    auto_apply: bool,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Policy", deny_unknown_fields)]
struct PolicyView<'a> {
    name: &'a str,
    description: Option<&'a str>,
    columns: Vec<ColumnView<'a>>,
    /// Who sees the values anyway; absent when nobody.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    exempt: Vec<ExemptionView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Exemption", deny_unknown_fields)]
struct ExemptionView<'a> {
    #[schemars(schema_with = "subject_kind")]
    subject_kind: &'static str,
    subject: &'a str,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "ColumnRule", deny_unknown_fields)]
struct ColumnView<'a> {
    column: &'a str,
    #[schemars(schema_with = "column_action")]
    action: &'static str,
    /// A masked column's mask (`full`, `partial`, `email`, `null`); absent for a hidden one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "mask_kind")]
    mask: Option<&'static str>,
    /// A partial mask's characters kept at the start; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    keep_first: Option<u8>,
    /// A partial mask's characters kept at the end; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    keep_last: Option<u8>,
}

impl<'a> DataProtectionView<'a> {
    /// The data protection document of `access`, the access control of database
    /// `database_id`.
    pub(crate) fn new(database_id: &'a str, access: &'a AccessControl) -> Self {
        let document = &access.data_protection;
        Self {
            database_id,
            provisioning: document.provisioning.as_ref().map(|p| ProvisioningView {
                username: &p.credential.username,
                schemas: &p.schemas,
                auto_apply: p.auto_apply,
            }),
            inherits_from: document.inherits_from.as_deref(),
            policies: document
                .policies
                .iter()
                .map(|p| PolicyView {
                    name: &p.name,
                    description: p.description.as_deref(),
                    exempt: p
                        .exempt
                        .iter()
                        .map(|e| ExemptionView {
                            subject_kind: e.subject_kind.as_str(),
                            subject: &e.subject,
                        })
                        .collect(),
                    columns: p
                        .columns
                        .iter()
                        .map(|c| {
                            let masked = c.action == ColumnAction::Mask;
                            let partial = masked && c.mask.kind == MaskKind::Partial;
                            ColumnView {
                                column: &c.column,
                                action: c.action.as_str(),
                                mask: masked.then(|| c.mask.kind.as_str()),
                                keep_first: partial.then_some(c.mask.keep_first),
                                keep_last: partial.then_some(c.mask.keep_last),
                            }
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}
