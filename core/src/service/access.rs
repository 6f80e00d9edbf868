//! A database's permissions and data protection: `GET|PUT …/databases/{id}/permissions` and
//! `GET|PUT …/databases/{id}/data-protection`.
//!
//! Neither document has a version of its own, so its `ETag` is a digest of the document as
//! answered: a `PUT` with `If-Match` is refused with 412 when the stored document is no longer
//! the one the client read (two admins editing one policy: the second is told, not silently
//! overwritten). The check runs on the document the store's compare-and-swap then requires.

use http::{HeaderValue, StatusCode, header};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use super::call::Answer;
use super::call::Call;
use super::conditional::IfMatch;
use super::error::ApiError;
use super::render::{DataProtectionView, PermissionsView};
use super::response::json_response;
use crate::model::AccessControl;
use std::sync::Arc;

use crate::storage::{AccessEdit, Edits, Storage, StorageError};
use crate::validate::{data_protection_from_body, permissions_from_body};

/// The opaque text of a document's `ETag`: the first 16 bytes of the SHA-256 of its JSON, in hex.
pub(super) fn digest_of(view: &impl Serialize) -> String {
    let json = serde_json::to_vec(view).unwrap_or_default();
    hex::encode(&Sha256::digest(&json)[..16])
}

/// `view` as a 200 answer with its `ETag`.
fn tagged(view: &impl Serialize) -> http::Response<super::response::ResponseBody> {
    let mut response = json_response(StatusCode::OK, view);
    if let Ok(etag) = HeaderValue::try_from(format!("\"{}\"", digest_of(view))) {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

/// What these routes read: the storage, and the sealer of the provisioning credential's
/// password.
#[derive(Debug)]
pub(crate) struct Access {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Seals a provisioning password as it arrives.
    pub(crate) sealer: crate::seal::Sealer,
}

impl Access {
    /// `GET …/databases/{id}/permissions`.
    pub(crate) async fn get_permissions(&self, call: Call<'_>) -> Answer {
        let id = call.param("id");
        let access = self.read_access(id).await?;
        Ok(tagged(&PermissionsView::new(id, &access)))
    }

    /// `PUT …/databases/{id}/permissions`: the whole list, replaced.
    pub(crate) async fn put_permissions(&self, mut call: Call<'_>) -> Answer {
        let condition = IfMatch::of(&call.headers)?;
        let body = call.json().await?;
        let id = call.param("id");
        let database_id = id.to_owned();
        // Validated inside the edit, like a PATCH: a missing database is 404 before any 422.
        let edit: AccessEdit = Box::new(move |stored: &AccessControl| {
            if let Some(condition) = &condition {
                condition.check_digest(&digest_of(&PermissionsView::new(&database_id, stored)))?;
            }
            Ok(AccessControl {
                permissions: permissions_from_body(&body)?,
                ..stored.clone()
            })
        });
        let access = self
            .storage
            .update_access_control(id, edit, call.origin)
            .await?;
        Ok(tagged(&PermissionsView::new(id, &access)))
    }

    /// `GET …/databases/{id}/data-protection`.
    pub(crate) async fn get_data_protection(&self, call: Call<'_>) -> Answer {
        let id = call.param("id");
        let access = self.read_access(id).await?;
        Ok(tagged(&DataProtectionView::new(id, &access)))
    }

    /// `PUT …/databases/{id}/data-protection`: the policies and `inherits_from`, replaced.
    pub(crate) async fn put_data_protection(&self, mut call: Call<'_>) -> Answer {
        let condition = IfMatch::of(&call.headers)?;
        let body = call.json().await?;
        let id = call.param("id");
        let database_id = id.to_owned();
        let sealer = self.sealer.clone();
        // Where the provisioning password goes: the database's destination now.
        let destination = self
            .storage
            .database(id)
            .await?
            .map(|db| db.destination_via(None));
        let edit: AccessEdit = Box::new(move |stored: &AccessControl| {
            if let Some(condition) = &condition {
                condition
                    .check_digest(&digest_of(&DataProtectionView::new(&database_id, stored)))?;
            }
            let before = stored.data_protection.provisioning.as_ref();
            let mut data_protection =
                data_protection_from_body(&database_id, &body, before, &sealer)?;
            // A provisioning password given now is bound to where it goes now; one kept keeps
            // its binding (or, stored before bindings, takes the destination now).
            if let Some(provisioning) = data_protection.provisioning.as_mut() {
                let kept =
                    before.filter(|b| b.credential.password == provisioning.credential.password);
                provisioning.credential.password_for = match kept {
                    Some(before) => before.credential.password_for.or(destination),
                    None => destination,
                };
            }
            Ok(AccessControl {
                data_protection,
                ..stored.clone()
            })
        });
        let access = self
            .storage
            .update_access_control(id, edit, call.origin)
            .await?;
        Ok(tagged(&DataProtectionView::new(id, &access)))
    }

    /// Database `id`'s access control: 404 when there is no such database.
    async fn read_access(&self, id: &str) -> Result<AccessControl, ApiError> {
        self.storage
            .access_control(id)
            .await?
            .ok_or(ApiError::NotFound)
    }
}

impl IfMatch {
    /// `Ok` when a document whose digest is `digest` meets the condition, else
    /// [`StorageError::PreconditionFailed`].
    pub(crate) fn check_digest(&self, digest: &str) -> Result<(), StorageError> {
        match self {
            IfMatch::Any => Ok(()),
            IfMatch::Versions(versions) if versions.iter().any(|v| v == digest) => Ok(()),
            IfMatch::Versions(_) => Err(StorageError::PreconditionFailed),
        }
    }
}
