//! Database bodies: create bodies with their credentials, PATCH bodies, and setup bodies.

use proptest::collection::vec;
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Value, json};

use crate::strategies::*;
use crate::support::*;

/// The database fields other than credentials, in response order.
pub(crate) const DATABASE_FIELDS: [&str; 15] = [
    "name",
    "adapter",
    "hostname",
    "port",
    "database",
    "ssl",
    "verify_server_hostname",
    "restrict_access",
    "review_bypass_allowed",
    "group",
    "slack_channel",
    "tunnel_id",
    "ai_enabled",
    "ai_max_rows",
    "connection_parameters",
];

pub(crate) const REQUIRED_ON_CREATE: &[&str] = &["name", "adapter", "hostname", "database"];

/// What to send in each database field (credentials aside).
pub(crate) fn database_fields() -> FieldTable {
    vec![
        ("name", required_text()),
        ("adapter", adapter()),
        ("hostname", hostname()),
        ("port", port()),
        ("database", required_text()),
        ("ssl", flag()),
        ("verify_server_hostname", flag()),
        ("restrict_access", flag()),
        ("review_bypass_allowed", flag()),
        ("group", optional_text()),
        ("slack_channel", optional_text()),
        ("tunnel_id", optional_text()),
        ("ai_enabled", flag()),
        ("ai_max_rows", ai_max_rows()),
        ("connection_parameters", connection_parameters()),
    ]
}

/// `verify_server_hostname: true` needs a CA certificate: without one, send false instead.
pub(crate) fn verify_only_with_ca(fields: &mut Fields, has_ca: bool) {
    let verifies = fields
        .iter()
        .any(|(key, given)| *key == "verify_server_hostname" && given.send == json!(true));
    if verifies && !has_ca {
        set_field(fields, "verify_server_hostname", Given::same(false));
    }
}

pub(crate) fn is_reserved_parameter(name: &str) -> bool {
    ["user", "database"].contains(&name.to_ascii_lowercase().as_str())
}

pub(crate) fn parameter_name() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_.]{0,20}".prop_filter("not reserved", |name| !is_reserved_parameter(name))
}

/// A parameter value: any one-line string is kept as given (`""` and spaces included), null
/// reads back as `""`.
pub(crate) fn parameter_value() -> BoxedStrategy<Given> {
    prop_oneof![
        4 => text().prop_map(Given::same),
        1 => select(&["", " ", "   ", "\u{a0}", "\u{3000}"][..]).prop_map(Given::same),
        1 => Just(Given::reads_as(Value::Null, "")),
    ]
    .boxed()
}

/// 0–5 `{name, value}` items with distinct names (without case); a left-out value reads back
/// as `""`, and null for the whole list as `[]`.
pub(crate) fn connection_parameters() -> BoxedStrategy<Given> {
    let item = (parameter_name(), weighted(0.9, parameter_value()));
    prop_oneof![
        5 => vec(item, 0..=5)
            .prop_filter("names are distinct without case", |items| {
                distinct(items.iter().map(|(name, _)| name.to_ascii_lowercase()))
            })
            .prop_map(|items| {
                let send = items
                    .iter()
                    .map(|(name, value)| match value {
                        Some(value) => json!({"name": name, "value": value.send}),
                        None => json!({"name": name}),
                    })
                    .collect::<Vec<_>>();
                let expect = items
                    .iter()
                    .map(|(name, value)| {
                        let value = value.as_ref().map_or(json!(""), |v| v.expect.clone());
                        json!({"name": name, "value": value})
                    })
                    .collect::<Vec<_>>();
                Given::reads_as(send, expect)
            }),
        1 => Just(Given::reads_as(Value::Null, json!([]))),
    ]
    .boxed()
}

/// The password of a credential item.
#[derive(Clone, Debug)]
pub(crate) enum Password {
    /// Not in the item: a stored credential keeps its password.
    LeftOut,
    /// A new password.
    Set(String),
    /// Null or a blank string: no password.
    Cleared(Value),
}

pub(crate) fn password() -> BoxedStrategy<Password> {
    prop_oneof![
        4 => password_text().prop_map(Password::Set),
        1 => Just(Password::LeftOut),
        1 => prop_oneof![Just(Value::Null), blank().prop_map(Value::from)]
            .prop_map(Password::Cleared),
    ]
    .boxed()
}

