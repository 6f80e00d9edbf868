//! Running a dashboard panel (`POST …/dashboards/{id}/panels/{panel_id}/run`): its inputs as
//! bind parameters, as its credential (which never requires reviews), read-only.

use http::{Response, StatusCode};
use serde_json::{Value, json};

use crate::model::{CHOICES_MAX, Database, Origin, PanelDetails, Principal};
use crate::run::Format;
use crate::run::statement::{self, Dialect};
use crate::seal::Sealer;
use crate::validate::{ValidationErrors, panel_from_body, panel_inputs, row_limit};

use super::admission::Admission;
use super::call::{Answer, Call};
use super::error::ApiError;
use super::launch::{Launcher, Record, Run};
use super::response::{ResponseBody, json_response};
use super::row_tokens::{self, RowTokenOptions};

/// What a panel run reads: admission, the launcher, the sealer and options of row tokens, and
/// the most rows a run may return.
#[derive(Clone, Debug)]
pub(crate) struct Panels {
    /// Who may run the panel.
    pub(crate) admission: Admission,
    /// Starts the run.
    pub(crate) launcher: Launcher,
    /// Seals the rows' tokens.
    pub(crate) sealer: Sealer,
    /// How panel rows' tokens behave.
    pub(crate) row_tokens: RowTokenOptions,
    /// The most rows a run may return.
    pub(crate) max_rows: u32,
}

impl Panels {
    /// `POST /v1/dashboards/test-run`: an unsaved panel, run by its editor.
    pub(crate) async fn test_run_panel(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let format = Format::from_accept(call.accept());
        let body = call.json().await?;
        self.run_unsaved_panel(&principal, body, format, call.origin)
            .await
    }

    /// `POST …/dashboards/{id}/panels/{panel_id}/run`: its rows, streamed.
    pub(crate) async fn run_panel(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let format = Format::from_accept(call.accept());
        let body = call.json().await?;
        let (dashboard, panel) = (call.param("id"), call.param("panel_id"));
        self.run_dashboard_panel(&principal, dashboard, panel, body, format, call.origin)
            .await
    }

    pub(crate) async fn run_dashboard_panel(
        &self,
        principal: &Principal,
        dashboard_id: &str,
        panel_id: &str,
        body: serde_json::Map<String, Value>,
        format: Format,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let (dashboard, panel) = self
            .admission
            .dashboard_panel(dashboard_id, panel_id)
            .await?;
        let panel = &dashboard.panels[panel];
        let row_stamp = self.row_stamp_for(panel, &body, format, principal, origin)?;
        let record = |_: &Database| Record::Panel {
            dashboard_id: dashboard.id.as_str().to_owned(),
            panel_id: panel.id.as_str().to_owned(),
            origin: origin.clone(),
        };
        self.run_panel_as(
            principal,
            (panel, &dashboard.presentation),
            &body,
            format,
            row_stamp,
            record,
        )
        .await
    }

    /// `POST /v1/dashboards/test-run`: a panel that is not saved (`{"panel": {...}, "inputs",
    /// "limit"}`), run by its editor under every rule of a saved panel's run (read-only, a
    /// credential without reviews, access, data protection, an agent's limits), audited on its
    /// database (`panel.test_run`). No row tokens: nothing can be triggered from it.
    async fn run_unsaved_panel(
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
        let presentation = crate::model::Presentation::default();
        self.run_panel_as(
            principal,
            (&panel, &presentation),
            &body,
            format,
            None,
            record,
        )
        .await
    }

