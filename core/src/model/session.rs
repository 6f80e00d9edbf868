//! Browser sessions and one-time sign-in links ([`Session`]), kept as digests only: the
//! cookie's value (or the link's token) is shown once and never stored (docs/console.md,
//! "Signing in").

use std::fmt;
use std::time::Duration;

use base64::Engine as _;
use rand::RngCore as _;

use super::{KeyId, Principal, Scope, Secret, SessionId, Timestamp, key_digest};

/// What a [`Session`] record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionKind {
    /// A signed-in browser: its digest is the cookie's.
    Browser,
    /// A one-time sign-in link not used yet: its digest is the link's token. Exchanging it
    /// removes it and stores a browser session in the same atomic change.
    SignInLink,
    /// An invitation not used yet: its digest is the invitation link's token, its principal
    /// the person invited. Enrolling removes it and stores the user and a browser session in
    /// one atomic change (docs/people.md).
    Invitation,
    /// A door password (docs/door.md): its digest is the password's, its principal the person
    /// who minted it; it signs in to the PostgreSQL wire door only, until it expires or is
    /// revoked, and is never a browser session.
    DoorPassword,
}

wire_enum!(SessionKind, [Browser => "browser", SignInLink => "sign-in-link", Invitation => "invitation", DoorPassword => "door-password"]);

/// How a browser session was signed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignInMethod {
    /// With a user-bound key (`x-api-key` or access token) typed into the sign-in page.
    Key,
    /// With a one-time sign-in link.
    Link,
    /// Through the OIDC issuer.
    Oidc,
    /// With a passkey.
    Passkey,
    /// From an invitation.
    Invitation,
}

wire_enum!(SignInMethod, [Key => "key", Link => "link", Oidc => "oidc", Passkey => "passkey", Invitation => "invitation"]);

/// A browser session, or a one-time sign-in link ([`SessionKind`]).
#[derive(Clone, PartialEq, Eq)]
pub struct Session {
    /// Assigned at creation (`ses_…`): what `dbconsole sessions revoke` takes. Not the secret.
    pub id: SessionId,
    /// A session or a link.
    pub kind: SessionKind,
    /// SHA-256 of the secret (the cookie's value, or the link's token).
    pub digest: [u8; 32],
    /// The person it acts for.
    pub principal: Principal,
    /// What it allows: the key's scope for a session made from a key, else the principal's
    /// role's (super admin: full, member: query).
    pub scope: Scope,
    /// The key it was made from: it ends when that key is revoked.
    pub key_id: Option<KeyId>,
    /// How it was (or will be) signed in.
    pub method: SignInMethod,
    /// Creation time.
    pub created_at: Timestamp,
    /// Last time it authenticated a request (written at most about once a minute).
    pub last_seen_at: Timestamp,
    /// When it ends whatever its use (the maximum age; a link's 15 minutes).
    pub expires_at: Timestamp,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("digest", &"[REDACTED]")
            .field("principal", &self.principal)
            .field("scope", &self.scope)
            .field("key_id", &self.key_id)
            .field("method", &self.method)
            .field("created_at", &self.created_at)
            .field("last_seen_at", &self.last_seen_at)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

impl Session {
    /// Mints a session (or a link) for `principal` that ends `lifetime` from now: the record to
    /// store (digest only) and the secret to hand over once (`dbc_ses_…` or `dbc_sil_…` and 32
    /// random bytes in base64url).
    pub fn mint(
        kind: SessionKind,
        principal: Principal,
        scope: Scope,
        method: SignInMethod,
        lifetime: Duration,
    ) -> (Session, Secret) {
        let mut random = zeroize::Zeroizing::new([0u8; 32]);
        rand::rng().fill_bytes(random.as_mut());
        let prefix = match kind {
            SessionKind::Browser => "dbc_ses_",
            SessionKind::SignInLink => "dbc_sil_",
            SessionKind::Invitation => "dbc_inv_",
            SessionKind::DoorPassword => "dbc_dpw_",
        };
        let secret = Secret::from(format!(
            "{prefix}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(random.as_ref())
        ));
        let now = Timestamp::now();
        let session = Session {
            id: SessionId::generate(),
            kind,
            digest: key_digest(secret.expose()),
            principal,
            scope,
            key_id: None,
            method,
            created_at: now,
            last_seen_at: now,
            expires_at: now.plus(lifetime),
        };
        (session, secret)
    }

    /// Whether it is still good at `now` with this idle time (a link has none: only its
    /// expiry counts).
    pub fn live_at(&self, now: Timestamp, idle: Duration) -> bool {
        let idle_ok = match self.kind {
            SessionKind::Browser => now < self.last_seen_at.plus(idle),
            SessionKind::SignInLink | SessionKind::Invitation | SessionKind::DoorPassword => true,
        };
        now < self.expires_at && idle_ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_lives_until_idle_or_its_end_and_a_link_until_its_end() {
        let (session, secret) = Session::mint(
            SessionKind::Browser,
            Principal::member("ann"),
            Scope::Query,
            SignInMethod::Key,
            Duration::from_secs(3600),
        );
        assert!(secret.expose_str().unwrap().starts_with("dbc_ses_"));
        assert_eq!(session.digest, key_digest(secret.expose()));
        assert!(!format!("{session:?}").contains(secret.expose_str().unwrap()));
        let idle = Duration::from_secs(600);
        let start = session.last_seen_at;
        assert!(session.live_at(start, idle));
        assert!(!session.live_at(start.plus(idle), idle), "idle too long");
        assert!(!session.live_at(start.plus(Duration::from_secs(3600)), Duration::MAX));
        let (link, token) = Session::mint(
            SessionKind::SignInLink,
            Principal::member("ann"),
            Scope::Query,
            SignInMethod::Link,
            Duration::from_secs(900),
        );
        assert!(token.expose_str().unwrap().starts_with("dbc_sil_"));
        assert!(
            link.live_at(start.plus(Duration::from_secs(899)), idle),
            "no idle time"
        );
        assert!(!link.live_at(link.expires_at, idle));
    }
}
