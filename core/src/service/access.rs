//! A database's permissions and data protection: `GET|PUT …/databases/{id}/permissions` and
//! `GET|PUT …/databases/{id}/data-protection`.

use http::{Method, Response, StatusCode};
use http_body::Body;

use super::error::ApiError;
use super::render::{DataProtectionView, PermissionsView};
use super::response::{ResponseBody, json_response};
use super::router::Route;
use super::{Call, Shared};
use crate::model::{AccessControl, Origin};
use crate::storage::Edits;
use crate::validate::{data_protection_from_body, permissions_from_body};

impl Shared {
    pub(super) async fn access<B>(
        &self,
        route: Route<'_>,
        call: Call<B>,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError>
    where
        B: Body,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (id, permissions) = match &route {
            Route::Permissions(id) => (id.as_ref(), true),
            Route::DataProtection(id) => (id.as_ref(), false),
            _ => return Err(ApiError::NotFound),
        };
        let access = match call.method {
            Method::GET => self
                .storage
                .access_control(id)
                .await?
                .ok_or(ApiError::NotFound)?,
            Method::PUT => {
                let body = call.json(self).await?;
                // Validated inside the edit, like a PATCH: a missing database is 404 before any 422.
                let database_id = id.to_owned();
                let edit: crate::storage::AccessEdit = if permissions {
                    Box::new(move |stored: &AccessControl| {
                        Ok(AccessControl {
                            permissions: permissions_from_body(&body)?,
                            ..stored.clone()
                        })
                    })
                } else {
                    Box::new(move |stored: &AccessControl| {
                        Ok(AccessControl {
                            data_protection: data_protection_from_body(&database_id, &body)?,
                            ..stored.clone()
                        })
                    })
                };
                self.storage.update_access_control(id, edit, origin).await?
            }
            _ => return Err(ApiError::MethodNotAllowed(route.allowed_methods())),
        };
        Ok(if permissions {
            json_response(StatusCode::OK, &PermissionsView::new(id, &access))
        } else {
            json_response(StatusCode::OK, &DataProtectionView::new(id, &access))
        })
    }
}
