//! The body of `PUT …/me/settings`: a person's own theme and time zone.

use serde_json::{Map, Value};

use super::ValidationErrors;

/// Reads the body of `PUT …/me/settings`: `{"theme": "light" | "dark" | null, "time_zone":
/// "UTC" | null}` (null or left out: the browser's).
pub fn settings_of(
    body: &Map<String, Value>,
) -> Result<crate::model::UserSettings, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let mut one_of = |field: &str, allowed: &[&str]| match body.get(field) {
        None | Some(Value::Null) => None,
        Some(Value::String(value)) if allowed.contains(&value.as_str()) => Some(value.clone()),
        Some(_) => {
            errors.add(
                field,
                format!("must be one of: {}, or null", allowed.join(", ")),
            );
            None
        }
    };
    let theme = one_of("theme", &["light", "dark"]);
    let time_zone = one_of("time_zone", &["UTC"]);
    for key in body.keys() {
        if key != "theme" && key != "time_zone" {
            errors.add(key, "is not a setting");
        }
    }
    errors.into_result(crate::model::UserSettings { theme, time_zone })
}
