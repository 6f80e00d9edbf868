//! The callers' credentials: static full-access ones from the environment, or, when none is
//! configured, a random API key and access token generated for this run and printed once.

use std::io::{self, Write};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dbconsole_core::{Secret, StaticCredentials};
use rand::TryRngCore;
use rand::rngs::OsRng;

/// The environment variable holding the API key of the database routes (`x-api-key`).
pub const API_KEY_VAR: &str = "DBCONSOLE_API_KEY";

/// The environment variable holding the access token of the dashboard routes
/// (`Authorization: Bearer`).
pub const ACCESS_TOKEN_VAR: &str = "DBCONSOLE_ACCESS_TOKEN";

/// Random bytes in a generated credential.
const GENERATED_BYTES: usize = 32;

/// The credentials the server accepts. `Debug` shows no secret.
#[derive(Debug)]
pub struct CallerCredentials {
    api_key: Option<Secret>,
    access_token: Option<Secret>,
    generated: bool,
}

impl CallerCredentials {
    /// Reads [`API_KEY_VAR`] and [`ACCESS_TOKEN_VAR`]; see [`CallerCredentials::resolve`].
    pub fn from_env() -> io::Result<Self> {
        Self::resolve(read_var(API_KEY_VAR), read_var(ACCESS_TOKEN_VAR))
    }

    /// These credentials, each when given and not blank (surrounding whitespace is dropped, as
    /// a trailing newline from a secret file would be). When neither is, a random API key and
    /// access token are generated: the error is the operating system's random source failing.
    pub fn resolve(api_key: Option<Secret>, access_token: Option<Secret>) -> io::Result<Self> {
        let api_key = api_key.map(trimmed).filter(|secret| !secret.is_empty());
        let access_token = access_token
            .map(trimmed)
            .filter(|secret| !secret.is_empty());
        if api_key.is_some() || access_token.is_some() {
            return Ok(Self {
                api_key,
                access_token,
                generated: false,
            });
        }
        Ok(Self {
            api_key: Some(generate_secret()?),
            access_token: Some(generate_secret()?),
            generated: true,
        })
    }

    /// Whether the credentials were generated for this run (none was configured).
    pub fn generated(&self) -> bool {
        self.generated
    }

    /// Whether an API key is accepted (the database routes are usable).
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    /// Whether an access token is accepted (the dashboard routes are usable).
    pub fn has_access_token(&self) -> bool {
        self.access_token.is_some()
    }

    /// The authenticator the service checks callers with.
    pub fn authenticator(&self) -> StaticCredentials {
        StaticCredentials::new(self.api_key.as_ref(), self.access_token.as_ref())
    }

    /// Writes the generated credentials, labelled, to `out` (the server's standard output, once
    /// at start). Writes nothing when the credentials were configured: a configured secret is
    /// never printed.
    pub fn write_generated(&self, out: &mut impl Write) -> io::Result<()> {
        if !self.generated {
            return Ok(());
        }
        writeln!(
            out,
            "No {API_KEY_VAR} or {ACCESS_TOKEN_VAR} is set: generated credentials for this run \
             (shown once, not stored):"
        )?;
        for (name, secret) in [
            (API_KEY_VAR, &self.api_key),
            (ACCESS_TOKEN_VAR, &self.access_token),
        ] {
            if let Some(text) = secret.as_ref().and_then(Secret::expose_str) {
                writeln!(out, "  {name}={text}")?;
            }
        }
        out.flush()
    }
}

/// 32 bytes from the operating system's random source, as unpadded base64url (43 characters).
pub fn generate_secret() -> io::Result<Secret> {
    let mut bytes = [0u8; GENERATED_BYTES];
    OsRng.try_fill_bytes(&mut bytes).map_err(io::Error::other)?;
    let secret = Secret::from(URL_SAFE_NO_PAD.encode(bytes));
    bytes.fill(0);
    Ok(secret)
}

fn read_var(name: &str) -> Option<Secret> {
    std::env::var_os(name).map(|value| Secret::new(value.into_encoded_bytes()))
}

fn trimmed(secret: Secret) -> Secret {
    let bytes = secret.expose().trim_ascii();
    if bytes.len() == secret.expose().len() {
        secret
    } else {
        Secret::new(bytes)
    }
}

#[cfg(test)]
mod tests {
    use dbconsole_core::{Authenticator, CredentialKind, Scope};

    use super::*;

    async fn accepts(auth: &StaticCredentials, kind: CredentialKind, presented: &str) -> bool {
        auth.authenticate(kind, presented).await.unwrap() == Some(Scope::Full)
    }

    fn printed(credentials: &CallerCredentials) -> String {
        let mut out = Vec::new();
        credentials.write_generated(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[tokio::test]
    async fn configured_credentials_are_used_and_never_printed() {
        let credentials = CallerCredentials::resolve(
            Some(Secret::from("configured-key\n")),
            Some(Secret::from("configured-token")),
        )
        .unwrap();
        assert!(!credentials.generated());
        let auth = credentials.authenticator();
        assert!(accepts(&auth, CredentialKind::ApiKey, "configured-key").await);
        assert!(accepts(&auth, CredentialKind::AccessToken, "configured-token").await);
        assert_eq!(printed(&credentials), "");
        let debug = format!("{credentials:?}");
        assert!(!debug.contains("configured-"), "{debug}");
    }

    #[tokio::test]
    async fn one_configured_credential_generates_nothing() {
        let credentials =
            CallerCredentials::resolve(None, Some(Secret::from("only-token"))).unwrap();
        assert!(!credentials.generated());
        assert!(!credentials.has_api_key());
        assert!(credentials.has_access_token());
        assert_eq!(printed(&credentials), "");
    }

    #[tokio::test]
    async fn blank_credentials_count_as_unset() {
        let credentials =
            CallerCredentials::resolve(Some(Secret::from("  ")), Some(Secret::from(""))).unwrap();
        assert!(credentials.generated());
    }

    #[tokio::test]
    async fn generated_credentials_are_printed_and_accepted() {
        let credentials = CallerCredentials::resolve(None, None).unwrap();
        assert!(credentials.generated());
        let out = printed(&credentials);
        let value = |name: &str| {
            out.lines()
                .find_map(|line| line.trim().strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("{name} not printed in {out:?}"))
                .to_owned()
        };
        let (key, token) = (value(API_KEY_VAR), value(ACCESS_TOKEN_VAR));
        assert_eq!(key.len(), 43);
        assert_ne!(key, token);
        let auth = credentials.authenticator();
        assert!(accepts(&auth, CredentialKind::ApiKey, &key).await);
        assert!(accepts(&auth, CredentialKind::AccessToken, &token).await);
        assert!(!accepts(&auth, CredentialKind::AccessToken, &key).await);
        let debug = format!("{credentials:?}");
        assert!(!debug.contains(&key) && !debug.contains(&token), "{debug}");
    }

    #[test]
    fn generated_secrets_differ() {
        let (a, b) = (generate_secret().unwrap(), generate_secret().unwrap());
        assert_ne!(a, b);
        let text = a.expose_str().unwrap();
        assert!(
            text.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
            "not base64url: {text}"
        );
    }
}
