//! Recently read records, decoded: the point reads that come with every panel run and every
//! request with a stored key (the key by its digest, the dashboard, the database, its access
//! control) answer from memory while no write could have changed them, instead of a read
//! transaction, two or three table opens and a decode each.
//!
//! **Why it cannot go stale.** This store is the only writer of its file (redb's file lock keeps
//! any other process out), every write is a job of the writer thread, and a write becomes
//! visible to readers only when its transaction commits. So the writer brackets every commit
//! that holds a job that may change a record (every job but an audit event's, see [`Changes`])
//! with [`Recent::committing`]: the cache is emptied as the commit begins, reads go to the file
//! (neither answered from the cache nor filling it) while it runs, and it is emptied again once
//! the commit has returned, failed or panicked, before any job of the batch is answered. A read
//! takes the cache's generation before its read transaction begins and keeps what it read only
//! if the generation is still the same (each bracket's ends advance it), checked under the lock
//! that advances it. So no read is answered from the cache with a record older than what a
//! read of the file could already see, and once a write is answered no read returns what it
//! replaced. A reopen after an I/O failure empties the cache too. Reads inside a write job never
//! use it.
//!
//! Each kind keeps at most [`CAPACITY`] records, the least recently used leaving first; a key
//! that names nothing is not kept (a wrong API key is a guess, not a record).

use std::borrow::Borrow;
use std::hash::Hash;
use std::num::NonZeroUsize;
use std::sync::{Mutex, MutexGuard, PoisonError};

use dbconsole_core::model::{AccessControl, CallerKey, Dashboard, Database};
use dbconsole_core::storage::StorageError;
use lru::LruCache;

/// The most records of each kind kept (the crate documentation says how many).
pub(crate) const CAPACITY: usize = 512;

/// Whether a write job may change a record this cache keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Changes {
    /// It may (the default of every write): the cache is emptied before its caller is answered.
    Records,
    /// It writes a [`WriteLog`](dbconsole_core::storage::WriteLog) alone (an audit event, with
    /// its idempotency answer and outbox deliveries, if any): nothing the cache keeps.
    AuditOnly,
}

/// The cache: one lock over the generation and every kind's records.
pub(crate) struct Recent {
    state: Mutex<State>,
}

pub(crate) struct State {
    generation: u64,
    /// A commit that may change a kept record is under way: reads go to the file.
    committing: bool,
    pub(crate) caller_keys: LruCache<[u8; 32], CallerKey>,
    pub(crate) databases: LruCache<String, Database>,
    pub(crate) dashboards: LruCache<String, Dashboard>,
    pub(crate) access: LruCache<String, AccessControl>,
}

impl Default for Recent {
    fn default() -> Self {
        let capacity = NonZeroUsize::new(CAPACITY).unwrap_or(NonZeroUsize::MIN);
        Self {
            state: Mutex::new(State {
                generation: 0,
                committing: false,
                caller_keys: LruCache::new(capacity),
                databases: LruCache::new(capacity),
                dashboards: LruCache::new(capacity),
                access: LruCache::new(capacity),
            }),
        }
    }
}

impl Recent {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The record `key` of the kind `kind` picks: from the cache, or from `read` (a read
    /// transaction of its own), kept when no write came in between.
    pub(crate) fn get_or_read<K, Q, V>(
        &self,
        kind: fn(&mut State) -> &mut LruCache<K, V>,
        key: &Q,
        read: impl FnOnce() -> Result<Option<V>, StorageError>,
    ) -> Result<Option<V>, StorageError>
    where
        K: Borrow<Q> + Hash + Eq,
        Q: ToOwned<Owned = K> + Hash + Eq + ?Sized,
        V: Clone,
    {
        let ticket = {
            let mut state = self.lock();
            if state.committing {
                drop(state);
                return read();
            }
            if let Some(found) = kind(&mut state).get(key) {
                return Ok(Some(found.clone()));
            }
            state.generation
        };
        let read = read()?;
        if let Some(value) = &read {
            let mut state = self.lock();
            if state.generation == ticket && !state.committing {
                kind(&mut state).put(key.to_owned(), value.clone());
            }
        }
        Ok(read)
    }

    /// Forgets every record, and every read in flight's right to keep what it read.
    pub(crate) fn forget(&self) {
        Self::forget_in(&mut self.lock());
    }

    fn forget_in(state: &mut State) {
        state.generation += 1;
        state.caller_keys.clear();
        state.databases.clear();
        state.dashboards.clear();
        state.access.clear();
    }

    /// A commit that may change kept records begins: every record is forgotten, and until the
    /// guard is dropped (the commit returned, failed or panicked) reads neither answer from the
    /// cache nor fill it, and a read that began before cannot keep what it read.
    pub(crate) fn committing(&self) -> Committing<'_> {
        let mut state = self.lock();
        Self::forget_in(&mut state);
        state.committing = true;
        Committing { recent: self }
    }

