//! Rotating the seal key while the service keeps serving (docs/operations.md, "Rotating the secret key"):
//! make a new key current, seal every stored secret again under it in bounded batches, then
//! retire the old keys once no stored secret needs them.
//!
//! Every step is safe to run again, so a rotation cut off by a crash is finished by running it
//! again: the store's [`SealKeys`](crate::seal::SealKeys) say a rotation is under way (they list keys beside the
//! current one), and [`rotate`] then goes on with it instead of starting another.
//!
//! Why it ends: from the moment the new key is current, a store refuses every database write
//! whose secrets are not all sealed under it ([`StorageError::SealKeyChanged`]; the writing node
//! then adopts the new key and seals again), so the number of records that need the old keys
//! only falls. The store drops a key only if no stored secret needs it
//! ([`StorageError::SealKeyInUse`] otherwise), checked in the same atomic change.

use futures_util::StreamExt as _;

use super::{DatabaseFilter, Edits as _, Page, Storage, StorageError};
use crate::model::Origin;
use crate::seal::{SealError, SealKeyError, Sealer, sealed_under};

/// How many databases of a page are sealed again at once: enough for a store's group commit
/// (redb) or connection pool (PostgreSQL) to overlap their writes, few enough to leave room for
/// the requests being served.
const CONCURRENT_WRITES: usize = 8;

/// How many passes over the databases a rotation makes before it gives up: each pass seals
/// again what writers sealed under an old key while the previous pass ran, which only a node
/// that has not yet met the new key can do, once.
const MAX_PASSES: u32 = 16;

/// What a rotation did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rotation {
    /// The key that seals now.
    pub current: u32,
    /// Whether this run made `current` current (else it finished a rotation under way, or
    /// found none to do).
    pub started: bool,
    /// Databases whose secrets were sealed again.
    pub resealed: u64,
    /// Passes over the databases.
    pub passes: u32,
    /// The keys retired: no stored secret needs them any more.
    pub retired: Vec<u32>,
}

/// Why a rotation stopped. Nothing it did is lost: run it again to go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RotateError {
    /// The store failed or refused.
    #[error("the store failed: {0}")]
    Storage(#[from] StorageError),
    /// This node's keyring does not fit the store's keys.
    #[error(transparent)]
    Key(#[from] SealKeyError),
    /// A secret could not be opened or sealed.
    #[error(transparent)]
    Seal(#[from] SealError),
    /// No rotation is under way and no new key was given.
    #[error("no rotation is under way and no new key was given")]
    NoNewKey,
    /// The new key's id is already one of the store's keys.
    #[error("seal key {0} is already one of the store's keys; a new key needs a new id")]
    KeyInUse(u32),
    /// Records sealed under old keys kept appearing for every pass.
    #[error("records sealed under an old key kept appearing after {0} passes; run it again")]
    NotConverging(u32),
}

/// Rotates the store's seal key: when no rotation is under way, makes key `new` (which
/// `sealer` must have) current; then seals every database's secrets again under the current
/// key, `batch` databases per page, and retires every other key. Each database sealed again
/// is one ordinary write, made by `origin` (its audit event names the secret fields whose
/// stored form changed). `sealer` is left sealing under the current key and without the
/// retired keys.
pub async fn rotate<S: Storage + ?Sized>(
    storage: &S,
    sealer: &Sealer,
    new: Option<u32>,
    batch: usize,
    origin: &Origin,
) -> Result<Rotation, RotateError> {
    let batch = batch.max(1);
    let mut stored = storage.seal_keys().await?;
    sealer.adopt(&stored)?;
    let mut rotation = Rotation {
        current: stored.current,
        ..Rotation::default()
    };
    if !stored.rotating() {
        let new = new.ok_or(RotateError::NoNewKey)?;
        if stored.keys.contains_key(&new) {
            return Err(RotateError::KeyInUse(new));
        }
        let mut next = stored.clone();
        next.keys.insert(new, sealer.key_check(new)?);
        next.current = new;
        storage.replace_seal_keys(&stored, next.clone()).await?;
        sealer.use_key(new)?;
        tracing::info!(key = new, "made a new seal key current");
        stored = next;
        rotation.current = new;
        rotation.started = true;
    }
    while rotation.passes < MAX_PASSES {
        rotation.passes += 1;
        let resealed = reseal_pass(storage, sealer, batch, origin).await?;
        rotation.resealed += resealed;
        tracing::info!(
            pass = rotation.passes,
            resealed,
            "sealed stored secrets again under the current key"
        );
        if resealed > 0 {
            continue;
        }
        let retired: Vec<u32> = stored
            .keys
            .keys()
            .copied()
            .filter(|id| *id != stored.current)
            .collect();
        let next = stored.only_current();
        match storage.replace_seal_keys(&stored, next).await {
            Ok(()) => {
                for id in &retired {
                    sealer.remove_key(*id);
                }
                tracing::info!(?retired, "retired the old seal keys");
                rotation.retired = retired;
                return Ok(rotation);
            }
            // A secret sealed under an old key landed after this pass read its record.
            Err(StorageError::SealKeyInUse(_)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Err(RotateError::NotConverging(rotation.passes))
}

/// One pass over every database, a page of `batch` at a time: those with a secret sealed under
/// another key than the current one are sealed again, [`CONCURRENT_WRITES`] at once. Answers
/// how many.
async fn reseal_pass<S: Storage + ?Sized>(
    storage: &S,
    sealer: &Sealer,
    batch: usize,
    origin: &Origin,
) -> Result<u64, RotateError> {
    let mut resealed = 0;
    let mut after: Option<String> = None;
    loop {
        let page = Page {
            after: after.as_deref(),
            limit: batch,
        };
        let databases = storage
            .list_databases(page, DatabaseFilter::default())
            .await?;
        let stale: Vec<String> = databases
            .iter()
            .filter(|database| !sealed_under(database, sealer.current()))
            .map(|database| database.id.to_string())
            .collect();
        let stale = stale
            .into_iter()
            .map(|id| reseal_one(storage, sealer, id, origin));
        let mut writes = futures_util::stream::iter(stale).buffer_unordered(CONCURRENT_WRITES);
        while let Some(written) = writes.next().await {
            resealed += written?;
        }
        drop(writes);
        match databases.last() {
            Some(last) if databases.len() == batch => after = Some(last.id.to_string()),
            _ => return Ok(resealed),
        }
        // Let the requests being served go first between batches.
        tokio::task::yield_now().await;
    }
}

/// Seals database `id` again under the current key: 1, or 0 when it was deleted meanwhile.
async fn reseal_one<S: Storage + ?Sized>(
    storage: &S,
    sealer: &Sealer,
    id: String,
    origin: &Origin,
) -> Result<u64, StorageError> {
    let edit = |stored: &crate::model::Database| {
        sealer.reseal(stored.clone()).map_err(StorageError::backend)
    };
    match storage.update_database(&id, edit, origin).await {
        Ok(_) => Ok(1),
        Err(StorageError::NotFound) => Ok(0),
        Err(error) => Err(error),
    }
}
