//! The expected model: what the service must answer (and hand a connection checker) after a
//! generated request, computed from the request alone.

use std::collections::HashSet;

use dbconsole_core::check::CheckTarget;
use dbconsole_tests::Api;
use http::Method;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::strategies::*;
use crate::support::*;

/// What a new database reads back for a field its create body left out: its default (docs/api.md,
/// "Decisions where the spec is silent", item 2).
pub(crate) fn database_default(key: &str) -> Value {
    match key {
        "port" | "group" | "slack_channel" | "tunnel_id" => Value::Null,
        "ssl"
        | "verify_server_hostname"
        | "restrict_access"
        | "review_bypass_allowed"
        | "ai_enabled" => json!(false),
        "ai_max_rows" => json!(500),
        "connection_parameters" => json!([]),
        _ => panic!("{key} has no default"),
    }
}

impl Password {
    /// The password a credential holds after this item, given what it held before.
    pub(crate) fn stored(&self, before: Option<String>) -> Option<String> {
        match self {
            Password::LeftOut => before,
            Password::Set(password) => Some(password.clone()),
            Password::Cleared(_) => None,
        }
    }
}

impl CredentialBody {
    /// The credential as a response shows it after this item was applied to `base` (a stored
    /// credential, or [`new_credential_view`]); without its id.
    pub(crate) fn read_back(&self, base: &Map<String, Value>) -> Map<String, Value> {
        let mut view = base.clone();
        view.remove("id");
        if let Some(username) = &self.username {
            view.insert("username".into(), username.expect.clone());
        }
        for (key, given) in &self.fields {
            view.insert((*key).to_owned(), given.expect.clone());
        }
        view
    }
}

/// A new credential's fields before its item is applied: the defaults (docs/api.md, "Decisions where
/// the spec is silent", item 2).
pub(crate) fn new_credential_view() -> Map<String, Value> {
    match json!({
        "username": null, "hostname": null, "ai_allowed": false, "timeout": null,
        "reviews_required": 0, "default_credential": false,
    }) {
        Value::Object(view) => view,
        _ => unreachable!(),
    }
}

impl CreateBody {
    /// The database a response must show, without ids and timestamps.
    pub(crate) fn read_back(&self) -> Value {
        let mut db = Map::new();
        db.insert("api_id".into(), Value::Null);
        for key in DATABASE_FIELDS {
            let value = expect_of(&self.fields, key).unwrap_or_else(|| database_default(key));
            db.insert(key.into(), value);
        }
        let base = new_credential_view();
        let credentials = self
            .credentials
            .iter()
            .map(|c| Value::Object(c.read_back(&base)))
            .collect();
        db.insert("credentials".into(), credentials);
        Value::Object(db)
    }

    /// The passwords the created credentials hold, in order.
    pub(crate) fn passwords(&self) -> Vec<Option<String>> {
        self.credentials
            .iter()
            .map(|c| c.password.stored(None))
            .collect()
    }
}

/// A database response without what the service generates (ids, timestamps).
pub(crate) fn without_generated(db: &Value) -> Value {
    let mut db = db.clone();
    if let Some(object) = db.as_object_mut() {
        for key in ["id", "inserted_at", "updated_at"] {
            object.remove(key);
        }
        if let Some(Value::Array(credentials)) = object.get_mut("credentials") {
            for credential in credentials {
                if let Some(credential) = credential.as_object_mut() {
                    credential.remove("id");
                }
            }
        }
    }
    db
}

