//! The admin wire protocol: the messages `dbconsole keys` and `dbconsole backup` exchange with a
//! running server's admin socket, one JSON line each way (docs/api.md, "Caller credentials"
//! and "Backup and restore").
//!
//! A [`AdminRequest`] is tagged by `op`, a [`AdminReply`] by `result`. Kinds and scopes travel as
//! the wire names of [`CredentialKind`] and [`Scope`] (`api-key`, `access-token`; `full`,
//! `setup`), times as RFC 3339 UTC with six fractional digits ([`Timestamp`]'s `Display`), and
//! a created key's secret as its base64url text. Only core types and serde are used here: the
//! module knows nothing of sockets, stores or terminals.

use std::path::PathBuf;

use dbconsole_core::model::{CallerKey, Session, Timestamp};
use dbconsole_core::{CredentialKind, Scope, Secret};
use serde::{Deserialize, Serialize};

/// One operation on the stored keys, or a backup; on the admin socket, one JSON line tagged by
/// `op`: `{"op":"create","kind":"api-key","scope":"setup","name":"ci"}`, `{"op":"list"}`,
/// `{"op":"revoke","id":"key_…"}`, `{"op":"backup","to":"/var/backups/dbconsole.redb"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum AdminRequest {
    /// Mint a key, store its digest, answer its secret (once).
    Create {
        /// API key or access token.
        #[serde(with = "wire_name")]
        kind: CredentialKind,
        /// What it allows.
        #[serde(with = "wire_name")]
        scope: Scope,
        /// What it is for.
        name: String,
        /// The user it acts for (only a key bound to one runs queries).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        user: Option<String>,
        /// The user's groups.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        groups: Vec<String>,
        /// The user's role: `member` (the default) or `super-admin`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
    },
    /// Every stored key, without secrets (there are none to show) or digests.
    List,
    /// Delete a key.
    Revoke {
        /// The key's id.
        id: String,
    },
    /// Write a backup of the server's store to a new file.
    Backup {
        /// The file, an absolute path on the server's machine; it must not exist.
        to: PathBuf,
    },
    /// Rotate the seal key: finish a rotation under way or start one, seal every secret again,
    /// retire the old keys (docs/operations.md, "Rotating the secret key").
    #[serde(rename = "rotate_seal")]
    RotateSeal {
        /// Databases per page.
        batch: usize,
    },
    /// The store's seal keys.
    #[serde(rename = "seal_status")]
    SealStatus,
    /// Every browser session and sign-in link (never a secret: there is none stored).
    Sessions,
    /// End the session or link `id`, or every one of `user` (at least one of the two).
    #[serde(rename = "revoke_sessions")]
    RevokeSessions {
        /// A session's id (`ses_…`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// A user: every session and link of theirs.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        user: Option<String>,
    },
    /// Make a one-time sign-in link for a user, answer its token (once).
    #[serde(rename = "sign_in_link")]
    SignInLink {
        /// The user it signs in.
        user: String,
        /// The user's groups.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        groups: Vec<String>,
        /// `member` (the default) or `super-admin`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        /// An invitation (7 days; the person enrolls a passkey) rather than a sign-in link.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        invitation: bool,
    },
}

impl AdminRequest {
    /// `create`, `list`, `revoke`, `backup`, `rotate_seal` or `seal_status`: for log lines.
    pub fn op(&self) -> &'static str {
        match self {
            AdminRequest::Create { .. } => "create",
            AdminRequest::List => "list",
            AdminRequest::Revoke { .. } => "revoke",
            AdminRequest::Backup { .. } => "backup",
            AdminRequest::RotateSeal { .. } => "rotate_seal",
            AdminRequest::SealStatus => "seal_status",
            AdminRequest::Sessions => "sessions",
            AdminRequest::RevokeSessions { .. } => "revoke_sessions",
            AdminRequest::SignInLink { .. } => "sign_in_link",
        }
    }
}

/// A stored key as the commands show it: everything but the digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyInfo {
    /// `key_…`.
    pub id: String,
    /// API key or access token.
    #[serde(with = "wire_name")]
    pub kind: CredentialKind,
    /// What it allows.
    #[serde(with = "wire_name")]
    pub scope: Scope,
    /// What it is for.
    pub name: String,
    /// Creation time.
    #[serde(with = "rfc3339")]
    pub created_at: Timestamp,
    /// Last use; `None` (JSON `null`) when never used.
    #[serde(with = "rfc3339::option", default)]
    pub last_used_at: Option<Timestamp>,
    /// The user it acts for, when bound to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The user's groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The user's role, when bound to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
}

