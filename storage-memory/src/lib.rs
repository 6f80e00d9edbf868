//! # dbconsole-storage-memory
//!
//! An in-memory [`Storage`] backend: everything lives in two ordered maps behind one lock, so
//! every trait call is trivially one atomic change and concurrent calls never interleave.
//! It is the reference implementation of the `Storage` contract (the conformance suite in
//! `dbconsole_core::storage::testing` is written against it first) and the backend of choice
//! for tests of programs that embed the service. Nothing survives the process.
//!
//! ```
//! use std::sync::Arc;
//! use dbconsole_core::{ConsoleService, StaticCredentials};
//! use dbconsole_storage_memory::MemoryStorage;
//!
//! let service = ConsoleService::builder(
//!     Arc::new(MemoryStorage::new()),
//!     Arc::new(StaticCredentials::default()),
//! )
//! .build();
//! # let _ = service;
//! ```

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;
use dbconsole_core::model::{AccessControl, CallerKey, Dashboard, Database, Timestamp};
use dbconsole_core::storage::{
    AccessEdit, DashboardEdit, DatabaseEdit, DatabaseKey, DatabaseRef, DatabaseUpsert, Page,
    Storage, StorageError, check_inheritance, ensure_same_identity,
};

/// The in-memory backend. Cheap to create; share it with `Arc`.
#[derive(Debug, Default)]
pub struct MemoryStorage {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    databases: BTreeMap<String, Database>,
    /// `api_id` → id.
    api_ids: HashMap<String, String>,
    dashboards: BTreeMap<String, Dashboard>,
    /// Database id → its permissions and data protection (absent: the default).
    access: HashMap<String, AccessControl>,
    keys: BTreeMap<String, CallerKey>,
    /// Digest → key id.
    key_digests: HashMap<[u8; 32], String>,
}

impl MemoryStorage {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-written record: every change is
        // computed first and inserted with one map operation.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn page<T: Clone>(map: &BTreeMap<String, T>, page: Page<'_>) -> Vec<T> {
    let start = match page.after {
        Some(after) => Bound::Excluded(after.to_owned()),
        None => Bound::Unbounded,
    };
    map.range((start, Bound::Unbounded))
        .take(page.limit)
        .map(|(_, value)| value.clone())
        .collect()
}

impl State {
    fn put_database(&mut self, database: Database) {
        if let Some(api_id) = &database.api_id {
            self.api_ids
                .insert(api_id.clone(), database.id.as_str().to_owned());
        }
        self.databases
            .insert(database.id.as_str().to_owned(), database);
    }

    /// The databases whose data protection inherits from `id`, ordered by id.
    fn heirs_of(&self, id: &str) -> Vec<DatabaseRef> {
        let mut heirs: Vec<DatabaseRef> = self
            .access
            .iter()
            .filter(|(_, access)| access.data_protection.inherits_from.as_deref() == Some(id))
            .filter_map(|(heir, _)| self.databases.get(heir))
            .map(|db| DatabaseRef {
                id: db.id.as_str().to_owned(),
                name: db.name.clone(),
            })
            .collect();
        heirs.sort_by(|a, b| a.id.cmp(&b.id));
        heirs
    }

    fn id_of(&self, key: DatabaseKey<'_>) -> Option<String> {
        match key {
            DatabaseKey::Id(id) => self.databases.contains_key(id).then(|| id.to_owned()),
            DatabaseKey::ApiId(api_id) => self.api_ids.get(api_id).cloned(),
        }
    }
}

#[async_trait]
impl Storage for MemoryStorage {
    async fn insert_database(&self, database: Database) -> Result<(), StorageError> {
        let mut state = self.state();
        let api_id_taken = database
            .api_id
            .as_ref()
            .is_some_and(|api_id| state.api_ids.contains_key(api_id));
        if api_id_taken || state.databases.contains_key(database.id.as_str()) {
            return Err(StorageError::AlreadyExists);
        }
        state.put_database(database);
        Ok(())
    }

    async fn database(&self, id: &str) -> Result<Option<Database>, StorageError> {
        Ok(self.state().databases.get(id).cloned())
    }

    async fn database_by_api_id(&self, api_id: &str) -> Result<Option<Database>, StorageError> {
        let state = self.state();
        Ok(state
            .api_ids
            .get(api_id)
            .and_then(|id| state.databases.get(id))
            .cloned())
    }

    async fn list_databases(&self, request: Page<'_>) -> Result<Vec<Database>, StorageError> {
        Ok(page(&self.state().databases, request))
    }

    async fn update_database(
        &self,
        id: &str,
        mut edit: DatabaseEdit,
    ) -> Result<Database, StorageError> {
        let mut state = self.state();
        let stored = state.databases.get(id).ok_or(StorageError::NotFound)?;
        let updated = edit(stored).map_err(StorageError::Invalid)?;
        ensure_same_identity(stored, &updated)?;
        state.put_database(updated.clone());
        Ok(updated)
    }

