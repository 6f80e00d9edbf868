//! Dashboards: the create/update body (one function for both).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::ValidationErrors;
use super::reader::{Items, Reader};
use super::text::{NAME_MAX, QUERY_MAX, Text, VALUE_MAX};
use crate::model::{
    Action, ActionId, Dashboard, DashboardId, InputMapping, Panel, PanelDetails, PanelId,
    PanelInput, Timestamp,
};

/// The rule of the one-line names, titles, ids and keys of a dashboard.
const NAME: Text = Text::Line(NAME_MAX);

const QUERY_TYPE_CHOICES: &str = "must be one of: query";
const COLUMN_WHILE_PROMPTING: &str = "must be empty when prompt_user is true";

/// Builds a dashboard from a create body (`stored` is `None`) or applies an update body to the
/// stored dashboard, reporting every field error at once.
///
/// `panels`, when given, is the whole new list in order; each panel is given whole. A panel or
/// action whose `id` is stored in this dashboard keeps it (once); any other gets a new id.
pub fn dashboard_from_body(
    stored: Option<&Dashboard>,
    body: &Map<String, Value>,
    now: Timestamp,
) -> Result<Dashboard, ValidationErrors> {
    let creating = stored.is_none();
    let mut dashboard = stored.cloned().unwrap_or_else(|| Dashboard {
        id: DashboardId::generate(),
        name: String::new(),
        restricted_access: false,
        archived_at: None,
        panels: Vec::new(),
        presentation: crate::model::Presentation::default(),
        presented_at: now,
        inserted_at: now,
        updated_at: now,
    });
    let mut r = Reader::new(body);
    if let Some(name) = r.required_text("name", creating, NAME) {
        dashboard.name = name;
    }
    match r.boolean("restricted_access") {
        Some(Some(value)) => dashboard.restricted_access = value,
        None if !creating => {}
        _ => {
            r.blank::<()>("restricted_access");
        }
    }
    if let Some(items) = r.objects("panels") {
        let mut ids = StoredIds::of(stored);
        if let Some(panels) = panels(&items.unwrap_or_default(), &mut ids, r.errors()) {
            dashboard.panels = panels;
        }
    }
    if let Some(stored) = stored {
        dashboard.updated_at = now.not_before_next(stored.updated_at);
    }
    // A panel or input the change removed loses its presentation entries.
    dashboard.prune_presentation(now);
    r.finish().into_result(dashboard)
}

/// A panel as a dashboard's body would give it, new (its ids, if any, are not kept): what a test
/// run of an unsaved panel runs. Every field error at once.
pub fn panel_from_body(body: &Map<String, Value>) -> Result<Panel, ValidationErrors> {
    let mut r = Reader::new(body);
    let panel = panel(
        PanelId::generate(),
        false,
        &mut r,
        &mut StoredIds::default(),
    );
    let errors = r.finish();
    match panel {
        Some(panel) if errors.is_empty() => Ok(panel),
        _ => Err(errors),
    }
}

/// The panel and action ids of the stored dashboard that a request may keep, each once, and
/// the stored actions of each panel.
#[derive(Default)]
struct StoredIds {
    panels: HashSet<String>,
    actions: HashSet<String>,
    panel_actions: std::collections::HashMap<String, Vec<Action>>,
}

impl StoredIds {
    fn of(stored: Option<&Dashboard>) -> Self {
        let mut ids = Self::default();
        for panel in stored.map(|d| d.panels.as_slice()).unwrap_or_default() {
            ids.panels.insert(panel.id.as_str().to_owned());
            ids.panel_actions
                .insert(panel.id.as_str().to_owned(), panel.actions.clone());
            for action in &panel.actions {
                ids.actions.insert(action.id.as_str().to_owned());
            }
        }
        ids
    }

    /// The stored actions of panel `id` that no earlier item took, now taken.
    fn kept_actions(&mut self, id: &str) -> Vec<Action> {
        let stored = self.panel_actions.remove(id).unwrap_or_default();
        stored
            .into_iter()
            .filter(|action| self.actions.remove(action.id.as_str()))
            .collect()
    }

    /// The item's `id` (a string, or "is invalid") when it is stored and not taken yet by an
    /// earlier item.
    fn take(set: &mut HashSet<String>, r: &mut Reader<'_>) -> Option<String> {
        let id = r.text("id", NAME).flatten()?;
        set.remove(&id).then_some(id)
    }
}

fn panels(
    items: &[&Map<String, Value>],
    ids: &mut StoredIds,
    errors: &mut ValidationErrors,
) -> Option<Vec<Panel>> {
    Items::read(items, |_, r| {
        let (id, kept) = match StoredIds::take(&mut ids.panels, r) {
            Some(id) => (PanelId::from_stored(id), true),
            None => (PanelId::generate(), false),
        };
        panel(id, kept, r, ids)
    })
    .finish(errors, "panels")
}

