//! A database's tables and columns, as a credential sees them: what an AI agent's
//! `describe_tables` answers, and `GET …/me/databases/{id}/schema`, which the console's editor
//! completes names from (docs/console.md, "The screens").
//!
//! The catalog is read by a statement run like any other: as the credential, read-only, under
//! the database's data protection (a column the protected role may not read is not listed), at
//! most [`DESCRIBE_MAX_COLUMNS`] columns, with one audit event. A credential that needs reviews
//! is refused (422): what it sees is reviewed too. The console's answers are kept for
//! [`SCHEMA_TTL`] per database version, credential and data protection (a policy changed is
//! another key: a newly hidden column is never listed from before), so a page of completions
//! costs one catalog read a minute, not one per keystroke. A database that can't be reached answers an
//! empty schema with why (`unavailable`): the editor then completes keywords only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::{Value, json};

use super::admission::{Admission, Guarded};
use super::call::Answer;
use super::call::Call;
use super::error::ApiError;
use super::launch::{Launcher, Record, Run};
use super::response::json_response;
use crate::model::Credential;
use crate::run::Format;
use crate::storage::Storage;
use crate::validate::ValidationErrors;

/// The most columns a schema (and an agent's `describe_tables`) answers.
pub const DESCRIBE_MAX_COLUMNS: u32 = 5_000;

/// How long the console's schema answers are kept.
pub(super) const SCHEMA_TTL: Duration = Duration::from_secs(60);

/// How many schema answers are kept at most (the oldest go first).
const SCHEMA_ENTRIES: usize = 256;

/// What a schema answer is kept under: database id, its version (µs), credential id, and a
/// digest of the data protection it was read under.
type SchemaKey = (String, i64, String, u64);

/// The console's schema answers: key → when it was read, and the answer.
#[derive(Debug, Default)]
pub(crate) struct SchemaCache(Mutex<HashMap<SchemaKey, (Instant, Value)>>);

impl SchemaCache {
    fn get(&self, key: &SchemaKey) -> Option<Value> {
        let entries = self.0.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(key)
            .filter(|(at, _)| at.elapsed() < SCHEMA_TTL)
            .map(|(_, value)| value.clone())
    }

    fn put(&self, key: SchemaKey, value: Value) {
        let mut entries = self.0.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|_, (at, _)| at.elapsed() < SCHEMA_TTL);
        if entries.len() >= SCHEMA_ENTRIES
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, (at, _))| *at)
                .map(|(key, _)| key.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(key, (Instant::now(), value));
    }
}

/// What the schema reads: the storage, admission, the launcher its catalog runs go through,
/// and the answers kept.
#[derive(Clone, Debug)]
pub(crate) struct Schema {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Who may query which database.
    pub(crate) admission: Admission,
    /// Runs the catalog statement.
    pub(crate) launcher: Launcher,
    /// The console's schema answers, kept a minute.
    pub(crate) schemas: Arc<SchemaCache>,
}

