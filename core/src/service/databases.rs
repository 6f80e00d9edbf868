//! Database endpoints: list, create, retrieve, update, delete, setup, remove by api_id.

use http::{Method, Response, StatusCode};
use http_body::Body;

use super::render::{DatabaseView, PageView};
use super::router::Route;
use super::{Call, Shared, page_request, split_page};
use crate::error::{ApiError, json_response};
use crate::model::{Database, Timestamp};
use crate::service::ResponseBody;
use crate::storage::DatabaseKey;
use crate::validate::{apply_setup, database_from_body, parse_setup};

fn database_response(db: &Database) -> Response<ResponseBody> {
    json_response(StatusCode::OK, &DatabaseView::from(db))
}

impl Shared {
    pub(super) async fn databases<B>(
        &self,
        route: Route<'_>,
        call: Call<B>,
    ) -> Result<Response<ResponseBody>, ApiError>
    where
        B: Body,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let storage = &self.storage;
        let db = match (route, &call.method) {
            (Route::Databases, &Method::GET) => {
                let query = call.page_query()?;
                let items = storage.list_databases(page_request(&query)).await?;
                let (items, next) = split_page(items, &query, |db| db.id.to_string());
                let data = items.iter().map(DatabaseView::from).collect();
                return Ok(json_response(StatusCode::OK, &PageView { data, next }));
            }
            (Route::Databases, _) => {
                let body = call.json(self.body_limit).await?;
                let db = database_from_body(None, &body, Timestamp::now())?;
                storage.insert_database(db.clone()).await?;
                db
            }
            (Route::Database(id), &Method::GET) => {
                storage.database(&id).await?.ok_or(ApiError::NotFound)?
            }
            (Route::Database(id), &Method::PATCH) => {
                let body = call.json(self.body_limit).await?;
                let edit = move |stored: &Database| {
                    database_from_body(Some(stored), &body, Timestamp::now())
                };
                storage.update_database(&id, Box::new(edit)).await?
            }
            (Route::Database(id), _) => storage.delete_database(DatabaseKey::Id(&id)).await?,
            (Route::DatabaseSetup, _) => {
                let body = call.json(self.body_limit).await?;
                let setup = parse_setup(&body)?;
                let api_id = setup.api_id.clone();
                let upsert = move |stored: Option<&Database>| {
                    Ok(apply_setup(stored, &setup, Timestamp::now()))
                };
                storage
                    .upsert_database_by_api_id(&api_id, Box::new(upsert))
                    .await?
            }
            (Route::DatabaseRemove(api_id), _) => {
                storage.delete_database(DatabaseKey::ApiId(&api_id)).await?
            }
            _ => return Err(ApiError::NotFound),
        };
        Ok(database_response(&db))
    }
}