/// A panel of the body, with `id`, a stored panel's when `kept`. A kept panel without an
/// `actions` key keeps its stored actions (a client that never sends actions, such as the
/// DevHub Terraform provider's update, doesn't erase those made elsewhere); `null` and `[]`
/// still empty them.
fn panel(id: PanelId, kept: bool, r: &mut Reader<'_>, ids: &mut StoredIds) -> Option<Panel> {
    let title = r.required_text("title", true, NAME);
    let inputs = r
        .objects("inputs")
        .flatten()
        .map(|items| inputs(&items, r.errors()))
        .unwrap_or(Some(Vec::new()));
    let actions = match r.objects("actions") {
        None if kept => Some(ids.kept_actions(id.as_str())),
        None => Some(Vec::new()),
        Some(items) => items
            .map(|items| actions(&items, ids, r.errors()))
            .unwrap_or(Some(Vec::new())),
    };
    let details = match r.object("details") {
        Some(Some(details)) => {
            let mut d = Reader::new(details);
            let parsed = query_details(&mut d);
            r.errors().add_nested("details", d.finish());
            parsed
        }
        Some(None) | None => r.blank("details"),
    };
    Some(Panel {
        id,
        title: title?,
        inputs: inputs?,
        actions: actions?,
        details: details?,
    })
}

fn query_details(d: &mut Reader<'_>) -> Option<PanelDetails> {
    let kind = d.required_text("__type__", true, NAME);
    if kind.as_deref().is_some_and(|kind| kind != "query") {
        d.errors().add("__type__", QUERY_TYPE_CHOICES);
    }
    let query = d.required_text("query", true, Text::Lines(QUERY_MAX));
    let credential_id = d.required_text("credential_id", true, NAME);
    Some(PanelDetails::Query {
        query: query?,
        credential_id: credential_id?,
    })
}

fn inputs(items: &[&Map<String, Value>], errors: &mut ValidationErrors) -> Option<Vec<PanelInput>> {
    Items::read(items, |_, r| {
        let key = r.required_text("key", true, NAME).and_then(|key| {
            if key.starts_with("__") {
                r.errors().add(
                    "key",
                    "is reserved: keys starting with __ are the dashboard's own (${__from} and \
                     ${__to}, its time range)",
                );
                None
            } else {
                Some(key)
            }
        });
        let description = r
            .raw_text("description", Text::Lines(VALUE_MAX))
            .unwrap_or_default();
        key.map(|key| PanelInput { key, description })
    })
    .unique_by("key", |input| Some(input.key.clone()))
    .finish(errors, "inputs")
}

fn actions(
    items: &[&Map<String, Value>],
    ids: &mut StoredIds,
    errors: &mut ValidationErrors,
) -> Option<Vec<Action>> {
    Items::read(items, |_, r| {
        let id = StoredIds::take(&mut ids.actions, r)
            .map(ActionId::from_stored)
            .unwrap_or_else(ActionId::generate);
        let label = r.text("label", NAME).flatten();
        let workflow_id = r.text("workflow_id", NAME).flatten();
        let mappings = r
            .objects("input_mappings")
            .flatten()
            .map(|items| input_mappings(&items, r.errors()))
            .unwrap_or(Some(Vec::new()));
        mappings.map(|input_mappings| Action {
            id,
            label,
            workflow_id,
            input_mappings,
        })
    })
    .finish(errors, "actions")
}

fn input_mappings(
    items: &[&Map<String, Value>],
    errors: &mut ValidationErrors,
) -> Option<Vec<InputMapping>> {
    Items::read(items, |item, r| {
        let key = r.required_text("workflow_input_key", true, NAME);
        let prompt_user = r.boolean("prompt_user");
        let prompt_user_known = prompt_user.is_some() || !item.contains_key("prompt_user");
        let prompt_user = prompt_user.flatten().unwrap_or(false);
        let column = r.text("column", NAME).flatten();
        let prompt = r.text("prompt", Text::Lines(VALUE_MAX)).flatten();
        if prompt_user && column.is_some() {
            r.errors().add("column", COLUMN_WHILE_PROMPTING);
        }
        if prompt_user_known
            && !prompt_user
            && column.is_none()
            && !r.errors().fields().any(|f| f == "column")
        {
            r.blank::<()>("column");
        }
        key.map(|workflow_input_key| InputMapping {
            workflow_input_key,
            column,
            prompt_user,
            prompt,
        })
    })
    .unique_by("workflow_input_key", |m| Some(m.workflow_input_key.clone()))
    .finish(errors, "input_mappings")
}