/// A credential item of a request.
#[derive(Clone, Debug)]
pub(crate) struct CredentialBody {
    /// The `"id"` the item carries, if any.
    pub(crate) id: Option<String>,
    /// `None`: left out (a stored credential keeps its username).
    pub(crate) username: Option<Given>,
    pub(crate) password: Password,
    /// `hostname`, `ai_allowed`, `timeout`, `reviews_required`, `default_credential`.
    pub(crate) fields: Fields,
}

impl CredentialBody {
    pub(crate) fn json(&self) -> Value {
        let mut item = fields_json(&self.fields);
        if let Some(id) = &self.id {
            item.insert("id".into(), id.clone().into());
        }
        if let Some(username) = &self.username {
            item.insert("username".into(), username.send.clone());
        }
        match &self.password {
            Password::LeftOut => {}
            Password::Set(password) => {
                item.insert("password".into(), password.clone().into());
            }
            Password::Cleared(value) => {
                item.insert("password".into(), value.clone());
            }
        }
        Value::Object(item)
    }

    pub(crate) fn username_sent(&self) -> Option<&Value> {
        self.username.as_ref().map(|u| &u.send)
    }
}

/// The credential fields other than username, password and default_credential.
pub(crate) fn credential_fields() -> FieldTable {
    vec![
        ("hostname", optional_host()),
        ("ai_allowed", flag()),
        ("timeout", timeout()),
        ("reviews_required", reviews_required()),
    ]
}

/// `default_credential` sent as anything but true.
pub(crate) fn not_default() -> BoxedStrategy<Given> {
    prop_oneof![
        Just(Given::same(false)),
        Just(Given::reads_as(Value::Null, false)),
    ]
    .boxed()
}

/// A new credential for a create body.
pub(crate) fn new_credential() -> BoxedStrategy<CredentialBody> {
    (
        non_blank_text(),
        password(),
        some_of(credential_fields(), 0.5, &[]),
        weighted(0.5, not_default()),
    )
        .prop_map(|(username, password, mut fields, not_default)| {
            if let Some(flag) = not_default {
                fields.push(("default_credential", flag));
            }
            CredentialBody {
                id: None,
                username: Some(Given::same(username)),
                password,
                fields,
            }
        })
        .boxed()
}

/// 1–5 new credentials with distinct usernames, at most one of them the default.
pub(crate) fn new_credentials() -> BoxedStrategy<Vec<CredentialBody>> {
    (vec(new_credential(), 1..=5), any::<Option<Index>>())
        .prop_filter("usernames are distinct", |(credentials, _)| {
            distinct(credentials.iter().map(CredentialBody::username_sent))
        })
        .prop_map(|(mut credentials, default)| {
            if let Some(index) = default {
                let i = index.index(credentials.len());
                set_field(
                    &mut credentials[i].fields,
                    "default_credential",
                    Given::same(true),
                );
            }
            credentials
        })
        .boxed()
}

/// A valid create-database body.
#[derive(Clone, Debug)]
pub(crate) struct CreateBody {
    pub(crate) fields: Fields,
    pub(crate) credentials: Vec<CredentialBody>,
    pub(crate) tls: Tls,
}

pub(crate) fn create_body() -> BoxedStrategy<CreateBody> {
    (
        some_of(database_fields(), 0.5, REQUIRED_ON_CREATE),
        new_credentials(),
        some_tls(0.25),
    )
        .prop_map(|(mut fields, credentials, tls)| {
            verify_only_with_ca(&mut fields, tls.ca.is_some());
            CreateBody {
                fields,
                credentials,
                tls,
            }
        })
        .boxed()
}

impl CreateBody {
    pub(crate) fn json(&self) -> Value {
        let mut body = fields_json(&self.fields);
        let credentials = self.credentials.iter().map(CredentialBody::json).collect();
        body.insert("credentials".into(), credentials);
        self.tls.add_to(&mut body);
        Value::Object(body)
    }
}

/// Which stored item (credential, panel, action) an item of an update names.
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// One of the stored items (by position): the item carries its id.
    Stored(Index),
    /// An id the record does not have (`""` included): a new item.
    Foreign(String),
    /// No id: a new item.
    New,
}

