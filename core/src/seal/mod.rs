//! Sealing: how secrets are kept. One [`Sealer`] per deployment seals every password,
//! certificate and key when a request brings it, and opens one only when check-connection needs
//! it.
//!
//! Records hold secrets only as [`SealedSecret`]s, so reading, listing and rendering a record
//! never decrypts anything, and every backend, in memory or durable, stores exactly what core
//! sealed. The cipher is XChaCha20-Poly1305 ([`chacha20poly1305`], RustCrypto) under a 32-byte
//! [`SecretKey`], with a fresh random 24-byte nonce per value and per write. Each value is bound
//! to its place by its associated data ([`Place`]: `database/<id>/credential/<credential
//! id>/password`, `database/<id>/tls/<field>`), so a value copied onto another credential, field
//! or record does not open.
//!
//! Keys have ids: a sealed value names the key that sealed it, and a [`Sealer`] holds a
//! [`Keyring`], whose current key seals and whose every key opens what it sealed. A store
//! keeps its [`SealKeys`] (the current id and a [key check value](Sealer::key_check) of every key
//! its secrets need) and a node adopts them when it opens the store ([`Sealer::adopt`]): a node
//! that lacks a needed key, or has another key under its id, refuses to start and names it.
//! [`rotate`](crate::storage::rotate) makes a new key current and seals every stored secret again under it, then drops
//! the old keys (docs/operations.md, "Rotating the secret key").

mod key;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use bytes::Bytes;
use chacha20poly1305::aead::{Aead, Generate, KeyInit, Payload};
use chacha20poly1305::{Key, XChaCha20Poly1305, XNonce};

pub use key::{KeyError, Keyring, SecretKey};

use crate::model::{Database, SealedSecret, Secret, TlsField};

/// Nonce length of XChaCha20-Poly1305.
const NONCE_LEN: usize = 24;

/// What is sealed as the key check value.
const KEY_CHECK_LABEL: &[u8] = b"dbconsole secret key check";

/// Where a sealed value belongs. Its associated data is `dbconsole/v1` then each part of the
/// place as its length (u32 LE) and bytes: unambiguous whatever the parts contain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    aad: Vec<u8>,
    name: String,
}

impl Place {
    /// The password of credential `credential_id` of database `database_id`.
    pub fn password(database_id: &str, credential_id: &str) -> Self {
        Self::from_parts(&[
            "database",
            database_id,
            "credential",
            credential_id,
            "password",
        ])
    }

    /// A TLS field of database `database_id`.
    pub fn tls(database_id: &str, field: TlsField) -> Self {
        Self::from_parts(&["database", database_id, "tls", field.place_name()])
    }

    fn key_check() -> Self {
        Self::from_parts(&["meta", "key_check"])
    }

    /// A place from its parts.
    pub fn from_parts(parts: &[&str]) -> Self {
        let mut aad = b"dbconsole/v1".to_vec();
        for part in parts {
            let len = u32::try_from(part.len()).unwrap_or(u32::MAX);
            aad.extend_from_slice(&len.to_le_bytes());
            aad.extend_from_slice(part.as_bytes());
        }
        Self {
            aad,
            name: parts.join("/"),
        }
    }
}

/// A sealing or opening failed; never says anything about the plaintext.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The value does not open under this key at this place (another key, tampered or moved).
    #[error("a stored secret does not decrypt under the secret key at its place ({0})")]
    Open(String),
    /// The system random number generator failed, or the value is too long to seal.
    #[error("a secret could not be encrypted")]
    Seal,
    /// The value was sealed under a key this node's keyring lacks (or the current key is
    /// missing).
    #[error(
        "a stored secret is sealed under seal key {0}, which this node's keyring lacks \
         (docs/operations.md, \"Rotating the secret key\")"
    )]
    MissingKey(u32),
}

