//! `Arc<S>` and `Box<S>` of a [`Storage`] are storages: each call goes to the inner one. So is
//! [`Counted`] (feature `testing`), which counts the calls that reach its store.

use std::sync::Arc;

use async_trait::async_trait;

use super::{
    AuditQuery, DashboardFilter, DatabaseFilter, Page, QueryFilter, RecordCounts, Storage,
    StorageError, WriteLog,
};
use crate::model::{
    AccessControl, AuditEvent, CallerKey, Dashboard, Database, Delivery, DeliveryStatus, Query,
    Retention, SavedQuery, Session, StoredAnswer, TargetKind, Timestamp, User,
};
use crate::seal::SealKeys;

macro_rules! forward_storage {
    ($wrapper:ident) => {
        #[async_trait]
        impl<S: Storage + ?Sized> Storage for $wrapper<S> {
            async fn check_ready(&self) -> Result<(), StorageError> {
                (**self).check_ready().await
            }

            async fn record_counts(&self) -> Result<RecordCounts, StorageError> {
                (**self).record_counts().await
            }

            async fn seal_keys(&self) -> Result<SealKeys, StorageError> {
                (**self).seal_keys().await
            }

            async fn create_query(&self, query: Query, log: WriteLog) -> Result<(), StorageError> {
                (**self).create_query(query, log).await
            }

            async fn query(&self, id: &str) -> Result<Option<Query>, StorageError> {
                (**self).query(id).await
            }

            async fn list_queries(
                &self,
                page: Page<'_>,
                filter: QueryFilter<'_>,
            ) -> Result<Vec<Query>, StorageError> {
                (**self).list_queries(page, filter).await
            }

            async fn replace_query(
                &self,
                query: Query,
                expected: Timestamp,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self).replace_query(query, expected, log).await
            }

            async fn swap_query(
                &self,
                query: Query,
                expected: Timestamp,
            ) -> Result<(), StorageError> {
                (**self).swap_query(query, expected).await
            }

            async fn append_log(&self, log: WriteLog) -> Result<(), StorageError> {
                (**self).append_log(log).await
            }

            async fn claim_deliveries(
                &self,
                now: Timestamp,
                lease_until: Timestamp,
                limit: usize,
                kinds: &[TargetKind],
            ) -> Result<Vec<Delivery>, StorageError> {
                (**self)
                    .claim_deliveries(now, lease_until, limit, kinds)
                    .await
            }

            async fn delivery(&self, id: &str) -> Result<Option<Delivery>, StorageError> {
                (**self).delivery(id).await
            }

            async fn list_deliveries(
                &self,
                page: Page<'_>,
                status: Option<DeliveryStatus>,
            ) -> Result<Vec<Delivery>, StorageError> {
                (**self).list_deliveries(page, status).await
            }

            async fn replace_delivery(
                &self,
                delivery: Delivery,
                expected: Timestamp,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self).replace_delivery(delivery, expected, log).await
            }

            async fn swap_delivery(
                &self,
                delivery: Delivery,
                expected: Timestamp,
            ) -> Result<(), StorageError> {
                (**self).swap_delivery(delivery, expected).await
            }

            async fn replace_seal_keys(
                &self,
                expected: &SealKeys,
                keys: SealKeys,
            ) -> Result<(), StorageError> {
                (**self).replace_seal_keys(expected, keys).await
            }

            async fn create_database(
                &self,
                database: Database,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self).create_database(database, log).await
            }

            async fn database(&self, id: &str) -> Result<Option<Database>, StorageError> {
                (**self).database(id).await
            }

            async fn database_by_api_id(
                &self,
                api_id: &str,
            ) -> Result<Option<Database>, StorageError> {
                (**self).database_by_api_id(api_id).await
            }

            async fn list_databases(
                &self,
                page: Page<'_>,
                filter: DatabaseFilter<'_>,
            ) -> Result<Vec<Database>, StorageError> {
                (**self).list_databases(page, filter).await
            }

            async fn replace_database(
                &self,
                database: Database,
                expected: Timestamp,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self).replace_database(database, expected, log).await
            }

            async fn remove_database(
                &self,
                id: &str,
                expected: Timestamp,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self).remove_database(id, expected, log).await
            }

            async fn create_dashboard(
                &self,
                dashboard: Dashboard,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self).create_dashboard(dashboard, log).await
            }

            async fn dashboard(&self, id: &str) -> Result<Option<Dashboard>, StorageError> {
                (**self).dashboard(id).await
            }

            async fn list_dashboards(
                &self,
                page: Page<'_>,
                filter: DashboardFilter<'_>,
            ) -> Result<Vec<Dashboard>, StorageError> {
                (**self).list_dashboards(page, filter).await
            }

            async fn replace_dashboard(
                &self,
                dashboard: Dashboard,
                expected: Timestamp,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self).replace_dashboard(dashboard, expected, log).await
            }

            async fn remove_dashboard(
                &self,
                id: &str,
                expected: Timestamp,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self).remove_dashboard(id, expected, log).await
            }

            async fn access_control(
                &self,
                database_id: &str,
            ) -> Result<Option<AccessControl>, StorageError> {
                (**self).access_control(database_id).await
            }

            async fn replace_access_control(
                &self,
                database_id: &str,
                expected: AccessControl,
                access: AccessControl,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self)
                    .replace_access_control(database_id, expected, access, log)
                    .await
            }

            async fn create_caller_key(
                &self,
                key: CallerKey,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self).create_caller_key(key, log).await
            }

            async fn caller_key(&self, id: &str) -> Result<Option<CallerKey>, StorageError> {
                (**self).caller_key(id).await
            }

            async fn caller_key_by_digest(
                &self,
                digest: &[u8; 32],
            ) -> Result<Option<CallerKey>, StorageError> {
                (**self).caller_key_by_digest(digest).await
            }

            async fn list_caller_keys(&self) -> Result<Vec<CallerKey>, StorageError> {
                (**self).list_caller_keys().await
            }

            async fn touch_caller_key(&self, id: &str, at: Timestamp) -> Result<(), StorageError> {
                (**self).touch_caller_key(id, at).await
            }

            async fn remove_caller_key(&self, id: &str, log: WriteLog) -> Result<(), StorageError> {
                (**self).remove_caller_key(id, log).await
            }

            async fn create_session(
                &self,
                session: Session,
                replacing: Option<&str>,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self).create_session(session, replacing, log).await
            }

            async fn session_by_digest(
                &self,
                digest: &[u8; 32],
            ) -> Result<Option<Session>, StorageError> {
                (**self).session_by_digest(digest).await
            }

            async fn list_sessions(&self) -> Result<Vec<Session>, StorageError> {
                (**self).list_sessions().await
            }

            async fn touch_session(&self, id: &str, at: Timestamp) -> Result<(), StorageError> {
                (**self).touch_session(id, at).await
            }

            async fn remove_session(&self, id: &str, log: WriteLog) -> Result<(), StorageError> {
                (**self).remove_session(id, log).await
            }

            async fn prune_sessions(
                &self,
                now: Timestamp,
                idle_before: Timestamp,
            ) -> Result<u64, StorageError> {
                (**self).prune_sessions(now, idle_before).await
            }

            async fn saved_query(&self, id: &str) -> Result<Option<SavedQuery>, StorageError> {
                (**self).saved_query(id).await
            }

            async fn list_saved_queries(&self) -> Result<Vec<SavedQuery>, StorageError> {
                (**self).list_saved_queries().await
            }

            async fn put_saved_query(
                &self,
                id: &str,
                saved: Option<SavedQuery>,
                expected: Option<Timestamp>,
                log: WriteLog,
            ) -> Result<(), StorageError> {
                (**self).put_saved_query(id, saved, expected, log).await
            }

            async fn user(&self, name: &str) -> Result<Option<User>, StorageError> {
                (**self).user(name).await
            }

            async fn list_users(&self) -> Result<Vec<User>, StorageError> {
                (**self).list_users().await
            }

            async fn put_user(
                &self,
                user: User,
                expected: Option<Timestamp>,
                log: Option<WriteLog>,
            ) -> Result<(), StorageError> {
                (**self).put_user(user, expected, log).await
            }

            async fn setting(&self, name: &str) -> Result<Option<String>, StorageError> {
                (**self).setting(name).await
            }

            async fn put_setting(&self, name: &str, value: &str) -> Result<(), StorageError> {
                (**self).put_setting(name, value).await
            }

            async fn remove_setting(&self, name: &str) -> Result<(), StorageError> {
                (**self).remove_setting(name).await
            }

            async fn stored_answer(&self, key: &str) -> Result<Option<StoredAnswer>, StorageError> {
                (**self).stored_answer(key).await
            }

            async fn prune_answers(&self, before: Timestamp) -> Result<u64, StorageError> {
                (**self).prune_answers(before).await
            }

            async fn list_audit(
                &self,
                query: AuditQuery<'_>,
            ) -> Result<Vec<AuditEvent>, StorageError> {
                (**self).list_audit(query).await
            }

            async fn prune_audit(
                &self,
                retention: Retention,
                now: Timestamp,
            ) -> Result<u64, StorageError> {
                (**self).prune_audit(retention, now).await
            }
        }
    };
}

