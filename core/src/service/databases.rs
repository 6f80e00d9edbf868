//! Database endpoints: list, create, retrieve, update, delete, setup, remove by api_id.

use http::{Response, StatusCode};

use super::cache::{CacheKey, ReadCache, read_through};
use super::call::Answer;
use super::call::Call;
use super::call::{both, page_request, split_page};
use super::conditional::{IfMatch, tagged};
use super::error::ApiError;
use super::render::{DatabaseView, PageView};
use super::response::{ResponseBody, json_bytes, json_response};
use std::sync::Arc;

use crate::model::{Database, Timestamp};
use crate::seal::Sealer;
use crate::storage::{DatabaseFilter, DatabaseKey, DeleteCheck, Edits, Storage, StorageError};
use crate::validate::{
    DatabaseBody, apply_setup, database_from_body, parse_database_filter, parse_setup,
};

fn database_response(db: &Database) -> Response<ResponseBody> {
    json_response(StatusCode::OK, &DatabaseView::from(db))
}

/// A delete's condition: the `If-Match` of the request on the stored database's version.
fn delete_check(headers: &http::HeaderMap) -> Result<Option<DeleteCheck<Database>>, ApiError> {
    Ok(IfMatch::delete_check(
        IfMatch::of(headers)?,
        |db: &Database| db.updated_at,
    ))
}

/// What the database routes read: the storage, the sealer of the credentials' secrets, and the
/// read cache of rendered databases.
#[derive(Debug)]
pub(crate) struct Databases {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Seals the secrets of what arrives.
    pub(crate) sealer: Sealer,
    /// The rendered databases of recent reads.
    pub(crate) read_cache: Option<Arc<ReadCache>>,
}

impl Databases {
    /// Whether a database write refused because another node rotated the seal key should be
    /// made again: then this node seals under the store's current key from now on (docs/operations.md,
    /// "Rotating the secret key"). A node that lacks that key says so in its log, and the
    /// write is answered 503.
    fn adopt_seal_key(&self, error: &StorageError, attempts: &mut u32) -> bool {
        let StorageError::SealKeyChanged(current) = error else {
            return false;
        };
        if *attempts >= 3 {
            return false;
        }
        *attempts += 1;
        match self.sealer.use_key(*current) {
            Ok(()) => {
                tracing::info!(
                    key = current,
                    "the store seals under another key now; adopted it"
                );
                true
            }
            Err(error) => {
                tracing::error!(%error, "cannot seal under the store's current key");
                false
            }
        }
    }

    /// `GET …/databases`: a page, by id, filtered.
    pub(crate) async fn list_databases(&self, call: Call<'_>) -> Answer {
        let query = call.page_query();
        let filter = parse_database_filter(call.query.as_deref());
        let (query, filter) = both(query, filter)?;
        let filter = DatabaseFilter {
            adapter: filter.adapter,
            group: filter.group.as_deref(),
            name_prefix: filter.name_prefix.as_deref(),
            api_id: filter.api_id.as_deref(),
            tunnel_id: filter.tunnel_id.as_deref(),
        };
        let items = self
            .storage
            .list_databases(page_request(&query), filter)
            .await?;
        let (items, next) = split_page(items, &query, |db| db.id.to_string());
        let data = items.iter().map(DatabaseView::from).collect();
        Ok(json_response(StatusCode::OK, &PageView { data, next }))
    }

    /// `POST …/databases`.
    pub(crate) async fn create_database(&self, mut call: Call<'_>) -> Answer {
        let body = DatabaseBody::from(call.json().await?);
        let mut attempts = 0;
        let db = loop {
            let db = database_from_body(None, &body, Timestamp::now(), &self.sealer)?;
            match self.storage.insert_database(db.clone(), call.origin).await {
                Ok(()) => break db,
                Err(error) if self.adopt_seal_key(&error, &mut attempts) => {}
                Err(error) => return Err(error.into()),
            }
        };
        Ok(tagged(database_response(&db), db.updated_at))
    }

