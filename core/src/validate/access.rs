//! Permissions and data protection documents (`PUT …/permissions`, `PUT …/data-protection`).
//! Each PUT replaces the whole document.

use serde_json::{Map, Value};

use super::ValidationErrors;
use super::errors::message;
use super::reader::{Items, Reader, TakenSecret};
use super::text::{NAME_MAX, Text, VALUE_MAX};
use crate::model::SealedSecret;
use crate::model::{
    AccessLevel, ColumnAction, ColumnRule, Credential, CredentialId, DataProtection, Exemption,
    Mask, MaskKind, Permission, Policy, Provisioning, SubjectKind,
};
use crate::seal::{Place, Sealer};

/// The rule of subjects, policy names and columns.
const NAME: Text = Text::Line(NAME_MAX);

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
    let permissions = Items::read(&items, |_, ir| {
        let subject_kind = ir.choice::<SubjectKind>("subject_kind", true);
        let subject = ir.required_text("subject", true, NAME);
        let access = ir.choice::<AccessLevel>("access", true);
        Some(Permission {
            subject_kind: subject_kind?,
            subject: subject?,
            access: access?,
        })
    })
    // One subject however it is written (its case, its Unicode form): docs/api.md, "Who may do
    // what". It is stored as written.
    .unique_by("subject", |p| {
        Some((
            p.subject_kind,
            crate::model::identity::normalized(&p.subject),
        ))
    })
    .finish(r.errors(), "permissions");
    let errors = r.finish();
    match permissions {
        Some(permissions) if errors.is_empty() => Ok(permissions),
        _ => Err(errors),
    }
}

/// Reads `{"inherits_from": id | null, "policies": [{"name", "description", "columns":
/// [{"column", "action"}]}]}` for database `database_id`: the whole new document. Whether
/// `inherits_from` exists and makes no cycle is checked by the storage, atomically with the
/// write (`storage::rules::check_inheritance`).
pub fn data_protection_from_body(
    database_id: &str,
    body: &Map<String, Value>,
    stored: Option<&Provisioning>,
    sealer: &Sealer,
) -> Result<DataProtection, ValidationErrors> {
    let mut r = Reader::new(body);
    let inherits_from = r.text("inherits_from", NAME).flatten();
    if inherits_from.as_deref() == Some(database_id) {
        r.errors().add("inherits_from", message::INHERITS_ITSELF);
    }
    let provisioning = match r.object("provisioning") {
        Some(Some(object)) => {
            let mut pr = Reader::new(object);
            let read = provisioning(&mut pr, database_id, stored, sealer);
            let errors = pr.finish();
            if !errors.is_empty() {
                r.errors().add_nested("provisioning", errors);
            }
            read
        }
        _ => None,
    };
    let items = required_list(&mut r, "policies").unwrap_or_default();
    let policies = Items::read(&items, |_, pr| policy(pr))
        .unique_by("name", |p| Some(p.name.clone()))
        .finish(r.errors(), "policies");
    if provisioning.is_none()
        && !r.errors().fields().any(|f| f == "provisioning")
        && policies
            .as_ref()
            .is_some_and(|p: &Vec<Policy>| p.iter().any(|p| !p.exempt.is_empty()))
    {
        r.errors().add(
            "provisioning",
            "required when a policy exempts someone: an exempt caller's runs use it",
        );
    }
    let errors = r.finish();
    match policies {
        Some(policies) if errors.is_empty() => Ok(DataProtection {
            inherits_from,
            policies,
            provisioning,
        }),
        _ => Err(errors),
    }
}

