//! The bodies of the saved-query routes: a saved query as created or changed, and the
//! parameters' values of a run of one (docs/queries.md, "Saved queries").

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::reader::Reader;
use super::{DESCRIPTION_MAX, NAME_MAX, QUERY_MAX, Text, ValidationErrors, message};
use crate::model::{SAVED_NAME_MAX, SAVED_TAGS_MAX, Sharing, identity};

/// The most groups a saved query is shared with.
pub const SHARED_GROUPS_MAX: usize = 50;

/// A saved query's body as read: each field given (`None`: left out, kept as it is on a change).
#[derive(Clone, Debug, Default)]
pub struct SavedDraft {
    /// `name`: a non-blank line.
    pub name: Option<String>,
    /// `description`: text, may be empty.
    pub description: Option<String>,
    /// `query`: the statement, non-blank.
    pub query: Option<String>,
    /// `database_id`.
    pub database_id: Option<String>,
    /// `credential_id`.
    pub credential_id: Option<String>,
    /// `tags`: each once, in the order given, trimmed.
    pub tags: Option<Vec<String>>,
    /// `sharing` with its `groups`.
    pub sharing: Option<Sharing>,
}

/// Reads the body of `POST …/saved-queries` (`creating`: `name`, `query`, `database_id` and
/// `credential_id` required; `sharing` `author` when left out) or of `PATCH
/// …/saved-queries/{id}` (every field optional). `sharing` is `author`, `groups` (with a
/// non-empty `groups`) or `database`; `groups` goes only with `groups`.
pub fn saved_draft(
    body: &Map<String, Value>,
    creating: bool,
) -> Result<SavedDraft, ValidationErrors> {
    let mut reader = Reader::new(body);
    let name = reader
        .required_text("name", creating, Text::Line(SAVED_NAME_MAX))
        .map(|n| n.trim().to_owned());
    let description = match body.get("description") {
        None => None,
        Some(_) => reader
            .raw_text("description", Text::Lines(DESCRIPTION_MAX))
            .map(|d| d.trim().to_owned()),
    };
    let query = reader.required_text("query", creating, Text::Lines(QUERY_MAX));
    let database_id = reader.required_text("database_id", creating, Text::Line(NAME_MAX));
    let credential_id = reader.required_text("credential_id", creating, Text::Line(NAME_MAX));
    let mut errors = reader.finish();
    let tags = match body.get("tags") {
        None => None,
        Some(Value::Null) => Some(Vec::new()),
        Some(value) => words(value, "tags", SAVED_TAGS_MAX, &mut errors),
    };
    let groups = match body.get("groups") {
        None | Some(Value::Null) => None,
        Some(value) => words(value, "groups", (SHARED_GROUPS_MAX, NAME_MAX), &mut errors),
    };
    let sharing = match body.get("sharing") {
        None | Some(Value::Null) if creating => Some("author"),
        None | Some(Value::Null) => None,
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(_) => {
            errors.add("sharing", message::INVALID);
            None
        }
    };
    let sharing = match (sharing, groups) {
        (None, None) => None,
        (None, Some(_)) => {
            errors.add("groups", "goes with sharing \"groups\" (give both)");
            None
        }
        (Some("groups"), Some(groups)) if !groups.is_empty() => Some(Sharing::Groups(
            groups.iter().map(|g| identity::normalized(g)).collect(),
        )),
        (Some("groups"), _) => {
            if errors.get("groups").is_none() {
                errors.add("groups", "can't be empty: name the groups who see it");
            }
            None
        }
        (Some(kind @ ("author" | "database")), groups) => {
            if groups.is_some_and(|g| !g.is_empty()) {
                errors.add("groups", "goes only with sharing \"groups\"");
            }
            Some(if kind == "author" {
                Sharing::Author
            } else {
                Sharing::Database
            })
        }
        (Some(_), _) => {
            errors.add("sharing", "must be one of: author, groups, database");
            None
        }
    };
    errors.into_result(SavedDraft {
        name,
        description,
        query,
        database_id,
        credential_id,
        tags,
        sharing,
    })
}

