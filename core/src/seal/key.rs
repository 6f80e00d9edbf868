//! [`SecretKey`]: a key that encrypts secrets at rest; [`Keyring`]: the seal keys of a node by
//! id, and where they come from.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chacha20poly1305::XChaCha20Poly1305;
use chacha20poly1305::aead::{Generate, Key};
use zeroize::{Zeroize, Zeroizing};

/// The 32-byte key that seals every password, certificate and private key (XChaCha20-Poly1305).
///
/// Its `Debug` is redacted, it has no `Display`, and its memory is wiped on drop. Keep it
/// outside the data directory's backups: whoever holds both the data file and the key can read
/// the secrets. Lose the key and the secrets are lost with it (a durable store refuses to open).
///
/// Its text form, in the environment variable `DBCONSOLE_SECRET_KEY` and in a key file, is the
/// standard base64 of the 32 bytes (44 characters).
#[derive(Clone)]
pub struct SecretKey(Zeroizing<[u8; SecretKey::LEN]>);

/// Why a [`SecretKey`] could not be read or made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The text is not standard base64.
    #[error("the secret key is not valid base64")]
    NotBase64,
    /// The base64 decodes to the wrong number of bytes.
    #[error("the secret key is {len} bytes long; it must be 32 bytes (44 base64 characters)")]
    WrongLength {
        /// How many bytes it decoded to.
        len: usize,
    },
    /// The key file exists but does not hold a valid key.
    #[error("the key file {} does not hold a valid key: {problem}", path.display())]
    BadKeyFile {
        /// The key file.
        path: PathBuf,
        /// What is wrong with its content.
        problem: Box<KeyError>,
    },
    /// The key file (or its directory) could not be read or created.
    #[error("cannot read or create the key file {}: {source}", path.display())]
    Io {
        /// The key file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The operating system's random number generator failed.
    #[error("the system random number generator failed")]
    Random,
    /// A keyring entry's id is not a number (`<id>:<base64>`).
    #[error("a keyring entry's id is not a number from 0 to 4294967295")]
    BadId,
    /// Two keyring entries have one id.
    #[error("the keyring holds seal key {0} twice")]
    DuplicateId(u32),
    /// The keyring holds no key.
    #[error("the keyring holds no key")]
    Empty,
}

impl SecretKey {
    /// The key length in bytes.
    pub const LEN: usize = 32;

    /// A new random key from the operating system's random number generator.
    pub fn generate() -> Result<Self, KeyError> {
        let mut key = Key::<XChaCha20Poly1305>::try_generate().map_err(|_| KeyError::Random)?;
        let mut bytes = Zeroizing::new([0u8; Self::LEN]);
        bytes.copy_from_slice(key.as_slice());
        key.as_mut_slice().zeroize();
        Ok(Self(bytes))
    }

    /// Wraps 32 key bytes.
    pub fn from_bytes(bytes: [u8; Self::LEN]) -> Self {
        Self(Zeroizing::new(bytes))
    }

    /// Reads the key from its text form: the standard base64 of 32 bytes (surrounding whitespace
    /// is ignored), as in `DBCONSOLE_SECRET_KEY`. The error never repeats the text.
    pub fn from_base64(text: &str) -> Result<Self, KeyError> {
        let decoded = Zeroizing::new(
            STANDARD
                .decode(text.trim())
                .map_err(|_| KeyError::NotBase64)?,
        );
        let bytes: &[u8; Self::LEN] = decoded
            .as_slice()
            .try_into()
            .map_err(|_| KeyError::WrongLength { len: decoded.len() })?;
        Ok(Self::from_bytes(*bytes))
    }

    /// The key's text form (standard base64).
    pub fn to_base64(&self) -> Zeroizing<String> {
        Zeroizing::new(STANDARD.encode(self.0.as_slice()))
    }

    pub(crate) fn bytes(&self) -> &[u8; Self::LEN] {
        &self.0
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretKey([REDACTED])")
    }
}

/// The seal keys of a node, by id: the key a store names current seals, the others open what
/// they sealed (docs/operations.md, "Rotating the secret key").
///
/// Its text form, in a key file and in `DBCONSOLE_SECRET_KEY`, is one entry per line (or per
/// whitespace-separated word): `<id>:<base64>`. A bare `<base64>` is key 0, so a key file or
/// variable written before keys had ids reads as a keyring of key 0. `#` starts a comment
/// line. Its `Debug` shows the ids only.
#[derive(Clone, Default)]
pub struct Keyring {
    keys: BTreeMap<u32, SecretKey>,
}

