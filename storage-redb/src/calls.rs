//! Where a call runs: a point read on the caller's thread ([`RedbStorage::read_now`]), a listing
//! on Tokio's blocking pool ([`RedbStorage::run`]), a write on the writer thread, grouped with
//! the writes waiting beside it into one commit ([`RedbStorage::write`], see `writer`).

use std::sync::Arc;

use dbconsole_core::storage::StorageError;
use redb::{ReadTransaction, WriteTransaction};

use crate::RedbStorage;
use crate::file::Inner;
use crate::recent::{self, Changes};

impl RedbStorage {
    /// Runs a point read here, on the caller's thread: one short read transaction, served from
    /// redb's cache and the page cache, is cheaper than the hop to the blocking pool and back
    /// (which cost most of a GET). Listings and every write still run on the blocking pool.
    ///
    /// Only while the file is open and free, though: while the writer reopens it after an I/O
    /// failure (the read would wait for the reopen), or when it must be opened first, the read
    /// runs in [`tokio::task::block_in_place`] on a multi-thread runtime, so the async worker's
    /// other tasks move on instead of waiting behind it.
    pub(crate) fn read_now<T>(
        &self,
        work: impl FnOnce(&Inner) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        if self.inner.open_and_free() {
            return work(&self.inner);
        }
        match tokio::runtime::Handle::try_current().map(|handle| handle.runtime_flavor()) {
            Ok(tokio::runtime::RuntimeFlavor::MultiThread) => {
                tokio::task::block_in_place(|| work(&self.inner))
            }
            _ => work(&self.inner),
        }
    }

    /// A point read of a record the store keeps among the recently read ones (module `recent`):
    /// from them, or by `work` in a read transaction here ([`read_now`](Self::read_now)), kept
    /// when no commit came in between.
    pub(crate) fn read_recent<K, Q, V>(
        &self,
        kind: fn(&mut recent::State) -> &mut lru::LruCache<K, V>,
        key: &Q,
        work: impl FnOnce(&ReadTransaction) -> Result<Option<V>, StorageError>,
    ) -> Result<Option<V>, StorageError>
    where
        K: std::borrow::Borrow<Q> + std::hash::Hash + Eq,
        Q: ToOwned<Owned = K> + std::hash::Hash + Eq + ?Sized,
        V: Clone,
    {
        self.read_now(|inner| inner.recent.get_or_read(kind, key, || inner.read(work)))
    }

