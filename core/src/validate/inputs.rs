//! A panel run's inputs (`{"inputs": {...}, "time_range": {"from", "to"}}`), read against the
//! types the dashboard's presentation gives them (docs/dashboards.md, "Inputs"): each value
//! checked for its type and written in the form the database converts, a default for one left
//! out, NULL for an optional one left blank, and the time range as `__from` and `__to`. Values
//! are bound as parameters, never written into the statement.

use std::collections::HashMap;

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};

use super::ValidationErrors;
use crate::model::{InputKind, InputSpec, Inputs, Panel, Presentation, RangePreset};
use crate::run::statement::Dialect;

/// The keys a panel binds the time range's start and end as.
pub const TIME_RANGE_KEYS: [&str; 2] = ["__from", "__to"];

/// The inputs of a run of `panel`: every key it declares given (or defaulted, or optional),
/// each of its type, no other key; the time range, given or the presentation's default before
/// `now`, as `__from` and `__to` written for `dialect`. Every field's error at once.
pub fn panel_inputs(
    panel: &Panel,
    body: &Map<String, Value>,
    presentation: &Presentation,
    dialect: Dialect,
    now: DateTime<Utc>,
) -> Result<Inputs, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let mut declared: Vec<String> = panel.inputs.iter().map(|i| i.key.clone()).collect();
    let mut values = HashMap::new();
    let given = given_values(body, "inputs")?;
    for key in given.keys() {
        if !declared.contains(key) {
            errors.add(&format!("inputs.{key}"), "is not an input of this panel");
        }
    }
    for key in &declared {
        let field = format!("inputs.{key}");
        let value = match presentation.inputs.get(key) {
            Some(spec) => typed(spec, given.get(key)),
            None => untyped(given.get(key)),
        };
        match value {
            Ok(value) => {
                values.insert(key.clone(), value);
            }
            Err(message) => errors.add(&field, message),
        }
    }
    match time_range(body, presentation.time_range, now) {
        Ok((from, to)) => {
            for (key, at) in TIME_RANGE_KEYS.iter().zip([from, to]) {
                declared.push((*key).to_owned());
                values.insert((*key).to_owned(), Some(time_text(at, dialect)));
            }
        }
        Err((field, message)) => errors.add(field, message),
    }
    errors.into_result(Inputs { declared, values })
}

/// The object of values a run's body gives under `field` (`inputs`, a saved query's
/// `params`): empty when left out or null.
pub(super) fn given_values(
    body: &Map<String, Value>,
    field: &str,
) -> Result<Map<String, Value>, ValidationErrors> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(_) => Err(ValidationErrors::single(field, "must be an object")),
    }
}

/// A given value as the text it binds as: a string as it is, a number or a boolean written out.
pub(super) fn scalar_text(value: &Value) -> Result<String, String> {
    match value {
        Value::String(text) => Ok(text.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => Err("must be a string, a number or a boolean".to_owned()),
    }
}

/// An input the presentation gives no type: a string, number or boolean, as given; required.
fn untyped(value: Option<&Value>) -> Result<Option<String>, String> {
    match value {
        None => Err("is missing".to_owned()),
        Some(value) => scalar_text(value).map(Some),
    }
}

/// A typed input's value: the given one (its default when left out), checked and written for
/// the database; NULL when it is optional and blank.
fn typed(spec: &InputSpec, value: Option<&Value>) -> Result<Option<String>, String> {
    let text = match value {
        None => spec.default.clone(),
        Some(Value::Null) => None,
        Some(value) => Some(scalar_text(value)?),
    };
    let text = text.filter(|text| !text.trim().is_empty());
    let Some(text) = text else {
        return if spec.required {
            Err("can't be blank".to_owned())
        } else {
            Ok(None)
        };
    };
    checked_input(spec, &text).map(Some)
}

/// `text` checked for `spec`'s type, in the form it is bound in.
pub fn checked_input(spec: &InputSpec, text: &str) -> Result<String, String> {
    let trimmed = text.trim();
    match spec.kind {
        InputKind::Text => Ok(text.to_owned()),
        InputKind::Number => {
            if is_number(trimmed) {
                Ok(trimmed.to_owned())
            } else {
                Err("must be a number, such as 42 or -1.5".to_owned())
            }
        }
        InputKind::Date => NaiveDate::parse_from_str(trimmed, "%Y-%m-%d")
            .map(|date| date.format("%Y-%m-%d").to_string())
            .map_err(|_| "must be a date, YYYY-MM-DD".to_owned()),
        InputKind::Datetime => datetime(trimmed)
            .map(|at| at.format("%Y-%m-%d %H:%M:%S").to_string())
            .ok_or_else(|| "must be a date and time, YYYY-MM-DDTHH:MM[:SS]".to_owned()),
        InputKind::Choice => {
            if spec.choices.is_empty() || spec.choices.iter().any(|c| c == text) {
                Ok(text.to_owned())
            } else {
                Err(format!("must be one of its {} choices", spec.choices.len()))
            }
        }
    }
}

/// Whether `text` is a decimal number (`42`, `-1.5`, `2e3`): what every database converts.
fn is_number(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['-', '+']).unwrap_or(e))),
        None => (unsigned, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    !(whole.is_empty() && fraction.is_empty())
        && digits(whole)
        && digits(fraction)
        && exponent.is_none_or(|e| !e.is_empty() && digits(e))
}