/// The provisioning credential: `username`, `password` (write-only: left out, the stored one
/// is kept; needed when there is none), `schemas` (names; empty or left out: all) and
/// `auto_apply`. The password is sealed for the credential's place.
fn provisioning(
    r: &mut Reader<'_>,
    database_id: &str,
    stored: Option<&Provisioning>,
    sealer: &Sealer,
) -> Option<Provisioning> {
    let username = r.required_text("username", true, NAME)?;
    // A new login or a new password is a new credential (a new id), so that the sessions of
    // the old one are not reused for exempt runs; the same login without a password keeps its
    // id and password.
    let given = r.password("password", &TakenSecret::copied(r.body(), "password"));
    if given.is_none() && r.has("password") {
        return None;
    }
    if let Some(Some(_)) = &given {
        let id = CredentialId::generate();
        let place = Place::password(database_id, id.as_str());
        let password = r.sealed("password", given, sealer, &place)??;
        return provisioned(r, id, username, password);
    }
    let Some(stored) = stored.filter(|p| p.credential.password.is_some()) else {
        r.errors()
            .add("password", "required: the provisioning login's password");
        return None;
    };
    if stored.credential.username != username {
        // Another login takes its own password: the stored one is another login's.
        r.errors().add(
            "password",
            "required: another login than the stored one needs its password",
        );
        return None;
    }
    let password = stored.credential.password.clone()?;
    provisioned(r, stored.credential.id.clone(), username, password)
}

/// The rest of the provisioning credential, with its `id`, `username` and sealed `password`.
fn provisioned(
    r: &mut Reader<'_>,
    id: CredentialId,
    username: String,
    password: SealedSecret,
) -> Option<Provisioning> {
    let schemas = schema_names(r)?;
    let auto_apply = r.boolean("auto_apply").flatten().unwrap_or(false);
    Some(Provisioning {
        credential: Credential {
            id,
            username,
            password: Some(password),
            // Bound by the service, which knows the database's destination.
            password_for: None,
            hostname: None,
            ai_allowed: false,
            timeout: None,
            reviews_required: 0,
            default_credential: false,
        },
        schemas,
        auto_apply,
    })
}

/// `schemas`: a list of distinct schema names; null or left out: none (every schema).
fn schema_names(r: &mut Reader<'_>) -> Option<Vec<String>> {
    let items = match r.body().get("schemas") {
        None | Some(Value::Null) => return Some(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            r.errors().add("schemas", "must be a list of schema names");
            return None;
        }
    };
    let mut names: Vec<String> = Vec::new();
    for item in items {
        let name = item.as_str().map(str::trim).unwrap_or_default();
        if name.is_empty() || NAME.check(name).is_err() {
            r.errors()
                .add("schemas", "each item is a schema's name (non-blank text)");
            return None;
        }
        if names.iter().any(|n| n == name) {
            r.errors().add("schemas", format!("{name} is listed twice"));
            return None;
        }
        names.push(name.to_owned());
    }
    Some(names)
}

fn policy(r: &mut Reader<'_>) -> Option<Policy> {
    let name = r.required_text("name", true, NAME);
    let description = r.text("description", Text::Lines(VALUE_MAX)).flatten();
    let items = required_list(r, "columns");
    if items.as_ref().is_some_and(Vec::is_empty) {
        r.errors().add("columns", message::AT_LEAST_ONE);
    }
    let columns = Items::read(&items.unwrap_or_default(), |_, cr| {
        let column = cr.required_text("column", true, NAME);
        let action = cr.choice::<ColumnAction>("action", true);
        let mask = mask(cr, action);
        Some(ColumnRule {
            column: column?,
            action: action?,
            mask: mask?,
        })
    })
    .unique_by("column", |c| Some(c.column.clone()))
    .finish(r.errors(), "columns");
    let exempt = match r.objects("exempt") {
        Some(items) => Items::read(&items.unwrap_or_default(), |_, er| {
            let subject_kind = er.choice::<SubjectKind>("subject_kind", true);
            let subject = er.required_text("subject", true, NAME);
            Some(Exemption {
                subject_kind: subject_kind?,
                subject: subject?,
            })
        })
        .unique_by("subject", |e| {
            Some((
                e.subject_kind,
                crate::model::identity::normalized(&e.subject),
            ))
        })
        .finish(r.errors(), "exempt"),
        None if r.has("exempt") => None,
        None => Some(Vec::new()),
    };
    let (columns, exempt) = (columns?, exempt?);
    (!columns.is_empty()).then_some(Policy {
        name: name?,
        description,
        columns,
        exempt,
    })
}

