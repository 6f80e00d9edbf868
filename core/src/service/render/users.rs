//! `…/users` and `…/invitations`: a person's record ([`UserView`]; never a passkey's key) and a
//! pending invitation ([`InvitationView`]; never its token).

use schemars::JsonSchema;
use serde::Serialize;

use crate::model::{Session, User, UserPasskey, UserSource};

/// A user (`GET …/users`).
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "User", deny_unknown_fields)]
pub(crate) struct UserView<'a> {
    /// The user name in its normal form: what permissions, keys and queries name.
    pub(crate) name: &'a str,
    /// How the console shows the person.
    pub(crate) display_name: &'a str,
    /// The user's groups.
    pub(crate) groups: &'a [String],
    /// `super-admin` or `member`.
    #[schemars(schema_with = "super::fields::role")]
    pub(crate) role: &'static str,
    /// How the record came to be: `invitation`, `oidc`, `link`, `key` or `upgrade`.
    pub(crate) source: &'static str,
    /// Whether the groups and role come from the OIDC issuer's claims (read-only here).
    pub(crate) managed_by_issuer: bool,
    /// When the record was made.
    #[schemars(schema_with = "super::fields::timestamp")]
    pub(crate) created_at: String,
    /// The last sign-in to the console; null if never.
    #[schemars(schema_with = "super::fields::timestamp_or_null")]
    pub(crate) last_sign_in_at: Option<String>,
    /// Whether the user may sign in and be served.
    pub(crate) active: bool,
    /// When a super admin deactivated the user; null while active.
    #[schemars(schema_with = "super::fields::timestamp_or_null")]
    pub(crate) deactivated_at: Option<String>,
    /// How many passkeys the user has enrolled.
    pub(crate) passkeys: usize,
}

impl<'a> UserView<'a> {
    pub(crate) fn of(user: &'a User) -> Self {
        Self {
            name: &user.name,
            display_name: &user.display_name,
            groups: &user.groups,
            role: user.role.as_str(),
            source: user.source.as_str(),
            managed_by_issuer: user.source == UserSource::Oidc,
            created_at: user.created_at.to_string(),
            last_sign_in_at: user.last_sign_in_at.map(|t| t.to_string()),
            active: user.active(),
            deactivated_at: user.deactivated_at.map(|t| t.to_string()),
            passkeys: user.passkeys.len(),
        }
    }
}

/// A pending invitation (`GET …/invitations`).
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Invitation", deny_unknown_fields)]
pub(crate) struct InvitationView<'a> {
    /// `ses_…`: what `DELETE …/invitations/{id}` takes. Not the token.
    pub(crate) id: &'a str,
    /// The person invited.
    pub(crate) user: &'a str,
    /// The groups they join.
    pub(crate) groups: &'a [String],
    /// The role they get.
    #[schemars(schema_with = "super::fields::role")]
    pub(crate) role: &'static str,
    /// When it was made.
    #[schemars(schema_with = "super::fields::timestamp")]
    pub(crate) created_at: String,
    /// When it stops working if not used.
    #[schemars(schema_with = "super::fields::timestamp")]
    pub(crate) expires_at: String,
}

impl<'a> InvitationView<'a> {
    pub(crate) fn of(invitation: &'a Session) -> Self {
        Self {
            id: invitation.id.as_str(),
            user: &invitation.principal.user,
            groups: &invitation.principal.groups,
            role: invitation.principal.role.as_str(),
            created_at: invitation.created_at.to_string(),
            expires_at: invitation.expires_at.to_string(),
        }
    }
}

/// A passkey as its owner sees it (`GET …/me/passkeys`): never its key.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Passkey", deny_unknown_fields)]
pub(crate) struct PasskeyView<'a> {
    /// The credential id (base64url): what `DELETE …/me/passkeys/{id}` takes.
    pub(crate) id: &'a str,
    /// The name its owner gave it.
    pub(crate) name: &'a str,
    /// When it was enrolled.
    #[schemars(schema_with = "super::fields::timestamp")]
    pub(crate) created_at: String,
    /// When it last signed in; null if never.
    #[schemars(schema_with = "super::fields::timestamp_or_null")]
    pub(crate) last_used_at: Option<String>,
}

impl<'a> PasskeyView<'a> {
    pub(crate) fn of(passkey: &'a UserPasskey) -> Self {
        Self {
            id: &passkey.id,
            name: &passkey.name,
            created_at: passkey.created_at.to_string(),
            last_used_at: passkey.last_used_at.map(|t| t.to_string()),
        }
    }
}
