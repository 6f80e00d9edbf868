//! Running a dashboard panel (`POST …/dashboards/{id}/panels/{panel_id}/run`): its inputs as
//! bind parameters, as its credential (which never requires reviews), read-only.

use http::Response;
use serde_json::Value;

use crate::model::{Credential, Dashboard, Database, Origin, PanelDetails, Principal};
use crate::run::Format;
use crate::run::statement::{self, Dialect};
use crate::validate::{ValidationErrors, panel_from_body, panel_inputs, row_limit};

use super::super::error::ApiError;
use super::super::response::ResponseBody;
use super::super::{Shared, row_tokens};
use super::Record;
use super::admission::Guarded;
use super::start::Run;

impl Shared {
    /// The database a panel's `credential_id` belongs to (credential ids are unique across
    /// databases), remembered once found.
    pub(in crate::service) async fn database_of_credential(
        &self,
        credential_id: &str,
    ) -> Result<Option<Database>, ApiError> {
        let known = self
            .credential_index
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(credential_id)
            .cloned();
        if let Some(id) = known
            && let Some(db) = self.storage.database(&id).await?
            && db
                .credentials
                .iter()
                .any(|c| c.id.as_str() == credential_id)
        {
            return Ok(Some(db));
        }
        let mut after: Option<String> = None;
        loop {
            let page = self.databases_after(after.as_deref()).await?;
            let Some(last) = page.last() else {
                return Ok(None);
            };
            after = Some(last.id.as_str().to_owned());
            if let Some(db) = page.into_iter().find(|db| {
                db.credentials
                    .iter()
                    .any(|c| c.id.as_str() == credential_id)
            }) {
                self.credential_index
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(credential_id.to_owned(), db.id.as_str().to_owned());
                return Ok(Some(db));
            }
        }
    }

    /// The database and credential a panel runs as (`credential_id`), and the
    /// most rows it may give `principal` of `limit`: 422 when the credential is gone or needs
    /// reviews, 403 when `principal` may not run it (docs/queries.md, "Running queries"). The database
    /// comes with its access control, read once for admission and data protection.
    pub(in crate::service) async fn panel_access(
        &self,
        principal: &Principal,
        credential_id: &str,
        limit: u32,
    ) -> Result<(Guarded, Credential, u32), ApiError> {
        let db = self
            .database_of_credential(credential_id)
            .await?
            .ok_or_else(|| {
                ValidationErrors::single(
                    "credential_id",
                    format!("the panel's credential {credential_id} names no stored credential"),
                )
            })?;
        let credential = db
            .credentials
            .iter()
            .find(|c| c.id.as_str() == credential_id)
            .cloned()
            .ok_or(ApiError::NotFound)?;
        if credential.reviews_required > 0 {
            return Err(ValidationErrors::single(
                "credential_id",
                "the panel's credential requires reviews: panels run only as credentials with \
                 reviews_required 0",
            )
            .into());
        }
        // A panel runs only for those who may query its database, whatever the dashboard's
        // flag (which decides who sees the dashboard); an agent keeps to the AI limits.
        let guarded = self.guarded(db).await?;
        let max_rows = guarded.admit(principal, &credential, limit)?;
        Ok((guarded, credential, max_rows))
    }

    /// Dashboard `dashboard_id` and the index of its panel `panel_id`: 404 when either is
    /// missing.
    pub(in crate::service) async fn dashboard_panel(
        &self,
        dashboard_id: &str,
        panel_id: &str,
    ) -> Result<(Dashboard, usize), ApiError> {
        let dashboard = self
            .storage
            .dashboard(dashboard_id)
            .await?
            .ok_or(ApiError::NotFound)?;
        let panel = dashboard
            .panels
            .iter()
            .position(|p| p.id.as_str() == panel_id)
            .ok_or(ApiError::NotFound)?;
        Ok((dashboard, panel))
    }

    pub(super) async fn run_dashboard_panel(
        &self,
        principal: &Principal,
        dashboard_id: &str,
        panel_id: &str,
        body: serde_json::Map<String, Value>,
        format: Format,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let (dashboard, panel) = self.dashboard_panel(dashboard_id, panel_id).await?;
        let panel = &dashboard.panels[panel];
        let row_stamp = self.row_stamp_for(panel, &body, format, principal, origin)?;
        let record = |_: &Database| Record::Panel {
            dashboard_id: dashboard.id.as_str().to_owned(),
            panel_id: panel.id.as_str().to_owned(),
            origin: origin.clone(),
        };
        self.run_panel_as(principal, panel, &body, format, row_stamp, record)
            .await
    }

