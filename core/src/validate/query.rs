//! The bodies of the query routes: a stored query, a panel run, a review and a run's bypass.
//! Each is read here, whole, into what the handler needs, or into field-keyed errors (422);
//! what needs storage (does the database exist, may the caller…) is the handler's.

use serde_json::{Map, Value};

use super::reader::Reader;
use super::{QUERY_MAX, Text, ValidationErrors, message};
use crate::model::{Decision, QueryEdit, TITLE_MAX};

/// The longest description of a query, in characters.
pub const DESCRIPTION_MAX: usize = 10_000;

/// Rows a run returns when its body sets no `limit` (and the service's cap is not lower).
pub const DEFAULT_ROW_LIMIT: u32 = 1_000;

/// Longest review comment or bypass reason, in characters.
pub const REASON_MAX: usize = 2_000;

/// A body's `limit`: [`DEFAULT_ROW_LIMIT`] (or `max_rows`, when lower) when absent, a whole
/// number from 1 to `max_rows` otherwise; the message of the field's error when it is not.
pub fn row_limit(body: &Map<String, Value>, max_rows: u32) -> Result<u32, String> {
    match body.get("limit") {
        None | Some(Value::Null) => Ok(DEFAULT_ROW_LIMIT.min(max_rows)),
        Some(value) => match value.as_u64() {
            Some(n) if n >= 1 && n <= u64::from(max_rows) => Ok(n as u32),
            _ => Err(format!("must be a whole number from 1 to {max_rows}")),
        },
    }
}

/// A stored query's body as read: each field that is valid on its own, and the errors of those
/// that are not (the handler adds what it finds looking them up).
#[derive(Debug)]
pub struct QueryDraft {
    /// `database_id`, when a non-blank string.
    pub database_id: Option<String>,
    /// `credential_id`, when a non-blank string.
    pub credential_id: Option<String>,
    /// `query`, when a non-blank string (its length is checked: at most [`QUERY_MAX`] bytes).
    pub query: Option<String>,
    /// `limit` ([`row_limit`]); 0 when it is invalid.
    pub limit: u32,
    /// `title`, when a non-blank line of at most [`TITLE_MAX`] characters.
    pub title: Option<String>,
    /// `description`, when non-blank text of at most [`DESCRIPTION_MAX`] characters.
    pub description: Option<String>,
    /// What is wrong so far.
    pub errors: ValidationErrors,
}

/// Reads the body of `POST …/queries`: `{"database_id", "credential_id", "query", "limit",
/// "title", "description"}` (whether the title and description are needed depends on the
/// credential: the handler's question).
pub fn query_draft(body: &Map<String, Value>, max_rows: u32) -> QueryDraft {
    let mut errors = ValidationErrors::new();
    let mut text = |field: &str| match body.get(field) {
        Some(Value::String(value)) if !value.trim().is_empty() => Some(value.clone()),
        None | Some(Value::Null) | Some(Value::String(_)) => {
            errors.add(field, message::BLANK);
            None
        }
        Some(_) => {
            errors.add(field, message::INVALID);
            None
        }
    };
    let database_id = text("database_id");
    let credential_id = text("credential_id");
    let query = text("query");
    let limit = row_limit(body, max_rows).unwrap_or_else(|why| {
        errors.add("limit", why);
        0
    });
    if query.as_ref().is_some_and(|text| text.len() > QUERY_MAX) {
        errors.add(
            "query",
            format!("should be at most {QUERY_MAX} character(s)"),
        );
    }
    let mut reader = Reader::new(body);
    let title = reader.text("title", Text::Line(TITLE_MAX)).flatten();
    let description = reader
        .text("description", Text::Lines(DESCRIPTION_MAX))
        .flatten();
    errors.merge(reader.finish());
    QueryDraft {
        database_id,
        credential_id,
        query,
        limit,
        title,
        description,
        errors,
    }
}

/// Reads the body of `PATCH …/queries/{id}`: `{"title", "description", "query"}`, each left
/// out (or null) unchanged; a title or statement is never blank, a description may be emptied.
pub fn query_edit(body: &Map<String, Value>) -> Result<QueryEdit, ValidationErrors> {
    let mut reader = Reader::new(body);
    let title = reader.required_text("title", false, Text::Line(TITLE_MAX));
    let description = match body.get("description") {
        None | Some(Value::Null) => None,
        Some(_) => reader.raw_text("description", Text::Lines(DESCRIPTION_MAX)),
    };
    let query = reader.required_text("query", false, Text::Lines(QUERY_MAX));
    let edit = QueryEdit {
        title,
        description: description.map(|d| d.trim().to_owned()),
        query,
    };
    reader.finish().into_result(edit)
}

/// Reads the body of `POST …/queries/{id}/comments`: `{"text"}`, non-blank, at most
/// [`REASON_MAX`] characters; trimmed.
pub fn comment_of(body: &Map<String, Value>) -> Result<String, ValidationErrors> {
    let mut reader = Reader::new(body);
    let text = reader.required_text("text", true, Text::Lines(REASON_MAX));
    let errors = reader.finish();
    match text {
        Some(text) if errors.is_empty() => Ok(text.trim().to_owned()),
        _ => Err(errors),
    }
}

/// A run's `bypass_review` as asked: whether it was acknowledged, and why.
#[derive(Debug)]
pub struct AskedBypass {
    /// `acknowledge` (false when absent).
    pub acknowledge: bool,
    /// `reason` (empty when absent).
    pub reason: String,
}

