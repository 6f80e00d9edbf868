//! A dashboard's presentation document as a `PUT` gives it (docs/dashboards.md, "The
//! presentation document"): its shape read by serde (an unknown key or a wrong type is an
//! error on its path), then what serde can't say: every panel and input it names is the
//! dashboard's, a layout fits the grid, a default fits its input's type, and the sizes stay
//! within their limits. Every error at once, keyed by path.

use serde_json::{Map, Value};

use super::ValidationErrors;
use super::inputs::checked_input;
use crate::model::{
    CHOICES_MAX, Dashboard, Display, GRID_COLUMNS, GRID_ROWS_MAX, InputKind, InputSpec,
    MEMBERS_MAX, Member, Presentation,
};

/// The most characters of a column name, a member's name or a choice.
const NAME_MAX: usize = 200;
/// The most series of a chart.
const SERIES_MAX: usize = 20;
/// The most characters of a number's unit.
const UNIT_MAX: usize = 16;
/// The most digits after the point.
const DECIMALS_MAX: u8 = 10;

/// The presentation `body` gives `dashboard`: its shape read, then [`check_presentation`].
pub fn presentation_from_body(
    body: Map<String, Value>,
    dashboard: &Dashboard,
) -> Result<Presentation, ValidationErrors> {
    let presentation: Presentation = serde_path_to_error::deserialize(Value::Object(body))
        .map_err(|error| {
            let path = error.path().to_string();
            let field = if path == "." {
                "presentation".to_owned()
            } else {
                path
            };
            ValidationErrors::single(&field, shape_message(error.inner()))
        })?;
    check_presentation(&presentation, dashboard)?;
    Ok(presentation)
}

/// What serde can't say of `presentation` for `dashboard`: every panel and input it names is
/// the dashboard's, layouts fit the grid, defaults their types, sizes their limits.
pub fn check_presentation(
    presentation: &Presentation,
    dashboard: &Dashboard,
) -> Result<(), ValidationErrors> {
    let mut errors = ValidationErrors::new();
    members(&mut errors, "editors", &presentation.editors);
    members(&mut errors, "viewers", &presentation.viewers);
    for (id, look) in &presentation.panels {
        let field = format!("panels.{id}");
        if !dashboard.panels.iter().any(|p| p.id.as_str() == id) {
            errors.add(&field, "is not a panel of this dashboard");
            continue;
        }
        if let Some(display) = &look.display {
            self::display(&mut errors, &format!("{field}.display"), display);
        }
        if let Some(layout) = &look.layout {
            let field = format!("{field}.layout");
            if layout.w == 0 || layout.w > GRID_COLUMNS {
                errors.add(
                    &format!("{field}.w"),
                    format!("must be from 1 to {GRID_COLUMNS}"),
                );
            } else if layout.x + layout.w > GRID_COLUMNS {
                errors.add(
                    &format!("{field}.x"),
                    format!("must leave room for its width: x + w is at most {GRID_COLUMNS}"),
                );
            }
            if layout.h == 0 || layout.h > GRID_ROWS_MAX.0 {
                errors.add(
                    &format!("{field}.h"),
                    format!("must be from 1 to {}", GRID_ROWS_MAX.0),
                );
            }
            if layout.y >= GRID_ROWS_MAX.1 {
                errors.add(
                    &format!("{field}.y"),
                    format!("must be below {}", GRID_ROWS_MAX.1),
                );
            }
        }
    }
    for (key, spec) in &presentation.inputs {
        let field = format!("inputs.{key}");
        let declared = dashboard
            .panels
            .iter()
            .any(|p| p.inputs.iter().any(|i| &i.key == key));
        if !declared {
            errors.add(&field, "is not an input of any panel of this dashboard");
            continue;
        }
        input(&mut errors, &field, spec);
    }
    errors.into_result(())
}

