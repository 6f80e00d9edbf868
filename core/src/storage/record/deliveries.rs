//! Outbox deliveries as stored.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A delivery of the outbox as stored (version 1): the target by its kind (`workflow`,
/// `slack`) and its name, the status by its wire name.
#[derive(Serialize, Deserialize)]
pub(super) struct DeliveryV1 {
    pub(super) id: String,
    pub(super) target_kind: String,
    pub(super) target: String,
    pub(super) body: String,
    pub(super) resource_id: String,
    pub(super) status: String,
    pub(super) attempts: u32,
    pub(super) due_at: Option<i64>,
    pub(super) last_error: Option<String>,
    pub(super) inserted_at: i64,
    pub(super) updated_at: i64,
    pub(super) delivered_at: Option<i64>,
}

impl Keyed for DeliveryV1 {
    fn stored_key(&self) -> &str {
        &self.id
    }
}

/// Encodes a delivery of the outbox.
pub fn encode_delivery(delivery: &Delivery) -> Result<Vec<u8>, RecordError> {
    let (target_kind, target) = match &delivery.target {
        Target::Workflow { workflow_id } => ("workflow", workflow_id),
        Target::Slack { channel } => ("slack", channel),
    };
    let stored = DeliveryV1 {
        id: delivery.id.as_str().to_owned(),
        target_kind: target_kind.to_owned(),
        target: target.clone(),
        body: delivery.body.clone(),
        resource_id: delivery.resource_id.clone(),
        status: delivery.status.as_str().to_owned(),
        attempts: delivery.attempts,
        due_at: delivery.due_at.map(Timestamp::as_micros),
        last_error: delivery.last_error.clone(),
        inserted_at: delivery.inserted_at.as_micros(),
        updated_at: delivery.updated_at.as_micros(),
        delivered_at: delivery.delivered_at.map(Timestamp::as_micros),
    };
    framed(RECORD_V1, &stored)
}

/// Decodes the delivery stored under `key`.
pub fn decode_delivery(key: &str, bytes: &[u8]) -> Result<Delivery, RecordError> {
    let stored: DeliveryV1 = decode_keyed(key, bytes)?;
    let target = match stored.target_kind.as_str() {
        "workflow" => Target::Workflow {
            workflow_id: stored.target,
        },
        "slack" => Target::Slack {
            channel: stored.target,
        },
        _ => return Err(RecordError::UnknownValue("delivery target")),
    };
    Ok(Delivery {
        id: DeliveryId::from_stored(stored.id),
        target,
        body: stored.body,
        resource_id: stored.resource_id,
        status: parse::<DeliveryStatus>(&stored.status, "delivery status")?,
        attempts: stored.attempts,
        due_at: stored.due_at.map(Timestamp::from_micros),
        last_error: stored.last_error,
        inserted_at: Timestamp::from_micros(stored.inserted_at),
        updated_at: Timestamp::from_micros(stored.updated_at),
        delivered_at: stored.delivered_at.map(Timestamp::from_micros),
    })
}