    /// Runs `work` in a write transaction of the writer thread (group commit, see `writer.rs`);
    /// answers once the commit that holds its change is durable. `work` may run more than once
    /// (when a job before it in the batch is refused). A panic in it is resumed here.
    pub(crate) async fn write<T, F>(&self, work: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: FnMut(&Inner, &WriteTransaction) -> Result<T, StorageError> + Send + 'static,
    {
        self.write_changing(Changes::Records, work).await
    }

    /// [`write`](Self::write), saying what the job may change: [`Changes::AuditOnly`] leaves
    /// the recently read records (module `recent`) in place. Only a job that writes nothing but
    /// audit events may say so.
    pub(crate) async fn write_changing<T, F>(
        &self,
        changes: Changes,
        work: F,
    ) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: FnMut(&Inner, &WriteTransaction) -> Result<T, StorageError> + Send + 'static,
    {
        match self.writer.submit(changes, work).await {
            Ok(result) => result,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }

    /// Runs `work` on the blocking pool. A panic in it is resumed here.
    pub(crate) async fn run<T, F>(&self, work: F) -> Result<T, StorageError>
    where
        T: Send + 'static,
        F: FnOnce(&Inner) -> Result<T, StorageError> + Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        match tokio::task::spawn_blocking(move || work(&inner)).await {
            Ok(result) => result,
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            Err(error) => Err(StorageError::backend(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use dbconsole_core::model::Database;
    use dbconsole_core::storage::testing::origin;
    use dbconsole_core::storage::{DatabaseKey, Edits as _, Storage as _, StorageError};
    use redb::{ReadableDatabase, ReadableTableMetadata};

    use crate::tables::{DATABASE_API_IDS, DATABASES, OrBackend};
    use crate::testing::{sample_database, store};

    /// A point read that would wait for a reopen does not hold its async worker: with one
    /// worker, another task still runs while the read waits for the file.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_read_waiting_for_a_reopen_leaves_the_worker_to_other_tasks() {
        let storage = Arc::new(store());
        let database = sample_database("Waits", None);
        storage
            .insert_database(database.clone(), origin())
            .await
            .unwrap();
        // A reopen in progress: the file's slot write-locked until `release` (or 10 s).
        let (release, released) = std::sync::mpsc::channel::<()>();
        let (locked, is_locked) = std::sync::mpsc::channel::<()>();
        let held = Arc::new(AtomicBool::new(true));
        let holder = {
            let (storage, held) = (Arc::clone(&storage), Arc::clone(&held));
            std::thread::spawn(move || {
                let slot = storage.inner.db.write().unwrap();
                locked.send(()).unwrap();
                let _ = released.recv_timeout(std::time::Duration::from_secs(10));
                held.store(false, Ordering::SeqCst);
                drop(slot);
            })
        };
        is_locked.recv().unwrap();
        let read = {
            let (storage, id) = (Arc::clone(&storage), database.id.clone());
            tokio::spawn(async move { storage.database(id.as_str()).await })
        };
        // Let the read reach the lock (ordering only; what is checked is an event).
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let other = {
            let held = Arc::clone(&held);
            tokio::spawn(async move { held.load(Ordering::SeqCst) })
        };
        let ran_while_held = other.await.unwrap();
        release.send(()).ok();
        holder.join().unwrap();
        assert!(
            ran_while_held,
            "another task ran only once the read was done: the read held the worker"
        );
        assert_eq!(read.await.unwrap().unwrap(), Some(database));
    }

    /// Group commit: many writes at once share transactions. A job that writes and then
    /// refuses (or panics) leaves nothing, and every other write of its batch is stored and
    /// answered as if alone.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_refused_write_leaves_nothing_and_fails_no_other_write_of_its_batch() {
        let storage = Arc::new(store());
        let mut tasks = Vec::new();
        for n in 0..90 {
            let storage = Arc::clone(&storage);
            tasks.push(tokio::spawn(async move {
                let database = sample_database(&format!("db {n}"), Some(&format!("ext-{n}")));
                let id = database.id.clone();
                let write = storage.write(move |inner, txn| {
                    let mut databases = txn.open_table(DATABASES).or_backend()?;
                    let mut api_ids = txn.open_table(DATABASE_API_IDS).or_backend()?;
                    inner.put_database(&mut databases, &mut api_ids, &database)?;
                    match n % 3 {
                        0 => Err(StorageError::IdentityChanged),
                        1 if n % 5 == 1 => panic!("an edit closure panicked after writing"),
                        _ => Ok(()),
                    }
                });
                (n, id, write.await)
            }));
        }
        let mut stored = 0;
        for task in tasks {
            let (n, id, result) = match task.await {
                Ok(done) => done,
                Err(error) if error.is_panic() => continue,
                Err(error) => panic!("{error}"),
            };
            let found = storage.database(id.as_str()).await.unwrap();
            if n % 3 == 0 {
                assert!(matches!(result, Err(StorageError::IdentityChanged)), "{n}");
                assert_eq!(found, None, "the refused write {n} left its record");
            } else {
                assert!(result.is_ok(), "{n}: {result:?}");
                assert!(found.is_some(), "the accepted write {n} is missing");
                stored += 1;
            }
        }
        let panicked = (0..90).filter(|n| n % 3 == 1 && n % 5 == 1).count();
        assert_eq!(stored, 60 - panicked);
        let slot = storage.inner.db.read().unwrap();
        let txn = slot.as_ref().unwrap().begin_read().unwrap();
        let rows = txn.open_table(DATABASES).unwrap().len().unwrap();
        assert_eq!(
            rows, stored as u64,
            "no refused or panicked write left a row"
        );
        let api_ids = txn.open_table(DATABASE_API_IDS).unwrap().len().unwrap();
        assert_eq!(api_ids, stored as u64);
    }

    /// A refusal that rests on a change of the same batch is answered only once that change is
    /// durable: a `NotFound` after a delete never comes while the record can still be read.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_refusal_resting_on_its_batch_waits_for_the_commit() {
        let storage = Arc::new(store());
        let doomed = sample_database("Doomed", None);
        storage
            .insert_database(doomed.clone(), origin())
            .await
            .unwrap();
        // Keep the writer busy (a job held at a gate) so that the delete and the update queue
        // up behind it into one batch; each step waits for an event, not for time.
        let (started, is_started) = std::sync::mpsc::channel::<()>();
        let (open_gate, gate) = std::sync::mpsc::channel::<()>();
        let gate = Arc::new(std::sync::Mutex::new(Some((started, gate))));
        let before = storage.writer.submitted();
        let busy = {
            let storage = Arc::clone(&storage);
            tokio::spawn(async move {
                storage
                    .write(move |_, _| {
                        // Only the first run waits (a job may run again on a replay).
                        if let Some((started, gate)) = gate.lock().unwrap().take() {
                            started.send(()).unwrap();
                            gate.recv().unwrap();
                        }
                        Ok(())
                    })
                    .await
            })
        };
        is_started.recv().unwrap();
        let delete = {
            let (storage, id) = (Arc::clone(&storage), doomed.id.clone());
            tokio::spawn(async move {
                storage
                    .delete_database(DatabaseKey::Id(id.as_str()), None, origin())
                    .await
            })
        };
        while storage.writer.submitted() < before + 2 {
            tokio::task::yield_now().await;
        }
        let update = {
            let (storage, id) = (Arc::clone(&storage), doomed.id.clone());
            tokio::spawn(async move {
                storage
                    .update_database(id.as_str(), |db: &Database| Ok(db.clone()), origin())
                    .await
            })
        };
        while storage.writer.submitted() < before + 3 {
            tokio::task::yield_now().await;
        }
        open_gate.send(()).unwrap();
        let update = async { update.await.unwrap() };
        let refused = update.await;
        assert!(
            matches!(refused, Err(StorageError::NotFound)),
            "{refused:?}"
        );
        // Answered NotFound: the delete it rests on is durable and visible.
        assert_eq!(storage.database(doomed.id.as_str()).await.unwrap(), None);
        assert!(delete.await.unwrap().is_ok());
        busy.await.unwrap().unwrap();
    }
}
