//! Permissions and data protection documents (`PUT …/permissions`, `PUT …/data-protection`).
//! Each PUT replaces the whole document.

use serde_json::{Map, Value};

use super::ValidationErrors;
use super::errors::message;
use super::reader::{Reader, mark_repeats};
use crate::model::{
    AccessLevel, ColumnAction, ColumnRule, DataProtection, Permission, Policy, SubjectKind,
};
use crate::storage::inheritance_message;

/// A required list of objects: absent is blank, null is empty.
fn required_list<'a>(r: &mut Reader<'a>, key: &str) -> Option<Vec<&'a Map<String, Value>>> {
    match r.objects(key) {
        None if r.errors().get(key).is_none() => r.blank(key),
        None => None,
        Some(items) => Some(items.unwrap_or_default()),
    }
}

/// Reads `{"permissions": [{"subject_kind", "subject", "access"}, …]}`: the whole new list.
pub fn permissions_from_body(
    body: &Map<String, Value>,
) -> Result<Vec<Permission>, ValidationErrors> {
    let mut r = Reader::new(body);
    let items = required_list(&mut r, "permissions").unwrap_or_default();
    let mut item_errors = Vec::with_capacity(items.len());
    let mut parsed = Vec::with_capacity(items.len());
    for item in &items {
        let mut ir = Reader::new(item);
        let subject_kind = ir.choice::<SubjectKind>("subject_kind", true);
        let subject = ir.required_text("subject", true);
        let access = ir.choice::<AccessLevel>("access", true);
        item_errors.push(ir.finish());
        parsed.push(match (subject_kind, subject, access) {
            (Some(subject_kind), Some(subject), Some(access)) => Some(Permission {
                subject_kind,
                subject,
                access,
            }),
            _ => None,
        });
    }
    let subjects = parsed
        .iter()
        .map(|p| p.as_ref().map(|p| (p.subject_kind, p.subject.clone())));
    mark_repeats(&mut item_errors, subjects, "subject");
    r.errors().add_items("permissions", item_errors);
    let errors = r.finish();
    match parsed.into_iter().collect::<Option<Vec<_>>>() {
        Some(permissions) if errors.is_empty() => Ok(permissions),
        _ => Err(errors),
    }
}

/// Reads `{"inherits_from": id | null, "policies": [{"name", "description", "columns":
/// [{"column", "action"}]}]}` for database `database_id`: the whole new document. Whether
/// `inherits_from` exists and makes no cycle is checked by the storage, atomically with the
/// write ([`crate::storage::check_inheritance`]).
pub fn data_protection_from_body(
    database_id: &str,
    body: &Map<String, Value>,
) -> Result<DataProtection, ValidationErrors> {
    let mut r = Reader::new(body);
    let inherits_from = r.text("inherits_from").flatten();
    if inherits_from.as_deref() == Some(database_id) {
        r.errors().add("inherits_from", inheritance_message::ITSELF);
    }
    let items = required_list(&mut r, "policies").unwrap_or_default();
    let mut item_errors = Vec::with_capacity(items.len());
    let mut parsed = Vec::with_capacity(items.len());
    for item in &items {
        let mut pr = Reader::new(item);
        let policy = policy(&mut pr);
        item_errors.push(pr.finish());
        parsed.push(policy);
    }
    let names = parsed.iter().map(|p| p.as_ref().map(|p| p.name.clone()));
    mark_repeats(&mut item_errors, names, "name");
    r.errors().add_items("policies", item_errors);
    let errors = r.finish();
    match parsed.into_iter().collect::<Option<Vec<_>>>() {
        Some(policies) if errors.is_empty() => Ok(DataProtection {
            inherits_from,
            policies,
        }),
        _ => Err(errors),
    }
}

fn policy(r: &mut Reader<'_>) -> Option<Policy> {
    let name = r.required_text("name", true);
    let description = r.text("description").flatten();
    let items = required_list(r, "columns");
    if items.as_ref().is_some_and(Vec::is_empty) {
        r.errors().add("columns", message::AT_LEAST_ONE);
    }
    let items = items.unwrap_or_default();
    let mut item_errors = Vec::with_capacity(items.len());
    let mut parsed = Vec::with_capacity(items.len());
    for item in &items {
        let mut cr = Reader::new(item);
        let column = cr.required_text("column", true);
        let action = cr.choice::<ColumnAction>("action", true);
        item_errors.push(cr.finish());
        parsed.push(
            column
                .zip(action)
                .map(|(column, action)| ColumnRule { column, action }),
        );
    }
    let columns = parsed.iter().map(|c| c.as_ref().map(|c| c.column.clone()));
    mark_repeats(&mut item_errors, columns, "column");
    let valid = item_errors.iter().all(ValidationErrors::is_empty);
    r.errors().add_items("columns", item_errors);
    let columns: Vec<ColumnRule> = parsed.into_iter().collect::<Option<_>>()?;
    (valid && !columns.is_empty()).then_some(Policy {
        name: name?,
        description,
        columns,
    })
}