impl From<&CallerKey> for KeyInfo {
    fn from(key: &CallerKey) -> Self {
        Self {
            id: key.id.to_string(),
            kind: key.kind,
            scope: key.scope,
            name: key.name.clone(),
            created_at: key.created_at,
            last_used_at: key.last_used_at,
            user: key.principal.as_ref().map(|p| p.user.clone()),
            groups: key
                .principal
                .as_ref()
                .map(|p| p.groups.clone())
                .unwrap_or_default(),
            role: key.principal.as_ref().map(|p| p.role.as_str().to_owned()),
        }
    }
}

/// A browser session or sign-in link as the commands show it: everything but the digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// `ses_…`.
    pub id: String,
    /// `browser` or `sign-in-link`.
    pub kind: String,
    /// The user it acts for.
    pub user: String,
    /// The user's role.
    pub role: String,
    /// The user's groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// What it allows.
    #[serde(with = "wire_name")]
    pub scope: Scope,
    /// How it was (or will be) signed in: `key`, `link` or `oidc`.
    pub method: String,
    /// Creation time.
    #[serde(with = "rfc3339")]
    pub created_at: Timestamp,
    /// Last use.
    #[serde(with = "rfc3339")]
    pub last_seen_at: Timestamp,
    /// When it ends at the latest.
    #[serde(with = "rfc3339")]
    pub expires_at: Timestamp,
}

impl From<&Session> for SessionInfo {
    fn from(session: &Session) -> Self {
        Self {
            id: session.id.as_str().to_owned(),
            kind: session.kind.as_str().to_owned(),
            user: session.principal.user.clone(),
            role: session.principal.role.as_str().to_owned(),
            groups: session.principal.groups.clone(),
            scope: session.scope,
            method: session.method.as_str().to_owned(),
            created_at: session.created_at,
            last_seen_at: session.last_seen_at,
            expires_at: session.expires_at,
        }
    }
}

/// Why an operation failed, for a program reading the admin socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// No key has that id.
    NotFound,
    /// The backup's file exists: a backup never replaces one.
    Exists,
    /// The request is well-formed but its values are not acceptable (an empty name…).
    Invalid,
    /// The line is not a request.
    BadRequest,
    /// The store failed.
    Storage,
}

/// The answer to a [`AdminRequest`]; on the admin socket, one JSON line tagged by `result`.
/// `Debug` shows no secret.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "lowercase")]
pub enum AdminReply {
    /// The key was stored; `secret` is the only copy there will ever be.
    Created {
        /// The stored key.
        key: Box<KeyInfo>,
        /// Its secret.
        #[serde(with = "secret_text")]
        secret: Secret,
    },
    /// The stored keys, ordered by id.
    Listed {
        /// The keys.
        keys: Vec<KeyInfo>,
    },
    /// The key was deleted.
    Revoked {
        /// The key as it was.
        key: Box<KeyInfo>,
    },
    /// The backup was written.
    #[serde(rename = "backed_up")]
    BackedUp {
        /// The file.
        to: PathBuf,
        /// Databases in it.
        databases: u64,
        /// Dashboards in it.
        dashboards: u64,
        /// Caller keys in it.
        caller_keys: u64,
        /// Its size.
        bytes: u64,
    },
    /// The seal key was rotated.
    Rotated {
        /// The key that seals now.
        current: u32,
        /// Whether this run made it current (else it finished a rotation under way).
        started: bool,
        /// Databases whose secrets were sealed again.
        resealed: u64,
        /// Passes over the databases.
        passes: u32,
        /// The keys retired (dropped from the store and from the key file).
        retired: Vec<u32>,
        /// The key file, when the keys come from one.
        key_file: Option<PathBuf>,
    },
    /// A new seal key was added to the key file (`keys add-seal-key`, no store involved).
    #[serde(rename = "seal_key_added")]
    SealKeyAdded {
        /// Its id.
        id: u32,
        /// The key file.
        key_file: PathBuf,
    },
    /// The store's seal keys.
    #[serde(rename = "seal_status")]
    SealStatus {
        /// The key that seals now.
        current: u32,
        /// Every key a stored secret may need.
        keys: Vec<u32>,
        /// Whether a rotation is under way (keys beside the current one).
        rotating: bool,
    },
    /// The browser sessions and sign-in links, ordered by id.
    #[serde(rename = "sessions")]
    SessionsListed {
        /// The sessions.
        sessions: Vec<SessionInfo>,
    },
    /// These sessions and links were ended.
    #[serde(rename = "sessions_revoked")]
    SessionsRevoked {
        /// The sessions as they were.
        sessions: Vec<SessionInfo>,
    },
    /// A sign-in link was stored; `token` is the only copy there will ever be.
    #[serde(rename = "link_created")]
    LinkCreated {
        /// The stored link.
        link: Box<SessionInfo>,
        /// Its token.
        #[serde(with = "secret_text")]
        token: Secret,
        /// The public URL the running server recorded in the store, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        public_url: Option<String>,
    },
    /// Nothing was changed.
    Failed {
        /// Why, for programs.
        error: Failure,
        /// Why, for people.
        message: String,
    },
}