impl fmt::Debug for Keyring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyring")
            .field("ids", &self.keys.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Keyring {
    /// A keyring of one key, key 0.
    pub fn single(key: SecretKey) -> Self {
        let mut ring = Self::default();
        ring.keys.insert(0, key);
        ring
    }

    /// Reads a keyring from its text form. The error never repeats the text.
    pub fn from_text(text: &str) -> Result<Self, KeyError> {
        let mut ring = Self::default();
        for line in text.lines().map(str::trim) {
            if line.starts_with('#') {
                continue;
            }
            for word in line.split_whitespace() {
                let (id, key) = match word.split_once(':') {
                    Some((id, key)) => (id.parse().map_err(|_| KeyError::BadId)?, key),
                    None => (0, word),
                };
                let key = SecretKey::from_base64(key)?;
                if ring.keys.insert(id, key).is_some() {
                    return Err(KeyError::DuplicateId(id));
                }
            }
        }
        if ring.keys.is_empty() {
            return Err(KeyError::Empty);
        }
        Ok(ring)
    }

    /// The text form: a comment line, then `<id>:<base64>` per key.
    pub fn to_text(&self) -> Zeroizing<String> {
        let mut text = Zeroizing::new(String::from(
            "# dbconsole seal keys, <id>:<base64>; keep this file apart from the data and its backups\n",
        ));
        for (id, key) in &self.keys {
            text.push_str(&format!("{id}:{}\n", key.to_base64().as_str()));
        }
        text
    }

    /// The key with this id.
    pub fn get(&self, id: u32) -> Option<&SecretKey> {
        self.keys.get(&id)
    }

    /// The ids, in order.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.keys.keys().copied()
    }

    /// Every key with its id, in order of id.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &SecretKey)> {
        self.keys.iter().map(|(id, key)| (*id, key))
    }

    /// Adds (or replaces) key `id`.
    pub fn insert(&mut self, id: u32, key: SecretKey) {
        self.keys.insert(id, key);
    }

    /// Removes key `id`; whether it was there.
    pub fn remove(&mut self, id: u32) -> bool {
        self.keys.remove(&id).is_some()
    }

    /// Reads the key file at `path`, or, when there is none, creates it once with a new random
    /// key 0 and returns that.
    ///
    /// The file is created with mode 0600 (on Unix), written and flushed to disk under a
    /// temporary name in the same directory, and then linked into place only if no file took
    /// the name meanwhile: a crash never leaves a half-written key file, and two processes
    /// starting at once end up with the same key. The missing parent directory is created. A
    /// key file that others can read is used, with a warning in the log.
    pub fn load_or_create(path: &Path) -> Result<Self, KeyError> {
        match Self::load(path) {
            Err(KeyError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
            other => return other,
        }
        let ring = Self::single(SecretKey::generate()?);
        match write_new(path, &ring.to_text(), false) {
            Ok(()) => {
                tracing::info!(path = %path.display(), "created a new secret key file");
                Ok(ring)
            }
            // Another process created the key file first: use its key.
            Err(KeyError::Io { source, .. }) if source.kind() == io::ErrorKind::AlreadyExists => {
                Self::load(path)
            }
            Err(error) => Err(error),
        }
    }

    /// Reads the key file at `path`.
    pub fn load(path: &Path) -> Result<Self, KeyError> {
        let text = Zeroizing::new(fs::read_to_string(path).map_err(|source| KeyError::Io {
            path: path.to_owned(),
            source,
        })?);
        warn_if_readable_by_others(path);
        Self::from_text(&text).map_err(|problem| KeyError::BadKeyFile {
            path: path.to_owned(),
            problem: Box::new(problem),
        })
    }

    /// Replaces the key file at `path` by this keyring, atomically (written and flushed under a
    /// temporary name, then renamed over it): a crash leaves the old file or the new one.
    pub fn save(&self, path: &Path) -> Result<(), KeyError> {
        write_new(path, &self.to_text(), true)
    }
}

/// Writes `text` to a new file at `path` (mode 0600), through a flushed temporary file in the
/// same directory; `replace` says whether an existing file is replaced, else it is kept and
/// the answer is an `AlreadyExists` error.
fn write_new(path: &Path, text: &str, replace: bool) -> Result<(), KeyError> {
    let io_error = |source| KeyError::Io {
        path: path.to_owned(),
        source,
    };
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    fs::create_dir_all(dir).map_err(io_error)?;
    let mut file = tempfile::Builder::new()
        .prefix(".dbconsole-key-")
        .tempfile_in(dir)
        .map_err(io_error)?;
    file.write_all(text.as_bytes()).map_err(io_error)?;
    file.as_file().sync_all().map_err(io_error)?;
    let persisted = if replace {
        file.persist(path).map(drop)
    } else {
        file.persist_noclobber(path).map(drop)
    };
    persisted.map_err(|error| io_error(error.error))?;
    sync_dir(dir);
    Ok(())
}

