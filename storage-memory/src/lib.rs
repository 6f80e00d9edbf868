//! # dbconsole-storage-memory
//!
//! An in-memory [`Storage`] backend: ordered maps of shared records behind one lock. It is the
//! reference implementation of the `Storage` contract (the conformance suite in
//! `dbconsole_core::storage::testing` is written against it first) and the backend of choice
//! for tests of programs that embed the service. Nothing survives the process.
//!
//! Every write is a compare-and-swap under the lock: core built the record (and sealed its
//! secrets) before the call, so the lock is held only to check the version, apply the rules that
//! need lookups ([`rules`]) and swap, and a read never waits for more than that.
//!
//! ```
//! use std::sync::Arc;
//! use dbconsole_core::{ConsoleService, Sealer, StaticCredentials};
//! use dbconsole_storage_memory::MemoryStorage;
//!
//! let service = ConsoleService::builder(
//!     Arc::new(MemoryStorage::new()),
//!     Arc::new(StaticCredentials::default()),
//!     Sealer::ephemeral().expect("a random key"),
//! )
//! .build();
//! # let _ = service;
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use dbconsole_core::model::{
    AccessControl, AuditEvent, CallerKey, Dashboard, Database, Delivery, DeliveryStatus, Query,
    Retention, SavedQuery, Session, SessionKind, StoredAnswer, TargetKind, Timestamp, User,
};
use dbconsole_core::seal::SealKeys;
use dbconsole_core::storage::{
    AuditQuery, DashboardFilter, DatabaseFilter, DatabaseRef, Page, QueryFilter, RecordCounts,
    Storage, StorageError, WriteLog, audit, rules,
};

/// The in-memory backend. Cheap to create; share it with `Arc`.
#[derive(Debug, Default)]
pub struct MemoryStorage {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    databases: BTreeMap<String, Arc<Database>>,
    /// `api_id` → id.
    api_ids: HashMap<String, String>,
    dashboards: BTreeMap<String, Arc<Dashboard>>,
    /// Database id → its permissions and data protection (absent: the default).
    access: HashMap<String, Arc<AccessControl>>,
    keys: BTreeMap<String, CallerKey>,
    /// Digest → key id.
    key_digests: HashMap<[u8; 32], String>,
    /// Browser sessions and sign-in links, by id.
    sessions: BTreeMap<String, Session>,
    /// Digest → session id.
    session_digests: HashMap<[u8; 32], String>,
    /// The audit trail, by event id (ordered by time).
    events: BTreeMap<String, AuditEvent>,
    /// The answers of idempotent writes, by key.
    answers: HashMap<String, StoredAnswer>,
    /// The query history, by id (ordered by creation time).
    queries: BTreeMap<String, Arc<Query>>,
    /// The outbox.
    deliveries: Outbox,
    seal_keys: StoredSealKeys,
    /// Users, by name.
    users: BTreeMap<String, User>,
    /// Server settings, by name.
    settings: HashMap<String, String>,
    /// Saved queries, by id.
    saved_queries: BTreeMap<String, SavedQuery>,
}

/// The outbox: by id (ordered by creation time), and the live deliveries by when they are due,
/// so a claim reads only those due rather than the whole history.
#[derive(Debug, Default)]
struct Outbox {
    by_id: BTreeMap<String, Delivery>,
    due: BTreeSet<(Timestamp, String)>,
}

impl Outbox {
    /// Stores `delivery`, new or in place of the one with its id, with its index entry.
    fn put(&mut self, delivery: Delivery) {
        let id = delivery.id.as_str().to_owned();
        if let Some(due_at) = self.by_id.get(&id).and_then(Delivery::claimable_at) {
            self.due.remove(&(due_at, id.clone()));
        }
        if let Some(due_at) = delivery.claimable_at() {
            self.due.insert((due_at, id.clone()));
        }
        self.by_id.insert(id, delivery);
    }

    fn get(&self, id: &str) -> Option<&Delivery> {
        self.by_id.get(id)
    }
}

/// The seal keys: key 0 current (the key of `Sealer::new` and `Sealer::ephemeral`), with no key
/// check value (nothing outlives the process), until a rotation replaces them. A service whose
/// sealer lacks key 0 can't write databases with secrets here.
#[derive(Debug)]
struct StoredSealKeys(SealKeys);