impl AdminReply {
    /// A [`AdminReply::Failed`].
    pub fn failed(error: Failure, message: impl Into<String>) -> Self {
        AdminReply::Failed {
            error,
            message: message.into(),
        }
    }

    /// `created`, `listed`, `revoked`, `backed_up` or `failed`: for log lines.
    pub fn result(&self) -> &'static str {
        match self {
            AdminReply::Created { .. } => "created",
            AdminReply::Listed { .. } => "listed",
            AdminReply::Revoked { .. } => "revoked",
            AdminReply::BackedUp { .. } => "backed_up",
            AdminReply::Rotated { .. } => "rotated",
            AdminReply::SealStatus { .. } => "seal_status",
            AdminReply::SealKeyAdded { .. } => "seal_key_added",
            AdminReply::SessionsListed { .. } => "sessions",
            AdminReply::SessionsRevoked { .. } => "sessions_revoked",
            AdminReply::LinkCreated { .. } => "link_created",
            AdminReply::Failed { .. } => "failed",
        }
    }
}

/// A core wire enum as its wire name: written with `Display` (its `as_str`), read with
/// `FromStr`.
mod wire_name {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub(super) fn serialize<T: Display, S: Serializer>(
        value: &T,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(value)
    }

    pub(super) fn deserialize<'de, T, D>(deserializer: D) -> Result<T, D::Error>
    where
        T: FromStr<Err: Display>,
        D: Deserializer<'de>,
    {
        let name = String::deserialize(deserializer)?;
        name.parse()
            .map_err(|error| D::Error::custom(format_args!("{name:?}: {error}")))
    }
}

/// A [`Timestamp`] as RFC 3339 text: its `Display` (`2026-11-22T10:04:05.123456Z`), read back
/// from any RFC 3339 time.
mod rfc3339 {
    use chrono::DateTime;
    use dbconsole_core::model::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        at: &Timestamp,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(at)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Timestamp, D::Error> {
        parse(&String::deserialize(deserializer)?)
    }

    fn parse<E: serde::de::Error>(text: &str) -> Result<Timestamp, E> {
        let at = DateTime::parse_from_rfc3339(text).map_err(|error| {
            E::custom(format_args!("{text:?} is not an RFC 3339 time: {error}"))
        })?;
        Ok(Timestamp::from_micros(at.timestamp_micros()))
    }

    /// The same for an optional time, `null` when absent.
    pub(super) mod option {
        use dbconsole_core::model::Timestamp;
        use serde::{Deserialize, Deserializer, Serializer};

        pub(crate) fn serialize<S: Serializer>(
            at: &Option<Timestamp>,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            match at {
                Some(at) => serializer.collect_str(at),
                None => serializer.serialize_none(),
            }
        }

        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Option<Timestamp>, D::Error> {
            Option::<String>::deserialize(deserializer)?
                .map(|text| super::parse(&text))
                .transpose()
        }
    }
}