pub(crate) fn credentials_of(db: &Value) -> &[Value] {
    db["credentials"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// What the checker must be handed for one credential.
#[derive(Debug, PartialEq)]
pub(crate) struct Connection {
    pub(crate) host: String,
    pub(crate) password: Option<String>,
    pub(crate) ca_cert: Option<String>,
    pub(crate) client_cert: Option<String>,
    pub(crate) client_key: Option<String>,
}

pub(crate) fn connection_of(target: &CheckTarget) -> Connection {
    let text = |secret: &Option<dbconsole_core::Secret>| {
        secret
            .as_ref()
            .map(|s| s.expose_str().expect("UTF-8 secret").to_owned())
    };
    Connection {
        host: target.host.clone(),
        password: text(&target.password),
        ca_cert: text(&target.ca_cert),
        client_cert: text(&target.client_cert),
        client_key: text(&target.client_key),
    }
}

/// Checks the connection of every credential of `db` and compares what the checker was handed
/// with `passwords` (one per credential, in order: `Err(())` for one held back, whose check
/// must be 422 naming `password`) and `tls`.
pub(crate) async fn assert_connections(
    api: &Api,
    recorder: &RecordingChecker,
    db: &Value,
    passwords: &[Result<Option<String>, ()>],
    tls: &Tls,
) -> Result<(), TestCaseError> {
    if !db["tunnel_id"].is_null() {
        // Reached through a tunnel dialer, which this service has none of: not checked here.
        return Ok(());
    }
    let id = str_of(&db["id"]);
    for (credential, password) in credentials_of(db).iter().zip(passwords) {
        let username = str_of(&credential["username"]);
        let answer = api.db(Method::GET, &check_path(id, username), None).await;
        let Ok(password) = password else {
            prop_assert_eq!(answer.status.as_u16(), 422, "held back {}", answer.text());
            prop_assert!(answer.json()["errors"]["password"].is_array());
            continue;
        };
        prop_assert_eq!(answer.status.as_u16(), 200, "check {}", answer.text());
        prop_assert_eq!(answer.text(), "ok");
        let host = credential["hostname"]
            .as_str()
            .unwrap_or(str_of(&db["hostname"]));
        let expected = Connection {
            host: host.to_owned(),
            password: password.clone(),
            ca_cert: pem_text(tls.ca.as_ref()),
            client_cert: pem_text(tls.cert.as_ref()),
            client_key: pem_text(tls.key.as_ref()),
        };
        prop_assert_eq!(connection_of(&recorder.last()), expected, "{}", username);
    }
    Ok(())
}

/// A credential as the database holds it: its response object and its password.
#[derive(Clone, Debug)]
pub(crate) struct Held {
    pub(crate) view: Map<String, Value>,
    pub(crate) password: Option<String>,
    /// Whether its password is the stored one, left out of the update (it goes only where it
    /// was given for: held back when the update moved the destination).
    pub(crate) kept: bool,
}

/// A PATCH made concrete against the stored credentials.
pub(crate) struct Resolved {
    pub(crate) body: Value,
    /// The credentials after the PATCH, each with the stored id it keeps (`None`: new).
    pub(crate) credentials: Option<Vec<(Option<Value>, Held)>>,
    /// The list holds a username twice (a stored one kept next to an equal new one): the
    /// PATCH must be refused.
    pub(crate) conflict: bool,
}

impl Patch {
    /// The body to send, and the credentials that must result.
    pub(crate) fn resolve(&self, held: &[Held]) -> Resolved {
        let mut body = fields_json(&self.fields);
        if let Some(ca) = &self.ca {
            body.insert("ssl_ca_cert".into(), ca.base64.clone().into());
        }
        let Some(items) = &self.credentials else {
            return Resolved {
                body: Value::Object(body),
                credentials: None,
                conflict: false,
            };
        };
        let stored_ids: Vec<String> = held
            .iter()
            .map(|h| str_of(&h.view["id"]).to_owned())
            .collect();
        let mut taken = HashSet::new();
        let mut sent = Vec::new();
        let mut after = Vec::new();
        for item in items {
            let (id, kept_id) = resolve_id(&item.target, &stored_ids, &mut taken);
            let kept = kept_id.and_then(|id| held.iter().find(|h| h.view["id"] == id.as_str()));
            let mut credential = item.body.clone();
            credential.id = id;
            if let (Some(index), false) = (item.reuse_username, held.is_empty()) {
                let username = held[index.index(held.len())].view["username"].clone();
                credential.username = Some(Given::same(username));
            }
            if kept.is_some() && !item.send_username {
                credential.username = None;
            }
            let base = kept.map_or_else(new_credential_view, |k| k.view.clone());
            let held_after = Held {
                view: credential.read_back(&base),
                password: credential
                    .password
                    .stored(kept.and_then(|k| k.password.clone())),
                kept: kept.is_some() && matches!(credential.password, Password::LeftOut),
            };
            sent.push(credential.json());
            after.push((kept.map(|k| k.view["id"].clone()), held_after));
        }
        let usernames = after.iter().map(|(_, h)| h.view["username"].to_string());
        let conflict = !distinct(usernames);
        body.insert("credentials".into(), Value::Array(sent));
        Resolved {
            body: Value::Object(body),
            credentials: Some(after),
            conflict,
        }
    }
}

/// A response object without its `id`.
pub(crate) fn without_id(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(object) = value.as_object_mut() {
        object.remove("id");
    }
    value
}

/// The ids a dashboard holds now, that a request's panels and actions may name, and each
/// panel's actions (their indexes in `actions`).
#[derive(Default)]
pub(crate) struct DashboardIds {
    pub(crate) panels: Vec<String>,
    pub(crate) actions: Vec<String>,
    pub(crate) panel_actions: Vec<Vec<usize>>,
    pub(crate) action_views: Vec<Value>,
}

impl DashboardIds {
    pub(crate) fn of(dashboard: &Value) -> Self {
        let mut ids = Self::default();
        for panel in dashboard["panels"].as_array().into_iter().flatten() {
            ids.panels.push(str_of(&panel["id"]).to_owned());
            let mut own = Vec::new();
            for action in panel["actions"].as_array().into_iter().flatten() {
                own.push(ids.actions.len());
                ids.actions.push(str_of(&action["id"]).to_owned());
                ids.action_views.push(without_id(action));
            }
            ids.panel_actions.push(own);
        }
        ids
    }
}

/// The id an item sends, and the stored id it keeps (each stored id is kept once at most: an
/// item that names one taken before gets a new id).
pub(crate) fn resolve_id(
    target: &Target,
    stored: &[String],
    taken: &mut HashSet<usize>,
) -> (Option<String>, Option<String>) {
    match target {
        Target::Stored(index) if !stored.is_empty() => {
            let i = index.index(stored.len());
            let id = stored[i].clone();
            let kept = taken.insert(i).then(|| id.clone());
            (Some(id), kept)
        }
        Target::Foreign(id) => (Some(id.clone()), None),
        _ => (None, None),
    }
}

/// A panel's expected reading: the stored panel id it keeps, its fields without ids, and the
/// stored id each of its actions keeps.
#[derive(Debug)]
pub(crate) struct ExpectedPanel {
    pub(crate) kept: Option<String>,
    pub(crate) view: Value,
    pub(crate) actions_kept: Vec<Option<String>>,
}

/// Panels as a request sends them against `stored`, and what must read back.
pub(crate) fn resolve_panels(
    panels: &[PanelBody],
    stored: &DashboardIds,
) -> (Value, Vec<ExpectedPanel>) {
    let (mut panels_taken, mut actions_taken) = (HashSet::new(), HashSet::new());
    let mut sent = Vec::new();
    let mut expected = Vec::new();
    for panel in panels {
        let (id, kept) = resolve_id(&panel.target, &stored.panels, &mut panels_taken);
        let mut send = panel.given.send.clone();
        let mut view = panel.given.expect.clone();
        if let Some(id) = id {
            send["id"] = id.into();
        }
        let mut actions_sent = Vec::new();
        let mut actions_view = Vec::new();
        let mut actions_kept = Vec::new();
        for action in &panel.actions {
            let (id, kept) = resolve_id(&action.target, &stored.actions, &mut actions_taken);
            let mut send = action.given.send.clone();
            if let Some(id) = id {
                send["id"] = id.into();
            }
            actions_sent.push(send);
            actions_view.push(action.given.expect.clone());
            actions_kept.push(kept);
        }
        match (actions_sent.is_empty(), &panel.empty_actions) {
            (true, Value::String(_)) => {
                // Left out: a stored panel keeps its stored actions that no earlier item took.
                if let Some(kept) = &kept {
                    let index = stored.panels.iter().position(|p| p == kept).unwrap_or(0);
                    for &action in &stored.panel_actions[index] {
                        if actions_taken.insert(action) {
                            actions_view.push(stored.action_views[action].clone());
                            actions_kept.push(Some(stored.actions[action].clone()));
                        }
                    }
                }
            }
            (true, empty) => send["actions"] = empty.clone(),
            (false, _) => send["actions"] = actions_sent.into(),
        }
        view["actions"] = actions_view.into();
        sent.push(send);
        expected.push(ExpectedPanel {
            kept,
            view,
            actions_kept,
        });
    }
    (sent.into(), expected)
}

/// Checks `actual` panels against `expected`: kept ids kept, other ids new and unique, every
/// other field as expected.
pub(crate) fn assert_panels(
    actual: &Value,
    expected: &[ExpectedPanel],
    before: &DashboardIds,
) -> Result<(), TestCaseError> {
    let actual = actual.as_array().map(Vec::as_slice).unwrap_or_default();
    prop_assert_eq!(actual.len(), expected.len(), "panels: {:?}", actual);
    let mut ids = HashSet::new();
    for (panel, expected) in actual.iter().zip(expected) {
        assert_kept_or_new(&panel["id"], expected.kept.as_ref(), "pl", &before.panels)?;
        prop_assert!(ids.insert(panel["id"].clone()), "panel id twice");
        let actions = panel["actions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        prop_assert_eq!(actions.len(), expected.actions_kept.len());
        for (action, kept) in actions.iter().zip(&expected.actions_kept) {
            assert_kept_or_new(&action["id"], kept.as_ref(), "act", &before.actions)?;
            prop_assert!(ids.insert(action["id"].clone()), "action id twice");
        }
        let mut view = panel.clone();
        if let Some(view) = view.as_object_mut() {
            view.remove("id");
        }
        for action in view["actions"].as_array_mut().into_iter().flatten() {
            if let Some(action) = action.as_object_mut() {
                action.remove("id");
            }
        }
        prop_assert_eq!(&view, &expected.view);
    }
    Ok(())
}

/// `id` is the stored id `kept`, or (with none) a fresh id that no stored item had.
pub(crate) fn assert_kept_or_new(
    id: &Value,
    kept: Option<&String>,
    prefix: &str,
    stored: &[String],
) -> Result<(), TestCaseError> {
    match kept {
        Some(kept) => prop_assert_eq!(str_of(id), kept.as_str(), "a kept {} id", prefix),
        None => {
            assert_id(id, prefix)?;
            prop_assert!(
                !stored.iter().any(|s| s == str_of(id)),
                "a new {} got a stored id",
                prefix
            );
        }
    }
    Ok(())
}

impl DashboardBody {
    /// The body to send against the dashboard's ids now, and the panels that must result
    /// (`None`: the body leaves panels alone).
    pub(crate) fn resolve(&self, stored: &DashboardIds) -> (Value, Option<Vec<ExpectedPanel>>) {
        let mut body = fields_json(&self.fields);
        let expected = self.panels.as_ref().map(|panels| {
            let (sent, expected) = resolve_panels(panels, stored);
            body.insert("panels".into(), sent);
            expected
        });
        (Value::Object(body), expected)
    }
}