/// serde's message without its position (the path is the field).
fn shape_message(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.find(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

fn too_long(text: &str, max: usize) -> bool {
    text.chars().count() > max
}

fn members(errors: &mut ValidationErrors, field: &str, members: &[Member]) {
    if members.len() > MEMBERS_MAX {
        errors.add(field, format!("must hold at most {MEMBERS_MAX} members"));
    }
    let mut seen = std::collections::HashSet::new();
    for (index, member) in members.iter().enumerate() {
        let field = format!("{field}.{index}.name");
        let name = crate::model::identity::normalized(&member.name);
        if name.is_empty() {
            errors.add(&field, "can't be blank");
        } else if too_long(&member.name, NAME_MAX) {
            errors.add(&field, format!("must be at most {NAME_MAX} characters"));
        } else if !seen.insert((member.kind, name)) {
            errors.add(&field, "has already been taken");
        }
    }
}

fn display(errors: &mut ValidationErrors, field: &str, display: &Display) {
    let columns = display
        .x
        .iter()
        .map(|c| ("x", c))
        .chain(display.group.iter().map(|c| ("group", c)))
        .chain(display.compare.iter().map(|c| ("compare", c)))
        .chain(display.series.iter().map(|c| ("series", c)));
    for (key, column) in columns {
        if column.trim().is_empty() {
            errors.add(
                &format!("{field}.{key}"),
                "can't be blank: name a column, or leave it out",
            );
        } else if too_long(column, NAME_MAX) {
            errors.add(
                &format!("{field}.{key}"),
                format!("must be at most {NAME_MAX} characters"),
            );
        }
    }
    if display.series.len() > SERIES_MAX {
        errors.add(
            &format!("{field}.series"),
            format!("must hold at most {SERIES_MAX} columns"),
        );
    }
    if let Some(format) = &display.format {
        if format.decimals.is_some_and(|d| d > DECIMALS_MAX) {
            errors.add(
                &format!("{field}.format.decimals"),
                format!("must be from 0 to {DECIMALS_MAX}"),
            );
        }
        if format
            .unit
            .as_deref()
            .is_some_and(|u| too_long(u, UNIT_MAX))
        {
            errors.add(
                &format!("{field}.format.unit"),
                format!("must be at most {UNIT_MAX} characters"),
            );
        }
    }
}

fn input(errors: &mut ValidationErrors, field: &str, spec: &InputSpec) {
    let is_choice = spec.kind == InputKind::Choice;
    match (is_choice, spec.choices.is_empty(), &spec.choices_query) {
        (true, true, None) => errors.add(
            &format!("{field}.choices"),
            "a choice input needs its choices, or a choices_query",
        ),
        (true, false, Some(_)) => errors.add(
            &format!("{field}.choices_query"),
            "give choices or a choices_query, not both",
        ),
        (false, false, _) => errors.add(&format!("{field}.choices"), "is for a choice input only"),
        (false, _, Some(_)) => {
            errors.add(
                &format!("{field}.choices_query"),
                "is for a choice input only",
            );
        }
        _ => {}
    }
    if spec.choices.len() > CHOICES_MAX {
        errors.add(
            &format!("{field}.choices"),
            format!("must hold at most {CHOICES_MAX} values"),
        );
    }
    if spec.choices.iter().any(|c| too_long(c, NAME_MAX)) {
        errors.add(
            &format!("{field}.choices"),
            format!("each must be at most {NAME_MAX} characters"),
        );
    }
    if let Some(query) = &spec.choices_query {
        if query.query.trim().is_empty() {
            errors.add(&format!("{field}.choices_query.query"), "can't be blank");
        } else if too_long(&query.query, super::QUERY_MAX) {
            errors.add(&format!("{field}.choices_query.query"), "is too long");
        }
        if query.credential_id.trim().is_empty() {
            errors.add(
                &format!("{field}.choices_query.credential_id"),
                "can't be blank",
            );
        }
    }
    if let Some(default) = &spec.default
        && !default.trim().is_empty()
        && let Err(message) = checked_input(spec, default)
    {
        errors.add(&format!("{field}.default"), message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dashboard() -> Dashboard {
        let body = json!({"name": "d", "restricted_access": false, "panels": [
            {"title": "p", "inputs": [{"key": "since", "description": ""}],
             "details": {"__type__": "query", "query": "select 1", "credential_id": "crd"}}
        ]});
        crate::validate::dashboard_from_body(
            None,
            body.as_object().unwrap(),
            crate::model::Timestamp::now(),
        )
        .unwrap()
    }

    fn read(doc: Value) -> Result<Presentation, String> {
        presentation_from_body(doc.as_object().unwrap().clone(), &dashboard())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_whole_document_is_read() {
        let d = dashboard();
        let id = d.panels[0].id.as_str().to_owned();
        let doc = presentation_from_body(
            json!({
                "editors": [{"kind": "group", "name": "ops"}],
                "time_range": "24h",
                "panels": {(id.clone()): {"display": {"kind": "line", "x": "day", "series": ["n"]},
                                          "layout": {"x": 6, "y": 0, "w": 6, "h": 3}}},
                "inputs": {"since": {"type": "date", "default": "2026-12-01"}}
            })
            .as_object()
            .unwrap()
            .clone(),
            &d,
        )
        .unwrap();
        assert_eq!(doc.panels[&id].layout.unwrap().w, 6);
    }

    #[test]
    fn every_refusal_names_its_path() {
        let errors =
            read(json!({"panels": {"pl_other": {}}, "inputs": {"until": {"type": "text"}}}))
                .unwrap_err();
        assert!(errors.contains("panels.pl_other"), "{errors}");
        assert!(errors.contains("inputs.until"), "{errors}");
        let errors =
            read(json!({"inputs": {"since": {"type": "date", "default": "soon"}}})).unwrap_err();
        assert!(errors.contains("inputs.since.default"), "{errors}");
        let errors = read(json!({"inputs": {"since": {"type": "choice"}}})).unwrap_err();
        assert!(errors.contains("inputs.since.choices"), "{errors}");
        let errors = read(json!({"inputs": {"since": {"type": "colour"}}})).unwrap_err();
        assert!(errors.contains("inputs.since.type"), "{errors}");
        let errors = read(
            json!({"editors": [{"kind": "user", "name": " "}, {"kind": "robot", "name": "x"}]}),
        )
        .unwrap_err();
        assert!(errors.contains("editors[1].kind"), "{errors}");
        let errors = read(json!({"theme": "dark"})).unwrap_err();
        assert!(errors.contains("theme"), "{errors}");
    }
}