/// A date and time as a `datetime-local` field writes it (`T` or a space, seconds optional).
fn datetime(text: &str) -> Option<NaiveDateTime> {
    [
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
}

/// A time range's start and end.
type Range = (DateTime<Utc>, DateTime<Utc>);

/// The run's time range: `{"from", "to"}` as RFC 3339 times, `from` before `to`; the default
/// (the last 7 days unless the presentation says otherwise) before `now` when left out.
fn time_range(
    body: &Map<String, Value>,
    preset: Option<RangePreset>,
    now: DateTime<Utc>,
) -> Result<Range, (&'static str, String)> {
    let range = match body.get("time_range") {
        None | Some(Value::Null) => {
            let seconds = preset.unwrap_or(RangePreset::Week).seconds();
            return Ok((now - chrono::Duration::seconds(seconds), now));
        }
        Some(Value::Object(range)) => range,
        Some(_) => {
            return Err((
                "time_range",
                "must be an object with from and to".to_owned(),
            ));
        }
    };
    let at = |key: &'static str, field: &'static str| {
        range
            .get(key)
            .and_then(Value::as_str)
            .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
            .map(|at| at.with_timezone(&Utc))
            .ok_or((
                field,
                "must be a time, RFC 3339 (2026-12-07T09:30:00Z)".to_owned(),
            ))
    };
    let from = at("from", "time_range.from")?;
    let to = at("to", "time_range.to")?;
    if from >= to {
        return Err(("time_range.to", "must be after from".to_owned()));
    }
    Ok((from, to))
}

/// A time as the database converts it: with its zone for PostgreSQL, as a UTC wall-clock time
/// (`YYYY-MM-DD HH:MM:SS`) for the others, whose date-time types hold no zone.
fn time_text(at: DateTime<Utc>, dialect: Dialect) -> String {
    match dialect {
        Dialect::Postgres => at.to_rfc3339_opts(SecondsFormat::Micros, true),
        _ => at.format("%Y-%m-%d %H:%M:%S").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PanelDetails, PanelId, PanelInput};
    use serde_json::json;

    fn panel(keys: &[&str]) -> Panel {
        Panel {
            id: PanelId::generate(),
            title: "t".to_owned(),
            inputs: keys
                .iter()
                .map(|key| PanelInput {
                    key: (*key).to_owned(),
                    description: String::new(),
                })
                .collect(),
            actions: Vec::new(),
            details: PanelDetails::Query {
                query: "select 1".to_owned(),
                credential_id: "crd".to_owned(),
            },
        }
    }

    fn body(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn presentation(inputs: Value) -> Presentation {
        serde_json::from_value(json!({ "inputs": inputs })).unwrap()
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-12-07T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn typed_values_are_checked_defaulted_and_nulled() {
        let doc = presentation(json!({
            "n": {"type": "number"},
            "d": {"type": "date", "default": "2026-01-31"},
            "t": {"type": "datetime", "required": false},
            "c": {"type": "choice", "choices": ["paid", "new"]},
        }));
        let p = panel(&["n", "d", "t", "c"]);
        let inputs = panel_inputs(
            &p,
            &body(json!({"inputs": {"n": " -1.5e3 ", "t": "", "c": "paid"}})),
            &doc,
            Dialect::Mysql,
            now(),
        )
        .unwrap();
        assert_eq!(inputs.values["n"].as_deref(), Some("-1.5e3"));
        assert_eq!(inputs.values["d"].as_deref(), Some("2026-01-31"));
        assert_eq!(
            inputs.values["t"], None,
            "an optional blank input binds NULL"
        );
        assert_eq!(inputs.values["c"].as_deref(), Some("paid"));
        assert_eq!(
            inputs.values["__from"].as_deref(),
            Some("2026-11-30 12:00:00"),
            "the default range is the last 7 days"
        );
        assert!(inputs.declared.iter().any(|k| k == "__to"));

        let errors = panel_inputs(
            &p,
            &body(json!({"inputs": {"n": "1; drop", "d": "31/01/2026", "t": "soon", "c": "'; --", "x": 1},
                         "time_range": {"from": "2026-12-07T00:00:00Z", "to": "2026-12-01T00:00:00Z"}})),
            &doc,
            Dialect::Postgres,
            now(),
        )
        .unwrap_err()
        .to_string();
        for field in [
            "inputs.n",
            "inputs.d",
            "inputs.t",
            "inputs.c",
            "inputs.x",
            "time_range.to",
        ] {
            assert!(errors.contains(field), "{field} in {errors}");
        }
    }

    #[test]
    fn a_required_input_left_blank_is_refused_and_an_untyped_one_is_as_given() {
        let doc = presentation(json!({"n": {"type": "number"}}));
        let p = panel(&["n", "free"]);
        let errors = panel_inputs(
            &p,
            &body(json!({"inputs": {"n": " "}})),
            &doc,
            Dialect::Postgres,
            now(),
        )
        .unwrap_err()
        .to_string();
        assert!(errors.contains("can't be blank"), "{errors}");
        assert!(
            errors.contains("inputs.free"),
            "untyped inputs stay required: {errors}"
        );
        let inputs = panel_inputs(
            &p,
            &body(json!({"inputs": {"n": 7, "free": ""},
                         "time_range": {"from": "2026-12-01T00:00:00+01:00", "to": "2026-12-02T00:00:00Z"}})),
            &doc,
            Dialect::Postgres,
            now(),
        )
        .unwrap();
        assert_eq!(inputs.values["free"].as_deref(), Some(""));
        assert_eq!(
            inputs.values["__from"].as_deref(),
            Some("2026-11-30T23:00:00.000000Z")
        );
    }

    #[test]
    fn numbers_are_decimal_numbers_only() {
        for good in ["0", "-1", "+2.5", ".5", "5.", "1e9", "1E-3"] {
            assert!(is_number(good), "{good}");
        }
        for bad in [
            "", ".", "e3", "1e", "0x10", "1,000", "NaN", "inf", "1 2", "--1",
        ] {
            assert!(!is_number(bad), "{bad}");
        }
    }
}
