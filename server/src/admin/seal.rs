//! The seal keys of a node and of its store: `dbconsole keys add-seal-key`, `seal-status` and
//! `rotate-seal` (docs/operations.md, "Rotating the secret key").
//!
//! A rotation needs a new key that every node has before it becomes current. On redb there is
//! one node, so `rotate-seal` makes the key itself when none is waiting: written to the key
//! file (flushed, replacing the file atomically) *before* the store names it current, so a
//! crash never leaves secrets sealed under a key that is nowhere on disk. On PostgreSQL the key
//! is added beforehand (`add-seal-key`, then copied to every node, which restart one at a time),
//! and `rotate-seal` only uses it. The retired keys are dropped from the key file last.

use std::path::Path;

use dbconsole_core::Storage;
use dbconsole_core::model::{Actor, Origin};
use dbconsole_core::seal::{KeyError, Keyring, SealKeys, SecretKey};
use dbconsole_core::storage::{RotateError, rotate};

use super::protocol::{AdminReply, Failure};
use crate::backend::{NodeKeys, SECRET_KEY_VAR};

/// The actor of the writes of a rotation, in the audit trail.
pub const ROTATION_ACTOR: &str = "dbconsole keys rotate-seal";

/// Adds a new random key to the key file at `path`, under the next id above the file's and
/// `above`, and answers the id with the key. The key is not used until `rotate-seal` makes it
/// current.
pub fn add_seal_key(path: &Path, above: u32) -> Result<(u32, SecretKey), KeyError> {
    let mut keyring = Keyring::load(path)?;
    let id = keyring.ids().max().unwrap_or(0).max(above) + 1;
    let key = SecretKey::generate()?;
    keyring.insert(id, key.clone());
    keyring.save(path)?;
    Ok((id, key))
}

/// What the store's seal keys are now.
pub async fn seal_status(storage: &dyn Storage) -> AdminReply {
    match storage.seal_keys().await {
        Ok(keys) => AdminReply::SealStatus {
            current: keys.current,
            rotating: keys.rotating(),
            keys: keys.keys.keys().copied().collect(),
        },
        Err(error) => AdminReply::failed(Failure::Storage, format!("the store failed: {error}")),
    }
}

/// Rotates the store's seal key with the keys of this node: finishes a rotation under way, or
/// makes a new key current (the one waiting in the keyring, else, with `may_create`, a new one
/// written to the key file first), seals every secret again in batches of `batch`, retires the
/// old keys and drops them from the key file.
pub async fn rotate_seal(
    storage: &dyn Storage,
    keys: &NodeKeys,
    batch: usize,
    may_create: bool,
) -> AdminReply {
    let stored = match storage.seal_keys().await {
        Ok(stored) => stored,
        Err(error) => {
            return AdminReply::failed(Failure::Storage, format!("the store failed: {error}"));
        }
    };
    let new = if stored.rotating() {
        None
    } else {
        match new_key(&stored, keys, may_create) {
            Ok(id) => Some(id),
            Err(reply) => return reply,
        }
    };
    let origin = Origin::of(Actor::named(ROTATION_ACTOR));
    let rotation = match rotate(storage, &keys.sealer, new, batch, &origin).await {
        Ok(rotation) => rotation,
        Err(RotateError::Key(error)) => {
            return AdminReply::failed(Failure::Invalid, error.to_string());
        }
        Err(error) => {
            return AdminReply::failed(
                Failure::Storage,
                format!("the rotation stopped (run it again to go on): {error}"),
            );
        }
    };
    if let Some(path) = &keys.file
        && !rotation.retired.is_empty()
    {
        let dropped = Keyring::load(path).and_then(|mut keyring| {
            for id in &rotation.retired {
                keyring.remove(*id);
            }
            keyring.save(path)
        });
        if let Err(error) = dropped {
            return AdminReply::failed(
                Failure::Storage,
                format!(
                    "the rotation is done, but the retired keys could not be dropped from the \
                     key file (remove them by hand): {error}"
                ),
            );
        }
    }
    AdminReply::Rotated {
        current: rotation.current,
        started: rotation.started,
        resealed: rotation.resealed,
        passes: rotation.passes,
        retired: rotation.retired,
        key_file: keys.file.clone(),
    }
}

/// The key to make current: one this node has (read again from its key file, where
/// `add-seal-key` may have put it since the node started) with an id above every stored one;
/// else, with `may_create` and a key file, a new one added to the file.
fn new_key(stored: &SealKeys, keys: &NodeKeys, may_create: bool) -> Result<u32, AdminReply> {
    let above = stored.keys.keys().max().copied().unwrap_or(0);
    let invalid = |message: String| AdminReply::failed(Failure::Invalid, message);
    let Some(path) = &keys.file else {
        return keys
            .sealer
            .key_ids()
            .into_iter()
            .find(|id| *id > above)
            .ok_or_else(|| {
                invalid(format!(
                    "no new seal key: the keys come from {SECRET_KEY_VAR}; add a new one to it \
                     on every node as {}:<base64 of 32 random bytes>, restart them, and run \
                     this again",
                    above + 1
                ))
            });
    };
    let file_error = |error: KeyError| {
        AdminReply::failed(Failure::Storage, format!("the key file failed: {error}"))
    };
    let keyring = Keyring::load(path).map_err(file_error)?;
    let waiting = keyring.iter().find(|(id, _)| *id > above);
    let id = match waiting {
        Some((id, key)) => {
            keys.sealer.add_key(id, key);
            id
        }
        None if may_create => {
            let (id, key) = add_seal_key(path, above).map_err(file_error)?;
            keys.sealer.add_key(id, &key);
            id
        }
        None => {
            return Err(invalid(format!(
                "no new seal key in {}: on PostgreSQL, add one with `dbconsole keys \
                 add-seal-key`, copy the key file to every node, restart them, and run this \
                 again",
                path.display()
            )));
        }
    };
    Ok(id)
}
