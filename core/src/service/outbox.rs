//! Row action triggers and the outbox routes (docs/workflows.md, "Workflows and notifications").

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Map, Value};

use super::admission::Admission;
use super::call::Answer;
use super::call::Call;
use super::call::split_page;
use super::error::ApiError;
use super::render::{DeliveryProgressView, DeliveryView, PageView};
use super::response::json_response;
use super::row_tokens::RowTokenOptions;
use crate::model::{
    Action, AuditAction, AuditEvent, Database, Delivery, DeliveryStatus, Origin, Panel,
    PanelDetails, Principal, Target, Timestamp, Written,
};
use crate::outbox::{review_request_body, workflow_body};
use crate::seal::Sealer;
use crate::storage::{Page, Storage, WriteLog};
use crate::validate::ValidationErrors;

/// Which outbox deliveries this service makes: a workflow endpoint and a Slack bot token are
/// the server's to configure (docs/workflows.md, "Workflows and notifications").
#[derive(Clone, Debug, Default)]
pub struct OutboxTargets {
    /// Whether row actions may be triggered (a workflow endpoint is configured).
    pub workflows: bool,
    /// Whether review requests go to the databases' `slack_channel` (a bot token is
    /// configured).
    pub slack: bool,
    /// The worker to wake when a delivery was stored.
    pub wake: Option<crate::outbox::Wake>,
    /// The console's public URL: review requests link to the query's page there.
    pub console_url: Option<String>,
}

impl OutboxTargets {
    /// Wakes this node's outbox worker, if it has one.
    pub(crate) fn wake(&self) {
        if let Some(wake) = &self.wake {
            wake.wake();
        }
    }

    /// The Slack message owed when a new query waits for reviews: `None` when the server sends
    /// none, the database names no channel, or the query needs no review.
    pub(crate) fn review_request(
        &self,
        db: &Database,
        query: &crate::model::Query,
        reviews_required: u32,
    ) -> Option<Delivery> {
        let channel = db.slack_channel.as_deref()?.trim();
        if !self.slack || channel.is_empty() || reviews_required == 0 {
            return None;
        }
        let body = review_request_body(
            channel,
            &query.author,
            &db.name,
            db.id.as_str(),
            reviews_required,
            query.id.as_str(),
            self.console_url.as_deref(),
        );
        Some(Delivery::new(
            Target::Slack {
                channel: channel.to_owned(),
            },
            body,
            query.id.as_str(),
            query.inserted_at,
        ))
    }
}

/// What the outbox routes read: the storage, the sealer that opens row tokens, what the
/// server delivers, how row tokens behave, and admission (who may run a panel).
#[derive(Debug)]
pub(crate) struct Outbox {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Opens row tokens.
    pub(crate) sealer: Sealer,
    /// What the service puts in the outbox.
    pub(crate) outbox: OutboxTargets,
    /// How panel rows' tokens behave.
    pub(crate) row_tokens: RowTokenOptions,
    /// Who may run a panel.
    pub(crate) admission: Admission,
}

impl Outbox {
    /// `POST …/dashboards/{id}/panels/{panel_id}/actions/{action_id}/trigger`: **202** with the
    /// delivery it put in the outbox.
    pub(crate) async fn trigger_action(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let body = call.json().await?;
        let delivery = self
            .trigger(
                &principal,
                call.param("id"),
                call.param("panel_id"),
                call.param("action_id"),
                &body,
                call.origin,
            )
            .await?;
        Ok(json_response(
            StatusCode::ACCEPTED,
            &DeliveryView::from(&delivery),
        ))
    }

