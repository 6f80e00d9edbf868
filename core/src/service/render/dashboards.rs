//! A dashboard as every dashboard endpoint returns it: [`DashboardView`], with its panels,
//! their inputs and their row actions.

use schemars::JsonSchema;
use serde::Serialize;

use super::fields::{action_id, dashboard_id, panel_id, panel_type};
use crate::model::{Action, Dashboard, InputMapping, Panel, PanelDetails, PanelInput};

/// A dashboard as every dashboard endpoint returns it: `id, name, restricted_access, panels`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Dashboard", deny_unknown_fields)]
pub(crate) struct DashboardView<'a> {
    #[schemars(schema_with = "dashboard_id")]
    id: &'a str,
    name: &'a str,
    restricted_access: bool,
    panels: Vec<PanelView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Panel", deny_unknown_fields)]
struct PanelView<'a> {
    #[schemars(schema_with = "panel_id")]
    id: &'a str,
    title: &'a str,
    inputs: Vec<InputView<'a>>,
    actions: Vec<ActionView<'a>>,
    details: DetailsView<'a>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "PanelInput", deny_unknown_fields)]
struct InputView<'a> {
    key: &'a str,
    description: &'a str,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "PanelDetails", deny_unknown_fields)]
struct DetailsView<'a> {
    #[schemars(schema_with = "panel_type")]
    __type__: &'static str,
    query: &'a str,
    credential_id: &'a str,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Action", deny_unknown_fields)]
struct ActionView<'a> {
    #[schemars(schema_with = "action_id")]
    id: &'a str,
    label: Option<&'a str>,
    workflow_id: Option<&'a str>,
    input_mappings: Vec<MappingView<'a>>,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "InputMapping", deny_unknown_fields)]
struct MappingView<'a> {
    workflow_input_key: &'a str,
    column: Option<&'a str>,
    prompt_user: bool,
    prompt: Option<&'a str>,
}

impl<'a> From<&'a InputMapping> for MappingView<'a> {
    fn from(m: &'a InputMapping) -> Self {
        Self {
            workflow_input_key: &m.workflow_input_key,
            column: m.column.as_deref(),
            prompt_user: m.prompt_user,
            prompt: m.prompt.as_deref(),
        }
    }
}

impl<'a> From<&'a Action> for ActionView<'a> {
    fn from(a: &'a Action) -> Self {
        Self {
            id: a.id.as_str(),
            label: a.label.as_deref(),
            workflow_id: a.workflow_id.as_deref(),
            input_mappings: a.input_mappings.iter().map(MappingView::from).collect(),
        }
    }
}

impl<'a> From<&'a PanelInput> for InputView<'a> {
    fn from(i: &'a PanelInput) -> Self {
        Self {
            key: &i.key,
            description: &i.description,
        }
    }
}

impl<'a> From<&'a Panel> for PanelView<'a> {
    fn from(p: &'a Panel) -> Self {
        let PanelDetails::Query {
            query,
            credential_id,
        } = &p.details;
        Self {
            id: p.id.as_str(),
            title: &p.title,
            inputs: p.inputs.iter().map(InputView::from).collect(),
            actions: p.actions.iter().map(ActionView::from).collect(),
            details: DetailsView {
                __type__: "query",
                query,
                credential_id,
            },
        }
    }
}

impl<'a> From<&'a Dashboard> for DashboardView<'a> {
    fn from(d: &'a Dashboard) -> Self {
        Self {
            id: d.id.as_str(),
            name: &d.name,
            restricted_access: d.restricted_access,
            panels: d.panels.iter().map(PanelView::from).collect(),
        }
    }
}