    /// How many records are kept (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let state = self.lock();
        state.caller_keys.len()
            + state.databases.len()
            + state.dashboards.len()
            + state.access.len()
    }
}

/// A commit under way (see [`Recent::committing`]).
pub(crate) struct Committing<'a> {
    recent: &'a Recent,
}

impl Drop for Committing<'_> {
    fn drop(&mut self) {
        let mut state = self.recent.lock();
        Recent::forget_in(&mut state);
        state.committing = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn databases(state: &mut State) -> &mut LruCache<String, Database> {
        &mut state.databases
    }

    fn sample(name: &str) -> Database {
        crate::testing::sample_database(name, None)
    }

    #[test]
    fn a_read_is_kept_and_answered_until_forgotten() {
        let recent = Recent::default();
        let mut reads = 0;
        let mut read = |name: &str| {
            recent
                .get_or_read(databases, "db-1", || {
                    reads += 1;
                    Ok(Some(sample(name)))
                })
                .unwrap()
                .unwrap()
                .name
        };
        assert_eq!(read("first"), "first");
        assert_eq!(read("second"), "first", "answered from the cache");
        recent.forget();
        assert_eq!(read("third"), "third", "read again once forgotten");
        assert_eq!(reads, 2);
    }

    #[test]
    fn a_read_that_raced_a_write_is_not_kept() {
        let recent = Recent::default();
        // The write's forget lands while the read's transaction is under way.
        let raced = recent
            .get_or_read(databases, "db-1", || {
                recent.forget();
                Ok(Some(sample("before the write")))
            })
            .unwrap();
        assert_eq!(raced.unwrap().name, "before the write");
        assert_eq!(recent.len(), 0, "what it read may be stale: not kept");
        let after = recent
            .get_or_read(databases, "db-1", || Ok(Some(sample("after the write"))))
            .unwrap();
        assert_eq!(after.unwrap().name, "after the write");
    }

    #[test]
    fn while_a_commit_runs_reads_go_to_the_file_and_keep_nothing() {
        let recent = Recent::default();
        let read = |name: &str| {
            recent
                .get_or_read(databases, "db-1", || Ok(Some(sample(name))))
                .unwrap()
                .unwrap()
                .name
        };
        assert_eq!(read("before"), "before");
        let committing = recent.committing();
        assert_eq!(read("during"), "during", "not the record kept from before");
        assert_eq!(
            read("during, later"),
            "during, later",
            "nor one read meanwhile"
        );
        assert_eq!(recent.len(), 0);
        // A read whose transaction began during the commit and ends after it keeps nothing.
        let straddling = recent
            .get_or_read(databases, "db-1", || {
                drop(committing);
                Ok(Some(sample("straddling")))
            })
            .unwrap();
        assert_eq!(straddling.unwrap().name, "straddling");
        assert_eq!(recent.len(), 0);
        assert_eq!(read("after"), "after");
        assert_eq!(
            read("after, later"),
            "after",
            "kept again once the commit returned"
        );
    }

    #[test]
    fn a_read_that_began_before_a_commit_and_ended_after_it_is_not_kept() {
        let recent = Recent::default();
        let raced = recent
            .get_or_read(databases, "db-1", || {
                drop(recent.committing());
                Ok(Some(sample("before the commit")))
            })
            .unwrap();
        assert_eq!(raced.unwrap().name, "before the commit");
        assert_eq!(recent.len(), 0);
    }

    #[test]
    fn nothing_found_is_not_kept_and_the_cache_is_bounded() {
        let recent = Recent::default();
        let none = recent
            .get_or_read(databases, "missing", || Ok(None))
            .unwrap();
        assert!(none.is_none());
        assert_eq!(recent.len(), 0);
        for i in 0..CAPACITY + 10 {
            let id = format!("db-{i}");
            recent
                .get_or_read(databases, id.as_str(), || Ok(Some(sample("x"))))
                .unwrap();
        }
        assert_eq!(recent.len(), CAPACITY);
    }
}
