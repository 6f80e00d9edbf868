//! Cancel requests honoured on any node (docs/door.md, "What runs"): a client's cancel request
//! opens a new connection, which a load balancer may send to another node than the one holding
//! the session. So each door session publishes, in the shared storage's settings, what its
//! client's cancel key maps to (the database, the credential and the backend's own key, sealed
//! for that setting), and withdraws it when it ends. A node that does not hold the session
//! reads it, opens the credential's target (its TLS, its tunnel) and sends the backend's cancel
//! request itself. A stale entry left by a crash names a backend key no live backend has.

use serde::{Deserialize, Serialize};

use super::Door;
use super::backend::CancelTarget;
use crate::seal::Place;

/// What a client's cancel key maps to.
#[derive(Serialize, Deserialize)]
struct Entry {
    database_id: String,
    credential_id: String,
    process: i32,
    secret: i32,
}

/// The setting of a client's cancel key.
fn name(key: (i32, i32)) -> String {
    // Two's complement bits, as the client sends them.
    format!(
        "door_cancel:{:08x}{:08x}",
        key.0.cast_unsigned(),
        key.1.cast_unsigned()
    )
}

fn place(name: &str) -> Place {
    Place::from_parts(&["door", "cancel", name])
}

/// Publishes where the client's `key` cancels: the backend `target` of `credential_id` of
/// `database_id`.
pub(super) async fn publish(
    door: &Door,
    key: (i32, i32),
    database_id: &str,
    credential_id: &str,
    target: &CancelTarget,
) {
    let (process, secret) = target.key();
    let entry = Entry {
        database_id: database_id.to_owned(),
        credential_id: credential_id.to_owned(),
        process,
        secret,
    };
    let name = name(key);
    let Ok(text) = serde_json::to_string(&entry) else {
        return;
    };
    let sealed = match door.launcher.sealer.seal_token(&text, &place(&name)) {
        Ok(sealed) => sealed,
        Err(error) => {
            tracing::warn!(%error, "a door session's cancel key could not be sealed");
            return;
        }
    };
    if let Err(error) = door.storage.put_setting(&name, &sealed).await {
        tracing::warn!(%error, "a door session's cancel key could not be published");
    }
}

/// Withdraws the client's `key` (the session ended).
pub(super) async fn withdraw(door: &Door, key: (i32, i32)) {
    if let Err(error) = door.storage.remove_setting(&name(key)).await {
        tracing::warn!(%error, "a door session's cancel key could not be withdrawn");
    }
}

/// Cancels, from this node, what the session that gave its client `key` runs on another node.
pub(super) async fn elsewhere(door: &Door, key: (i32, i32)) {
    let name = name(key);
    let Ok(Some(sealed)) = door.storage.setting(&name).await else {
        return;
    };
    let Some(text) = door.launcher.sealer.open_token(&sealed, &place(&name)) else {
        return;
    };
    let Some(entry) = text
        .expose_str()
        .and_then(|t| serde_json::from_str::<Entry>(t).ok())
    else {
        return;
    };
    let Ok(Some(db)) = door.storage.database(&entry.database_id).await else {
        return;
    };
    let Some(credential) = db
        .credentials
        .iter()
        .find(|c| c.id.as_str() == entry.credential_id)
        .cloned()
    else {
        return;
    };
    let connector = door.launcher.connector_for(&db, &credential);
    let opened = match connector().await {
        Ok(opened) => opened,
        Err(error) => {
            tracing::warn!(%error, "a door cancel could not reach its database");
            return;
        }
    };
    match CancelTarget::of(&opened.target, entry.process, entry.secret) {
        Ok(target) => target.cancel(std::time::Duration::from_secs(5)).await,
        Err(error) => tracing::warn!(%error, "a door cancel could not reach its database"),
    }
    drop(opened.tunnel);
}
