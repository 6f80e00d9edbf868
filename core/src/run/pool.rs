//! Connection pools, one per credential (and per read-only or read-write use), over deadpool.
//!
//! A pool is keyed by database, credential and use, and remembers the version of the database
//! it was made from: a run that finds a newer version drops the old pool (its idle connections
//! close; connections in use close when their run ends) and makes a new one, so a changed host,
//! password or timeout takes effect at the next run. [`Pools::evict_database`] drops a
//! database's pools at once (the service calls it when it changes or deletes one), and pools
//! unused for [`Pools::IDLE`] are dropped by the next lookup. A full pool makes a run wait at
//! most the configured time, then answers busy (503): nothing queues forever.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use deadpool::managed::{Manager, Object, Pool, PoolError, TimeoutType};

use super::RunError;
use crate::model::{Secret, Timestamp};

/// A connection from `pool`, unless the client goes away first (`gone`): a pool still full
/// after its wait answers busy, a connection that can't be made answers why.
pub async fn checkout<M, G>(pool: &Pool<M>, gone: &mut G) -> Result<Object<M>, RunError>
where
    M: Manager<Error = RunError>,
    G: Future<Output = ()> + Unpin,
{
    tokio::select! {
        session = pool.get() => session.map_err(|error| match error {
            PoolError::Backend(error) => error,
            PoolError::Timeout(TimeoutType::Wait) => RunError::Busy,
            PoolError::Timeout(_) => RunError::Connect("connecting timed out".to_owned()),
            other => RunError::Connect(other.to_string()),
        }),
        () = gone => Err(RunError::Cancelled),
    }
}

/// What opening a session within `timeout` came to: the driver's refusal scrubbed of
/// `secrets`, or the timeout.
pub async fn connected<'a, T>(
    connect: impl Future<Output = Result<T, String>>,
    timeout: Duration,
    secrets: impl IntoIterator<Item = &'a Secret>,
) -> Result<T, RunError> {
    // Boxed: a driver's connect future can be large, and it is awaited deep in a run.
    match tokio::time::timeout(timeout, Box::pin(connect)).await {
        Ok(Ok(connection)) => Ok(connection),
        Ok(Err(message)) => Err(RunError::Connect(crate::check::scrub_message(
            &message, secrets,
        ))),
        Err(_) => Err(RunError::Connect(format!(
            "connection timed out after {} s",
            timeout.as_secs_f64()
        ))),
    }
}

/// Which pool a run takes its connection from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PoolKey {
    /// The database's id.
    pub database_id: String,
    /// The credential's id.
    pub credential_id: String,
    /// Whether the pool's sessions are read-only (panels).
    pub read_only: bool,
    /// Whether its runs are under data protection: such sessions are opened for it (a
    /// PostgreSQL session's `search_path` starts with the masking schemas) and verified.
    pub protected: bool,
    /// The statement timeout (seconds) its sessions start with: an exempt caller's runs share
    /// the provisioning login with others', each with its asked credential's timeout.
    pub timeout_secs: Option<u32>,
}

/// How big pools are and how long a run waits for a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolLimits {
    /// The most connections a pool opens.
    pub size: usize,
    /// How long a run waits for a free connection before it is answered busy.
    pub wait: Duration,
}

impl Default for PoolLimits {
    fn default() -> Self {
        Self {
            size: 4,
            wait: Duration::from_secs(5),
        }
    }
}

struct Entry<M: Manager> {
    version: Timestamp,
    pool: Pool<M>,
    used: Instant,
}

/// The pools of one adapter's runner.
pub struct Pools<M: Manager> {
    limits: PoolLimits,
    pools: Mutex<HashMap<PoolKey, Entry<M>>>,
}

impl<M: Manager> std::fmt::Debug for Pools<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.lock().len();
        f.debug_struct("Pools")
            .field("limits", &self.limits)
            .field("pools", &count)
            .finish()
    }
}

impl<M: Manager> Pools<M> {
    /// How long an unused pool is kept.
    pub const IDLE: Duration = Duration::from_secs(300);

    /// No pools yet; each will hold at most `limits.size` connections.
    pub fn new(limits: PoolLimits) -> Self {
        Self {
            limits,
            pools: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PoolKey, Entry<M>>> {
        self.pools.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The pool of `key` for the database at `version`: the kept one, or a new one made by
    /// `manager` (when there was none, or it was made from another version).
    pub fn get(&self, key: &PoolKey, version: Timestamp, manager: impl FnOnce() -> M) -> Pool<M> {
        let now = Instant::now();
        let mut pools = self.lock();
        pools.retain(|k, entry| k == key || now.duration_since(entry.used) < Self::IDLE);
        if let Some(entry) = pools.get_mut(key)
            && entry.version == version
        {
            entry.used = now;
            return entry.pool.clone();
        }
        let pool = Pool::builder(manager())
            .max_size(self.limits.size.max(1))
            .wait_timeout(Some(self.limits.wait))
            .runtime(deadpool::Runtime::Tokio1)
            .build()
            .expect("a pool with a runtime and a wait timeout builds");
        if let Some(old) = pools.insert(
            key.clone(),
            Entry {
                version,
                pool: pool.clone(),
                used: now,
            },
        ) {
            old.pool.close();
        }
        pool
    }

    /// Drops every pool of database `id`.
    pub fn evict_database(&self, id: &str) {
        self.lock().retain(|key, entry| {
            let keep = key.database_id != id;
            if !keep {
                entry.pool.close();
            }
            keep
        });
    }

    /// How many pools are kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no pool is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