impl Schema {
    /// Reads `guarded`'s catalog as `credential` (admitted by the caller), recording the run
    /// with `record`: `{"tables": [{"schema", "table", "columns": [{"name", "type",
    /// "nullable"}]}], "truncated"}`.
    pub(crate) async fn read_catalog(
        &self,
        guarded: Guarded,
        credential: Credential,
        record: Record,
    ) -> Result<Value, ApiError> {
        if credential.reviews_required > 0 {
            return Err(ValidationErrors::single(
                "credential_id",
                "the schema is read only as credentials with reviews_required 0: what a \
                 reviewed credential sees is reviewed too",
            )
            .into());
        }
        let masking = format!("{}_mask_", credential.username).to_lowercase();
        let runner = self.launcher.runner_for(guarded.db.adapter)?;
        let statement = runner.catalog().to_owned();
        let protection = self
            .launcher
            .protection_for_run(&guarded, &*runner, &statement, true, None)
            .await?
            .protection;
        // What its data protection masks (a hidden column is not listed at all: the catalog is
        // read as the protected role).
        let masks = protection.clone();
        let result = self
            .launcher
            .run_collected(Run {
                runner,
                db: guarded.db,
                credential,
                statement,
                inputs: None,
                max_rows: DESCRIBE_MAX_COLUMNS,
                read_only: true,
                format: Format::Json,
                record,
                protection,
                shorter_timeout: None,
                row_stamp: None,
            })
            .await?;
        // The login's masking schema (`<login>_mask_<schema>`, a view per table, which the
        // protected role reads through its search path or default database) is listed as the
        // schema it masks: one table, its columns once, the masked ones marked.
        let mut tables: Vec<Value> = Vec::new();
        let mut at: HashMap<(String, String), usize> = HashMap::new();
        for row in &result.values.rows {
            let text = |index: usize| {
                row.get(index)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let (mut schema, table) = (text(0), text(1));
            if schema.to_lowercase().starts_with(&masking) && schema.len() > masking.len() {
                schema = schema[masking.len()..].to_owned();
            }
            let name = text(2);
            let masked = masks
                .as_ref()
                .and_then(|p| p.find(&schema, &table, &name))
                .is_some_and(|c| c.action == crate::model::ColumnAction::Mask);
            let column = json!({
                "name": name,
                "type": text(3),
                "nullable": matches!(text(4).as_str(), "YES" | "Y" | "1"),
                "masked": masked,
            });
            let index = *at
                .entry((schema.clone(), table.clone()))
                .or_insert_with(|| {
                    tables.push(json!({ "schema": schema, "table": table, "columns": [] }));
                    tables.len() - 1
                });
            if let Some(columns) = tables[index]["columns"].as_array_mut()
                && !columns.iter().any(|c| c["name"] == column["name"])
            {
                columns.push(column);
            }
        }
        // A masked column the protected role reads only through its mask may not be in the
        // catalog it sees: it is listed, masked, with the table it belongs to.
        if let Some(protection) = &masks {
            for table in &mut tables {
                let (schema, name) = (
                    table["schema"].as_str().unwrap_or_default().to_owned(),
                    table["table"].as_str().unwrap_or_default().to_owned(),
                );
                let Some(columns) = table["columns"].as_array_mut() else {
                    continue;
                };
                for protected in &protection.columns {
                    let listed = columns.iter().any(|c| {
                        c["name"]
                            .as_str()
                            .is_some_and(|n| protected.is(&schema, &name, n))
                    });
                    if protected.action == crate::model::ColumnAction::Mask
                        && protected.protects_table(&schema, &name)
                        && !listed
                    {
                        columns.push(json!({
                            "name": protected.column,
                            "type": "masked",
                            "nullable": true,
                            "masked": true,
                        }));
                    }
                }
            }
        }
        Ok(json!({ "tables": tables, "truncated": result.truncated }))
    }

    /// `GET …/me/databases/{id}/schema?credential_id=`: the tables and columns the caller
    /// would see as the credential (its database's default one when not named).
    pub(crate) async fn get_my_schema(&self, call: Call<'_>) -> Answer {
        let principal = call.principal()?;
        let db = self
            .storage
            .database(call.param("id"))
            .await?
            .ok_or(ApiError::NotFound)?;
        let wanted = call.query.as_deref().and_then(|query| {
            form_urlencoded::parse(query.as_bytes())
                .find(|(name, _)| name == "credential_id")
                .map(|(_, value)| value.into_owned())
        });
        let credential = match &wanted {
            Some(id) => db.credentials.iter().find(|c| c.id.as_str() == id),
            None => db
                .credentials
                .iter()
                .find(|c| c.default_credential)
                .or_else(|| db.credentials.first()),
        }
        .cloned()
        .ok_or_else(|| {
            ApiError::from(ValidationErrors::single(
                "credential_id",
                "names no credential of this database",
            ))
        })?;
        let guarded = self.admission.guarded(db).await?;
        if !guarded.admits(principal) {
            // As for a query: one who may not query the database learns nothing of it.
            return Err(ApiError::NotFound);
        }
        guarded.admit(principal, &credential, DESCRIBE_MAX_COLUMNS)?;
        let protection = self.launcher.protection_of(&guarded).await?;
        let key = (
            guarded.db.id.as_str().to_owned(),
            guarded.db.updated_at.as_micros(),
            credential.id.as_str().to_owned(),
            {
                use std::hash::{Hash as _, Hasher as _};
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                format!("{protection:?}").hash(&mut hasher);
                hasher.finish()
            },
        );
        if let Some(cached) = self.schemas.get(&key) {
            return Ok(json_response(StatusCode::OK, &cached));
        }
        let record = Record::Schema {
            database_id: key.0.clone(),
            origin: crate::model::Origin::clone(call.origin),
        };
        // The schema only helps the editor: a database that can't be reached (or a runner not
        // built in, or a tunnel this server can't dial) leaves it without completion, said in `unavailable`, and is asked again
        // next time (nothing is kept).
        match self.read_catalog(guarded, credential, record).await {
            Ok(answer) => {
                self.schemas.put(key, answer.clone());
                Ok(json_response(StatusCode::OK, &answer))
            }
            Err(
                ApiError::BadGateway(why)
                | ApiError::GatewayTimeout(why)
                | ApiError::NotImplemented(why)
                | ApiError::Conflict(why),
            ) => Ok(json_response(
                StatusCode::OK,
                &json!({ "tables": [], "truncated": false, "unavailable": why }),
            )),
            Err(error) => Err(error),
        }
    }
}