forward_storage!(Arc);
forward_storage!(Box);
#[cfg(any(test, feature = "testing"))]
forward_storage!(Counted);

/// A store that counts the calls made to it (every [`Storage`] call is one round trip to a
/// backend): for tests that hold a request to the storage calls it costs.
#[cfg(any(test, feature = "testing"))]
#[derive(Debug, Default)]
pub struct Counted<S: ?Sized> {
    calls: std::sync::atomic::AtomicUsize,
    inner: S,
}

#[cfg(any(test, feature = "testing"))]
impl<S> Counted<S> {
    /// `inner`, counted from 0.
    pub fn new(inner: S) -> Self {
        Self {
            calls: std::sync::atomic::AtomicUsize::new(0),
            inner,
        }
    }
}

#[cfg(any(test, feature = "testing"))]
impl<S: ?Sized> Counted<S> {
    /// The calls made since the last [`Counted::take`] (or since it was made), counted anew.
    pub fn take(&self) -> usize {
        self.calls.swap(0, std::sync::atomic::Ordering::SeqCst)
    }
}

/// Each forwarded call reaches the store through this, once.
#[cfg(any(test, feature = "testing"))]
impl<S: ?Sized> std::ops::Deref for Counted<S> {
    type Target = S;

    fn deref(&self) -> &S {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        &self.inner
    }
}