/// The seal keys a store's secrets need, as the store keeps them so that every node agrees:
/// which key seals now, and the key check value of every key some stored secret may need
/// (docs/operations.md, "Rotating the secret key").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealKeys {
    /// The key every write seals under; a store refuses a database whose secrets are sealed
    /// under another ([`crate::storage::StorageError::SealKeyChanged`]).
    pub current: u32,
    /// Each key a stored secret may need, with its key check value ([`Sealer::key_check`];
    /// empty for a store that never outlives its process, which checks nothing).
    pub keys: BTreeMap<u32, Vec<u8>>,
}

impl SealKeys {
    /// One key, current.
    pub fn single(id: u32, check: Vec<u8>) -> Self {
        Self {
            current: id,
            keys: BTreeMap::from([(id, check)]),
        }
    }

    /// Whether a rotation is under way: keys other than the current one are still listed.
    pub fn rotating(&self) -> bool {
        self.keys.keys().any(|id| *id != self.current)
    }

    /// These keys with the current one alone: what a finished rotation leaves.
    pub fn only_current(&self) -> SealKeys {
        let mut keys = self.clone();
        keys.keys.retain(|id, _| *id == self.current);
        keys
    }
}

/// Why a node's keyring does not fit what a store needs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealKeyError {
    /// The store holds secrets sealed under a key this node does not have.
    #[error(
        "stored secrets need seal key {0}, which this node's keyring lacks; add it to the key \
         file (or DBCONSOLE_SECRET_KEY) as {0}:<base64> (docs/operations.md, \"Rotating the secret key\")"
    )]
    Missing(u32),
    /// This node's key with that id is another key than the one the store was sealed with.
    #[error(
        "seal key {0} of this node's keyring is not the key {0} the store's secrets were sealed \
         with (another key file or DBCONSOLE_SECRET_KEY?)"
    )]
    Wrong(u32),
    /// A key check value could not be made.
    #[error(transparent)]
    Seal(#[from] SealError),
}

/// Seals and opens secrets under a [`Keyring`]: the current key seals, every key opens what it
/// sealed (each sealed value names its key). Cheap to clone: clones share the keys, the
/// current key and the count of opened secrets, so a store and a service given one sealer see
/// one current key.
#[derive(Clone)]
pub struct Sealer {
    inner: Arc<Inner>,
}

struct Inner {
    ring: RwLock<Arc<Ring>>,
    opened: AtomicU64,
}

/// The ciphers by key id, and the current id.
struct Ring {
    ciphers: BTreeMap<u32, KeyCiphers>,
    current: u32,
}

/// What one key seals with: the key itself for stored secrets, and a key derived from it
/// ([`TOKEN_KEY_INFO`], HKDF-SHA256) for the tokens a browser carries, so that nothing a browser
/// holds is sealed under the key of the stored secrets.
#[derive(Clone)]
struct KeyCiphers {
    secrets: XChaCha20Poly1305,
    tokens: XChaCha20Poly1305,
}

/// The HKDF `info` of the token key derived from each seal key.
const TOKEN_KEY_INFO: &[u8] = b"dbconsole/v1 browser tokens";

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ring = self.ring();
        f.debug_struct("Sealer")
            .field("keys", &ring.ciphers.keys().collect::<Vec<_>>())
            .field("current", &ring.current)
            .field("opened", &self.opened())
            .finish_non_exhaustive()
    }
}

fn cipher(key: &SecretKey) -> KeyCiphers {
    let secrets: &Key = key.bytes().into();
    let mut derived = zeroize::Zeroizing::new([0u8; SecretKey::LEN]);
    hkdf::Hkdf::<sha2::Sha256>::new(None, key.bytes())
        .expand(TOKEN_KEY_INFO, derived.as_mut())
        .expect("32 bytes is a valid HKDF-SHA256 output length");
    let tokens: &Key = (&*derived).into();
    KeyCiphers {
        secrets: XChaCha20Poly1305::new(secrets),
        tokens: XChaCha20Poly1305::new(tokens),
    }
}

impl Sealer {
    /// A sealer under one key, key 0.
    pub fn new(key: &SecretKey) -> Self {
        Self::with_keyring(&Keyring::single(key.clone()))
    }