    /// Puts a row action's workflow run in the outbox, with its event, if `principal` may run
    /// the panel and every input has a value.
    async fn trigger(
        &self,
        principal: &Principal,
        dashboard_id: &str,
        panel_id: &str,
        action_id: &str,
        body: &Map<String, Value>,
        origin: &Origin,
    ) -> Result<Delivery, ApiError> {
        let (dashboard, panel) = self
            .admission
            .dashboard_panel(dashboard_id, panel_id)
            .await?;
        let panel: &Panel = &dashboard.panels[panel];
        let action: &Action = panel
            .actions
            .iter()
            .find(|a| a.id.as_str() == action_id)
            .ok_or(ApiError::NotFound)?;
        let PanelDetails::Query { credential_id, .. } = &panel.details;
        // A workflow acts on the world with rows its caller vouches for: a person's decision,
        // never an agent's, whatever the AI settings (docs/workflows.md, "Triggering a row action").
        if principal.agent {
            return Err(ApiError::Denied(
                "an AI agent may not trigger row actions: a workflow is started by a person"
                    .to_owned(),
            ));
        }
        // Whoever may not run the panel may not act on its rows.
        self.admission
            .panel_access(principal, credential_id, 1)
            .await?;
        let Some(workflow_id) = super::row_tokens::starts_workflow(action) else {
            return Err(ApiError::Conflict(format!(
                "action {action_id} names no workflow: it starts no workflow (an action with \
                 neither label nor workflow_id is hidden; `.` and `..` are a path's dot \
                 segments)"
            )));
        };
        let body = self.verified_row(panel, action, body, principal, origin)?;
        let inputs = action_inputs(action, &body)?;
        if !self.outbox.workflows {
            return Err(ApiError::Conflict(
                "this server starts no workflows: it has no workflow endpoint (serve \
                 --workflow-url)"
                    .to_owned(),
            ));
        }
        let now = Timestamp::now();
        let mut delivery = Delivery::new(
            Target::Workflow {
                workflow_id: workflow_id.to_owned(),
            },
            String::new(),
            dashboard.id.as_str(),
            now,
        );
        delivery.body = workflow_body(
            delivery.id.as_str(),
            workflow_id,
            inputs,
            dashboard.id.as_str(),
            panel.id.as_str(),
            action.id.as_str(),
            &principal.user,
            now,
        );
        let event = AuditEvent::new(
            origin,
            AuditAction::ActionTrigger,
            dashboard.id.as_str(),
            vec![
                format!("panels[{panel_id}].actions[{action_id}]"),
                format!("deliveries[{}]", delivery.id),
            ],
        );
        let log = WriteLog {
            event,
            answer: origin.answer(Written::Delivery(&delivery)),
            outbox: vec![delivery.clone()],
        };
        self.storage.append_log(log).await?;
        self.outbox.wake();
        Ok(delivery)
    }

    /// The trigger's body with the clicked row's values taken from its `row_token` (docs/
    /// workflows.md, "Row tokens"): 422 when the token does not hold for this panel and caller,
    /// when a body brings both, and when an action that passes columns on gets no token (unless
    /// the server accepts unverified rows, when the body's `row` is taken as it is).
    fn verified_row(
        &self,
        panel: &Panel,
        action: &Action,
        body: &Map<String, Value>,
        principal: &Principal,
        origin: &Origin,
    ) -> Result<Map<String, Value>, ApiError> {
        let field = super::row_tokens::FIELD;
        let token = match body.get(field) {
            None | Some(Value::Null) => None,
            Some(Value::String(token)) => Some(token.as_str()),
            Some(_) => return Err(ValidationErrors::single(field, "must be a string").into()),
        };
        let Some(token) = token else {
            let passes_columns = action.input_mappings.iter().any(|m| !m.prompt_user);
            if passes_columns && !self.row_tokens.unverified_rows {
                return Err(ValidationErrors::single(
                    field,
                    "is missing: this action passes the clicked row's columns on, and a row \
                     comes only with the token a panel run gave it (run the panel with \
                     \"row_tokens\": true)",
                )
                .into());
            }
            return Ok(body.clone());
        };
        if !matches!(body.get("row"), None | Some(Value::Null)) {
            return Err(ValidationErrors::single(
                "row",
                "must be left out with a row_token: the row's values come from the token",
            )
            .into());
        }
        let holder = super::row_tokens::holder(principal, origin);
        let row = super::row_tokens::open(&self.sealer, token, panel, &holder)?;
        let mut verified = body.clone();
        verified.remove(field);
        verified.insert("row".to_owned(), Value::Object(row));
        Ok(verified)
    }

