//! Dashboards as stored, with their panels, inputs and row actions.

#[allow(clippy::wildcard_imports)]
use super::*;

#[derive(Serialize, Deserialize)]
pub(super) struct DashboardV1 {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) restricted_access: bool,
    pub(super) archived_at: Option<i64>,
    pub(super) panels: Vec<PanelV1>,
    pub(super) inserted_at: i64,
    pub(super) updated_at: i64,
}

#[derive(Serialize, Deserialize)]
pub(super) struct PanelV1 {
    pub(super) id: String,
    pub(super) title: String,
    pub(super) inputs: Vec<(String, String)>,
    pub(super) actions: Vec<ActionV1>,
    pub(super) details: PanelDetailsV1,
}

/// New kinds of panel are appended (postcard numbers variants by position).
#[derive(Serialize, Deserialize)]
pub(super) enum PanelDetailsV1 {
    Query {
        query: String,
        credential_id: String,
    },
}

#[derive(Serialize, Deserialize)]
pub(super) struct ActionV1 {
    pub(super) id: String,
    pub(super) label: Option<String>,
    pub(super) workflow_id: Option<String>,
    pub(super) input_mappings: Vec<InputMappingV1>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct InputMappingV1 {
    pub(super) workflow_input_key: String,
    pub(super) column: Option<String>,
    pub(super) prompt_user: bool,
    pub(super) prompt: Option<String>,
}

/// Version 2 of a dashboard: version 1 with its presentation document (as its JSON text) and
/// that document's version.
pub(super) const DASHBOARD_V2: u8 = 2;

#[derive(Serialize, Deserialize)]
pub(super) struct DashboardV2 {
    pub(super) v1: DashboardV1,
    pub(super) presentation: String,
    pub(super) presented_at: i64,
}

/// Encodes a dashboard (dashboards hold no secrets), version 2.
pub fn encode_dashboard(dashboard: &Dashboard) -> Result<Vec<u8>, RecordError> {
    let v1 = DashboardV1 {
        id: dashboard.id.as_str().to_owned(),
        name: dashboard.name.clone(),
        restricted_access: dashboard.restricted_access,
        archived_at: dashboard.archived_at.map(Timestamp::as_micros),
        panels: dashboard
            .panels
            .iter()
            .map(|panel| PanelV1 {
                id: panel.id.as_str().to_owned(),
                title: panel.title.clone(),
                inputs: panel
                    .inputs
                    .iter()
                    .map(|i| (i.key.clone(), i.description.clone()))
                    .collect(),
                actions: panel
                    .actions
                    .iter()
                    .map(|action| ActionV1 {
                        id: action.id.as_str().to_owned(),
                        label: action.label.clone(),
                        workflow_id: action.workflow_id.clone(),
                        input_mappings: action
                            .input_mappings
                            .iter()
                            .map(|m| InputMappingV1 {
                                workflow_input_key: m.workflow_input_key.clone(),
                                column: m.column.clone(),
                                prompt_user: m.prompt_user,
                                prompt: m.prompt.clone(),
                            })
                            .collect(),
                    })
                    .collect(),
                details: match &panel.details {
                    PanelDetails::Query {
                        query,
                        credential_id,
                    } => PanelDetailsV1::Query {
                        query: query.clone(),
                        credential_id: credential_id.clone(),
                    },
                },
            })
            .collect(),
        inserted_at: dashboard.inserted_at.as_micros(),
        updated_at: dashboard.updated_at.as_micros(),
    };
    let presentation =
        serde_json::to_string(&dashboard.presentation).map_err(|_| RecordError::Presentation)?;
    framed(
        DASHBOARD_V2,
        &DashboardV2 {
            v1,
            presentation,
            presented_at: dashboard.presented_at.as_micros(),
        },
    )
}

/// Decodes the dashboard stored under `key` (version 1 has no presentation: an empty one, as
/// old as the dashboard).
pub fn decode_dashboard(key: &str, bytes: &[u8]) -> Result<Dashboard, RecordError> {
    let (stored, presentation, presented_at) = match unframed(bytes)? {
        (DASHBOARD_V2, body) => {
            let v2: DashboardV2 = postcard::from_bytes(body)?;
            let presentation: Presentation =
                serde_json::from_str(&v2.presentation).map_err(|_| RecordError::Presentation)?;
            (v2.v1, presentation, Some(v2.presented_at))
        }
        _ => (
            decode_keyed::<DashboardV1>(key, bytes)?,
            Presentation::default(),
            None,
        ),
    };
    if stored.id != key {
        return Err(key_mismatch(key, stored.id));
    }
    let presented_at = Timestamp::from_micros(presented_at.unwrap_or(stored.inserted_at));
    Ok(Dashboard {
        presentation,
        presented_at,
        id: DashboardId::from_stored(stored.id),
        name: stored.name,
        restricted_access: stored.restricted_access,
        archived_at: stored.archived_at.map(Timestamp::from_micros),
        panels: stored
            .panels
            .into_iter()
            .map(|panel| Panel {
                id: PanelId::from_stored(panel.id),
                title: panel.title,
                inputs: panel
                    .inputs
                    .into_iter()
                    .map(|(key, description)| PanelInput { key, description })
                    .collect(),
                actions: panel
                    .actions
                    .into_iter()
                    .map(|action| Action {
                        id: ActionId::from_stored(action.id),
                        label: action.label,
                        workflow_id: action.workflow_id,
                        input_mappings: action
                            .input_mappings
                            .into_iter()
                            .map(|m| InputMapping {
                                workflow_input_key: m.workflow_input_key,
                                column: m.column,
                                prompt_user: m.prompt_user,
                                prompt: m.prompt,
                            })
                            .collect(),
                    })
                    .collect(),
                details: match panel.details {
                    PanelDetailsV1::Query {
                        query,
                        credential_id,
                    } => PanelDetails::Query {
                        query,
                        credential_id,
                    },
                },
            })
            .collect(),
        inserted_at: Timestamp::from_micros(stored.inserted_at),
        updated_at: Timestamp::from_micros(stored.updated_at),
    })
}

impl Keyed for DashboardV1 {
    fn stored_key(&self) -> &str {
        &self.id
    }
}