    /// A sealer under these keys; the highest id seals until a store names its current key
    /// ([`Sealer::adopt`]).
    pub fn with_keyring(keyring: &Keyring) -> Self {
        let ciphers: BTreeMap<u32, KeyCiphers> =
            keyring.iter().map(|(id, key)| (id, cipher(key))).collect();
        let current = ciphers.keys().next_back().copied().unwrap_or(0);
        Self {
            inner: Arc::new(Inner {
                ring: RwLock::new(Arc::new(Ring { ciphers, current })),
                opened: AtomicU64::new(0),
            }),
        }
    }

    /// A sealer under a new random key, for stores that do not outlive the process (the
    /// in-memory backend, tests).
    pub fn ephemeral() -> Result<Self, KeyError> {
        Ok(Self::new(&SecretKey::generate()?))
    }

    fn ring(&self) -> Arc<Ring> {
        Arc::clone(
            &self
                .inner
                .ring
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    fn change(&self, change: impl FnOnce(&mut Ring)) {
        let mut ring = self
            .inner
            .ring
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let mut next = Ring {
            ciphers: ring.ciphers.clone(),
            current: ring.current,
        };
        change(&mut next);
        *ring = Arc::new(next);
    }

    /// The id of the key that seals now.
    pub fn current(&self) -> u32 {
        self.ring().current
    }

    /// The ids of the keys this sealer has.
    pub fn key_ids(&self) -> Vec<u32> {
        self.ring().ciphers.keys().copied().collect()
    }

    /// Adds key `id` (it opens what it sealed; it seals once made current).
    pub fn add_key(&self, id: u32, key: &SecretKey) {
        let cipher = cipher(key);
        self.change(|ring| {
            ring.ciphers.insert(id, cipher);
        });
    }

    /// Drops key `id`: what it sealed no longer opens. The current key is kept.
    pub fn remove_key(&self, id: u32) {
        self.change(|ring| {
            if ring.current != id {
                ring.ciphers.remove(&id);
            }
        });
    }

    /// Seals under key `id` from now on; [`SealKeyError::Missing`] when this sealer lacks it.
    pub fn use_key(&self, id: u32) -> Result<(), SealKeyError> {
        if !self.ring().ciphers.contains_key(&id) {
            return Err(SealKeyError::Missing(id));
        }
        self.change(|ring| ring.current = id);
        Ok(())
    }

    /// Checks that this sealer has every key `stored` lists, each the same key (by its key
    /// check value), and seals under its current key from now on. A store calls it when it
    /// opens: a node that lacks a key the store's secrets need refuses to start, naming it.
    pub fn adopt(&self, stored: &SealKeys) -> Result<(), SealKeyError> {
        let ring = self.ring();
        for (id, check) in &stored.keys {
            if !ring.ciphers.contains_key(id) {
                return Err(SealKeyError::Missing(*id));
            }
            if !check.is_empty() && !self.matches_key_check(*id, check) {
                return Err(SealKeyError::Wrong(*id));
            }
        }
        self.use_key(stored.current)
    }

    /// Seals `secret` for `place` under the current key, with a fresh random nonce.
    pub fn seal(&self, secret: &Secret, place: &Place) -> Result<SealedSecret, SealError> {
        let ring = self.ring();
        let cipher = ring
            .ciphers
            .get(&ring.current)
            .ok_or(SealError::MissingKey(ring.current))?;
        seal_bytes(&cipher.secrets, secret.expose(), place)
            .map(|bytes| SealedSecret::new(ring.current, bytes))
    }

    /// `text` sealed for `place` as a URL-safe token: the id of the key that sealed it, then the
    /// sealed bytes, in base64url. What a browser carries back to any node that shares the keys
    /// (a download ticket, an OIDC flow's state, a row token); [`Sealer::open_token`] reads it.
    /// Sealed under the token key derived from the current key, never under the key itself.
    pub fn seal_token(&self, text: &str, place: &Place) -> Result<String, SealError> {
        use base64::Engine as _;
        let ring = self.ring();
        let cipher = ring
            .ciphers
            .get(&ring.current)
            .ok_or(SealError::MissingKey(ring.current))?;
        let sealed = seal_bytes(&cipher.tokens, text.as_bytes(), place)?;
        let mut bytes = ring.current.to_be_bytes().to_vec();
        bytes.extend_from_slice(&sealed);
        Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
    }

    /// The text a [`Sealer::seal_token`] token holds when it was made for `place` by a key of
    /// this sealer and not changed since; `None` for anything else.
    pub fn open_token(&self, token: &str, place: &Place) -> Option<Secret> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.as_bytes())
            .ok()?;
        let (key, sealed) = bytes.split_first_chunk::<4>()?;
        let ring = self.ring();
        let cipher = ring.ciphers.get(&u32::from_be_bytes(*key))?;
        open_bytes(&cipher.tokens, sealed, place).ok()
    }