    /// `GET …/deliveries`: the outbox, newest first, by `status`.
    pub(crate) async fn list_deliveries(&self, call: Call<'_>) -> Answer {
        let query = call.query.as_deref();
        let page = crate::validate::parse_page_query(query)?;
        // An empty `status=` names no status either: 422, as any other that is not one.
        let status = crate::validate::parse_named_parameter::<DeliveryStatus>(query, "status")?;
        let found = self
            .storage
            .list_deliveries(
                Page {
                    after: page.after.as_deref(),
                    // One more tells whether a next page exists.
                    limit: page.limit + 1,
                },
                status,
            )
            .await?;
        let (found, next) = split_page(found, &page, |delivery| delivery.id.to_string());
        let data: Vec<DeliveryView<'_>> = found.iter().map(DeliveryView::from).collect();
        Ok(json_response(StatusCode::OK, &PageView { data, next }))
    }

    /// `GET …/deliveries/{id}`.
    pub(crate) async fn get_delivery(&self, call: Call<'_>) -> Answer {
        let delivery = self
            .storage
            .delivery(call.param("id"))
            .await?
            .ok_or(ApiError::NotFound)?;
        Ok(json_response(
            StatusCode::OK,
            &DeliveryView::from(&delivery),
        ))
    }

    /// `GET …/me/deliveries/{id}`: how a workflow run the caller started is doing (status,
    /// attempts, next try, last error; never its payload). 404 for any other delivery, so a
    /// caller learns nothing of others'.
    pub(crate) async fn get_my_delivery(&self, call: Call<'_>) -> Answer {
        let principal = call.principal()?;
        let delivery = self
            .storage
            .delivery(call.param("id"))
            .await?
            .filter(|delivery| triggered_by(delivery).as_deref() == Some(principal.user.as_str()))
            .ok_or(ApiError::NotFound)?;
        Ok(json_response(
            StatusCode::OK,
            &DeliveryProgressView::from(&delivery),
        ))
    }

    /// `POST …/deliveries/{id}/retry`: a dead letter retried by hand, **202**.
    pub(crate) async fn retry_delivery(&self, call: Call<'_>) -> Answer {
        let delivery = self.retried_delivery(call.param("id"), call.origin).await?;
        Ok(json_response(
            StatusCode::ACCEPTED,
            &DeliveryView::from(&delivery),
        ))
    }

    /// A dead letter, pending again with every attempt, with its event: 404 when there is no
    /// such delivery, 409 unless it is dead.
    async fn retried_delivery(&self, id: &str, origin: &Origin) -> Result<Delivery, ApiError> {
        for _ in 0..8 {
            let stored = self.storage.delivery(id).await?.ok_or(ApiError::NotFound)?;
            let Some(retried) = stored.retried(Timestamp::now()) else {
                return Err(ApiError::Conflict(format!(
                    "delivery {id} is {}: only a dead letter is retried by hand",
                    stored.status
                )));
            };
            let event = AuditEvent::new(
                origin,
                AuditAction::DeliveryRetry,
                id,
                vec!["status".to_owned(), "attempts".to_owned()],
            );
            let log = WriteLog {
                event,
                answer: origin.answer(Written::Delivery(&retried)),
                outbox: Vec::new(),
            };
            match self
                .storage
                .replace_delivery(retried.clone(), stored.updated_at, log)
                .await
            {
                Ok(()) => {
                    self.outbox.wake();
                    return Ok(retried);
                }
                Err(crate::storage::StorageError::Conflict) => continue,
                Err(error) => return Err(error.into()),
            }
        }
        Err(crate::storage::StorageError::Conflict.into())
    }
}

/// Who started a workflow delivery (its body's `triggered_by`, written by [`workflow_body`]);
/// `None` for a review request.
fn triggered_by(delivery: &Delivery) -> Option<String> {
    if !matches!(delivery.target, Target::Workflow { .. }) {
        return None;
    }
    let body: Value = serde_json::from_str(&delivery.body).ok()?;
    body.get("triggered_by")?.as_str().map(str::to_owned)
}

