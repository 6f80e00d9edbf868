//! `GET|PUT /v1/dashboards/{id}/presentation` (also under `/api/v1`): a dashboard's
//! presentation document, with its own ETag (docs/dashboards.md, "The presentation document").
//! It is read by whoever may see the dashboard and replaced whole by its editors; the
//! interface's own operations never show or change it.

use http::StatusCode;

use super::{Dashboards, full_scope};
use crate::model::{Dashboard, Presentation, Timestamp};
use crate::service::call::{Answer, Call, principal_of};
use crate::service::conditional::{IfMatch, tagged};
use crate::service::error::ApiError;
use crate::service::response::json_response;
use crate::storage::Edits as _;
use crate::validate::{check_presentation, presentation_from_body};

/// The document's answer, tagged with its own version.
fn presentation_response(dashboard: &Dashboard) -> Answer {
    let response = json_response(StatusCode::OK, &dashboard.presentation);
    Ok(tagged(response, dashboard.presented_at))
}

impl Dashboards {
    /// `GET …/dashboards/{id}/presentation`: for whoever may see the dashboard.
    pub(crate) async fn get_presentation(&self, call: Call<'_>) -> Answer {
        presentation_response(&self.visible(call.caller, call.param("id")).await?)
    }

    /// `PUT …/dashboards/{id}/presentation`: the whole document, by a full-scope caller or an
    /// editor. `If-Match` compares the document's own version. A choices query must be on a
    /// credential its editor may run, as a panel's.
    pub(crate) async fn put_presentation(&self, mut call: Call<'_>) -> Answer {
        let condition = IfMatch::of(&call.headers)?;
        let body = call.json().await?;
        let id = call.param("id").to_owned();
        let full = full_scope(call.caller);
        let stored = match full {
            true => self.visible(call.caller, &id).await?,
            false => self.editable(call.caller, &id).await?,
        };
        let presentation = presentation_from_body(body, &stored)?;
        if !full {
            self.may_use_choice_queries(principal_of(call.caller)?, &stored, &presentation)
                .await?;
        }
        let checked = stored.updated_at;
        let edit = move |stored: &Dashboard| {
            if let Some(condition) = &condition {
                condition.check(stored.presented_at)?;
            }
            if !full && stored.updated_at != checked {
                return Err(crate::storage::StorageError::Conflict);
            }
            // The panels may have changed since it was read: what it names must still be there.
            check_presentation(&presentation, stored)?;
            let now = Timestamp::now();
            let mut changed = stored.clone();
            changed.presentation = presentation.clone();
            changed.presented_at = now.not_before_next(stored.presented_at);
            changed.updated_at = now.not_before_next(stored.updated_at);
            Ok(changed)
        };
        let dashboard = self
            .storage
            .update_dashboard(&id, Box::new(edit), call.origin)
            .await?;
        presentation_response(&dashboard)
    }

    /// Whether `principal` may run each choices query of `presentation` that is new or changed
    /// from `stored`'s (as a panel's credential: 422 or 403 otherwise).
    async fn may_use_choice_queries(
        &self,
        principal: &crate::model::Principal,
        stored: &Dashboard,
        presentation: &Presentation,
    ) -> Result<(), ApiError> {
        for (key, spec) in &presentation.inputs {
            let Some(query) = &spec.choices_query else {
                continue;
            };
            let kept = stored
                .presentation
                .inputs
                .get(key)
                .and_then(|old| old.choices_query.as_ref())
                == Some(query);
            if kept {
                continue;
            }
            self.admission
                .panel_access(principal, &query.credential_id, 1)
                .await
                .map_err(|error| match error {
                    ApiError::Invalid(errors) => {
                        let mut nested = crate::validate::ValidationErrors::new();
                        nested.add_nested(&format!("inputs.{key}.choices_query"), errors);
                        ApiError::Invalid(nested)
                    }
                    other => other,
                })?;
        }
        Ok(())
    }
}