    /// The secret that [`Sealer::seal`] sealed for the same place, opened under the key it
    /// names. Counted (see [`Sealer::opened`]).
    pub fn open(&self, sealed: &SealedSecret, place: &Place) -> Result<Secret, SealError> {
        self.inner.opened.fetch_add(1, Ordering::Relaxed);
        let ring = self.ring();
        let cipher = ring
            .ciphers
            .get(&sealed.key())
            .ok_or(SealError::MissingKey(sealed.key()))?;
        open_bytes(&cipher.secrets, sealed.as_bytes(), place)
    }

    /// `database` with every secret sealed under the current key: those sealed under another
    /// are opened and sealed again (counted as opened); the others are kept as they are.
    pub fn reseal(&self, mut database: Database) -> Result<Database, SealError> {
        let current = self.current();
        let id = database.id.to_string();
        for credential in &mut database.credentials {
            if let Some(password) = &mut credential.password
                && password.key() != current
            {
                let place = Place::password(&id, credential.id.as_str());
                *password = self.seal(&self.open(password, &place)?, &place)?;
            }
        }
        for field in TlsField::ALL {
            if let Some(sealed) = database.tls.get_mut(field)
                && sealed.key() != current
            {
                let place = Place::tls(&id, field);
                *sealed = self.seal(&self.open(sealed, &place)?, &place)?;
            }
        }
        Ok(database)
    }

    /// How many secrets this sealer (and its clones) opened since it was made: what proves that
    /// a code path decrypts nothing.
    pub fn opened(&self) -> u64 {
        self.inner.opened.load(Ordering::Relaxed)
    }

    /// A key check value of key `id`: a fixed label sealed under it, for a store to keep
    /// beside its data.
    pub fn key_check(&self, id: u32) -> Result<Vec<u8>, SealError> {
        let ring = self.ring();
        let cipher = ring.ciphers.get(&id).ok_or(SealError::MissingKey(id))?;
        seal_bytes(&cipher.secrets, KEY_CHECK_LABEL, &Place::key_check())
            .map(|bytes| bytes.to_vec())
    }

    /// Whether `stored` is a key check value made under this sealer's key `id`.
    pub fn matches_key_check(&self, id: u32, stored: &[u8]) -> bool {
        let ring = self.ring();
        ring.ciphers.get(&id).is_some_and(|cipher| {
            open_bytes(&cipher.secrets, stored, &Place::key_check())
                .is_ok_and(|label| label.expose() == KEY_CHECK_LABEL)
        })
    }

    /// The seal keys of a new store: this sealer's current key, with its key check value.
    pub fn initial_keys(&self) -> Result<SealKeys, SealError> {
        let current = self.current();
        Ok(SealKeys::single(current, self.key_check(current)?))
    }
}

/// Whether every secret of `database` is sealed under key `current`: what a store checks on
/// every database it writes.
pub fn sealed_under(database: &Database, current: u32) -> bool {
    sealed_keys(database).all(|key| key == current)
}

/// The ids of the keys `database`'s secrets are sealed under (with repeats).
pub fn sealed_keys(database: &Database) -> impl Iterator<Item = u32> + '_ {
    let passwords = database
        .credentials
        .iter()
        .filter_map(|credential| credential.password.as_ref());
    let tls = TlsField::ALL
        .into_iter()
        .filter_map(|field| database.tls.get(field));
    passwords.chain(tls).map(SealedSecret::key)
}