impl Default for StoredSealKeys {
    fn default() -> Self {
        Self(SealKeys::single(0, Vec::new()))
    }
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

/// One page of the shared records `keep` keeps, taken under the lock; copied after it is
/// released. (A scan: the memory store has no indexes, and needs none at its sizes.)
fn page<T>(
    map: &BTreeMap<String, Arc<T>>,
    page: Page<'_>,
    keep: impl Fn(&T) -> bool,
) -> Vec<Arc<T>> {
    let start = match page.after {
        Some(after) => Bound::Excluded(after.to_owned()),
        None => Bound::Unbounded,
    };
    map.range((start, Bound::Unbounded))
        .filter(|(_, value)| keep(value))
        .take(page.limit)
        .map(|(_, value)| Arc::clone(value))
        .collect()
}

fn owned<T: Clone>(records: Vec<Arc<T>>) -> Vec<T> {
    records.iter().map(|record| T::clone(record)).collect()
}

impl State {
    /// Appends an event; called under the lock with the change it records.
    /// Appends a write's event and its answer; called under the lock with the change it
    /// records, before anything of the change is applied ([`StorageError::AnswerExists`]
    /// refuses the whole write).
    fn record(&mut self, log: WriteLog) -> Result<(), StorageError> {
        let WriteLog {
            event,
            answer,
            outbox,
        } = log;
        if let Some(answer) = answer {
            if self.answers.contains_key(&answer.key) {
                return Err(StorageError::AnswerExists);
            }
            self.answers.insert(answer.key.clone(), answer);
        }
        self.events.insert(event.id.as_str().to_owned(), event);
        for delivery in outbox {
            self.deliveries.put(delivery);
        }
        Ok(())
    }

    /// Replaces the query at version `expected`, appending `log` when given: the body of
    /// [`Storage::replace_query`] (with a log) and [`Storage::swap_query`] (without).
    fn replace_query(
        &mut self,
        query: Query,
        expected: Timestamp,
        log: Option<WriteLog>,
    ) -> Result<(), StorageError> {
        let stored = self
            .queries
            .get(query.id.as_str())
            .ok_or(StorageError::NotFound)?;
        rules::check_version(&stored.updated_at, &expected)?;
        if let Some(log) = log {
            self.record(log)?;
        }
        self.queries
            .insert(query.id.as_str().to_owned(), Arc::new(query));
        Ok(())
    }

    /// Replaces the delivery at version `expected`, appending `log` when given: the body of
    /// [`Storage::replace_delivery`] (with a log) and [`Storage::swap_delivery`] (without).
    fn replace_delivery(
        &mut self,
        delivery: Delivery,
        expected: Timestamp,
        log: Option<WriteLog>,
    ) -> Result<(), StorageError> {
        let stored = self
            .deliveries
            .get(delivery.id.as_str())
            .ok_or(StorageError::NotFound)?;
        rules::check_version(&stored.updated_at, &expected)?;
        if let Some(log) = log {
            self.record(log)?;
        }
        self.deliveries.put(delivery);
        Ok(())
    }

    fn put_database(&mut self, database: Arc<Database>) {
        if let Some(api_id) = &database.api_id {
            self.api_ids
                .insert(api_id.clone(), database.id.as_str().to_owned());
        }
        self.databases
            .insert(database.id.as_str().to_owned(), database);
    }

    fn database_by_api_id(&self, api_id: &str) -> Option<&Arc<Database>> {
        self.api_ids
            .get(api_id)
            .and_then(|id| self.databases.get(id))
    }

    /// The databases whose data protection inherits from `id`.
    fn heirs_of(&self, id: &str) -> Vec<DatabaseRef> {
        self.access
            .iter()
            .filter(|(_, access)| access.data_protection.inherits_from.as_deref() == Some(id))
            .filter_map(|(heir, _)| self.databases.get(heir))
            .map(|db| DatabaseRef {
                id: db.id.as_str().to_owned(),
                name: db.name.clone(),
            })
            .collect()
    }