/// Makes the rename that created a file in `dir` durable. Best effort: the key is already
/// flushed, and a failure here only means a crash right now could lose the new name.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Err(error) = fs::File::open(dir).and_then(|dir| dir.sync_all()) {
        tracing::warn!(dir = %dir.display(), %error, "could not flush the key file's directory");
    }
    #[cfg(not(unix))]
    let _ = dir;
}

fn warn_if_readable_by_others(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(metadata) = fs::metadata(path)
            && metadata.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                path = %path.display(),
                "the secret key file can be read by other users; restrict it with chmod 600"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_is_redacted() {
        let key = SecretKey::from_bytes([7; 32]);
        assert_eq!(format!("{key:?}"), "SecretKey([REDACTED])");
    }

    #[test]
    fn base64_round_trip_and_errors() {
        let key = SecretKey::generate().unwrap();
        let text = key.to_base64();
        assert_eq!(text.len(), 44);
        let back = SecretKey::from_base64(&format!("  {}\n", text.as_str())).unwrap();
        assert_eq!(back.bytes(), key.bytes());
        assert!(matches!(
            SecretKey::from_base64("not base64!"),
            Err(KeyError::NotBase64)
        ));
        assert!(matches!(
            SecretKey::from_base64(&STANDARD.encode([1u8; 16])),
            Err(KeyError::WrongLength { len: 16 })
        ));
        let message = SecretKey::from_base64("c2VjcmV0LXZhbHVl")
            .unwrap_err()
            .to_string();
        assert!(!message.contains("c2VjcmV0LXZhbHVl"), "{message}");
    }

    #[test]
    fn generated_keys_differ() {
        let a = SecretKey::generate().unwrap();
        let b = SecretKey::generate().unwrap();
        assert_ne!(a.bytes(), b.bytes());
    }

    #[test]
    fn keyring_text_reads_legacy_and_ids() {
        let a = SecretKey::generate().unwrap();
        let b = SecretKey::generate().unwrap();
        // A key file from before ids: key 0.
        let legacy = Keyring::from_text(&format!("{}\n", a.to_base64().as_str())).unwrap();
        assert_eq!(legacy.ids().collect::<Vec<_>>(), vec![0]);
        assert_eq!(legacy.get(0).unwrap().bytes(), a.bytes());
        // Words or lines, with comments.
        let text = format!(
            "# comment\n{} 7:{}\n",
            a.to_base64().as_str(),
            b.to_base64().as_str()
        );
        let ring = Keyring::from_text(&text).unwrap();
        assert_eq!(ring.ids().collect::<Vec<_>>(), vec![0, 7]);
        let again = Keyring::from_text(&ring.to_text()).unwrap();
        assert_eq!(again.get(7).unwrap().bytes(), b.bytes());
        assert!(matches!(
            Keyring::from_text(&format!("1:{0} 1:{0}", a.to_base64().as_str())),
            Err(KeyError::DuplicateId(1))
        ));
        assert!(matches!(Keyring::from_text("x:AAAA"), Err(KeyError::BadId)));
        assert!(matches!(
            Keyring::from_text("# nothing\n"),
            Err(KeyError::Empty)
        ));
        let debug = format!("{ring:?}");
        assert_eq!(debug, "Keyring { ids: [0, 7] }");
    }

    #[test]
    fn save_replaces_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        let mut ring = Keyring::load_or_create(&path).unwrap();
        ring.insert(1, SecretKey::generate().unwrap());
        ring.save(&path).unwrap();
        let loaded = Keyring::load(&path).unwrap();
        assert_eq!(loaded.ids().collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn load_or_create_creates_once_then_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("secret.key");
        let created = Keyring::load_or_create(&path).unwrap();
        let loaded = Keyring::load_or_create(&path).unwrap();
        assert_eq!(
            created.get(0).unwrap().bytes(),
            loaded.get(0).unwrap().bytes()
        );
        let text = fs::read_to_string(&path).unwrap();
        assert!(
            text.ends_with(&format!(
                "0:{}\n",
                created.get(0).unwrap().to_base64().as_str()
            )),
            "{text}"
        );
        // No temporary file is left behind.
        let names: Vec<_> = fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("secret.key")]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn load_or_create_rejects_a_damaged_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret.key");
        fs::write(&path, "too-short\n").unwrap();
        let error = Keyring::load_or_create(&path).unwrap_err();
        assert!(matches!(error, KeyError::BadKeyFile { .. }), "{error}");
        // The damaged file is left as it was, not replaced by a new key.
        assert_eq!(fs::read_to_string(&path).unwrap(), "too-short\n");
    }
}
