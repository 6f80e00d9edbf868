//! A delivery of the outbox: whole for the outbox's routes ([`DeliveryView`]), and without its
//! payload for the caller who started it ([`DeliveryProgressView`]).

use schemars::JsonSchema;
use serde::Serialize;

use super::fields::{delivery_status, target_kind, timestamp, timestamp_or_null};

/// A delivery of the outbox: `{"id", "kind", "workflow_id", "channel", "resource_id",
/// "status", "attempts", "due_at", "last_error", "payload", "inserted_at", "updated_at",
/// "delivered_at"}`; `payload` is the JSON body every attempt sends.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Delivery", deny_unknown_fields)]
pub(crate) struct DeliveryView<'a> {
    /// `dlv_…`: ordered by creation; the `Idempotency-Key` of every attempt.
    id: &'a str,
    #[schemars(schema_with = "target_kind")]
    kind: &'static str,
    workflow_id: Option<&'a str>,
    channel: Option<&'a str>,
    /// The dashboard (a trigger) or query (a review request) it came from.
    resource_id: &'a str,
    #[schemars(schema_with = "delivery_status")]
    status: &'static str,
    attempts: u32,
    #[schemars(schema_with = "timestamp_or_null")]
    due_at: Option<String>,
    last_error: Option<&'a str>,
    /// The JSON body every attempt sends.
    payload: serde_json::Value,
    #[schemars(schema_with = "timestamp")]
    inserted_at: String,
    #[schemars(schema_with = "timestamp")]
    updated_at: String,
    #[schemars(schema_with = "timestamp_or_null")]
    delivered_at: Option<String>,
}

/// How a workflow run the caller started is doing (`GET …/me/deliveries/{id}`): a delivery
/// without its payload, which holds row values.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "DeliveryProgress", deny_unknown_fields)]
pub(crate) struct DeliveryProgressView<'a> {
    /// `dlv_…`.
    id: &'a str,
    workflow_id: Option<&'a str>,
    #[schemars(schema_with = "delivery_status")]
    status: &'static str,
    /// Attempts started so far.
    attempts: u32,
    /// The next attempt while pending (the end of its lease while delivering).
    #[schemars(schema_with = "timestamp_or_null")]
    due_at: Option<String>,
    /// Why the last attempt failed.
    last_error: Option<&'a str>,
    #[schemars(schema_with = "timestamp")]
    updated_at: String,
    #[schemars(schema_with = "timestamp_or_null")]
    delivered_at: Option<String>,
}

impl<'a> From<&'a crate::model::Delivery> for DeliveryProgressView<'a> {
    fn from(delivery: &'a crate::model::Delivery) -> Self {
        let workflow_id = match &delivery.target {
            crate::model::Target::Workflow { workflow_id } => Some(workflow_id.as_str()),
            crate::model::Target::Slack { .. } => None,
        };
        Self {
            id: delivery.id.as_str(),
            workflow_id,
            status: delivery.status.as_str(),
            attempts: delivery.attempts,
            due_at: delivery.due_at.map(|at| at.to_string()),
            last_error: delivery.last_error.as_deref(),
            updated_at: delivery.updated_at.to_string(),
            delivered_at: delivery.delivered_at.map(|at| at.to_string()),
        }
    }
}

impl<'a> From<&'a crate::model::Delivery> for DeliveryView<'a> {
    fn from(delivery: &'a crate::model::Delivery) -> Self {
        let (workflow_id, channel) = match &delivery.target {
            crate::model::Target::Workflow { workflow_id } => (Some(workflow_id.as_str()), None),
            crate::model::Target::Slack { channel } => (None, Some(channel.as_str())),
        };
        Self {
            id: delivery.id.as_str(),
            kind: delivery.target.kind().as_str(),
            workflow_id,
            channel,
            resource_id: &delivery.resource_id,
            status: delivery.status.as_str(),
            attempts: delivery.attempts,
            due_at: delivery.due_at.map(|at| at.to_string()),
            last_error: delivery.last_error.as_deref(),
            payload: serde_json::from_str(&delivery.body).unwrap_or(serde_json::Value::Null),
            inserted_at: delivery.inserted_at.to_string(),
            updated_at: delivery.updated_at.to_string(),
            delivered_at: delivery.delivered_at.map(|at| at.to_string()),
        }
    }
}
