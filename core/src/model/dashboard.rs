//! Dashboards, their query panels, row actions and input mappings, as stored.

use super::{ActionId, DashboardId, PanelId, Presentation, Timestamp};

/// A dashboard with its panels: one aggregate, stored and changed as a whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dashboard {
    /// Assigned by the service (`dash_…`).
    pub id: DashboardId,
    /// Name.
    pub name: String,
    /// Whether access is restricted.
    pub restricted_access: bool,
    /// When the dashboard was archived (no operation sets it yet).
    pub archived_at: Option<Timestamp>,
    /// Panels, in order.
    pub panels: Vec<Panel>,
    /// dbconsole's own presentation of it (displays, layout, input types, editors and
    /// viewers), which the interface's operations neither show nor change.
    pub presentation: Presentation,
    /// When the presentation last changed (its version; the dashboard's creation at first).
    pub presented_at: Timestamp,
    /// Creation time.
    pub inserted_at: Timestamp,
    /// Time of the last change; strictly increases.
    pub updated_at: Timestamp,
}

/// A panel of a dashboard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Panel {
    /// Assigned by the service (`pl_…`).
    pub id: PanelId,
    /// Title.
    pub title: String,
    /// Input parameters, keys unique.
    pub inputs: Vec<PanelInput>,
    /// Row actions, in order.
    pub actions: Vec<Action>,
    /// What the panel shows.
    pub details: PanelDetails,
}

/// One `{key, description}` input parameter of a panel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PanelInput {
    /// Parameter key, unique within the panel.
    pub key: String,
    /// Description, kept as given (`""` included).
    pub description: String,
}

/// Panel-specific details. Only query panels exist.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PanelDetails {
    /// A panel that runs a query (`"__type__": "query"`).
    Query {
        /// Query text, stored byte for byte.
        query: String,
        /// Credential the query runs as (any string is accepted).
        credential_id: String,
    },
}

/// A row action: a button on each result row that starts a workflow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    /// Assigned by the service (`act_…`).
    pub id: ActionId,
    /// Button label.
    pub label: Option<String>,
    /// Workflow to start.
    pub workflow_id: Option<String>,
    /// How the workflow's inputs are filled, one per input.
    pub input_mappings: Vec<InputMapping>,
}

impl Action {
    /// Whether a rendered dashboard shows this action: it has a label or a workflow.
    pub fn is_visible(&self) -> bool {
        self.label.is_some() || self.workflow_id.is_some()
    }
}

impl Panel {
    /// The actions a rendered dashboard shows, in order.
    pub fn visible_actions(&self) -> impl Iterator<Item = &Action> {
        self.actions.iter().filter(|action| action.is_visible())
    }
}

/// Fills one workflow input, from a result column or by asking the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputMapping {
    /// Workflow input this mapping fills; unique within the action.
    pub workflow_input_key: String,
    /// Result column whose value is passed (when not prompting).
    pub column: Option<String>,
    /// Whether the value is asked of the user.
    pub prompt_user: bool,
    /// Label above the field in the prompt modal.
    pub prompt: Option<String>,
}

impl InputMapping {
    /// The label the prompt modal shows: the prompt, or the workflow input key when it has none.
    pub fn prompt_label(&self) -> &str {
        self.prompt.as_deref().unwrap_or(&self.workflow_input_key)
    }
}

/// A panel's inputs as one run gives them: the keys the panel declares (with the time range's
/// `__from` and `__to`), and the value of each (`None` binds NULL).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    /// The keys the panel declares.
    pub declared: Vec<String>,
    /// The value of each, by key.
    pub values: std::collections::HashMap<String, Option<String>>,
}

impl Dashboard {
    /// Keeps the presentation's entries of panels and inputs that are still there (a change
    /// through the interface's fields that removes a panel or an input removes its entries);
    /// a change moves the presentation's version to `now`.
    pub fn prune_presentation(&mut self, now: Timestamp) {
        let panels: Vec<&str> = self.panels.iter().map(|p| p.id.as_str()).collect();
        let inputs: Vec<&str> = self
            .panels
            .iter()
            .flat_map(|p| p.inputs.iter().map(|i| i.key.as_str()))
            .collect();
        if self.presentation.retain(panels, inputs) {
            self.presented_at = now.not_before_next(self.presented_at);
        }
    }
}