    /// `POST /v1/dashboards/test-run`: a panel that is not saved (`{"panel": {...}, "inputs",
    /// "limit"}`), run by its editor under every rule of a saved panel's run (read-only, a
    /// credential without reviews, access, data protection, an agent's limits), audited on its
    /// database (`panel.test_run`). No row tokens: nothing can be triggered from it.
    pub(in crate::service) async fn run_unsaved_panel(
        &self,
        principal: &Principal,
        body: serde_json::Map<String, Value>,
        format: Format,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let panel = match body.get("panel") {
            Some(Value::Object(panel)) => panel_from_body(panel).map_err(|errors| {
                let mut nested = ValidationErrors::new();
                nested.add_nested("panel", errors);
                nested
            })?,
            _ => return Err(ValidationErrors::single("panel", "must be an object").into()),
        };
        let record = |db: &Database| Record::PanelTest {
            database_id: db.id.as_str().to_owned(),
            origin: origin.clone(),
        };
        self.run_panel_as(principal, &panel, &body, format, None, record)
            .await
    }

    /// Runs `panel` for `principal` with the run body's `inputs` and `limit`, as its
    /// credential, read-only, under data protection; its outcome goes to `record`'s record of
    /// the database it ran on.
    async fn run_panel_as(
        &self,
        principal: &Principal,
        panel: &crate::model::Panel,
        body: &serde_json::Map<String, Value>,
        format: Format,
        row_stamp: Option<std::sync::Arc<dyn crate::run::RowStamp>>,
        record: impl FnOnce(&Database) -> Record,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let PanelDetails::Query {
            query,
            credential_id,
        } = &panel.details;
        let inputs = panel_inputs(panel, body)?;
        let limit =
            row_limit(body, self.max_rows).map_err(|why| ValidationErrors::single("limit", why))?;
        let (guarded, credential, max_rows) =
            self.panel_access(principal, credential_id, limit).await?;
        let statement = statement::single(query, Dialect::of(guarded.db.adapter))
            .map_err(|why| ValidationErrors::single("query", why))?
            .to_owned();
        let record = record(&guarded.db);
        let runner = self.runner_for(guarded.db.adapter)?;
        let protection = self
            .protection_for_run(&guarded, &*runner, &statement, true)
            .await?;
        self.start_run(Run {
            runner,
            db: guarded.db,
            credential,
            statement,
            inputs: Some(inputs),
            max_rows,
            read_only: true,
            format,
            record,
            protection,
            shorter_timeout: None,
            row_stamp,
        })
        .await
    }

    /// The stamp of a panel run's rows, when its body asks for row tokens (`"row_tokens":
    /// true`): 422 when it is not a boolean, when no action of the panel starts a workflow, or
    /// for a CSV result (which carries none).
    fn row_stamp_for(
        &self,
        panel: &crate::model::Panel,
        body: &serde_json::Map<String, Value>,
        format: Format,
        principal: &Principal,
        origin: &Origin,
    ) -> Result<Option<std::sync::Arc<dyn crate::run::RowStamp>>, ApiError> {
        let field = "row_tokens";
        let wanted = match body.get(field) {
            None | Some(Value::Null) => false,
            Some(Value::Bool(wanted)) => *wanted,
            Some(_) => return Err(ValidationErrors::single(field, "must be a boolean").into()),
        };
        if !wanted {
            return Ok(None);
        }
        if !row_tokens::triggerable(panel) {
            return Err(ValidationErrors::single(
                field,
                "the panel has no action that starts a workflow: its rows need no token",
            )
            .into());
        }
        if format == Format::Csv {
            return Err(ValidationErrors::single(
                field,
                "a CSV result carries no row tokens: ask for JSON or NDJSON",
            )
            .into());
        }
        Ok(Some(row_tokens::PanelRows::stamp(
            &self.sealer,
            panel,
            row_tokens::holder(principal, origin),
            self.row_tokens.life,
        )))
    }
}
