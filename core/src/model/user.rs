//! The people who use the console ([`User`]): one record per person, named by their normalised
//! user name (docs/people.md). Created by an invitation, an OIDC sign-in, a sign-in link or a
//! key made for the user; deactivating one ends its sessions and stops its keys and tokens.

use std::fmt;

use rand::RngCore as _;

use super::{Principal, Role, Timestamp};

/// How a user record came to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UserSource {
    /// Enrolled from an invitation.
    Invitation,
    /// Signed in through the OIDC issuer: its groups and role are the claims of its last
    /// sign-in.
    Oidc,
    /// Signed in with a one-time link (the first start's, or `dbconsole sessions link`).
    Link,
    /// Named by a key made for it (`dbconsole keys create --user`).
    Key,
    /// Found at an upgrade, named by a key, session, query or permission stored before users
    /// were.
    Upgrade,
}

wire_enum!(UserSource, [
    Invitation => "invitation",
    Oidc => "oidc",
    Link => "link",
    Key => "key",
    Upgrade => "upgrade",
]);

/// A person's own settings (the console reads them; nothing else does).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserSettings {
    /// `light`, `dark`, or `None`: the browser's.
    pub theme: Option<String>,
    /// An IANA time zone (`Europe/Paris`), or `None`: the browser's.
    pub time_zone: Option<String>,
}

/// A passkey of a user: a WebAuthn credential whose private key stays on the person's device.
#[derive(Clone, PartialEq, Eq)]
pub struct UserPasskey {
    /// The credential id, base64url: how the person names it in a removal and how a sign-in
    /// finds it.
    pub id: String,
    /// The name the person gave it ("Work laptop").
    pub name: String,
    /// When it was enrolled.
    pub created_at: Timestamp,
    /// When it last signed in.
    pub last_used_at: Option<Timestamp>,
    /// The relying party's side of the credential as the WebAuthn library keeps it (JSON: the
    /// public key and its signature counter; no secret).
    pub credential: String,
}

impl fmt::Debug for UserPasskey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserPasskey")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("created_at", &self.created_at)
            .field("last_used_at", &self.last_used_at)
            .finish_non_exhaustive()
    }
}

/// A person who uses the console.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// The user name in its normal form ([`super::identity::normalized`]): what permissions,
    /// keys and queries name. Never changes.
    pub name: String,
    /// How the console shows the person (the name when none was given).
    pub display_name: String,
    /// The groups the user is in (normal form).
    pub groups: Vec<String>,
    /// Super admin or member.
    pub role: Role,
    /// How the record came to be.
    pub source: UserSource,
    /// Creation time.
    pub created_at: Timestamp,
    /// The last time the person signed in to the console.
    pub last_sign_in_at: Option<Timestamp>,
    /// When a super admin deactivated the user (its sessions ended; its keys and tokens are
    /// refused); `None` while it is active.
    pub deactivated_at: Option<Timestamp>,
    /// The person's own settings.
    pub settings: UserSettings,
    /// The WebAuthn user handle: random, so a passkey names no person by itself.
    pub handle: [u8; 16],
    /// The user's passkeys.
    pub passkeys: Vec<UserPasskey>,
    /// The time of the last write: the version a replace compares.
    pub updated_at: Timestamp,
}

impl User {
    /// A new active user `name` (normalised here) with these groups and role.
    pub fn new(name: &str, groups: Vec<String>, role: Role, source: UserSource) -> Self {
        let name = super::identity::normalized(name);
        let mut handle = [0u8; 16];
        rand::rng().fill_bytes(&mut handle);
        let now = Timestamp::now();
        Self {
            display_name: name.clone(),
            name,
            groups: groups
                .iter()
                .map(|g| super::identity::normalized(g))
                .collect(),
            role,
            source,
            created_at: now,
            last_sign_in_at: None,
            deactivated_at: None,
            settings: UserSettings::default(),
            handle,
            passkeys: Vec::new(),
            updated_at: now,
        }
    }

    /// The user's record as a principal (a person, not an agent).
    pub fn principal(&self) -> Principal {
        Principal {
            user: self.name.clone(),
            groups: self.groups.clone(),
            role: self.role,
            agent: false,
        }
    }

    /// Whether the user may sign in and be served.
    pub fn active(&self) -> bool {
        self.deactivated_at.is_none()
    }
}