    /// Holds back database `id`'s provisioning password (its CA certificate changed): it is
    /// sent nowhere until given again (docs/api.md, "Where a stored password goes").
    async fn hold_provisioning_password(
        &self,
        id: &str,
        origin: &crate::model::Origin,
    ) -> Result<(), ApiError> {
        let holds = self
            .storage
            .access_control(id)
            .await?
            .and_then(|a| a.data_protection.provisioning)
            .is_some_and(|p| p.credential.password_for != Some(crate::model::HELD));
        if !holds {
            return Ok(());
        }
        let edit: crate::storage::AccessEdit = Box::new(|stored| {
            let mut access = stored.clone();
            if let Some(provisioning) = access.data_protection.provisioning.as_mut() {
                provisioning.credential.password_for = Some(crate::model::HELD);
            }
            Ok(access)
        });
        self.storage.update_access_control(id, edit, origin).await?;
        Ok(())
    }

    /// `GET …/databases/{id}`, through the read cache.
    pub(crate) async fn get_database(&self, call: Call<'_>) -> Answer {
        let id = call.param("id");
        read_through(
            self.read_cache.as_deref(),
            CacheKey::Database(id),
            &call.headers,
            || self.storage.database(id),
            |record| json_bytes(&DatabaseView::from(record)),
            |record| record.updated_at,
        )
        .await
    }

    /// `PATCH …/databases/{id}`: fields left out stay.
    pub(crate) async fn update_database(&self, mut call: Call<'_>) -> Answer {
        let condition = IfMatch::of(&call.headers)?;
        let body = DatabaseBody::from(call.json().await?);
        let sealer = self.sealer.clone();
        // Whether the update gives another CA certificate: the provisioning password (kept in
        // the access control) is then held back too, as the credentials' are.
        let new_ca = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let saw_new_ca = std::sync::Arc::clone(&new_ca);
        let mut edit = move |stored: &Database| {
            if let Some(condition) = &condition {
                condition.check(stored.updated_at)?;
            }
            let db = database_from_body(Some(stored), &body, Timestamp::now(), &sealer)?;
            saw_new_ca.store(
                db.tls.ca_cert != stored.tls.ca_cert,
                std::sync::atomic::Ordering::Relaxed,
            );
            sealer.reseal(db).map_err(StorageError::backend)
        };
        let mut attempts = 0;
        let db = loop {
            match self
                .storage
                .update_database(call.param("id"), &mut edit, call.origin)
                .await
            {
                Ok(db) => break db,
                Err(error) if self.adopt_seal_key(&error, &mut attempts) => {}
                Err(error) => return Err(error.into()),
            }
        };
        if new_ca.load(std::sync::atomic::Ordering::Relaxed) {
            self.hold_provisioning_password(db.id.as_str(), call.origin)
                .await?;
        }
        Ok(tagged(database_response(&db), db.updated_at))
    }

    /// `DELETE …/databases/{id}`: answers the deleted database.
    pub(crate) async fn delete_database(&self, call: Call<'_>) -> Answer {
        let check = delete_check(&call.headers)?;
        let deleted = self
            .storage
            .delete_database(DatabaseKey::Id(call.param("id")), check, call.origin)
            .await?;
        Ok(database_response(&deleted))
    }

    /// `PUT …/databases/setup`: create or update by `api_id`.
    pub(crate) async fn setup_database(&self, mut call: Call<'_>) -> Answer {
        let condition = IfMatch::of(&call.headers)?;
        let setup = parse_setup(call.json().await?)?;
        let api_id = setup.api_id.clone();
        let sealer = self.sealer.clone();
        let mut upsert = move |stored: Option<&Database>| {
            if let Some(condition) = &condition {
                // A condition on a record that does not exist is not met.
                let stored = stored.ok_or(StorageError::PreconditionFailed)?;
                condition.check(stored.updated_at)?;
            }
            let db = apply_setup(stored, &setup, Timestamp::now(), &sealer)?;
            sealer.reseal(db).map_err(StorageError::backend)
        };
        let mut attempts = 0;
        let db = loop {
            match self
                .storage
                .upsert_database_by_api_id(&api_id, &mut upsert, call.origin)
                .await
            {
                Ok(db) => break db,
                Err(error) if self.adopt_seal_key(&error, &mut attempts) => {}
                Err(error) => return Err(error.into()),
            }
        };
        Ok(tagged(database_response(&db), db.updated_at))
    }

    /// `DELETE …/databases/remove/{api_id}`: answers the deleted database.
    pub(crate) async fn remove_database(&self, call: Call<'_>) -> Answer {
        let check = delete_check(&call.headers)?;
        let deleted = self
            .storage
            .delete_database(DatabaseKey::ApiId(call.param("api_id")), check, call.origin)
            .await?;
        Ok(database_response(&deleted))
    }
}
