//! `Arc<S>` and `Box<S>` of a [`Storage`] are storages: each call goes to the inner one.

use std::sync::Arc;

use async_trait::async_trait;

use super::{
    AccessEdit, AuditQuery, DashboardEdit, DashboardFilter, DatabaseEdit, DatabaseFilter,
    DatabaseKey, DatabaseUpsert, DeleteCheck, Page, RecordCounts, Storage, StorageError,
};
use crate::model::{
    AccessControl, AuditEvent, CallerKey, Dashboard, Database, Origin, Retention, Timestamp,
};

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

            async fn insert_database(
                &self,
                database: Database,
                origin: &Origin,
            ) -> Result<(), StorageError> {
                (**self).insert_database(database, origin).await
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

            async fn update_database(
                &self,
                id: &str,
                edit: DatabaseEdit,
                origin: &Origin,
            ) -> Result<Database, StorageError> {
                (**self).update_database(id, edit, origin).await
            }

            async fn upsert_database_by_api_id(
                &self,
                api_id: &str,
                edit: DatabaseUpsert,
                origin: &Origin,
            ) -> Result<Database, StorageError> {
                (**self)
                    .upsert_database_by_api_id(api_id, edit, origin)
                    .await
            }

            async fn delete_database(
                &self,
                key: DatabaseKey<'_>,
                check: Option<DeleteCheck<Database>>,
                origin: &Origin,
            ) -> Result<Database, StorageError> {
                (**self).delete_database(key, check, origin).await
            }

            async fn insert_dashboard(
                &self,
                dashboard: Dashboard,
                origin: &Origin,
            ) -> Result<(), StorageError> {
                (**self).insert_dashboard(dashboard, origin).await
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

            async fn update_dashboard(
                &self,
                id: &str,
                edit: DashboardEdit,
                origin: &Origin,
            ) -> Result<Dashboard, StorageError> {
                (**self).update_dashboard(id, edit, origin).await
            }

            async fn delete_dashboard(
                &self,
                id: &str,
                check: Option<DeleteCheck<Dashboard>>,
                origin: &Origin,
            ) -> Result<Dashboard, StorageError> {
                (**self).delete_dashboard(id, check, origin).await
            }

            async fn access_control(
                &self,
                database_id: &str,
            ) -> Result<Option<AccessControl>, StorageError> {
                (**self).access_control(database_id).await
            }

            async fn update_access_control(
                &self,
                database_id: &str,
                edit: AccessEdit,
                origin: &Origin,
            ) -> Result<AccessControl, StorageError> {
                (**self)
                    .update_access_control(database_id, edit, origin)
                    .await
            }

            async fn insert_caller_key(
                &self,
                key: CallerKey,
                origin: &Origin,
            ) -> Result<(), StorageError> {
                (**self).insert_caller_key(key, origin).await
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

            async fn delete_caller_key(
                &self,
                id: &str,
                origin: &Origin,
            ) -> Result<CallerKey, StorageError> {
                (**self).delete_caller_key(id, origin).await
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