/// The workflow's inputs, by key: each mapping's value from the clicked row's column, or from
/// what the user typed when it prompts. 422 naming every input without a value, every prompted
/// value that is not a string, number or boolean, and every prompted key the action does not
/// prompt for. Other fields of the body are ignored, as everywhere in the API; so is every
/// column of the row no mapping names.
fn action_inputs(
    action: &Action,
    body: &Map<String, Value>,
) -> Result<Map<String, Value>, ApiError> {
    let mut errors = ValidationErrors::new();
    let object = |errors: &mut ValidationErrors, field: &str| match body.get(field) {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(map)) => map.clone(),
        Some(_) => {
            errors.add(field, "must be an object");
            Map::new()
        }
    };
    let row = object(&mut errors, "row");
    let prompted = object(&mut errors, "prompted");
    let mut inputs = Map::new();
    for mapping in &action.input_mappings {
        let key = &mapping.workflow_input_key;
        let field = format!("inputs.{key}");
        let value = if mapping.prompt_user {
            match prompted.get(key) {
                None | Some(Value::Null) => {
                    errors.add(
                        &field,
                        format!("is missing: the user is prompted for it (prompted.{key})"),
                    );
                    continue;
                }
                Some(value @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => {
                    value.clone()
                }
                Some(_) => {
                    errors.add(&field, "must be a string, a number or a boolean");
                    continue;
                }
            }
        } else {
            let Some(column) = mapping.column.as_deref() else {
                errors.add(&field, "is missing: its mapping names no column");
                continue;
            };
            match row.get(column) {
                Some(value) => value.clone(),
                None => {
                    errors.add(
                        &field,
                        format!("is missing: the row has no column \"{column}\" (row.{column})"),
                    );
                    continue;
                }
            }
        };
        inputs.insert(key.clone(), value);
    }
    for key in prompted.keys() {
        let prompts = action
            .input_mappings
            .iter()
            .any(|mapping| mapping.prompt_user && &mapping.workflow_input_key == key);
        if !prompts {
            errors.add(
                &format!("prompted.{key}"),
                "is not an input this action prompts for",
            );
        }
    }
    errors.into_result(inputs).map_err(Into::into)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ActionId, InputMapping};
    use serde_json::json;

    fn action() -> Action {
        Action {
            id: ActionId::from_stored("act_1"),
            label: Some("Refund".to_owned()),
            workflow_id: Some("refund".to_owned()),
            input_mappings: vec![
                InputMapping {
                    workflow_input_key: "order".to_owned(),
                    column: Some("id".to_owned()),
                    prompt_user: false,
                    prompt: None,
                },
                InputMapping {
                    workflow_input_key: "reason".to_owned(),
                    column: None,
                    prompt_user: true,
                    prompt: Some("Why?".to_owned()),
                },
            ],
        }
    }

    fn body(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn fields(error: ApiError) -> Vec<String> {
        match error {
            ApiError::Invalid(errors) => errors.fields().map(str::to_owned).collect(),
            other => panic!("not a 422: {other:?}"),
        }
    }

    #[test]
    fn inputs_come_from_the_row_and_the_prompt() {
        let inputs = action_inputs(
            &action(),
            &body(json!({"row": {"id": 42, "email": "x@example.com"}, "prompted": {"reason": "late"}})),
        )
        .unwrap();
        assert_eq!(
            Value::Object(inputs),
            json!({"order": 42, "reason": "late"})
        );
        // A null cell is a value; the row's other columns go nowhere.
        let inputs = action_inputs(
            &action(),
            &body(json!({"row": {"id": null}, "prompted": {"reason": "x"}})),
        )
        .unwrap();
        assert_eq!(Value::Object(inputs), json!({"order": null, "reason": "x"}));
    }

    #[test]
    fn a_missing_value_names_its_workflow_input_key() {
        let error = action_inputs(&action(), &body(json!({"row": {"other": 1}}))).unwrap_err();
        assert_eq!(fields(error), ["inputs.order", "inputs.reason"]);
        let error = action_inputs(
            &action(),
            &body(json!({"row": {"id": 1}, "prompted": {"reason": null}})),
        )
        .unwrap_err();
        assert_eq!(fields(error), ["inputs.reason"]);
    }

    #[test]
    fn hostile_bodies_are_refused() {
        let cases = [
            (json!({"row": [1], "prompted": {"reason": "x"}}), "row"),
            (json!({"row": {"id": 1}, "prompted": "x"}), "prompted"),
            (
                json!({"row": {"id": 1}, "prompted": {"reason": {"nested": 1}}}),
                "inputs.reason",
            ),
            (
                json!({"row": {"id": 1}, "prompted": {"reason": "x", "order": "9"}}),
                "prompted.order",
            ),
        ];
        for (value, field) in cases {
            let error = action_inputs(&action(), &body(value.clone())).unwrap_err();
            assert!(fields(error).contains(&field.to_owned()), "{value}");
        }
    }
}