/// The secret of a created key as a JSON string (it is base64url text).
mod secret_text {
    use dbconsole_core::Secret;
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _, ser::Error as _};

    pub(super) fn serialize<S: Serializer>(
        secret: &Secret,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let text = secret
            .expose_str()
            .ok_or_else(|| S::Error::custom("the secret is not text"))?;
        serializer.serialize_str(text)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Secret, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.is_empty() {
            return Err(D::Error::custom("empty secret"));
        }
        Ok(Secret::from(text))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn create(kind: CredentialKind, scope: Scope, name: &str) -> AdminRequest {
        AdminRequest::Create {
            kind,
            scope,
            name: name.to_owned(),
            user: None,
            groups: Vec::new(),
            role: None,
        }
    }

    #[test]
    fn kinds_and_scopes_travel_by_their_core_names() {
        for kind in CredentialKind::ALL {
            let request = create(kind, Scope::Full, "x");
            let json = serde_json::to_value(&request).unwrap();
            assert_eq!(json["kind"], kind.as_str());
            assert_eq!(
                serde_json::from_value::<AdminRequest>(json).unwrap(),
                request
            );
        }
        for scope in Scope::ALL {
            let request = create(CredentialKind::ApiKey, scope, "x");
            let json = serde_json::to_value(&request).unwrap();
            assert_eq!(json["scope"], scope.as_str());
            assert_eq!(
                serde_json::from_value::<AdminRequest>(json).unwrap(),
                request
            );
        }
    }

    #[test]
    fn requests_have_the_documented_wire_form() {
        let request: AdminRequest =
            serde_json::from_str(r#"{"op":"create","kind":"api-key","scope":"setup","name":"ci"}"#)
                .unwrap();
        assert_eq!(request, create(CredentialKind::ApiKey, Scope::Setup, "ci"));
        let request: AdminRequest = serde_json::from_str(r#"{"op":"list"}"#).unwrap();
        assert_eq!(request, AdminRequest::List);
        let request: AdminRequest =
            serde_json::from_str(r#"{"op":"revoke","id":"key_1"}"#).unwrap();
        assert_eq!(
            request,
            AdminRequest::Revoke {
                id: "key_1".to_owned()
            }
        );
        for bad in [
            r#"{"op":"drop"}"#,
            r#"{"op":"create","kind":"password","scope":"full","name":"x"}"#,
            r#"{"op":"create","kind":"api-key","scope":"admin","name":"x"}"#,
            r#"{"op":"revoke"}"#,
            "list",
        ] {
            assert!(serde_json::from_str::<AdminRequest>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn key_infos_have_the_documented_wire_form() {
        let info = KeyInfo {
            id: "key_01".to_owned(),
            kind: CredentialKind::AccessToken,
            scope: Scope::Setup,
            name: "grafana".to_owned(),
            created_at: Timestamp::from_micros(1_767_323_045_678_901),
            last_used_at: None,
            user: None,
            groups: Vec::new(),
            role: None,
        };
        let wire = json!({
            "id": "key_01",
            "kind": "access-token",
            "scope": "setup",
            "name": "grafana",
            "created_at": "2026-01-02T03:04:05.678901Z",
            "last_used_at": null,
        });
        assert_eq!(serde_json::to_value(&info).unwrap(), wire);
        assert_eq!(serde_json::from_value::<KeyInfo>(wire).unwrap(), info);

        let used = KeyInfo {
            last_used_at: Some(Timestamp::from_micros(1_770_091_506_000_001)),
            ..info.clone()
        };
        let json = serde_json::to_value(&used).unwrap();
        assert_eq!(json["last_used_at"], "2026-02-03T04:05:06.000001Z");
        assert_eq!(serde_json::from_value::<KeyInfo>(json).unwrap(), used);

        // A missing `last_used_at` is never used; a time that is not RFC 3339 is refused.
        let mut wire = serde_json::to_value(&info).unwrap();
        wire.as_object_mut().unwrap().remove("last_used_at");
        assert_eq!(
            serde_json::from_value::<KeyInfo>(wire.clone()).unwrap(),
            info
        );
        wire["created_at"] = json!("yesterday");
        assert!(serde_json::from_value::<KeyInfo>(wire).is_err());
    }

    #[test]
    fn replies_are_tagged_by_result_and_debug_shows_no_secret() {
        let reply = AdminReply::Failed {
            error: Failure::NotFound,
            message: "no key".to_owned(),
        };
        assert_eq!(
            serde_json::to_value(&reply).unwrap(),
            json!({"result": "failed", "error": "not_found", "message": "no key"})
        );
        let reply: AdminReply = serde_json::from_value(json!({
            "result": "created",
            "key": {
                "id": "key_01", "kind": "api-key", "scope": "full", "name": "ci",
                "created_at": "2026-01-02T03:04:05.678901Z", "last_used_at": null,
            },
            "secret": "dbc_ak_s3cr3t",
        }))
        .unwrap();
        assert_eq!(reply.result(), "created");
        assert!(!format!("{reply:?}").contains("s3cr3t"), "{reply:?}");
        assert!(
            serde_json::to_string(&reply)
                .unwrap()
                .contains("dbc_ak_s3cr3t")
        );
    }
}