    /// What [`rules::check_inheritance`] looks up: `None` for a missing database, else its
    /// `inherits_from`.
    fn inherits_from_of(&self, id: &str) -> Option<Option<String>> {
        self.databases.contains_key(id).then(|| {
            self.access
                .get(id)
                .and_then(|access| access.data_protection.inherits_from.clone())
        })
    }
}

#[async_trait]
impl Storage for MemoryStorage {
    async fn create_database(&self, database: Database, log: WriteLog) -> Result<(), StorageError> {
        let mut state = self.state();
        let api_id_taken = database
            .api_id
            .as_ref()
            .is_some_and(|api_id| state.api_ids.contains_key(api_id));
        if api_id_taken || state.databases.contains_key(database.id.as_str()) {
            return Err(StorageError::AlreadyExists);
        }
        rules::check_sealed(&database, &state.seal_keys.0)?;
        state.record(log)?;
        state.put_database(Arc::new(database));
        Ok(())
    }

    async fn database(&self, id: &str) -> Result<Option<Database>, StorageError> {
        let found = self.state().databases.get(id).cloned();
        Ok(found.as_deref().cloned())
    }

    async fn database_by_api_id(&self, api_id: &str) -> Result<Option<Database>, StorageError> {
        let found = self.state().database_by_api_id(api_id).cloned();
        Ok(found.as_deref().cloned())
    }

    async fn list_databases(
        &self,
        request: Page<'_>,
        filter: DatabaseFilter<'_>,
    ) -> Result<Vec<Database>, StorageError> {
        let records = page(&self.state().databases, request, |db| filter.matches(db));
        Ok(owned(records))
    }

    async fn replace_database(
        &self,
        database: Database,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let mut state = self.state();
        let stored = state
            .databases
            .get(database.id.as_str())
            .ok_or(StorageError::NotFound)?;
        rules::check_version(&stored.updated_at, &expected)?;
        rules::check_identity(stored, &database)?;
        rules::check_sealed(&database, &state.seal_keys.0)?;
        state.record(log)?;
        state.put_database(Arc::new(database));
        Ok(())
    }

    async fn remove_database(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let mut state = self.state();
        let stored = state.databases.get(id).ok_or(StorageError::NotFound)?;
        rules::check_version(&stored.updated_at, &expected)?;
        rules::guard_delete(state.heirs_of(id))?;
        state.record(log)?;
        state.access.remove(id);
        let removed = state.databases.remove(id).ok_or(StorageError::NotFound)?;
        if let Some(api_id) = &removed.api_id {
            state.api_ids.remove(api_id);
        }
        Ok(())
    }

    async fn create_dashboard(
        &self,
        dashboard: Dashboard,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let mut state = self.state();
        if state.dashboards.contains_key(dashboard.id.as_str()) {
            return Err(StorageError::AlreadyExists);
        }
        state.record(log)?;
        state
            .dashboards
            .insert(dashboard.id.as_str().to_owned(), Arc::new(dashboard));
        Ok(())
    }

    async fn dashboard(&self, id: &str) -> Result<Option<Dashboard>, StorageError> {
        let found = self.state().dashboards.get(id).cloned();
        Ok(found.as_deref().cloned())
    }

    async fn list_dashboards(
        &self,
        request: Page<'_>,
        filter: DashboardFilter<'_>,
    ) -> Result<Vec<Dashboard>, StorageError> {
        let records = page(&self.state().dashboards, request, |d| filter.matches(d));
        Ok(owned(records))
    }

    async fn replace_dashboard(
        &self,
        dashboard: Dashboard,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let mut state = self.state();
        let id = dashboard.id.as_str().to_owned();
        let stored = state.dashboards.get(&id).ok_or(StorageError::NotFound)?;
        rules::check_version(&stored.updated_at, &expected)?;
        state.record(log)?;
        state.dashboards.insert(id, Arc::new(dashboard));
        Ok(())
    }

    async fn remove_dashboard(
        &self,
        id: &str,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let mut state = self.state();
        let stored = state.dashboards.get(id).ok_or(StorageError::NotFound)?;
        rules::check_version(&stored.updated_at, &expected)?;
        state.record(log)?;
        state.dashboards.remove(id);
        Ok(())
    }

    async fn access_control(
        &self,
        database_id: &str,
    ) -> Result<Option<AccessControl>, StorageError> {
        let state = self.state();
        if !state.databases.contains_key(database_id) {
            return Ok(None);
        }
        let found = state.access.get(database_id).cloned();
        drop(state);
        Ok(Some(found.as_deref().cloned().unwrap_or_default()))
    }