    async fn upsert_database_by_api_id(
        &self,
        api_id: &str,
        mut edit: DatabaseUpsert,
    ) -> Result<Database, StorageError> {
        let mut state = self.state();
        let stored = state
            .api_ids
            .get(api_id)
            .and_then(|id| state.databases.get(id));
        let updated = edit(stored).map_err(StorageError::Invalid)?;
        match stored {
            Some(stored) => ensure_same_identity(stored, &updated)?,
            None if updated.api_id.as_deref() != Some(api_id) => {
                return Err(StorageError::IdentityChanged);
            }
            None if state.databases.contains_key(updated.id.as_str()) => {
                return Err(StorageError::AlreadyExists);
            }
            None => {}
        }
        state.put_database(updated.clone());
        Ok(updated)
    }

    async fn delete_database(&self, key: DatabaseKey<'_>) -> Result<Database, StorageError> {
        let mut state = self.state();
        let id = state.id_of(key).ok_or(StorageError::NotFound)?;
        let heirs = state.heirs_of(&id);
        if !heirs.is_empty() {
            return Err(StorageError::Inherited(heirs));
        }
        state.access.remove(&id);
        let removed = state.databases.remove(&id).ok_or(StorageError::NotFound)?;
        if let Some(api_id) = &removed.api_id {
            state.api_ids.remove(api_id);
        }
        Ok(removed)
    }

    async fn insert_dashboard(&self, dashboard: Dashboard) -> Result<(), StorageError> {
        let mut state = self.state();
        if state.dashboards.contains_key(dashboard.id.as_str()) {
            return Err(StorageError::AlreadyExists);
        }
        state
            .dashboards
            .insert(dashboard.id.as_str().to_owned(), dashboard);
        Ok(())
    }

    async fn dashboard(&self, id: &str) -> Result<Option<Dashboard>, StorageError> {
        Ok(self.state().dashboards.get(id).cloned())
    }

    async fn list_dashboards(&self, request: Page<'_>) -> Result<Vec<Dashboard>, StorageError> {
        Ok(page(&self.state().dashboards, request))
    }

    async fn update_dashboard(
        &self,
        id: &str,
        mut edit: DashboardEdit,
    ) -> Result<Dashboard, StorageError> {
        let mut state = self.state();
        let stored = state.dashboards.get(id).ok_or(StorageError::NotFound)?;
        let updated = edit(stored).map_err(StorageError::Invalid)?;
        if updated.id != stored.id {
            return Err(StorageError::IdentityChanged);
        }
        state.dashboards.insert(id.to_owned(), updated.clone());
        Ok(updated)
    }

    async fn delete_dashboard(&self, id: &str) -> Result<Dashboard, StorageError> {
        self.state()
            .dashboards
            .remove(id)
            .ok_or(StorageError::NotFound)
    }

    async fn access_control(
        &self,
        database_id: &str,
    ) -> Result<Option<AccessControl>, StorageError> {
        let state = self.state();
        if !state.databases.contains_key(database_id) {
            return Ok(None);
        }
        Ok(Some(
            state.access.get(database_id).cloned().unwrap_or_default(),
        ))
    }

    async fn update_access_control(
        &self,
        database_id: &str,
        mut edit: AccessEdit,
    ) -> Result<AccessControl, StorageError> {
        let mut state = self.state();
        if !state.databases.contains_key(database_id) {
            return Err(StorageError::NotFound);
        }
        let stored = state.access.get(database_id).cloned().unwrap_or_default();
        let updated = edit(&stored).map_err(StorageError::Invalid)?;
        if let Some(target) = &updated.data_protection.inherits_from {
            check_inheritance(database_id, target, |id| {
                Ok(state.databases.contains_key(id).then(|| {
                    state
                        .access
                        .get(id)
                        .and_then(|a| a.data_protection.inherits_from.clone())
                }))
            })?;
        }
        state.access.insert(database_id.to_owned(), updated.clone());
        Ok(updated)
    }

    async fn insert_caller_key(&self, key: CallerKey) -> Result<(), StorageError> {
        let mut state = self.state();
        if state.keys.contains_key(key.id.as_str()) || state.key_digests.contains_key(&key.digest) {
            return Err(StorageError::AlreadyExists);
        }
        state
            .key_digests
            .insert(key.digest, key.id.as_str().to_owned());
        state.keys.insert(key.id.as_str().to_owned(), key);
        Ok(())
    }

    async fn caller_key_by_digest(
        &self,
        digest: &[u8; 32],
    ) -> Result<Option<CallerKey>, StorageError> {
        let state = self.state();
        Ok(state
            .key_digests
            .get(digest)
            .and_then(|id| state.keys.get(id))
            .cloned())
    }

    async fn list_caller_keys(&self) -> Result<Vec<CallerKey>, StorageError> {
        Ok(self.state().keys.values().cloned().collect())
    }

    async fn touch_caller_key(&self, id: &str, at: Timestamp) -> Result<(), StorageError> {
        let mut state = self.state();
        let key = state.keys.get_mut(id).ok_or(StorageError::NotFound)?;
        key.last_used_at = key.last_used_at.max(Some(at));
        Ok(())
    }

    async fn delete_caller_key(&self, id: &str) -> Result<CallerKey, StorageError> {
        let mut state = self.state();
        let key = state.keys.remove(id).ok_or(StorageError::NotFound)?;
        state.key_digests.remove(&key.digest);
        Ok(key)
    }
}
