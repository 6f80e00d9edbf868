//! Row tokens: a panel row's proof that the panel really returned it to its caller, so a row
//! action starts a workflow only with values a run gave (docs/workflows.md, "Row tokens").
//!
//! A panel run asked for them (`"row_tokens": true`) stamps each row it writes with a token: the
//! panel's id, a digest of what the panel is (query, credential, inputs, actions: not the
//! dashboard's version, so an unrelated edit leaves open pages working), the values of the
//! columns the panel's actions pass on as the client read them, the caller's normalised user and
//! credential (a session or stored key id), and an expiry. It is sealed with
//! [`Sealer::seal_token`], under the token key every node derives from the shared seal key
//! (never the workflow secret, which the receiver holds). A trigger takes the row's values from
//! its token, and refuses any token that does not open, names another panel, caller or panel
//! version, or has expired.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use crate::model::{Action, Origin, Panel, PanelDetails, Principal, Timestamp};
use crate::run::RowStamp;
use crate::seal::{Place, Sealer};
use crate::validate::ValidationErrors;

use super::error::ApiError;

/// How row tokens behave on this service.
#[derive(Clone, Debug)]
pub struct RowTokenOptions {
    /// How long a row token opens after its run (15 minutes).
    pub life: Duration,
    /// Whether a trigger may bring its row's values itself, without a token (off): a row the
    /// caller claims, for clients made before row tokens. The server logs it at start.
    pub unverified_rows: bool,
}

impl Default for RowTokenOptions {
    fn default() -> Self {
        Self {
            life: Duration::from_secs(15 * 60),
            unverified_rows: false,
        }
    }
}

/// The field a token error is reported on, in a run's and in a trigger's body.
pub(crate) const FIELD: &str = "row_token";

/// Version of a token's contents.
const VERSION: u64 = 1;

fn place() -> Place {
    Place::from_parts(&["console", "row-token"])
}

/// Whether `action` starts a workflow: it names one (not blank, not a path's dot segment).
pub(crate) fn starts_workflow(action: &Action) -> Option<&str> {
    action
        .workflow_id
        .as_deref()
        .filter(|id| !id.trim().is_empty() && !matches!(*id, "." | ".."))
}

/// The columns the actions of `panel` that start a workflow pass on from the clicked row.
fn mapped_columns(panel: &Panel) -> BTreeSet<String> {
    panel
        .actions
        .iter()
        .filter(|action| starts_workflow(action).is_some())
        .flat_map(|action| &action.input_mappings)
        .filter(|mapping| !mapping.prompt_user)
        .filter_map(|mapping| mapping.column.clone())
        .collect()
}

/// Whether a run of `panel` may be asked for row tokens: one of its actions starts a workflow.
pub(crate) fn triggerable(panel: &Panel) -> bool {
    panel
        .actions
        .iter()
        .any(|action| starts_workflow(action).is_some())
}

/// What a token is bound to of its panel: SHA-256 over the panel's query, credential, inputs
/// and actions, in a fixed shape.
fn panel_digest(panel: &Panel) -> String {
    let PanelDetails::Query {
        query,
        credential_id,
    } = &panel.details;
    let inputs: Vec<Value> = panel
        .inputs
        .iter()
        .map(|input| json!([input.key, input.description]))
        .collect();
    let actions: Vec<Value> = panel
        .actions
        .iter()
        .map(|action| {
            let mappings: Vec<Value> = action
                .input_mappings
                .iter()
                .map(|m| json!([m.workflow_input_key, m.column, m.prompt_user, m.prompt]))
                .collect();
            json!([
                action.id.as_str(),
                action.label,
                action.workflow_id,
                mappings
            ])
        })
        .collect();
    let shape = json!([VERSION, query, credential_id, inputs, actions]);
    hex::encode(Sha256::digest(shape.to_string().as_bytes()))
}

/// Who a token is made for: the normalised user and the credential (session or key) id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Holder {
    pub(crate) user: String,
    pub(crate) credential: String,
}

/// The holder `principal` is, calling with the credential of `origin` (a browser's session, a
/// stored key; none for the others).
pub(crate) fn holder(principal: &Principal, origin: &Origin) -> Holder {
    Holder {
        user: principal.user.clone(),
        credential: origin.actor.id.clone().unwrap_or_default(),
    }
}

/// Stamps the rows of one panel run for one caller.
pub(crate) struct PanelRows {
    sealer: Sealer,
    panel_id: String,
    digest: String,
    holder: Holder,
    expires: i64,
    columns: BTreeSet<String>,
}

impl std::fmt::Debug for PanelRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PanelRows")
            .field("panel_id", &self.panel_id)
            .field("columns", &self.columns)
            .finish_non_exhaustive()
    }
}

impl PanelRows {
    /// The stamp of a run of `panel` for `holder`, whose tokens open for `life`.
    pub(crate) fn stamp(
        sealer: &Sealer,
        panel: &Panel,
        holder: Holder,
        life: Duration,
    ) -> Arc<dyn RowStamp> {
        let expires = Timestamp::now().plus(life).as_micros() / 1_000_000;
        Arc::new(Self {
            sealer: sealer.clone(),
            panel_id: panel.id.as_str().to_owned(),
            digest: panel_digest(panel),
            holder,
            expires,
            columns: mapped_columns(panel),
        })
    }
}

impl RowStamp for PanelRows {
    fn stamp(&self, columns: &[String], row: &[Value]) -> Option<String> {
        let mut values = Map::new();
        for (name, value) in columns.iter().zip(row) {
            if self.columns.contains(name) && !values.contains_key(name) {
                values.insert(name.clone(), value.clone());
            }
        }
        let contents = json!({
            "v": VERSION,
            "p": self.panel_id,
            "d": self.digest,
            "u": self.holder.user,
            "k": self.holder.credential,
            "e": self.expires,
            "r": values,
        });
        self.sealer.seal_token(&contents.to_string(), &place()).ok()
    }
}

fn refused(why: &str) -> ApiError {
    ValidationErrors::single(FIELD, why).into()
}

/// The row values `token` carries, when it was made by this deployment for `panel` as it is
/// now, for `holder`, and has not expired: 422 on `row_token` saying which it is not.
pub(crate) fn open(
    sealer: &Sealer,
    token: &str,
    panel: &Panel,
    holder: &Holder,
) -> Result<Map<String, Value>, ApiError> {
    let opened = sealer.open_token(token, &place()).ok_or_else(|| {
        refused(
            "is not a row token of this server (changed, made up, or made by another \
             deployment): run the panel again and use a token it returns",
        )
    })?;
    let contents: Value = opened
        .expose_str()
        .and_then(|text| serde_json::from_str(text).ok())
        .ok_or_else(|| refused("is not a row token of this server"))?;
    if contents["v"] != VERSION {
        return Err(refused(
            "is a row token of another version: run the panel again",
        ));
    }
    if contents["p"] != panel.id.as_str() {
        return Err(refused("was made for another panel"));
    }
    if contents["u"] != holder.user.as_str() || contents["k"] != holder.credential.as_str() {
        return Err(refused(
            "was made for another caller: a row token works only for whoever ran the panel",
        ));
    }
    if contents["d"] != panel_digest(panel).as_str() {
        return Err(refused(
            "was made before the panel changed: run the panel again",
        ));
    }
    let now = Timestamp::now().as_micros() / 1_000_000;
    if contents["e"].as_i64().is_none_or(|expires| expires < now) {
        return Err(refused("has expired: run the panel again"));
    }
    match contents.get("r") {
        Some(Value::Object(values)) => Ok(values.clone()),
        _ => Err(refused("is not a row token of this server")),
    }
}