/// A masked column's `mask` (`full` when left out; `partial` with `keep_first` and
/// `keep_last`, at most [`Mask::MAX_KEPT`] each, one of them above 0). A hidden column takes
/// none of these.
fn mask(r: &mut Reader<'_>, action: Option<ColumnAction>) -> Option<Mask> {
    let given = |r: &Reader<'_>, key: &str| r.has(key);
    if action == Some(ColumnAction::Hide) {
        for key in ["mask", "keep_first", "keep_last"] {
            if given(r, key) {
                r.errors()
                    .add(key, "only a masked column (action mask) takes it");
            }
        }
        return Some(Mask::default());
    }
    let kind = if given(r, "mask") {
        r.choice::<MaskKind>("mask", true)?
    } else {
        MaskKind::Full
    };
    let max = i64::from(Mask::MAX_KEPT);
    let kept = |r: &mut Reader<'_>, key: &str| -> Option<u8> {
        if kind != MaskKind::Partial {
            if given(r, key) {
                r.errors().add(key, "only a partial mask takes it");
                return None;
            }
            return Some(0);
        }
        match r.integer(key, 0, max) {
            Some(Some(n)) => u8::try_from(n).ok(),
            Some(None) => Some(0),
            None if given(r, key) => None,
            None => Some(0),
        }
    };
    let keep_first = kept(r, "keep_first");
    let keep_last = kept(r, "keep_last");
    let (keep_first, keep_last) = (keep_first?, keep_last?);
    if kind == MaskKind::Partial && keep_first == 0 && keep_last == 0 {
        r.errors().add(
            "keep_first",
            "a partial mask keeps some characters: keep_first or keep_last above 0",
        );
        return None;
    }
    Some(Mask {
        kind,
        keep_first,
        keep_last,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn document(column: Value) -> Result<DataProtection, ValidationErrors> {
        let body = json!({"policies": [{"name": "pii", "columns": [column]}]});
        let sealer = Sealer::ephemeral().unwrap();
        data_protection_from_body("db_1", body.as_object().unwrap(), None, &sealer)
    }

    #[test]
    fn masks_are_read_with_their_counts_and_refused_where_they_do_not_apply() {
        let rule = |column: Value| document(column).unwrap().policies[0].columns[0].clone();
        assert_eq!(
            rule(json!({"column": "u.e", "action": "mask"})).mask,
            Mask::default(),
            "full by default"
        );
        assert_eq!(
            rule(json!({"column": "u.e", "action": "mask", "mask": "partial", "keep_last": 4}))
                .mask,
            Mask {
                kind: MaskKind::Partial,
                keep_first: 0,
                keep_last: 4
            }
        );
        assert_eq!(
            rule(json!({"column": "u.e", "action": "mask", "mask": "email"}))
                .mask
                .kind,
            MaskKind::Email
        );
        for (bad, field) in [
            (
                json!({"column": "u.e", "action": "hide", "mask": "email"}),
                "mask",
            ),
            (
                json!({"column": "u.e", "action": "mask", "mask": "blur"}),
                "mask",
            ),
            (
                json!({"column": "u.e", "action": "mask", "mask": "partial"}),
                "keep_first",
            ),
            (
                json!({"column": "u.e", "action": "mask", "mask": "partial", "keep_first": 17}),
                "keep_first",
            ),
            (
                json!({"column": "u.e", "action": "mask", "mask": "email", "keep_last": 2}),
                "keep_last",
            ),
            (
                json!({"column": "u.e", "action": "mask", "mask": "partial", "keep_last": -1}),
                "keep_last",
            ),
        ] {
            let errors = document(bad.clone()).expect_err(&bad.to_string());
            let text = serde_json::to_string(&errors).unwrap();
            assert!(text.contains(field), "{bad}: {text}");
        }
    }

    #[test]
    fn a_mask_is_stored_as_the_action_suffix_and_read_back() {
        for mask in [
            Mask::default(),
            Mask {
                kind: MaskKind::Partial,
                keep_first: 2,
                keep_last: 3,
            },
            Mask {
                kind: MaskKind::Email,
                ..Mask::default()
            },
            Mask {
                kind: MaskKind::Null,
                ..Mask::default()
            },
        ] {
            let decoded = mask.encode().map_or(Mask::default(), |text| {
                Mask::decode(&text).expect("decodes")
            });
            assert_eq!(decoded, mask);
        }
        assert_eq!(Mask::decode("partial:2"), None);
        assert_eq!(Mask::decode("blur"), None);
    }

    #[test]
    fn a_provisioning_password_is_sealed_kept_when_left_out_and_needed_for_exemptions() {
        let sealer = Sealer::ephemeral().unwrap();
        let read = |body: Value, stored: Option<&Provisioning>| {
            data_protection_from_body("db_1", body.as_object().unwrap(), stored, &sealer)
        };
        let policies = json!([{"name": "pii", "columns": [{"column": "u.e", "action": "hide"}],
                               "exempt": [{"subject_kind": "group", "subject": "auditors"}]}]);
        let errors = read(json!({"policies": policies}), None).expect_err("no provisioning");
        assert!(
            serde_json::to_string(&errors)
                .unwrap()
                .contains("exempts someone")
        );
        let errors = read(
            json!({"policies": [], "provisioning": {"username": "owner"}}),
            None,
        )
        .expect_err("no password yet");
        assert!(serde_json::to_string(&errors).unwrap().contains("password"));
        let first = read(
            json!({"policies": policies, "provisioning": {"username": "owner", "password": "pw"}}),
            None,
        )
        .unwrap()
        .provisioning
        .unwrap();
        let sealed = first.credential.password.clone().unwrap();
        assert!(
            !format!("{sealed:?}").contains("pw\""),
            "sealed, not kept as text"
        );
        let kept = read(
            json!({"policies": [], "provisioning": {"username": "owner", "schemas": ["a", "b"]}}),
            Some(&first),
        )
        .unwrap()
        .provisioning
        .unwrap();
        assert_eq!(
            kept.credential.password,
            Some(sealed),
            "left out: the stored one"
        );
        assert_eq!(
            kept.credential.id, first.credential.id,
            "the same login, the same id"
        );
        assert_eq!(kept.schemas, ["a", "b"]);
        // Another login needs its own password.
        let errors = read(
            json!({"policies": [], "provisioning": {"username": "owner2"}}),
            Some(&first),
        )
        .expect_err("another login without a password");
        assert!(
            serde_json::to_string(&errors)
                .unwrap()
                .contains("another login")
        );
        let place = Place::password("db_1", first.credential.id.as_str());
        let opened = sealer
            .open(first.credential.password.as_ref().unwrap(), &place)
            .unwrap();
        assert_eq!(opened.expose(), b"pw");
        // A new password: a new id.
        let renewed = read(
            json!({"policies": [], "provisioning": {"username": "owner", "password": "pw2"}}),
            Some(&first),
        )
        .unwrap()
        .provisioning
        .unwrap();
        assert_ne!(renewed.credential.id, first.credential.id);
        let errors = read(
            json!({"policies": [], "provisioning": {"username": "owner", "schemas": ["a", "a"]}}),
            Some(&first),
        )
        .expect_err("a schema twice");
        assert!(serde_json::to_string(&errors).unwrap().contains("twice"));
    }
}
