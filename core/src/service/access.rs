//! A database's permissions and data protection: `GET|PUT …/databases/{id}/permissions` and
//! `GET|PUT …/databases/{id}/data-protection`.

use http::StatusCode;

use super::Shared;
use super::call::Call;
use super::error::ApiError;
use super::render::{DataProtectionView, PermissionsView};
use super::response::json_response;
use super::router::Answer;
use crate::model::AccessControl;
use crate::storage::{AccessEdit, Edits};
use crate::validate::{data_protection_from_body, permissions_from_body};

impl Shared {
    /// `GET …/databases/{id}/permissions`.
    pub(super) async fn get_permissions(&self, call: Call<'_>) -> Answer {
        let id = call.param("id");
        let access = self.read_access(id).await?;
        Ok(json_response(
            StatusCode::OK,
            &PermissionsView::new(id, &access),
        ))
    }

    /// `PUT …/databases/{id}/permissions`: the whole list, replaced.
    pub(super) async fn put_permissions(&self, mut call: Call<'_>) -> Answer {
        let body = call.json(self).await?;
        let id = call.param("id");
        // Validated inside the edit, like a PATCH: a missing database is 404 before any 422.
        let edit: AccessEdit = Box::new(move |stored: &AccessControl| {
            Ok(AccessControl {
                permissions: permissions_from_body(&body)?,
                ..stored.clone()
            })
        });
        let access = self
            .storage
            .update_access_control(id, edit, call.origin)
            .await?;
        Ok(json_response(
            StatusCode::OK,
            &PermissionsView::new(id, &access),
        ))
    }

    /// `GET …/databases/{id}/data-protection`.
    pub(super) async fn get_data_protection(&self, call: Call<'_>) -> Answer {
        let id = call.param("id");
        let access = self.read_access(id).await?;
        Ok(json_response(
            StatusCode::OK,
            &DataProtectionView::new(id, &access),
        ))
    }

    /// `PUT …/databases/{id}/data-protection`: the policies and `inherits_from`, replaced.
    pub(super) async fn put_data_protection(&self, mut call: Call<'_>) -> Answer {
        let body = call.json(self).await?;
        let id = call.param("id");
        let database_id = id.to_owned();
        let edit: AccessEdit = Box::new(move |stored: &AccessControl| {
            Ok(AccessControl {
                data_protection: data_protection_from_body(&database_id, &body)?,
                ..stored.clone()
            })
        });
        let access = self
            .storage
            .update_access_control(id, edit, call.origin)
            .await?;
        Ok(json_response(
            StatusCode::OK,
            &DataProtectionView::new(id, &access),
        ))
    }

    /// Database `id`'s access control: 404 when there is no such database.
    async fn read_access(&self, id: &str) -> Result<AccessControl, ApiError> {
        self.storage
            .access_control(id)
            .await?
            .ok_or(ApiError::NotFound)
    }
}