    /// Runs `panel` (with its dashboard's presentation, which types its inputs) for
    /// `principal` with the run body's `inputs`, `time_range` and `limit`, as its
    /// credential, read-only, under data protection; its outcome goes to `record`'s record of
    /// the database it ran on.
    async fn run_panel_as(
        &self,
        principal: &Principal,
        (panel, presentation): (&crate::model::Panel, &crate::model::Presentation),
        body: &serde_json::Map<String, Value>,
        format: Format,
        row_stamp: Option<std::sync::Arc<dyn crate::run::RowStamp>>,
        record: impl FnOnce(&Database) -> Record,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let PanelDetails::Query {
            query,
            credential_id,
        } = &panel.details;
        let limit =
            row_limit(body, self.max_rows).map_err(|why| ValidationErrors::single("limit", why))?;
        let (guarded, credential, max_rows) = self
            .admission
            .panel_access(principal, credential_id, limit)
            .await?;
        let inputs = panel_inputs(
            panel,
            body,
            presentation,
            Dialect::of(guarded.db.adapter),
            chrono::Utc::now(),
        )?;
        let record = record(&guarded.db);
        let mut run = self
            .read_only_run(
                principal,
                (guarded, credential, max_rows),
                (query, "query"),
                record,
            )
            .await?;
        run.inputs = Some(inputs);
        run.format = format;
        run.row_stamp = row_stamp;
        self.launcher.start_run(run).await
    }

    /// The run of `query` (one statement; its error on `field`) for `principal` as what
    /// [`Admission::panel_access`] admitted (the database, the credential, the most rows),
    /// read-only, under data protection, its outcome to `record`: what a panel's run and a
    /// choices query's share. No inputs, JSON and no row stamp until the caller says otherwise.
    async fn read_only_run(
        &self,
        principal: &Principal,
        (guarded, credential, max_rows): (super::admission::Guarded, crate::model::Credential, u32),
        (query, field): (&str, &str),
        record: Record,
    ) -> Result<Run, ApiError> {
        let statement = statement::single(query, Dialect::of(guarded.db.adapter))
            .map_err(|why| ValidationErrors::single(field, why))?
            .to_owned();
        let runner = self.launcher.runner_for(guarded.db.adapter)?;
        let (protection, credential) = self
            .launcher
            .protection_for_run(&guarded, &*runner, &statement, true, Some(principal))
            .await?
            .run_as(credential);
        Ok(Run {
            runner,
            db: guarded.db,
            credential,
            statement,
            inputs: None,
            max_rows,
            read_only: true,
            format: Format::Json,
            record,
            protection,
            shorter_timeout: None,
            row_stamp: None,
        })
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

    /// `GET …/dashboards/{id}/inputs/{key}/choices`: the values of a choice input's choices
    /// query (its first column, each once, in order, at most [`CHOICES_MAX`]), run read-only as
    /// its credential (which needs no reviews) for whoever may see the dashboard and query the
    /// credential's database, under data protection; audited as a panel run. A fixed list is
    /// answered as it is.
    pub(crate) async fn input_choices(&self, call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let (id, key) = (call.param("id"), call.param("key"));
        let dashboard = self
            .admission
            .storage
            .dashboard(id)
            .await?
            .ok_or(ApiError::NotFound)?;
        let spec = dashboard
            .presentation
            .inputs
            .get(key)
            .filter(|spec| spec.kind == crate::model::InputKind::Choice)
            .ok_or(ApiError::NotFound)?;
        let Some(source) = &spec.choices_query else {
            return Ok(json_response(
                StatusCode::OK,
                &json!({ "choices": spec.choices, "truncated": false, "error": null }),
            ));
        };
        let admitted = self
            .admission
            .panel_access(&principal, &source.credential_id, CHOICES_MAX as u32 + 1)
            .await?;
        let record = Record::InputChoices {
            dashboard_id: dashboard.id.as_str().to_owned(),
            key: key.to_owned(),
            origin: Origin::clone(call.origin),
        };
        let run = self
            .read_only_run(
                &principal,
                admitted,
                (&source.query, "choices_query.query"),
                record,
            )
            .await?;
        let result = self.launcher.run_collected(run).await?;
        let mut choices: Vec<String> = Vec::new();
        let mut truncated = result.truncated;
        for row in &result.values.rows {
            let value = match row.first() {
                None | Some(Value::Null) => continue,
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
            };
            if !choices.contains(&value) {
                if choices.len() == CHOICES_MAX {
                    truncated = true;
                    break;
                }
                choices.push(value);
            }
        }
        Ok(json_response(
            StatusCode::OK,
            &json!({ "choices": choices, "truncated": truncated, "error": result.error }),
        ))
    }
}