    async fn replace_access_control(
        &self,
        database_id: &str,
        expected: AccessControl,
        access: AccessControl,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let mut state = self.state();
        if !state.databases.contains_key(database_id) {
            return Err(StorageError::NotFound);
        }
        let stored = state.access.get(database_id).map(|a| &**a);
        rules::check_version(stored.unwrap_or(&AccessControl::default()), &expected)?;
        rules::check_access_control(database_id, &access, |id| Ok(state.inherits_from_of(id)))?;
        state.record(log)?;
        state
            .access
            .insert(database_id.to_owned(), Arc::new(access));
        Ok(())
    }

    async fn create_caller_key(&self, key: CallerKey, log: WriteLog) -> Result<(), StorageError> {
        let mut state = self.state();
        if state.keys.contains_key(key.id.as_str()) || state.key_digests.contains_key(&key.digest) {
            return Err(StorageError::AlreadyExists);
        }
        state.record(log)?;
        state
            .key_digests
            .insert(key.digest, key.id.as_str().to_owned());
        state.keys.insert(key.id.as_str().to_owned(), key);
        Ok(())
    }

    async fn caller_key(&self, id: &str) -> Result<Option<CallerKey>, StorageError> {
        Ok(self.state().keys.get(id).cloned())
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

    async fn record_counts(&self) -> Result<RecordCounts, StorageError> {
        let state = self.state();
        Ok(RecordCounts {
            databases: state.databases.len() as u64,
            dashboards: state.dashboards.len() as u64,
            caller_keys: state.keys.len() as u64,
        })
    }

    async fn seal_keys(&self) -> Result<SealKeys, StorageError> {
        Ok(self.state().seal_keys.0.clone())
    }

    async fn replace_seal_keys(
        &self,
        expected: &SealKeys,
        keys: SealKeys,
    ) -> Result<(), StorageError> {
        let mut state = self.state();
        let databases = state.databases.values().map(|db| Ok(Database::clone(db)));
        rules::check_seal_keys(&state.seal_keys.0, expected, &keys, databases)?;
        state.seal_keys.0 = keys;
        Ok(())
    }

    async fn touch_caller_key(&self, id: &str, at: Timestamp) -> Result<(), StorageError> {
        let mut state = self.state();
        let key = state.keys.get_mut(id).ok_or(StorageError::NotFound)?;
        key.last_used_at = key.last_used_at.max(Some(at));
        Ok(())
    }

    async fn remove_caller_key(&self, id: &str, log: WriteLog) -> Result<(), StorageError> {
        let mut state = self.state();
        if !state.keys.contains_key(id) {
            return Err(StorageError::NotFound);
        }
        state.record(log)?;
        if let Some(key) = state.keys.remove(id) {
            state.key_digests.remove(&key.digest);
        }
        Ok(())
    }

    async fn create_session(
        &self,
        session: Session,
        replacing: Option<&str>,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let mut state = self.state();
        if let Some(old) = replacing
            && !state.sessions.contains_key(old)
        {
            return Err(StorageError::NotFound);
        }
        if state.sessions.contains_key(session.id.as_str())
            || state.session_digests.contains_key(&session.digest)
        {
            return Err(StorageError::AlreadyExists);
        }
        state.record(log)?;
        if let Some(old) = replacing.and_then(|old| state.sessions.remove(old)) {
            state.session_digests.remove(&old.digest);
        }
        state
            .session_digests
            .insert(session.digest, session.id.as_str().to_owned());
        state
            .sessions
            .insert(session.id.as_str().to_owned(), session);
        Ok(())
    }

    async fn session_by_digest(&self, digest: &[u8; 32]) -> Result<Option<Session>, StorageError> {
        let state = self.state();
        Ok(state
            .session_digests
            .get(digest)
            .and_then(|id| state.sessions.get(id))
            .cloned())
    }

    async fn list_sessions(&self) -> Result<Vec<Session>, StorageError> {
        Ok(self.state().sessions.values().cloned().collect())
    }

    async fn touch_session(&self, id: &str, at: Timestamp) -> Result<(), StorageError> {
        let mut state = self.state();
        let session = state.sessions.get_mut(id).ok_or(StorageError::NotFound)?;
        session.last_seen_at = session.last_seen_at.max(at);
        Ok(())
    }

    async fn remove_session(&self, id: &str, log: WriteLog) -> Result<(), StorageError> {
        let mut state = self.state();
        if !state.sessions.contains_key(id) {
            return Err(StorageError::NotFound);
        }
        state.record(log)?;
        if let Some(session) = state.sessions.remove(id) {
            state.session_digests.remove(&session.digest);
        }
        Ok(())
    }

    async fn prune_sessions(
        &self,
        now: Timestamp,
        idle_before: Timestamp,
    ) -> Result<u64, StorageError> {
        let mut state = self.state();
        let ended: Vec<(String, [u8; 32])> = state
            .sessions
            .values()
            .filter(|s| {
                s.expires_at <= now
                    || (s.kind == SessionKind::Browser && s.last_seen_at < idle_before)
            })
            .map(|s| (s.id.as_str().to_owned(), s.digest))
            .collect();
        for (id, digest) in &ended {
            state.sessions.remove(id);
            state.session_digests.remove(digest);
        }
        Ok(ended.len() as u64)
    }

    async fn user(&self, name: &str) -> Result<Option<User>, StorageError> {
        Ok(self.state().users.get(name).cloned())
    }

    async fn list_users(&self) -> Result<Vec<User>, StorageError> {
        Ok(self.state().users.values().cloned().collect())
    }

    async fn put_user(
        &self,
        user: User,
        expected: Option<Timestamp>,
        log: Option<WriteLog>,
    ) -> Result<(), StorageError> {
        let mut state = self.state();
        match (state.users.get(&user.name), expected) {
            (Some(_), None) => return Err(StorageError::AlreadyExists),
            (None, Some(_)) => return Err(StorageError::NotFound),
            (Some(stored), Some(expected)) if stored.updated_at != expected => {
                return Err(StorageError::Conflict);
            }
            _ => {}
        }
        if let Some(log) = log {
            state.record(log)?;
        }
        state.users.insert(user.name.clone(), user);
        Ok(())
    }

    async fn saved_query(&self, id: &str) -> Result<Option<SavedQuery>, StorageError> {
        Ok(self.state().saved_queries.get(id).cloned())
    }

    async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>, StorageError> {
        Ok(self.state().saved_queries.values().cloned().collect())
    }

    async fn put_saved_query(
        &self,
        id: &str,
        saved: Option<SavedQuery>,
        expected: Option<Timestamp>,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        let mut state = self.state();
        match (state.saved_queries.get(id), expected) {
            _ if saved.is_none() && expected.is_none() => return Err(StorageError::NotFound),
            (Some(_), None) => return Err(StorageError::AlreadyExists),
            (None, Some(_)) => return Err(StorageError::NotFound),
            (Some(stored), Some(expected)) if stored.updated_at != expected => {
                return Err(StorageError::Conflict);
            }
            _ => {}
        }
        state.record(log)?;
        match saved {
            Some(saved) => state.saved_queries.insert(id.to_owned(), saved),
            None => state.saved_queries.remove(id),
        };
        Ok(())
    }

    async fn setting(&self, name: &str) -> Result<Option<String>, StorageError> {
        Ok(self.state().settings.get(name).cloned())
    }

    async fn put_setting(&self, name: &str, value: &str) -> Result<(), StorageError> {
        self.state()
            .settings
            .insert(name.to_owned(), value.to_owned());
        Ok(())
    }

    async fn remove_setting(&self, name: &str) -> Result<(), StorageError> {
        self.state().settings.remove(name);
        Ok(())
    }

    async fn create_query(&self, query: Query, log: WriteLog) -> Result<(), StorageError> {
        let mut state = self.state();
        if state.queries.contains_key(query.id.as_str()) {
            return Err(StorageError::AlreadyExists);
        }
        state.record(log)?;
        state
            .queries
            .insert(query.id.as_str().to_owned(), Arc::new(query));
        Ok(())
    }

    async fn query(&self, id: &str) -> Result<Option<Query>, StorageError> {
        let found = self.state().queries.get(id).cloned();
        Ok(found.as_deref().cloned())
    }

    async fn list_queries(
        &self,
        request: Page<'_>,
        filter: QueryFilter<'_>,
    ) -> Result<Vec<Query>, StorageError> {
        let records: Vec<Arc<Query>> = {
            let state = self.state();
            let end = match request.after {
                Some(after) => Bound::Excluded(after.to_owned()),
                None => Bound::Unbounded,
            };
            state
                .queries
                .range((Bound::Unbounded, end))
                .rev()
                .filter(|(_, query)| filter.matches(query))
                .take(request.limit)
                .map(|(_, query)| Arc::clone(query))
                .collect()
        };
        Ok(owned(records))
    }

    async fn replace_query(
        &self,
        query: Query,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        self.state().replace_query(query, expected, Some(log))
    }

    async fn swap_query(&self, query: Query, expected: Timestamp) -> Result<(), StorageError> {
        self.state().replace_query(query, expected, None)
    }

    async fn append_log(&self, log: WriteLog) -> Result<(), StorageError> {
        self.state().record(log)
    }

    async fn claim_deliveries(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
        kinds: &[TargetKind],
    ) -> Result<Vec<Delivery>, StorageError> {
        let mut state = self.state();
        let outbox = &mut state.deliveries;
        let claimed: Vec<Delivery> = outbox
            .due
            .iter()
            .take_while(|(due_at, _)| *due_at <= now)
            .filter_map(|(_, id)| outbox.by_id.get(id))
            .filter(|delivery| delivery.is_due(now) && kinds.contains(&delivery.target.kind()))
            .take(limit)
            .map(|delivery| delivery.claimed(now, lease_until))
            .collect();
        for delivery in &claimed {
            outbox.put(delivery.clone());
        }
        Ok(claimed)
    }

    async fn delivery(&self, id: &str) -> Result<Option<Delivery>, StorageError> {
        Ok(self.state().deliveries.get(id).cloned())
    }

    async fn list_deliveries(
        &self,
        request: Page<'_>,
        status: Option<DeliveryStatus>,
    ) -> Result<Vec<Delivery>, StorageError> {
        let end = match request.after {
            Some(after) => Bound::Excluded(after.to_owned()),
            None => Bound::Unbounded,
        };
        let state = self.state();
        Ok(state
            .deliveries
            .by_id
            .range((Bound::Unbounded, end))
            .rev()
            .map(|(_, delivery)| delivery)
            .filter(|delivery| status.is_none_or(|status| delivery.status == status))
            .take(request.limit)
            .cloned()
            .collect())
    }

    async fn replace_delivery(
        &self,
        delivery: Delivery,
        expected: Timestamp,
        log: WriteLog,
    ) -> Result<(), StorageError> {
        self.state().replace_delivery(delivery, expected, Some(log))
    }

    async fn swap_delivery(
        &self,
        delivery: Delivery,
        expected: Timestamp,
    ) -> Result<(), StorageError> {
        self.state().replace_delivery(delivery, expected, None)
    }

    async fn stored_answer(&self, key: &str) -> Result<Option<StoredAnswer>, StorageError> {
        Ok(self.state().answers.get(key).cloned())
    }

    async fn prune_answers(&self, before: Timestamp) -> Result<u64, StorageError> {
        let mut state = self.state();
        let count = state.answers.len();
        state.answers.retain(|_, answer| answer.at >= before);
        Ok((count - state.answers.len()) as u64)
    }

    async fn list_audit(&self, query: AuditQuery<'_>) -> Result<Vec<AuditEvent>, StorageError> {
        let end = match query.after {
            Some(after) => Bound::Excluded(after.to_owned()),
            None => Bound::Unbounded,
        };
        let state = self.state();
        Ok(state
            .events
            .range((Bound::Unbounded, end))
            .rev()
            .map(|(_, event)| event)
            .filter(|event| query.resource.is_none_or(|id| event.resource_id == id))
            .filter(|event| query.filter.matches(event))
            .take(query.limit)
            .cloned()
            .collect())
    }

    async fn prune_audit(&self, retention: Retention, now: Timestamp) -> Result<u64, StorageError> {
        let mut state = self.state();
        let before = state.events.len();
        if let Some(cutoff) = audit::cutoff(retention, now) {
            state.events.retain(|_, event| event.at >= cutoff);
        }
        if let Some(max) = retention.max_events {
            while state.events.len() as u64 > max {
                state.events.pop_first();
            }
        }
        Ok((before - state.events.len()) as u64)
    }
}