/// A credential item of a PATCH.
#[derive(Clone, Debug)]
pub(crate) struct CredentialPatch {
    pub(crate) target: Target,
    /// Whether an item that keeps a stored credential also sends its username (new ones always
    /// do).
    pub(crate) send_username: bool,
    /// Send the username of this stored credential instead of the generated one: valid when
    /// that credential leaves the list, a conflict when it stays.
    pub(crate) reuse_username: Option<Index>,
    pub(crate) body: CredentialBody,
}

pub(crate) fn target() -> BoxedStrategy<Target> {
    prop_oneof![
        4 => any::<Index>().prop_map(Target::Stored),
        2 => Just(Target::New),
        1 => prop_oneof![Just(String::new()), "crd_[0-9a-z]{26}", text()].prop_map(Target::Foreign),
    ]
    .boxed()
}

pub(crate) fn credential_patch() -> BoxedStrategy<CredentialPatch> {
    (
        (target(), any::<bool>(), weighted(0.2, any::<Index>())),
        non_blank_text(),
        password(),
        some_of(credential_fields(), 0.4, &[]),
        not_default(),
    )
        .prop_map(
            |(
                (target, send_username, reuse_username),
                username,
                password,
                mut fields,
                not_default,
            )| {
                fields.push(("default_credential", not_default));
                CredentialPatch {
                    target,
                    send_username,
                    reuse_username,
                    body: CredentialBody {
                        id: None,
                        username: Some(Given::same(username)),
                        password,
                        fields,
                    },
                }
            },
        )
        .boxed()
}

/// 1–5 items with distinct usernames, each sending `default_credential` (true on one at
/// most), so the list that results never has two defaults.
pub(crate) fn credential_patches() -> BoxedStrategy<Vec<CredentialPatch>> {
    (vec(credential_patch(), 1..=5), any::<Option<Index>>())
        .prop_filter("usernames are distinct", |(items, _)| {
            distinct(items.iter().map(|item| item.body.username_sent()))
        })
        .prop_map(|(mut items, default)| {
            if let Some(index) = default {
                let i = index.index(items.len());
                set_field(
                    &mut items[i].body.fields,
                    "default_credential",
                    Given::same(true),
                );
            }
            items
        })
        .boxed()
}

/// A valid PATCH body: a random subset of the fields.
#[derive(Clone, Debug)]
pub(crate) struct Patch {
    pub(crate) fields: Fields,
    pub(crate) ca: Option<Pem>,
    pub(crate) credentials: Option<Vec<CredentialPatch>>,
}

pub(crate) fn patch() -> BoxedStrategy<Patch> {
    (
        some_of(database_fields(), 0.3, &[]),
        weighted(0.15, pem("CERTIFICATE")),
        weighted(0.5, credential_patches()),
    )
        .prop_map(|(fields, ca, credentials)| Patch {
            fields,
            ca,
            credentials,
        })
        .boxed()
}

/// A valid setup body for [`SETUP_API_ID`].
pub(crate) fn setup_body() -> BoxedStrategy<Value> {
    let optional: FieldTable = vec![
        ("name", optional_text()),
        ("port", port()),
        ("group", optional_text()),
        ("tunnel_id", optional_text()),
        (
            "ssl",
            prop_oneof![
                select(&["enabled", "disabled", ""][..]).prop_map(Value::from),
                Just(Value::Null)
            ]
            .prop_map(Given::same)
            .boxed(),
        ),
        ("reviews_required", reviews_required()),
        ("review_bypass_allowed", flag()),
    ];
    (
        adapter(),
        hostname(),
        required_text(),
        required_text(),
        password_text(),
        some_of(optional, 0.5, &[]),
    )
        .prop_map(
            |(adapter, hostname, database, username, password, fields)| {
                let mut body = fields_json(&fields);
                body.insert("id".into(), SETUP_API_ID.into());
                body.insert("adapter".into(), adapter.send);
                body.insert("hostname".into(), hostname.send);
                body.insert("database".into(), database.send);
                body.insert("username".into(), username.send);
                body.insert("password".into(), password.into());
                Value::Object(body)
            },
        )
        .boxed()
}