/// A list of at most `max.0` non-blank one-line strings of at most `max.1` characters, each
/// once (trimmed; the first of two kept).
fn words(
    value: &Value,
    field: &str,
    max: (usize, usize),
    errors: &mut ValidationErrors,
) -> Option<Vec<String>> {
    let Value::Array(items) = value else {
        errors.add(field, "must be a list of strings");
        return None;
    };
    if items.len() > max.0 {
        errors.add(field, format!("should have at most {} item(s)", max.0));
        return None;
    }
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let key = format!("{field}[{i}]");
        match item {
            Value::String(word) if !word.trim().is_empty() => {
                if let Err(why) = Text::Line(max.1).check(word) {
                    errors.add(&key, why);
                } else if seen.insert(word.trim().to_lowercase()) {
                    out.push(word.trim().to_owned());
                }
            }
            Value::String(_) => errors.add(&key, message::BLANK),
            _ => errors.add(&key, message::INVALID),
        }
    }
    Some(out)
}

/// The values of a saved query's run: `{"params": {"name": value}}`, a string, number or
/// boolean for each of `declared` (the statement's `${name}` parameters, in their order), and
/// no other; answered in `declared`'s order.
pub fn saved_params(
    body: &Map<String, Value>,
    declared: &[String],
) -> Result<Vec<(String, String)>, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let given = super::inputs::given_values(body, "params")?;
    for key in given.keys() {
        if !declared.contains(key) {
            errors.add(&format!("params.{key}"), "is not a parameter of this query");
        }
    }
    let mut values = Vec::with_capacity(declared.len());
    for key in declared {
        let field = format!("params.{key}");
        match given.get(key) {
            None | Some(Value::Null) => errors.add(&field, "is missing"),
            Some(value) => match super::inputs::scalar_text(value)
                .and_then(|text| Text::Lines(super::VALUE_MAX).check(&text).map(|()| text))
            {
                Ok(text) => values.push((key.clone(), text)),
                Err(why) => errors.add(&field, why),
            },
        }
    }
    errors.into_result(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_create_needs_its_fields_and_shares_with_its_author_by_default() {
        let errors = saved_draft(&body(json!({})), true).unwrap_err();
        for field in ["name", "query", "database_id", "credential_id"] {
            assert!(errors.get(field).is_some(), "{field}: {errors:?}");
        }
        let draft = saved_draft(
            &body(
                json!({"name": " Signups ", "query": "SELECT 1", "database_id": "db_1",
                "credential_id": "crd_1", "tags": ["growth", "Growth", " weekly "]}),
            ),
            true,
        )
        .unwrap();
        assert_eq!(draft.name.as_deref(), Some("Signups"));
        assert_eq!(draft.sharing, Some(Sharing::Author));
        assert_eq!(draft.tags.unwrap(), ["growth", "weekly"]);
    }

    #[test]
    fn groups_go_with_the_groups_sharing_only() {
        let groups = saved_draft(&body(json!({"sharing": "groups"})), false).unwrap_err();
        assert!(groups.get("groups").is_some());
        let stray = saved_draft(
            &body(json!({"sharing": "database", "groups": ["a"]})),
            false,
        )
        .unwrap_err();
        assert!(stray.get("groups").is_some());
        let unknown = saved_draft(&body(json!({"sharing": "world"})), false).unwrap_err();
        assert!(unknown.get("sharing").is_some());
        let shared = saved_draft(
            &body(json!({"sharing": "groups", "groups": ["Analysts", ""]})),
            false,
        )
        .unwrap_err();
        assert!(shared.get("groups[1]").is_some());
        let shared = saved_draft(
            &body(json!({"sharing": "groups", "groups": ["Analysts"]})),
            false,
        )
        .unwrap();
        assert_eq!(
            shared.sharing,
            Some(Sharing::Groups(vec!["analysts".to_owned()]))
        );
        assert!(
            shared.name.is_none(),
            "a change leaves out what it does not give"
        );
    }

    #[test]
    fn a_run_gives_every_parameter_and_no_other() {
        let declared = vec!["since".to_owned(), "plan".to_owned()];
        let errors = saved_params(
            &body(json!({"params": {"since": "2025-01-01", "other": 1}})),
            &declared,
        )
        .unwrap_err();
        assert!(errors.get("params.plan").is_some());
        assert!(errors.get("params.other").is_some());
        let values = saved_params(
            &body(json!({"params": {"plan": 3, "since": "x'; DROP TABLE t; --"}})),
            &declared,
        )
        .unwrap();
        assert_eq!(
            values,
            [
                ("since".to_owned(), "x'; DROP TABLE t; --".to_owned()),
                ("plan".to_owned(), "3".to_owned())
            ]
        );
        assert!(saved_params(&body(json!({})), &[]).unwrap().is_empty());
    }
}