fn seal_bytes(
    cipher: &XChaCha20Poly1305,
    plaintext: &[u8],
    place: &Place,
) -> Result<Bytes, SealError> {
    let nonce = XNonce::try_generate().map_err(|_| SealError::Seal)?;
    let ciphertext = cipher
        .encrypt(
            &nonce,
            Payload {
                msg: plaintext,
                aad: &place.aad,
            },
        )
        .map_err(|_| SealError::Seal)?;
    let mut sealed = Vec::with_capacity(NONCE_LEN + ciphertext.len());
    sealed.extend_from_slice(nonce.as_slice());
    sealed.extend_from_slice(&ciphertext);
    Ok(Bytes::from(sealed))
}

fn open_bytes(
    cipher: &XChaCha20Poly1305,
    sealed: &[u8],
    place: &Place,
) -> Result<Secret, SealError> {
    let fail = || SealError::Open(place.name.clone());
    if sealed.len() < NONCE_LEN {
        return Err(fail());
    }
    let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
    let nonce = XNonce::try_from(nonce).map_err(|_| fail())?;
    let plaintext = cipher
        .decrypt(
            &nonce,
            Payload {
                msg: ciphertext,
                aad: &place.aad,
            },
        )
        .map_err(|_| fail())?;
    Ok(Secret::new(plaintext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_open_only_as_made_for_their_place() {
        let sealer = Sealer::ephemeral().unwrap();
        let place = Place::from_parts(&["console", "test"]);
        let token = sealer.seal_token("v1\nqry_1", &place).unwrap();
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        let opened = sealer.open_token(&token, &place).unwrap();
        assert_eq!(opened.expose_str(), Some("v1\nqry_1"));
        let other = Place::from_parts(&["console", "other"]);
        assert!(sealer.open_token(&token, &other).is_none(), "another place");
        let mut changed = token.into_bytes();
        let last = changed.len() - 2;
        changed[last] = if changed[last] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(changed).unwrap();
        assert!(
            sealer.open_token(&changed, &place).is_none(),
            "a changed token"
        );
        assert!(sealer.open_token("", &place).is_none());
        assert!(sealer.open_token("AAA", &place).is_none());
        let stranger = Sealer::ephemeral().unwrap();
        let theirs = stranger.seal_token("v1", &place).unwrap();
        assert!(sealer.open_token(&theirs, &place).is_none(), "another key");
    }

    #[test]
    fn tokens_are_sealed_under_a_derived_key_not_the_secrets_key() {
        use base64::Engine as _;
        let sealer = Sealer::ephemeral().unwrap();
        let place = Place::from_parts(&["console", "test"]);
        let token = sealer.seal_token("hello", &place).unwrap();
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token)
            .unwrap();
        let (key, sealed) = bytes.split_first_chunk::<4>().unwrap();
        let as_secret = SealedSecret::new(u32::from_be_bytes(*key), sealed.to_vec());
        assert!(
            sealer.open(&as_secret, &place).is_err(),
            "a token opens only under the token key"
        );
        // And a stored secret's bytes are no token.
        let secret = sealer.seal(&Secret::from("hello"), &place).unwrap();
        let mut forged = secret.key().to_be_bytes().to_vec();
        forged.extend_from_slice(secret.as_bytes());
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged);
        assert!(sealer.open_token(&forged, &place).is_none());
    }

    fn sealer(byte: u8) -> Sealer {
        Sealer::new(&SecretKey::from_bytes([byte; 32]))
    }

    #[test]
    fn seals_and_opens_at_the_same_place() {
        let sealer = sealer(1);
        let place = Place::password("db_1", "crd_1");
        let sealed = sealer
            .seal(&Secret::from("hunter2-password"), &place)
            .unwrap();
        assert!(!sealed.as_bytes().windows(7).any(|w| w == b"hunter2"));
        assert_eq!(sealer.opened(), 0);
        assert_eq!(
            sealer.open(&sealed, &place).unwrap().expose(),
            b"hunter2-password"
        );
        assert_eq!(sealer.clone().opened(), 1);
        // A fresh nonce each time.
        assert_ne!(
            sealed,
            sealer
                .seal(&Secret::from("hunter2-password"), &place)
                .unwrap()
        );
    }

    #[test]
    fn another_place_or_key_does_not_open() {
        let sealer = sealer(1);
        let place = Place::password("db_1", "crd_1");
        let sealed = sealer.seal(&Secret::from("pw"), &place).unwrap();
        let other = Place::password("db_1", "crd_2");
        assert!(sealer.open(&sealed, &other).is_err());
        assert!(
            sealer
                .open(&sealed, &Place::tls("db_1", TlsField::CaCert))
                .is_err()
        );
        // Length prefixes keep ("ab","c") and ("a","bc") apart.
        let sealed_ab = sealer
            .seal(&Secret::from("pw"), &Place::from_parts(&["ab", "c"]))
            .unwrap();
        assert!(
            sealer
                .open(&sealed_ab, &Place::from_parts(&["a", "bc"]))
                .is_err()
        );
        assert!(super::tests::sealer(2).open(&sealed, &place).is_err());
        let cut = SealedSecret::from_stored(sealed.as_bytes()[..10].to_vec());
        assert!(sealer.open(&cut, &place).is_err());
        let message = sealer.open(&sealed, &other).unwrap_err().to_string();
        assert!(message.contains("database/db_1/credential/crd_2/password"));
    }

    #[test]
    fn key_check_recognises_the_key() {
        let check = sealer(1).key_check(0).unwrap();
        assert!(sealer(1).matches_key_check(0, &check));
        assert!(!sealer(2).matches_key_check(0, &check));
        assert!(!sealer(1).matches_key_check(1, &check));
        assert!(!sealer(1).matches_key_check(0, b"garbage"));
    }

    #[test]
    fn the_current_key_seals_and_every_key_opens() {
        let sealer = sealer(1);
        let place = Place::password("db_1", "crd_1");
        let old = sealer.seal(&Secret::from("pw"), &place).unwrap();
        assert_eq!(old.key(), 0);
        sealer.add_key(3, &SecretKey::from_bytes([3; 32]));
        assert_eq!(sealer.current(), 0);
        sealer.use_key(3).unwrap();
        let new = sealer.seal(&Secret::from("pw"), &place).unwrap();
        assert_eq!(new.key(), 3);
        assert_eq!(sealer.open(&old, &place).unwrap().expose(), b"pw");
        assert_eq!(sealer.open(&new, &place).unwrap().expose(), b"pw");
        // A value relabelled with another key id does not open.
        let relabelled = SealedSecret::new(3, old.as_bytes().to_vec());
        assert!(sealer.open(&relabelled, &place).is_err());
        sealer.remove_key(0);
        let error = sealer.open(&old, &place).unwrap_err();
        assert!(matches!(error, SealError::MissingKey(0)), "{error}");
        assert!(matches!(sealer.use_key(9), Err(SealKeyError::Missing(9))));
    }

    #[test]
    fn adopt_names_the_missing_or_wrong_key() {
        let store = sealer(1);
        store.add_key(1, &SecretKey::from_bytes([9; 32]));
        let mut keys = store.initial_keys().unwrap();
        keys.keys.insert(1, store.key_check(1).unwrap());
        keys.current = 1;
        let node = sealer(1);
        let error = node.adopt(&keys).unwrap_err();
        assert!(matches!(error, SealKeyError::Missing(1)), "{error}");
        assert!(error.to_string().contains("seal key 1"), "{error}");
        node.add_key(1, &SecretKey::from_bytes([8; 32]));
        assert!(matches!(node.adopt(&keys), Err(SealKeyError::Wrong(1))));
        node.add_key(1, &SecretKey::from_bytes([9; 32]));
        node.adopt(&keys).unwrap();
        assert_eq!(node.current(), 1);
    }

    #[test]
    fn debug_shows_no_key() {
        let text = format!("{:?}", sealer(0x41));
        assert!(text.starts_with("Sealer { keys: [0], current: 0"), "{text}");
        assert!(!text.contains("65"), "{text}");
        assert!(!text.contains("AAAA"), "{text}");
    }
}