/// The shorter timeout a run's body asks for (`timeout_secs`, 1 to 86,400 seconds), if any.
pub fn run_timeout_of(
    body: &Map<String, Value>,
) -> Result<Option<std::time::Duration>, ValidationErrors> {
    let refused = || {
        ValidationErrors::single(
            "timeout_secs",
            "must be a whole number of seconds from 1 to 86400",
        )
    };
    match body.get("timeout_secs") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(secs @ 1..=86_400) => Ok(Some(std::time::Duration::from_secs(secs))),
            _ => Err(refused()),
        },
        Some(_) => Err(refused()),
    }
}

/// The `bypass_review` of a run's body, when it has one: `{"acknowledge": true, "reason": "…"}`
/// (errors when it is not of that shape; whether it may be used is the run's question).
pub fn bypass_of(body: &Map<String, Value>) -> Result<Option<AskedBypass>, ValidationErrors> {
    let asked = match body.get("bypass_review") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(asked)) => asked,
        Some(_) => {
            return Err(ValidationErrors::single(
                "bypass_review",
                "must be an object",
            ));
        }
    };
    let mut errors = ValidationErrors::new();
    let acknowledge = match asked.get("acknowledge") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(acknowledge)) => *acknowledge,
        Some(_) => {
            errors.add("bypass_review.acknowledge", "must be a boolean");
            false
        }
    };
    let reason = match asked.get("reason") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(reason)) if reason.chars().count() <= REASON_MAX => reason.clone(),
        Some(Value::String(_)) => {
            errors.add(
                "bypass_review.reason",
                format!("should be at most {REASON_MAX} character(s)"),
            );
            String::new()
        }
        Some(_) => {
            errors.add("bypass_review.reason", "must be a string");
            String::new()
        }
    };
    errors.into_result(Some(AskedBypass {
        acknowledge,
        reason,
    }))
}

/// A review's body: `{"decision": "approve" | "reject" | "request_changes", "comment": "…"}`;
/// the comment trimmed, `None` when blank.
pub fn review_of(
    body: &Map<String, Value>,
) -> Result<(Decision, Option<String>), ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let decision = match body.get("decision") {
        Some(Value::String(name)) => match name.parse::<Decision>() {
            Ok(decision) => Some(decision),
            Err(_) => {
                errors.add(
                    "decision",
                    "must be \"approve\", \"reject\" or \"request_changes\"",
                );
                None
            }
        },
        None | Some(Value::Null) => {
            errors.add("decision", message::BLANK);
            None
        }
        Some(_) => {
            errors.add(
                "decision",
                "must be \"approve\", \"reject\" or \"request_changes\"",
            );
            None
        }
    };
    let comment = match body.get("comment") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.chars().count() <= REASON_MAX => {
            Some(text.trim().to_owned()).filter(|text| !text.is_empty())
        }
        Some(Value::String(_)) => {
            errors.add(
                "comment",
                format!("should be at most {REASON_MAX} character(s)"),
            );
            None
        }
        Some(_) => {
            errors.add("comment", message::INVALID);
            None
        }
    };
    match decision {
        Some(decision) if errors.is_empty() => Ok((decision, comment)),
        _ => Err(errors),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_limit_is_a_whole_number_within_the_cap() {
        assert_eq!(row_limit(&body(json!({})), 50), Ok(50));
        assert_eq!(row_limit(&body(json!({})), 5_000), Ok(DEFAULT_ROW_LIMIT));
        assert_eq!(row_limit(&body(json!({"limit": 7})), 50), Ok(7));
        for bad in [json!(0), json!(51), json!(1.5), json!("3"), json!(-1)] {
            assert!(
                row_limit(&body(json!({ "limit": bad })), 50).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_draft_keeps_every_error_at_once() {
        let draft = query_draft(
            &body(json!({"database_id": 3, "query": " ", "limit": 0})),
            10,
        );
        let fields: Vec<&str> = draft.errors.fields().collect();
        for field in ["database_id", "credential_id", "query", "limit"] {
            assert!(fields.contains(&field), "{field} in {fields:?}");
        }
        let long = "x".repeat(QUERY_MAX + 1);
        let draft = query_draft(
            &body(json!({"database_id": "d", "credential_id": "c", "query": long})),
            10,
        );
        assert_eq!(draft.errors.fields().collect::<Vec<_>>(), ["query"]);
    }

    #[test]
    fn a_review_needs_a_decision_and_trims_its_comment() {
        let (decision, comment) =
            review_of(&body(json!({"decision": "approve", "comment": "  ok "}))).unwrap();
        assert_eq!(
            (decision, comment.as_deref()),
            (Decision::Approve, Some("ok"))
        );
        assert!(review_of(&body(json!({"comment": "x"}))).is_err());
        assert!(review_of(&body(json!({"decision": "maybe"}))).is_err());
        let long = "y".repeat(REASON_MAX + 1);
        assert!(review_of(&body(json!({"decision": "reject", "comment": long}))).is_err());
    }

    #[test]
    fn a_bypass_is_an_object_of_acknowledge_and_reason() {
        assert!(bypass_of(&body(json!({}))).unwrap().is_none());
        assert!(bypass_of(&body(json!({"bypass_review": true}))).is_err());
        assert!(bypass_of(&body(json!({"bypass_review": {"acknowledge": "yes"}}))).is_err());
        let asked = bypass_of(&body(
            json!({"bypass_review": {"acknowledge": true, "reason": "x"}}),
        ))
        .unwrap()
        .unwrap();
        assert!(asked.acknowledge);
        assert_eq!(asked.reason, "x");
    }
}
