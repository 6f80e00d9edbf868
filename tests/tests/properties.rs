//! Property tests of the HTTP API over the in-memory backend: generated requests, checked
//! invariants.
//!
//! 1. A valid create body reads back as sent (blank optional strings as null, left-out fields
//!    as their documented defaults), and retrieve answers what create answered.
//! 2. Fields left out of an update never move: database PATCH (credentials that carry their id
//!    keep it, and their left-out fields, the password included, keep their values) and
//!    dashboard PUT (panels and actions that carry their id keep it).
//! 3. `updated_at` strictly increases over any sequence of successful updates; `inserted_at`
//!    never changes.
//! 4. Hostile bodies, paths and query strings never give a 5xx, and a refused request never
//!    changes what is stored.
//! 5. No password, certificate or key ever appears in a response body or header, even when a
//!    driver's error message repeats them all, or one secret contains another.
//!
//! Every case runs on a fresh `MemoryStorage`, driven through `ConsoleService` in a
//! current-thread Tokio runtime. What a response does not show (passwords, certificates) is
//! checked through a connection checker that records what it is handed. Only passwords use
//! Greek letters, so a password can only show up in a response by leaking.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use dbconsole_core::check::{Adapter, CheckTarget};
use dbconsole_core::{Checkers, ConnectionChecker};
use dbconsole_storage_memory::MemoryStorage;
use dbconsole_tests::{ACCESS_TOKEN, API_KEY, Api, DASHBOARDS, DATABASES, TestResponse};
use http::{Method, Request, header};
use http_body_util::Full;
use proptest::collection::vec;
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------------
// Running cases
// ---------------------------------------------------------------------------------------------

/// What a case's checks end with.
type Checked = Result<(), TestCaseError>;

/// Runs one case's requests on a fresh current-thread runtime.
fn run(case: impl Future<Output = Checked>) -> Checked {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime")
        .block_on(case)
}

/// A service over a fresh in-memory store, with no connection checker.
fn fresh_api() -> Api {
    Api::new(Arc::new(MemoryStorage::new()))
}

/// A service over a fresh in-memory store whose connection checks all go to `checker`.
fn api_checked_by(checker: Arc<dyn ConnectionChecker>) -> Api {
    let checkers = Adapter::ALL
        .into_iter()
        .fold(Checkers::none(), |checkers, adapter| {
            checkers.with(adapter, Arc::clone(&checker))
        });
    Api::with_checkers(Arc::new(MemoryStorage::new()), checkers)
}

/// A checker that connects nowhere: it records what it was asked to connect with.
#[derive(Debug, Default)]
struct RecordingChecker {
    seen: Mutex<Vec<CheckTarget>>,
}

impl RecordingChecker {
    fn last(&self) -> CheckTarget {
        self.seen
            .lock()
            .expect("checker lock")
            .pop()
            .expect("the checker was called")
    }
}

#[async_trait]
impl ConnectionChecker for RecordingChecker {
    async fn check(&self, target: &CheckTarget) -> Result<(), String> {
        self.seen.lock().expect("checker lock").push(target.clone());
        Ok(())
    }
}

/// A careless driver: its error message repeats every secret it was given, on several lines.
#[derive(Debug)]
struct EchoingChecker;

#[async_trait]
impl ConnectionChecker for EchoingChecker {
    async fn check(&self, target: &CheckTarget) -> Result<(), String> {
        let text = |secret: &Option<dbconsole_core::Secret>| {
            secret
                .as_ref()
                .and_then(|s| s.expose_str())
                .unwrap_or("-")
                .to_owned()
        };
        Err(format!(
            "FATAL: password authentication failed for user \"{}\" with password {}\n\
             ca:\n{}\ncert:\n{}\nkey:\n{}",
            target.username,
            text(&target.password),
            text(&target.ca_cert),
            text(&target.client_cert),
            text(&target.client_key),
        ))
    }
}

fn database_path(id: &str) -> String {
    format!("{DATABASES}/{id}")
}

fn dashboard_path(id: &str) -> String {
    format!("{DASHBOARDS}/{id}")
}

fn check_path(id: &str, username: &str) -> String {
    format!(
        "{DATABASES}/{id}/check-connection/{}",
        percent_encode(username)
    )
}

/// Every byte but the unreserved ones as `%XX`.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A request with both caller credentials, an optional content type and raw body bytes.
fn raw_request(
    method: Method,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header("x-api-key", API_KEY)
        .header(header::AUTHORIZATION, format!("Bearer {ACCESS_TOKEN}"));
    if let Some(content_type) = content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    builder
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|e| panic!("request to {path:?}: {e}"))
}

fn str_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// `<prefix>_` then 26 lowercase ULID characters.
fn assert_id(value: &Value, prefix: &str) -> Result<(), TestCaseError> {
    let ulid = str_of(value)
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'));
    prop_assert!(
        ulid.is_some_and(|u| u.len() == 26
            && u.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())),
        "not a {} id: {}",
        prefix,
        value
    );
    Ok(())
}

/// RFC 3339 UTC with microseconds, `2026-11-22T10:04:05.123456Z`: fixed width, so that these
/// strings compare as the instants do.
fn assert_timestamp(value: &Value) -> Result<(), TestCaseError> {
    let text = str_of(value).as_bytes();
    let shaped = text.len() == 27
        && text.iter().enumerate().all(|(i, &b)| match i {
            4 | 7 => b == b'-',
            10 => b == b'T',
            13 | 16 => b == b':',
            19 => b == b'.',
            26 => b == b'Z',
            _ => b.is_ascii_digit(),
        });
    prop_assert!(shaped, "not a timestamp: {}", value);
    Ok(())
}

/// The response with its status checked (the body is shown when it differs).
fn expect_status(response: TestResponse, status: u16, call: &str) -> Result<Value, TestCaseError> {
    prop_assert_eq!(
        response.status.as_u16(),
        status,
        "{} answered {}",
        call,
        response.text()
    );
    Ok(serde_json::from_slice(&response.body).unwrap_or(Value::Null))
}

// ---------------------------------------------------------------------------------------------
// Values and what they read back as
// ---------------------------------------------------------------------------------------------

/// A field value to send, and what a read must answer for it afterwards.
#[derive(Clone, Debug)]
struct Given {
    send: Value,
    expect: Value,
}

impl Given {
    /// Read back exactly as sent.
    fn same(value: impl Into<Value>) -> Self {
        let value = value.into();
        Self {
            send: value.clone(),
            expect: value,
        }
    }

    /// Read back as something else (null, a default…).
    fn reads_as(send: impl Into<Value>, expect: impl Into<Value>) -> Self {
        Self {
            send: send.into(),
            expect: expect.into(),
        }
    }
}

/// The fields a body sends, in order; a field not listed is left out.
type Fields = Vec<(&'static str, Given)>;

/// For each field a body may send, what to send in it.
type FieldTable = Vec<(&'static str, BoxedStrategy<Given>)>;

fn fields_json(fields: &Fields) -> Map<String, Value> {
    fields
        .iter()
        .map(|(key, given)| ((*key).to_owned(), given.send.clone()))
        .collect()
}

fn expect_of(fields: &Fields, key: &str) -> Option<Value> {
    fields
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, given)| given.expect.clone())
}

fn set_field(fields: &mut Fields, key: &'static str, given: Given) {
    fields.retain(|(k, _)| *k != key);
    fields.push((key, given));
}

/// Each field of `table` with probability `p`; the `required` ones always.
fn some_of(table: FieldTable, p: f64, required: &'static [&'static str]) -> BoxedStrategy<Fields> {
    let parts: Vec<BoxedStrategy<Option<(&'static str, Given)>>> = table
        .into_iter()
        .map(|(key, strategy)| {
            let pair = strategy.prop_map(move |given| (key, given));
            if required.contains(&key) {
                pair.prop_map(Some).boxed()
            } else {
                weighted(p, pair).boxed()
            }
        })
        .collect();
    parts
        .prop_map(|parts| parts.into_iter().flatten().collect())
        .boxed()
}

/// Printable text of any script but Greek (only passwords hold Greek letters).
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => "[a-zA-Z0-9 ._@:/'-]{1,24}",
        2 => "[\\PC&&\\P{Greek}]{1,16}",
    ]
    .boxed()
}

/// Text that is not blank (it may still start or end with spaces).
fn non_blank_text() -> BoxedStrategy<String> {
    text()
        .prop_filter("not blank", |s| !s.trim().is_empty())
        .boxed()
}

/// Empty or whitespace-only strings: "unset" for an optional string.
fn blank() -> impl Strategy<Value = &'static str> {
    select(&["", " ", "   ", "\t", " \n ", "\u{a0}", "\u{3000}"][..])
}

/// A required string: non-blank, read back byte for byte.
fn required_text() -> BoxedStrategy<Given> {
    non_blank_text().prop_map(Given::same).boxed()
}

/// An optional string: blank or null read back as null.
fn optional_text() -> BoxedStrategy<Given> {
    prop_oneof![
        3 => non_blank_text().prop_map(Given::same),
        1 => blank().prop_map(|s| Given::reads_as(s, Value::Null)),
        1 => Just(Given::same(Value::Null)),
    ]
    .boxed()
}

/// A boolean whose default is false: null reads back as false.
fn flag() -> BoxedStrategy<Given> {
    prop_oneof![
        3 => any::<bool>().prop_map(Given::same),
        1 => Just(Given::reads_as(Value::Null, false)),
    ]
    .boxed()
}

/// A whole number in `min..=max` (the bounds more often than chance), or null read back as
/// `null_reads_as`.
fn whole_number(min: u64, max: u64, null_reads_as: Value) -> BoxedStrategy<Given> {
    prop_oneof![
        3 => (min..=max).prop_map(Given::same),
        1 => select(vec![min, max]).prop_map(Given::same),
        1 => Just(Given::reads_as(Value::Null, null_reads_as)),
    ]
    .boxed()
}

fn port() -> BoxedStrategy<Given> {
    whole_number(1, 65535, Value::Null)
}

fn ai_max_rows() -> BoxedStrategy<Given> {
    whole_number(1, u64::from(u32::MAX), json!(500))
}

fn timeout() -> BoxedStrategy<Given> {
    whole_number(1, u64::from(u32::MAX), Value::Null)
}

fn reviews_required() -> BoxedStrategy<Given> {
    whole_number(0, u64::from(u32::MAX), json!(0))
}

const ADAPTERS: [&str; 5] = ["postgres", "mysql", "clickhouse", "sqlserver", "oracle"];

fn adapter() -> BoxedStrategy<Given> {
    select(&ADAPTERS[..]).prop_map(Given::same).boxed()
}

/// Host names, IPv4 and IPv6 addresses, and any other non-blank text (nothing checks the
/// syntax).
fn hostname() -> BoxedStrategy<Given> {
    prop_oneof![
        3 => "[a-z0-9][a-z0-9-]{0,15}(\\.[a-z0-9-]{1,12}){0,3}",
        1 => any::<[u8; 4]>().prop_map(|ip| std::net::Ipv4Addr::from(ip).to_string()),
        1 => any::<[u16; 8]>().prop_map(|ip| std::net::Ipv6Addr::from(ip).to_string()),
        1 => non_blank_text(),
    ]
    .prop_map(Given::same)
    .boxed()
}

/// A password: Greek letters at both ends and among the rest, so that no other generated text
/// can contain it.
fn password_text() -> impl Strategy<Value = String> {
    "[Α-Ωα-ω][Α-Ωα-ω0-9!#$%&*+,.:;=?@^_~-]{10,22}[α-ω]"
}

// ---------------------------------------------------------------------------------------------
// Certificates and keys
// ---------------------------------------------------------------------------------------------

/// A PEM document: the text, its random body line, and the base64 that is sent.
#[derive(Clone, Debug)]
struct Pem {
    text: String,
    body: String,
    base64: String,
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let byte = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (byte(0) << 16) | (byte(1) << 8) | byte(2);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn pem(label: &'static str) -> BoxedStrategy<Pem> {
    "[A-Za-z0-9+/]{48,96}"
        .prop_map(move |body| {
            let text = format!("-----BEGIN {label}-----\n{body}\n-----END {label}-----\n");
            Pem {
                base64: base64(text.as_bytes()),
                text,
                body,
            }
        })
        .boxed()
}

/// Certificate and key material a body may send (`ssl_ca_cert`, `ssl_cert`, `ssl_key`).
#[derive(Clone, Debug, Default)]
struct Tls {
    ca: Option<Pem>,
    cert: Option<Pem>,
    key: Option<Pem>,
}

impl Tls {
    fn add_to(&self, body: &mut Map<String, Value>) {
        for (key, pem) in [
            ("ssl_ca_cert", &self.ca),
            ("ssl_cert", &self.cert),
            ("ssl_key", &self.key),
        ] {
            if let Some(pem) = pem {
                body.insert(key.to_owned(), pem.base64.clone().into());
            }
        }
    }

    fn pems(&self) -> impl Iterator<Item = &Pem> {
        [&self.ca, &self.cert, &self.key].into_iter().flatten()
    }
}

fn some_tls(p: f64) -> BoxedStrategy<Tls> {
    (
        weighted(p, pem("CERTIFICATE")),
        weighted(p, pem("CERTIFICATE")),
        weighted(p, pem("PRIVATE KEY")),
    )
        .prop_map(|(ca, cert, key)| Tls { ca, cert, key })
        .boxed()
}

fn full_tls() -> BoxedStrategy<Tls> {
    (pem("CERTIFICATE"), pem("CERTIFICATE"), pem("PRIVATE KEY"))
        .prop_map(|(ca, cert, key)| Tls {
            ca: Some(ca),
            cert: Some(cert),
            key: Some(key),
        })
        .boxed()
}

/// The bytes a checker must receive for a PEM, as text.
fn pem_text(pem: Option<&Pem>) -> Option<String> {
    pem.map(|pem| pem.text.clone())
}

// ---------------------------------------------------------------------------------------------
// Database bodies
// ---------------------------------------------------------------------------------------------

/// The database fields other than credentials, in response order.
const DATABASE_FIELDS: [&str; 15] = [
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

const REQUIRED_ON_CREATE: &[&str] = &["name", "adapter", "hostname", "database"];

/// What to send in each database field (credentials aside).
fn database_fields() -> FieldTable {
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

/// What a new database reads back for a field its create body left out (contract.md 2).
fn database_default(key: &str) -> Value {
    match key {
        "port" | "group" | "slack_channel" | "tunnel_id" => Value::Null,
        "ssl"
        | "verify_server_hostname"
        | "restrict_access"
        | "review_bypass_allowed"
        | "ai_enabled" => json!(false),
        "ai_max_rows" => json!(500),
        "connection_parameters" => json!([]),
        _ => panic!("{key} has no default"),
    }
}

/// `verify_server_hostname: true` needs a CA certificate: without one, send false instead.
fn verify_only_with_ca(fields: &mut Fields, has_ca: bool) {
    let verifies = fields
        .iter()
        .any(|(key, given)| *key == "verify_server_hostname" && given.send == json!(true));
    if verifies && !has_ca {
        set_field(fields, "verify_server_hostname", Given::same(false));
    }
}

fn is_reserved_parameter(name: &str) -> bool {
    ["user", "database"].contains(&name.to_ascii_lowercase().as_str())
}

fn parameter_name() -> impl Strategy<Value = String> {
    "[A-Za-z_][A-Za-z0-9_.]{0,20}".prop_filter("not reserved", |name| !is_reserved_parameter(name))
}

/// A parameter value: any string is kept as given (`""` and whitespace included), null reads
/// back as `""`.
fn parameter_value() -> BoxedStrategy<Given> {
    prop_oneof![
        4 => text().prop_map(Given::same),
        1 => blank().prop_map(Given::same),
        1 => Just(Given::reads_as(Value::Null, "")),
    ]
    .boxed()
}

/// 0–5 `{name, value}` items with distinct names (without case); a left-out value reads back
/// as `""`, and null for the whole list as `[]`.
fn connection_parameters() -> BoxedStrategy<Given> {
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

fn distinct<T: Eq + std::hash::Hash>(items: impl IntoIterator<Item = T>) -> bool {
    let mut seen = HashSet::new();
    items.into_iter().all(|item| seen.insert(item))
}

/// The password of a credential item.
#[derive(Clone, Debug)]
enum Password {
    /// Not in the item: a stored credential keeps its password.
    LeftOut,
    /// A new password.
    Set(String),
    /// Null or a blank string: no password.
    Cleared(Value),
}

impl Password {
    /// The password a credential holds after this item, given what it held before.
    fn stored(&self, before: Option<String>) -> Option<String> {
        match self {
            Password::LeftOut => before,
            Password::Set(password) => Some(password.clone()),
            Password::Cleared(_) => None,
        }
    }
}

fn password() -> BoxedStrategy<Password> {
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
struct CredentialBody {
    /// The `"id"` the item carries, if any.
    id: Option<String>,
    /// `None`: left out (a stored credential keeps its username).
    username: Option<Given>,
    password: Password,
    /// `hostname`, `ai_allowed`, `timeout`, `reviews_required`, `default_credential`.
    fields: Fields,
}

impl CredentialBody {
    fn json(&self) -> Value {
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

    /// The credential as a response shows it after this item was applied to `base` (a stored
    /// credential, or [`new_credential_view`]); without its id.
    fn read_back(&self, base: &Map<String, Value>) -> Map<String, Value> {
        let mut view = base.clone();
        view.remove("id");
        if let Some(username) = &self.username {
            view.insert("username".into(), username.expect.clone());
        }
        for (key, given) in &self.fields {
            view.insert((*key).to_owned(), given.expect.clone());
        }
        view
    }

    fn username_sent(&self) -> Option<&Value> {
        self.username.as_ref().map(|u| &u.send)
    }
}

/// A new credential's fields before its item is applied (contract.md 2, defaults).
fn new_credential_view() -> Map<String, Value> {
    match json!({
        "username": null, "hostname": null, "ai_allowed": false, "timeout": null,
        "reviews_required": 0, "default_credential": false,
    }) {
        Value::Object(view) => view,
        _ => unreachable!(),
    }
}

/// The credential fields other than username, password and default_credential.
fn credential_fields() -> FieldTable {
    vec![
        ("hostname", optional_text()),
        ("ai_allowed", flag()),
        ("timeout", timeout()),
        ("reviews_required", reviews_required()),
    ]
}

/// `default_credential` sent as anything but true.
fn not_default() -> BoxedStrategy<Given> {
    prop_oneof![
        Just(Given::same(false)),
        Just(Given::reads_as(Value::Null, false)),
    ]
    .boxed()
}

/// A new credential for a create body.
fn new_credential() -> BoxedStrategy<CredentialBody> {
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
fn new_credentials() -> BoxedStrategy<Vec<CredentialBody>> {
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
struct CreateBody {
    fields: Fields,
    credentials: Vec<CredentialBody>,
    tls: Tls,
}

fn create_body() -> BoxedStrategy<CreateBody> {
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
    fn json(&self) -> Value {
        let mut body = fields_json(&self.fields);
        let credentials = self.credentials.iter().map(CredentialBody::json).collect();
        body.insert("credentials".into(), credentials);
        self.tls.add_to(&mut body);
        Value::Object(body)
    }

    /// The database a response must show, without ids and timestamps.
    fn read_back(&self) -> Value {
        let mut db = Map::new();
        db.insert("api_id".into(), Value::Null);
        for key in DATABASE_FIELDS {
            let value = expect_of(&self.fields, key).unwrap_or_else(|| database_default(key));
            db.insert(key.into(), value);
        }
        let base = new_credential_view();
        let credentials = self
            .credentials
            .iter()
            .map(|c| Value::Object(c.read_back(&base)))
            .collect();
        db.insert("credentials".into(), credentials);
        Value::Object(db)
    }

    /// The passwords the created credentials hold, in order.
    fn passwords(&self) -> Vec<Option<String>> {
        self.credentials
            .iter()
            .map(|c| c.password.stored(None))
            .collect()
    }
}

/// A database response without what the service generates (ids, timestamps).
fn without_generated(db: &Value) -> Value {
    let mut db = db.clone();
    if let Some(object) = db.as_object_mut() {
        for key in ["id", "inserted_at", "updated_at"] {
            object.remove(key);
        }
        if let Some(Value::Array(credentials)) = object.get_mut("credentials") {
            for credential in credentials {
                if let Some(credential) = credential.as_object_mut() {
                    credential.remove("id");
                }
            }
        }
    }
    db
}

fn credentials_of(db: &Value) -> &[Value] {
    db["credentials"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// What the checker must be handed for one credential.
#[derive(Debug, PartialEq)]
struct Connection {
    host: String,
    password: Option<String>,
    ca_cert: Option<String>,
    client_cert: Option<String>,
    client_key: Option<String>,
}

fn connection_of(target: &CheckTarget) -> Connection {
    let text = |secret: &Option<dbconsole_core::Secret>| {
        secret
            .as_ref()
            .map(|s| s.expose_str().expect("UTF-8 secret").to_owned())
    };
    Connection {
        host: target.host.clone(),
        password: text(&target.password),
        ca_cert: text(&target.ca_cert),
        client_cert: text(&target.client_cert),
        client_key: text(&target.client_key),
    }
}

/// Checks the connection of every credential of `db` and compares what the checker was handed
/// with `passwords` (one per credential, in order) and `tls`.
async fn assert_connections(
    api: &Api,
    recorder: &RecordingChecker,
    db: &Value,
    passwords: &[Option<String>],
    tls: &Tls,
) -> Result<(), TestCaseError> {
    if !db["tunnel_id"].is_null() {
        // Reached through a tunnel dialer, which this service has none of: not checked here.
        return Ok(());
    }
    let id = str_of(&db["id"]);
    for (credential, password) in credentials_of(db).iter().zip(passwords) {
        let username = str_of(&credential["username"]);
        let answer = api.db(Method::GET, &check_path(id, username), None).await;
        prop_assert_eq!(answer.status.as_u16(), 200, "check {}", answer.text());
        prop_assert_eq!(answer.text(), "ok");
        let host = credential["hostname"]
            .as_str()
            .unwrap_or(str_of(&db["hostname"]));
        let expected = Connection {
            host: host.to_owned(),
            password: password.clone(),
            ca_cert: pem_text(tls.ca.as_ref()),
            client_cert: pem_text(tls.cert.as_ref()),
            client_key: pem_text(tls.key.as_ref()),
        };
        prop_assert_eq!(connection_of(&recorder.last()), expected, "{}", username);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Property 1: a valid create reads back what was sent
// ---------------------------------------------------------------------------------------------

async fn create_reads_back(body: CreateBody) -> Checked {
    let recorder = Arc::new(RecordingChecker::default());
    let api = api_checked_by(recorder.clone());
    let answer = api.db(Method::POST, DATABASES, Some(&body.json())).await;
    let created = expect_status(answer, 200, "create")?;

    assert_id(&created["id"], "db")?;
    assert_timestamp(&created["inserted_at"])?;
    prop_assert_eq!(&created["inserted_at"], &created["updated_at"]);
    for credential in credentials_of(&created) {
        assert_id(&credential["id"], "crd")?;
    }
    prop_assert_eq!(without_generated(&created), body.read_back());

    let path = database_path(str_of(&created["id"]));
    let retrieved = expect_status(api.db(Method::GET, &path, None).await, 200, "retrieve")?;
    prop_assert_eq!(&retrieved, &created);

    // What is not in a response (passwords, certificates) is what the checker is handed.
    assert_connections(&api, &recorder, &created, &body.passwords(), &body.tls).await
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn a_valid_create_reads_back_what_was_sent(body in create_body()) {
        run(create_reads_back(body))?;
    }
}

// ---------------------------------------------------------------------------------------------
// Property 2: fields left out of an update never move
// ---------------------------------------------------------------------------------------------

/// Which stored item (credential, panel, action) an item of an update names.
#[derive(Clone, Debug)]
enum Target {
    /// One of the stored items (by position): the item carries its id.
    Stored(Index),
    /// An id the record does not have (`""` included): a new item.
    Foreign(String),
    /// No id: a new item.
    New,
}

/// A credential item of a PATCH.
#[derive(Clone, Debug)]
struct CredentialPatch {
    target: Target,
    /// Whether an item that keeps a stored credential also sends its username (new ones always
    /// do).
    send_username: bool,
    /// Send the username of this stored credential instead of the generated one: valid when
    /// that credential leaves the list, a conflict when it stays.
    reuse_username: Option<Index>,
    body: CredentialBody,
}

fn target() -> BoxedStrategy<Target> {
    prop_oneof![
        4 => any::<Index>().prop_map(Target::Stored),
        2 => Just(Target::New),
        1 => prop_oneof![Just(String::new()), "crd_[0-9a-z]{26}", text()].prop_map(Target::Foreign),
    ]
    .boxed()
}

fn credential_patch() -> BoxedStrategy<CredentialPatch> {
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
fn credential_patches() -> BoxedStrategy<Vec<CredentialPatch>> {
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
struct Patch {
    fields: Fields,
    ca: Option<Pem>,
    credentials: Option<Vec<CredentialPatch>>,
}

fn patch() -> BoxedStrategy<Patch> {
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

/// A credential as the database holds it: its response object and its password.
#[derive(Clone, Debug)]
struct Held {
    view: Map<String, Value>,
    password: Option<String>,
}

/// A PATCH made concrete against the stored credentials.
struct Resolved {
    body: Value,
    /// The credentials after the PATCH, each with the stored id it keeps (`None`: new).
    credentials: Option<Vec<(Option<Value>, Held)>>,
    /// The list holds a username twice (a stored one kept next to an equal new one): the
    /// PATCH must be refused.
    conflict: bool,
}

impl Patch {
    /// The body to send, and the credentials that must result.
    fn resolve(&self, held: &[Held]) -> Resolved {
        let mut body = fields_json(&self.fields);
        if let Some(ca) = &self.ca {
            body.insert("ssl_ca_cert".into(), ca.base64.clone().into());
        }
        let Some(items) = &self.credentials else {
            return Resolved {
                body: Value::Object(body),
                credentials: None,
                conflict: false,
            };
        };
        let stored_ids: Vec<String> = held
            .iter()
            .map(|h| str_of(&h.view["id"]).to_owned())
            .collect();
        let mut taken = HashSet::new();
        let mut sent = Vec::new();
        let mut after = Vec::new();
        for item in items {
            let (id, kept_id) = resolve_id(&item.target, &stored_ids, &mut taken);
            let kept = kept_id.and_then(|id| held.iter().find(|h| h.view["id"] == id.as_str()));
            let mut credential = item.body.clone();
            credential.id = id;
            if let (Some(index), false) = (item.reuse_username, held.is_empty()) {
                let username = held[index.index(held.len())].view["username"].clone();
                credential.username = Some(Given::same(username));
            }
            if kept.is_some() && !item.send_username {
                credential.username = None;
            }
            let base = kept.map_or_else(new_credential_view, |k| k.view.clone());
            let held_after = Held {
                view: credential.read_back(&base),
                password: credential
                    .password
                    .stored(kept.and_then(|k| k.password.clone())),
            };
            sent.push(credential.json());
            after.push((kept.map(|k| k.view["id"].clone()), held_after));
        }
        let usernames = after.iter().map(|(_, h)| h.view["username"].to_string());
        let conflict = !distinct(usernames);
        body.insert("credentials".into(), Value::Array(sent));
        Resolved {
            body: Value::Object(body),
            credentials: Some(after),
            conflict,
        }
    }
}

/// A response object without its `id`.
fn without_id(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(object) = value.as_object_mut() {
        object.remove("id");
    }
    value
}

async fn update_keeps_left_out_fields(create: CreateBody, mut patch: Patch) -> Checked {
    verify_only_with_ca(
        &mut patch.fields,
        create.tls.ca.is_some() || patch.ca.is_some(),
    );
    let recorder = Arc::new(RecordingChecker::default());
    let api = api_checked_by(recorder.clone());
    let answer = api.db(Method::POST, DATABASES, Some(&create.json())).await;
    let before = expect_status(answer, 200, "create")?;
    let held: Vec<Held> = credentials_of(&before)
        .iter()
        .zip(create.passwords())
        .map(|(view, password)| Held {
            view: view.as_object().cloned().unwrap_or_default(),
            password,
        })
        .collect();
    let resolved = patch.resolve(&held);
    let path = database_path(str_of(&before["id"]));
    let answer = api.db(Method::PATCH, &path, Some(&resolved.body)).await;

    if resolved.conflict {
        let refused = expect_status(answer, 422, "update with a username twice")?;
        prop_assert!(refused["errors"]["credentials"].is_array(), "{}", refused);
        let retrieved = api.db(Method::GET, &path, None).await.json();
        prop_assert_eq!(retrieved, before);
        return Ok(());
    }
    let after = expect_status(answer, 200, "update")?;
    let retrieved = expect_status(api.db(Method::GET, &path, None).await, 200, "retrieve")?;
    prop_assert_eq!(&retrieved, &after);

    for key in ["id", "api_id", "inserted_at"] {
        prop_assert_eq!(&after[key], &before[key], "{}", key);
    }
    for key in DATABASE_FIELDS {
        let expected = expect_of(&patch.fields, key).unwrap_or_else(|| before[key].clone());
        prop_assert_eq!(&after[key], &expected, "{}", key);
    }

    let held_after = match &resolved.credentials {
        None => {
            prop_assert_eq!(&after["credentials"], &before["credentials"]);
            held
        }
        Some(expected) => {
            let actual = credentials_of(&after);
            prop_assert_eq!(actual.len(), expected.len());
            let stored: Vec<&Value> = credentials_of(&before).iter().map(|c| &c["id"]).collect();
            for (actual, (kept_id, held)) in actual.iter().zip(expected) {
                match kept_id {
                    Some(id) => prop_assert_eq!(&actual["id"], id, "a kept credential's id"),
                    None => {
                        assert_id(&actual["id"], "crd")?;
                        prop_assert!(
                            !stored.contains(&&actual["id"]),
                            "a new one got a stored id"
                        );
                    }
                }
                prop_assert_eq!(without_id(actual), Value::Object(held.view.clone()));
            }
            expected.iter().map(|(_, held)| held.clone()).collect()
        }
    };

    // What is not in a response (passwords, certificates) is what the checker is handed.
    let tls = Tls {
        ca: patch.ca.clone().or(create.tls.ca.clone()),
        ..create.tls.clone()
    };
    let passwords: Vec<Option<String>> = held_after.into_iter().map(|h| h.password).collect();
    assert_connections(&api, &recorder, &after, &passwords, &tls).await
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn fields_left_out_of_an_update_never_move(create in create_body(), patch in patch()) {
        run(update_keeps_left_out_fields(create, patch))?;
    }
}

// ---------------------------------------------------------------------------------------------
// Dashboards
// ---------------------------------------------------------------------------------------------

fn query_details() -> BoxedStrategy<Given> {
    (non_blank_text(), "[\\PC\n\t]{1,80}")
        .prop_filter("the query is not blank", |(_, query)| {
            !query.trim().is_empty()
        })
        .prop_map(|(credential_id, query)| {
            Given::same(
                json!({"__type__": "query", "query": query, "credential_id": credential_id}),
            )
        })
        .boxed()
}

/// `{key: Given}` pairs with distinct keys as a list of objects (the key goes in `key_name`);
/// null for the whole list reads back as `[]`.
fn keyed_list(
    key_name: &'static str,
    item: BoxedStrategy<Given>,
    len: std::ops::Range<usize>,
) -> BoxedStrategy<Given> {
    prop_oneof![
        4 => vec((non_blank_text(), item), len)
            .prop_filter("keys are distinct", |items| distinct(items.iter().map(|(key, _)| key)))
            .prop_map(move |items| {
                let (send, expect) = items
                    .into_iter()
                    .map(|(key, mut given)| {
                        given.send[key_name] = key.clone().into();
                        given.expect[key_name] = key.into();
                        (given.send, given.expect)
                    })
                    .unzip::<_, _, Vec<_>, Vec<_>>();
                Given::reads_as(send, expect)
            }),
        1 => Just(Given::reads_as(Value::Null, json!([]))),
    ]
    .boxed()
}

/// A panel input without its key: the description is kept as given, null or left out read
/// back as `""`.
fn panel_input() -> BoxedStrategy<Given> {
    prop_oneof![
        3 => prop_oneof![text(), Just(String::new()), blank().prop_map(str::to_owned)]
            .prop_map(|d| Given::same(json!({"description": d}))),
        1 => Just(Given::reads_as(json!({"description": null}), json!({"description": ""}))),
        1 => Just(Given::reads_as(json!({}), json!({"description": ""}))),
    ]
    .boxed()
}

/// An optional member of an object: sent when given, read back as null when left out.
fn optional_member(object: &mut Given, key: &str, given: Option<Given>) {
    match given {
        Some(given) => {
            object.send[key] = given.send;
            object.expect[key] = given.expect;
        }
        None => object.expect[key] = Value::Null,
    }
}

/// An input mapping without its key: from a result column (`prompt_user` false, left out or
/// null), or prompting the user (`column` left out, null or blank); `prompt` optional.
fn input_mapping() -> BoxedStrategy<Given> {
    let not_prompting = prop_oneof![
        Just(None),
        Just(Some(Given::same(false))),
        Just(Some(Given::reads_as(Value::Null, false))),
    ];
    let by_column = (non_blank_text(), not_prompting).prop_map(|(column, prompt_user)| {
        let mut mapping = Given::reads_as(json!({"column": column}), json!({"column": column}));
        match prompt_user {
            Some(given) => {
                mapping.send["prompt_user"] = given.send;
                mapping.expect["prompt_user"] = given.expect;
            }
            None => mapping.expect["prompt_user"] = false.into(),
        }
        mapping
    });
    let no_column = prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        blank().prop_map(|b| Some(Value::from(b))),
    ];
    let by_prompt = no_column.prop_map(|column| {
        let mut mapping = Given::reads_as(
            json!({"prompt_user": true}),
            json!({"prompt_user": true, "column": null}),
        );
        if let Some(column) = column {
            mapping.send["column"] = column;
        }
        mapping
    });
    (
        prop_oneof![by_column, by_prompt],
        weighted(0.6, optional_text()),
    )
        .prop_map(|(mut mapping, prompt)| {
            optional_member(&mut mapping, "prompt", prompt);
            mapping
        })
        .boxed()
}

/// A row action of a request: which stored action it names, what it sends and reads back as
/// (without its id).
#[derive(Clone, Debug)]
struct ActionBody {
    target: Target,
    given: Given,
}

fn action() -> BoxedStrategy<ActionBody> {
    (
        target(),
        weighted(0.8, optional_text()),
        weighted(0.8, optional_text()),
        weighted(0.8, keyed_list("workflow_input_key", input_mapping(), 0..3)),
    )
        .prop_map(|(target, label, workflow_id, mappings)| {
            let mut given = Given::reads_as(json!({}), json!({}));
            optional_member(&mut given, "label", label);
            optional_member(&mut given, "workflow_id", workflow_id);
            match mappings {
                Some(mappings) => {
                    given.send["input_mappings"] = mappings.send;
                    given.expect["input_mappings"] = mappings.expect;
                }
                None => given.expect["input_mappings"] = json!([]),
            }
            ActionBody { target, given }
        })
        .boxed()
}

/// A panel of a request: which stored panel it names, its own fields, and its actions.
#[derive(Clone, Debug)]
struct PanelBody {
    target: Target,
    /// Title, inputs and details (actions aside).
    given: Given,
    actions: Vec<ActionBody>,
    /// How an empty action list is sent: `[]`, null or left out.
    empty_actions: Value,
}

fn panel() -> BoxedStrategy<PanelBody> {
    (
        target(),
        non_blank_text(),
        weighted(0.8, keyed_list("key", panel_input(), 0..3)),
        vec(action(), 0..3),
        select(vec![json!([]), Value::Null, json!("left out")]),
        query_details(),
    )
        .prop_map(|(target, title, inputs, actions, empty_actions, details)| {
            let mut given = Given::same(json!({"title": title, "details": details.send}));
            match inputs {
                Some(inputs) => {
                    given.send["inputs"] = inputs.send;
                    given.expect["inputs"] = inputs.expect;
                }
                None => given.expect["inputs"] = json!([]),
            }
            PanelBody {
                target,
                given,
                actions,
                empty_actions,
            }
        })
        .boxed()
}

/// The ids a dashboard holds now, that a request's panels and actions may name.
#[derive(Default)]
struct DashboardIds {
    panels: Vec<String>,
    actions: Vec<String>,
}

impl DashboardIds {
    fn of(dashboard: &Value) -> Self {
        let mut ids = Self::default();
        for panel in dashboard["panels"].as_array().into_iter().flatten() {
            ids.panels.push(str_of(&panel["id"]).to_owned());
            for action in panel["actions"].as_array().into_iter().flatten() {
                ids.actions.push(str_of(&action["id"]).to_owned());
            }
        }
        ids
    }
}

/// The id an item sends, and the stored id it keeps (each stored id is kept once at most: an
/// item that names one taken before gets a new id).
fn resolve_id(
    target: &Target,
    stored: &[String],
    taken: &mut HashSet<usize>,
) -> (Option<String>, Option<String>) {
    match target {
        Target::Stored(index) if !stored.is_empty() => {
            let i = index.index(stored.len());
            let id = stored[i].clone();
            let kept = taken.insert(i).then(|| id.clone());
            (Some(id), kept)
        }
        Target::Foreign(id) => (Some(id.clone()), None),
        _ => (None, None),
    }
}

/// A panel's expected reading: the stored panel id it keeps, its fields without ids, and the
/// stored id each of its actions keeps.
#[derive(Debug)]
struct ExpectedPanel {
    kept: Option<String>,
    view: Value,
    actions_kept: Vec<Option<String>>,
}

/// Panels as a request sends them against `stored`, and what must read back.
fn resolve_panels(panels: &[PanelBody], stored: &DashboardIds) -> (Value, Vec<ExpectedPanel>) {
    let (mut panels_taken, mut actions_taken) = (HashSet::new(), HashSet::new());
    let mut sent = Vec::new();
    let mut expected = Vec::new();
    for panel in panels {
        let (id, kept) = resolve_id(&panel.target, &stored.panels, &mut panels_taken);
        let mut send = panel.given.send.clone();
        let mut view = panel.given.expect.clone();
        if let Some(id) = id {
            send["id"] = id.into();
        }
        let mut actions_sent = Vec::new();
        let mut actions_view = Vec::new();
        let mut actions_kept = Vec::new();
        for action in &panel.actions {
            let (id, kept) = resolve_id(&action.target, &stored.actions, &mut actions_taken);
            let mut send = action.given.send.clone();
            if let Some(id) = id {
                send["id"] = id.into();
            }
            actions_sent.push(send);
            actions_view.push(action.given.expect.clone());
            actions_kept.push(kept);
        }
        match (actions_sent.is_empty(), &panel.empty_actions) {
            (true, Value::String(_)) => {}
            (true, empty) => send["actions"] = empty.clone(),
            (false, _) => send["actions"] = actions_sent.into(),
        }
        view["actions"] = actions_view.into();
        sent.push(send);
        expected.push(ExpectedPanel {
            kept,
            view,
            actions_kept,
        });
    }
    (sent.into(), expected)
}

/// Checks `actual` panels against `expected`: kept ids kept, other ids new and unique, every
/// other field as expected.
fn assert_panels(
    actual: &Value,
    expected: &[ExpectedPanel],
    before: &DashboardIds,
) -> Result<(), TestCaseError> {
    let actual = actual.as_array().map(Vec::as_slice).unwrap_or_default();
    prop_assert_eq!(actual.len(), expected.len(), "panels: {:?}", actual);
    let mut ids = HashSet::new();
    for (panel, expected) in actual.iter().zip(expected) {
        assert_kept_or_new(&panel["id"], expected.kept.as_ref(), "pl", &before.panels)?;
        prop_assert!(ids.insert(panel["id"].clone()), "panel id twice");
        let actions = panel["actions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        prop_assert_eq!(actions.len(), expected.actions_kept.len());
        for (action, kept) in actions.iter().zip(&expected.actions_kept) {
            assert_kept_or_new(&action["id"], kept.as_ref(), "act", &before.actions)?;
            prop_assert!(ids.insert(action["id"].clone()), "action id twice");
        }
        let mut view = panel.clone();
        if let Some(view) = view.as_object_mut() {
            view.remove("id");
        }
        for action in view["actions"].as_array_mut().into_iter().flatten() {
            if let Some(action) = action.as_object_mut() {
                action.remove("id");
            }
        }
        prop_assert_eq!(&view, &expected.view);
    }
    Ok(())
}

/// `id` is the stored id `kept`, or (with none) a fresh id that no stored item had.
fn assert_kept_or_new(
    id: &Value,
    kept: Option<&String>,
    prefix: &str,
    stored: &[String],
) -> Result<(), TestCaseError> {
    match kept {
        Some(kept) => prop_assert_eq!(str_of(id), kept.as_str(), "a kept {} id", prefix),
        None => {
            assert_id(id, prefix)?;
            prop_assert!(
                !stored.iter().any(|s| s == str_of(id)),
                "a new {} got a stored id",
                prefix
            );
        }
    }
    Ok(())
}

/// A valid dashboard body: name and restricted_access (required on create), panels.
#[derive(Clone, Debug)]
struct DashboardBody {
    fields: Fields,
    panels: Option<Vec<PanelBody>>,
}

fn dashboard_body(create: bool) -> BoxedStrategy<DashboardBody> {
    let table: FieldTable = vec![
        ("name", required_text()),
        (
            "restricted_access",
            any::<bool>().prop_map(Given::same).boxed(),
        ),
    ];
    let required: &'static [&'static str] = if create {
        &["name", "restricted_access"]
    } else {
        &[]
    };
    (
        some_of(table, 0.5, required),
        weighted(0.6, vec(panel(), 0..4)),
    )
        .prop_map(|(fields, panels)| DashboardBody { fields, panels })
        .boxed()
}

impl DashboardBody {
    /// The body to send against the dashboard's ids now, and the panels that must result
    /// (`None`: the body leaves panels alone).
    fn resolve(&self, stored: &DashboardIds) -> (Value, Option<Vec<ExpectedPanel>>) {
        let mut body = fields_json(&self.fields);
        let expected = self.panels.as_ref().map(|panels| {
            let (sent, expected) = resolve_panels(panels, stored);
            body.insert("panels".into(), sent);
            expected
        });
        (Value::Object(body), expected)
    }
}

async fn dashboard_update_keeps_left_out_fields(
    create: DashboardBody,
    update: DashboardBody,
) -> Checked {
    let api = fresh_api();
    let nothing = DashboardIds::default();
    let (body, expected) = create.resolve(&nothing);
    let answer = api.dash(Method::POST, DASHBOARDS, Some(&body)).await;
    let before = expect_status(answer, 200, "create")?;
    assert_id(&before["id"], "dash")?;
    for (key, given) in &create.fields {
        prop_assert_eq!(&before[*key], &given.expect, "{}", key);
    }
    assert_panels(&before["panels"], &expected.unwrap_or_default(), &nothing)?;

    let stored = DashboardIds::of(&before);
    let (body, expected) = update.resolve(&stored);
    let path = dashboard_path(str_of(&before["id"]));
    let answer = api.dash(Method::PUT, &path, Some(&body)).await;
    let after = expect_status(answer, 200, "update")?;
    let retrieved = expect_status(api.dash(Method::GET, &path, None).await, 200, "retrieve")?;
    prop_assert_eq!(&retrieved, &after);

    prop_assert_eq!(&after["id"], &before["id"]);
    for key in ["name", "restricted_access"] {
        let expected = expect_of(&update.fields, key).unwrap_or_else(|| before[key].clone());
        prop_assert_eq!(&after[key], &expected, "{}", key);
    }
    match expected {
        Some(expected) => assert_panels(&after["panels"], &expected, &stored),
        None => {
            prop_assert_eq!(&after["panels"], &before["panels"]);
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn dashboard_fields_left_out_of_an_update_never_move(
        create in dashboard_body(true),
        update in dashboard_body(false),
    ) {
        run(dashboard_update_keeps_left_out_fields(create, update))?;
    }
}

// ---------------------------------------------------------------------------------------------
// Property 3: updated_at strictly increases, inserted_at never changes
// ---------------------------------------------------------------------------------------------

const SETUP_API_ID: &str = "prop-setup";

/// A valid setup body for [`SETUP_API_ID`].
fn setup_body() -> BoxedStrategy<Value> {
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

/// One successful update.
#[derive(Clone, Debug)]
enum Step {
    PatchDatabase(Fields),
    Setup(Value),
    PutDashboard(Value),
}

fn step() -> BoxedStrategy<Step> {
    prop_oneof![
        3 => some_of(database_fields(), 0.3, &[]).prop_map(|mut fields| {
            verify_only_with_ca(&mut fields, false);
            Step::PatchDatabase(fields)
        }),
        2 => setup_body().prop_map(Step::Setup),
        3 => dashboard_body(false)
            .prop_map(|body| Step::PutDashboard(body.resolve(&DashboardIds::default()).0)),
    ]
    .boxed()
}

/// A record's timestamps: what it had when created, and the last `updated_at` seen.
struct Clock {
    inserted_at: Value,
    updated_at: Value,
}

impl Clock {
    fn of(record: &Value) -> Result<Self, TestCaseError> {
        assert_timestamp(&record["inserted_at"])?;
        Ok(Self {
            inserted_at: record["inserted_at"].clone(),
            updated_at: record["updated_at"].clone(),
        })
    }

    /// `record` is a later version: same `inserted_at`, strictly later `updated_at`.
    fn advance(&mut self, record: &Value, call: &str) -> Result<(), TestCaseError> {
        prop_assert_eq!(&record["inserted_at"], &self.inserted_at, "{}", call);
        assert_timestamp(&record["updated_at"])?;
        prop_assert!(
            str_of(&record["updated_at"]) > str_of(&self.updated_at),
            "{}: updated_at went from {} to {}",
            call,
            self.updated_at,
            record["updated_at"]
        );
        self.updated_at = record["updated_at"].clone();
        Ok(())
    }
}

/// A dashboard with a query panel, an action and input mappings.
fn stored_dashboard() -> Value {
    json!({
        "name": "Ops",
        "restricted_access": true,
        "panels": [{
            "title": "Orders",
            "inputs": [{"key": "customer", "description": "Customer id"}],
            "actions": [{
                "label": "Refund",
                "workflow_id": "wf_refund",
                "input_mappings": [
                    {"workflow_input_key": "order", "column": "id"},
                    {"workflow_input_key": "reason", "prompt_user": true, "prompt": "Why?"}
                ]
            }],
            "details": {"__type__": "query", "query": "select 1", "credential_id": "crd_x"}
        }]
    })
}

/// A database with parameters, two credentials and a CA certificate.
fn stored_database() -> Value {
    json!({
        "name": "Orders",
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "port": 5433,
        "ssl": true,
        "ssl_ca_cert": base64(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        "verify_server_hostname": true,
        "connection_parameters": [{"name": "search_path", "value": "app"}],
        "credentials": [
            {"username": "reader", "password": "pw-reader-1", "default_credential": true},
            {"username": "writer", "password": "pw-writer-1", "timeout": 5}
        ]
    })
}

fn setup_database() -> Value {
    json!({
        "id": SETUP_API_ID, "adapter": "mysql", "hostname": "10.0.0.7",
        "database": "shop", "username": "app", "password": "pw-app-1"
    })
}

/// A stored dashboard's timestamps (dashboard responses do not carry them).
async fn stored_timestamps(api: &Api, id: &str) -> Value {
    let stored = api.service.storage().dashboard(id).await;
    let stored = stored
        .expect("storage answers")
        .expect("the dashboard is stored");
    json!({
        "inserted_at": stored.inserted_at.to_string(),
        "updated_at": stored.updated_at.to_string(),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn updated_at_strictly_increases_and_inserted_at_stays(steps in vec(step(), 1..8)) {
        run(async {
            let api = fresh_api();
            let db = api.create_database(&dbconsole_tests::minimal_database()).await;
            let db_path = database_path(str_of(&db["id"]));
            let setup_path = format!("{DATABASES}/setup");
            let answer = api.db(Method::PUT, &setup_path, Some(&setup_database())).await;
            let setup = expect_status(answer, 200, "setup")?;
            let dash = api.create_dashboard(&dbconsole_tests::minimal_dashboard()).await;
            let dash_path = dashboard_path(str_of(&dash["id"]));

            let mut db_clock = Clock::of(&db)?;
            let mut setup_clock = Clock::of(&setup)?;
            let mut dash_clock = Clock::of(&stored_timestamps(&api, str_of(&dash["id"])).await)?;

            for step in &steps {
                match step {
                    Step::PatchDatabase(fields) => {
                        let body = Value::Object(fields_json(fields));
                        let answer = api.db(Method::PATCH, &db_path, Some(&body)).await;
                        let updated = expect_status(answer, 200, "update")?;
                        db_clock.advance(&updated, "update")?;
                        let retrieved = api.db(Method::GET, &db_path, None).await.json();
                        prop_assert_eq!(&retrieved, &updated);
                    }
                    Step::Setup(body) => {
                        let answer = api.db(Method::PUT, &setup_path, Some(body)).await;
                        let updated = expect_status(answer, 200, "setup")?;
                        prop_assert_eq!(&updated["id"], &setup["id"], "setup made a new database");
                        setup_clock.advance(&updated, "setup")?;
                    }
                    Step::PutDashboard(body) => {
                        let answer = api.dash(Method::PUT, &dash_path, Some(body)).await;
                        expect_status(answer, 200, "dashboard update")?;
                        // Dashboard responses carry no timestamps: read them from the store.
                        let record = stored_timestamps(&api, str_of(&dash["id"])).await;
                        dash_clock.advance(&record, "dashboard update")?;
                    }
                }
            }
            Ok(())
        })?;
    }
}

// ---------------------------------------------------------------------------------------------
// Hostile requests
// ---------------------------------------------------------------------------------------------

/// Every key the service reads in some body, to aim junk at.
#[rustfmt::skip]
const KNOWN_KEYS: &[&str] = &[
    "id", "api_id", "name", "adapter", "hostname", "port", "database", "ssl",
    "verify_server_hostname", "restrict_access", "review_bypass_allowed", "group",
    "slack_channel", "tunnel_id", "ai_enabled", "ai_max_rows", "connection_parameters",
    "credentials", "username", "password", "ai_allowed", "timeout", "reviews_required",
    "default_credential", "value", "ssl_ca_cert", "ssl_cert", "ssl_key", "restricted_access",
    "panels", "title", "inputs", "actions", "details", "__type__", "query", "credential_id",
    "key", "description", "label", "workflow_id", "input_mappings", "workflow_input_key",
    "column", "prompt_user", "prompt", "inserted_at", "updated_at",
];

#[rustfmt::skip]
fn edge_numbers() -> Vec<Value> {
    vec![
        json!(0), json!(-1), json!(1), json!(65535), json!(65536), json!(u32::MAX),
        json!(u64::from(u32::MAX) + 1), json!(i64::MIN), json!(i64::MAX), json!(u64::MAX),
        json!(0.5), json!(-0.0), json!(1.0), json!(5.0), json!(-5.0), json!(1e300),
        json!(-1e300), json!(9.0e15), json!(9.5e15), json!(f64::MAX), json!(f64::MIN_POSITIVE),
        json!(4_294_967_295.0), json!(4_294_967_296.0),
    ]
}

/// Strings that mean something somewhere (adapter names, `"enabled"`, near-base64, reserved
/// parameter names, id prefixes, placeholders).
#[rustfmt::skip]
const JUNK_WORDS: &[&str] = &[
    "", " ", "\u{0}", "postgres", "POSTGRES", " postgres", "mongodb", "query", "Query", "chart",
    "enabled", "ENABLED", "true", "null", "user", "USER", "database", "1", "-1", "1e999", "=",
    "====", "AAAA", "AA==", "A", "QUJD\nREVG", "not base64!", "%00", "\u{feff}", "\u{202e}",
    "crd_", "db_", "dash_", "{db}", "{crd}", "{dash}", "{pl}", "{act}", "{api}", "{user}",
];

fn junk_text() -> BoxedStrategy<String> {
    prop_oneof![
        2 => "\\PC{0,16}",
        1 => ".{0,8}",
        2 => select(JUNK_WORDS).prop_map(str::to_owned),
    ]
    .boxed()
}

fn junk_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        select(edge_numbers()),
        junk_text().prop_map(Value::String),
    ]
    .boxed()
}

fn junk_key() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(KNOWN_KEYS).prop_map(str::to_owned),
        1 => "\\PC{0,10}",
    ]
    .boxed()
}

/// Any JSON value: scalars of every type and edge, arrays and objects nested a few levels.
fn junk() -> BoxedStrategy<Value> {
    junk_leaf()
        .prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..6).prop_map(Value::Array),
                vec((junk_key(), inner), 0..6)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
        .boxed()
}

/// The field's valid value, or junk.
fn valid_or_junk(valid: BoxedStrategy<Given>) -> BoxedStrategy<Value> {
    prop_oneof![
        3 => valid.prop_map(|given| given.send),
        1 => junk(),
    ]
    .boxed()
}

/// A list of `item`s, or junk.
fn list_or_junk(item: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop_oneof![
        3 => vec(item, 0..4).prop_map(Value::Array),
        1 => junk(),
    ]
    .boxed()
}

/// An object with each of `fields` more often than not, plus a few junk keys.
fn hostile_object(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
    let present: Vec<BoxedStrategy<Option<(&'static str, Value)>>> = fields
        .into_iter()
        .map(|(key, value)| weighted(0.7, value.prop_map(move |v| (key, v))).boxed())
        .collect();
    (present, vec((junk_key(), junk()), 0..3))
        .prop_map(|(present, extra)| {
            let mut object: Map<String, Value> = extra.into_iter().collect();
            for (key, value) in present.into_iter().flatten() {
                object.insert(key.to_owned(), value);
            }
            Value::Object(object)
        })
        .boxed()
}

/// Base64 fields: real certificates, almost-base64 and junk.
fn base64_junk() -> BoxedStrategy<Value> {
    prop_oneof![
        pem("CERTIFICATE").prop_map(|pem| Value::from(pem.base64)),
        "[A-Za-z0-9+/=\\s_-]{0,24}".prop_map(Value::from),
        junk(),
    ]
    .boxed()
}

fn id_or_junk(placeholder: &'static str) -> BoxedStrategy<Value> {
    prop_oneof![Just(Value::from(placeholder)), junk()].boxed()
}

fn hostile_credential() -> BoxedStrategy<Value> {
    hostile_object(vec![
        ("id", id_or_junk("{crd}")),
        ("username", valid_or_junk(required_text())),
        (
            "password",
            prop_oneof![password_text().prop_map(Value::from), junk()].boxed(),
        ),
        ("hostname", valid_or_junk(optional_text())),
        ("ai_allowed", valid_or_junk(flag())),
        ("timeout", valid_or_junk(timeout())),
        ("reviews_required", valid_or_junk(reviews_required())),
        ("default_credential", valid_or_junk(flag())),
    ])
}

fn hostile_parameter() -> BoxedStrategy<Value> {
    let name = prop_oneof![
        parameter_name().prop_map(Value::from),
        select(&["user", "USER", "database", "Database", " ", ""][..]).prop_map(Value::from),
        junk(),
    ];
    hostile_object(vec![
        ("name", name.boxed()),
        ("value", valid_or_junk(parameter_value())),
    ])
}

fn hostile_database() -> BoxedStrategy<Value> {
    let mut fields: Vec<(&'static str, BoxedStrategy<Value>)> = database_fields()
        .into_iter()
        .filter(|(key, _)| *key != "connection_parameters")
        .map(|(key, valid)| (key, valid_or_junk(valid)))
        .collect();
    fields.extend([
        ("connection_parameters", list_or_junk(hostile_parameter())),
        ("credentials", list_or_junk(hostile_credential())),
        ("ssl_ca_cert", base64_junk()),
        ("ssl_cert", base64_junk()),
        ("ssl_key", base64_junk()),
        ("id", junk()),
        ("api_id", junk()),
    ]);
    hostile_object(fields)
}

fn hostile_setup() -> BoxedStrategy<Value> {
    let ssl = prop_oneof![
        select(&["enabled", "disabled", "", "ENABLED", "true"][..]).prop_map(Value::from),
        junk(),
    ];
    hostile_object(vec![
        (
            "id",
            prop_oneof![
                Just(Value::from("{api}")),
                text().prop_map(Value::from),
                junk()
            ]
            .boxed(),
        ),
        ("adapter", valid_or_junk(adapter())),
        ("hostname", valid_or_junk(hostname())),
        ("database", valid_or_junk(required_text())),
        ("username", valid_or_junk(required_text())),
        (
            "password",
            prop_oneof![password_text().prop_map(Value::from), junk()].boxed(),
        ),
        ("name", valid_or_junk(optional_text())),
        ("port", valid_or_junk(port())),
        ("group", valid_or_junk(optional_text())),
        ("tunnel_id", valid_or_junk(optional_text())),
        ("ssl", ssl.boxed()),
        ("ssl_ca_cert", base64_junk()),
        ("ssl_cert", base64_junk()),
        ("ssl_key", base64_junk()),
        ("reviews_required", valid_or_junk(reviews_required())),
        ("review_bypass_allowed", valid_or_junk(flag())),
    ])
}

fn hostile_mapping() -> BoxedStrategy<Value> {
    hostile_object(vec![
        ("workflow_input_key", valid_or_junk(required_text())),
        ("column", valid_or_junk(optional_text())),
        ("prompt_user", valid_or_junk(flag())),
        ("prompt", valid_or_junk(optional_text())),
    ])
}

fn hostile_action() -> BoxedStrategy<Value> {
    hostile_object(vec![
        ("id", id_or_junk("{act}")),
        ("label", valid_or_junk(optional_text())),
        ("workflow_id", valid_or_junk(optional_text())),
        ("input_mappings", list_or_junk(hostile_mapping())),
    ])
}

fn hostile_panel() -> BoxedStrategy<Value> {
    let details = hostile_object(vec![
        (
            "__type__",
            prop_oneof![
                select(&["query", "chart", "", "Query"][..]).prop_map(Value::from),
                junk()
            ]
            .boxed(),
        ),
        ("query", valid_or_junk(required_text())),
        (
            "credential_id",
            prop_oneof![Just(Value::from("{crd}")), junk()].boxed(),
        ),
    ]);
    let input = hostile_object(vec![
        ("key", valid_or_junk(required_text())),
        ("description", valid_or_junk(optional_text())),
    ]);
    hostile_object(vec![
        ("id", id_or_junk("{pl}")),
        ("title", valid_or_junk(required_text())),
        ("inputs", list_or_junk(input)),
        ("actions", list_or_junk(hostile_action())),
        ("details", prop_oneof![3 => details, 1 => junk()].boxed()),
    ])
}

fn hostile_dashboard() -> BoxedStrategy<Value> {
    hostile_object(vec![
        ("name", valid_or_junk(required_text())),
        ("restricted_access", valid_or_junk(flag())),
        ("panels", list_or_junk(hostile_panel())),
    ])
}

#[rustfmt::skip]
const MALFORMED_JSON: &[&str] = &[
    "", " ", "null", "[]", "\"text\"", "42", "{", "}", "{\"name\":}", "{\"port\": 1e999}",
    "{\"port\": 123456789012345678901234567890}", "{\"port\": -0}", "{\"port\": 1.5e3}",
    "{\"name\": \"\\ud800\"}", "{\"a\":1,\"a\":2}", "{\"name\": \"x\"} trailing", "\u{feff}{}",
    "{\"name\": \"x\",}", "{'name': 'x'}", "{\"name\": NaN}", "{\"name\": Infinity}",
    "{\"credentials\": [{\"username\": \"u\"},]}",
];

/// Text that is not a JSON object, or not JSON at all: fixed cases, nesting far deeper than
/// any parser allows, and any JSON value cut short.
fn malformed_json() -> BoxedStrategy<String> {
    prop_oneof![
        2 => select(MALFORMED_JSON).prop_map(str::to_owned),
        1 => (1usize..3000).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n))),
        1 => (1usize..3000).prop_map(|n| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n))),
        1 => (1usize..3000).prop_map(|n| format!("{{\"credentials\":{}", "[".repeat(n))),
        2 => (junk(), any::<Index>()).prop_map(|(value, cut)| {
            let text = value.to_string();
            let mut end = cut.index(text.len() + 1);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text[..end].to_owned()
        }),
    ]
    .boxed()
}

/// A request body: a structured one for the endpoint, any JSON, bytes, or broken JSON.
#[derive(Clone, Debug)]
enum Payload {
    Json(Value),
    Bytes(Vec<u8>),
}

fn payload(structured: BoxedStrategy<Value>) -> BoxedStrategy<Payload> {
    prop_oneof![
        6 => structured.prop_map(Payload::Json),
        2 => junk().prop_map(Payload::Json),
        1 => vec(any::<u8>(), 0..64).prop_map(Payload::Bytes),
        2 => malformed_json().prop_map(|text| Payload::Bytes(text.into_bytes())),
    ]
    .boxed()
}

fn content_type() -> BoxedStrategy<Option<&'static str>> {
    let others = [
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "application/merge-patch+json",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "",
        ";",
        "application/",
        "json",
        "application/json; charset=latin1",
    ];
    prop_oneof![
        6 => Just(Some("application/json")),
        1 => Just(None),
        2 => select(others.to_vec()).prop_map(Some),
    ]
    .boxed()
}

/// The endpoints that take a body.
#[derive(Clone, Copy, Debug)]
enum Endpoint {
    CreateDatabase,
    UpdateDatabase,
    UpdateDatabaseCompat,
    Setup,
    CreateDashboard,
    UpdateDashboard,
    UpdateDashboardCompat,
}

impl Endpoint {
    fn method_and_path(self) -> (Method, &'static str) {
        match self {
            Endpoint::CreateDatabase => (Method::POST, "/api/v1/console/databases"),
            Endpoint::UpdateDatabase => (Method::PATCH, "/api/v1/console/databases/{db}"),
            Endpoint::UpdateDatabaseCompat => (Method::PATCH, "/api/v1/querydesk/databases/{db}"),
            Endpoint::Setup => (Method::PUT, "/api/v1/console/databases/setup"),
            Endpoint::CreateDashboard => (Method::POST, "/v1/dashboards"),
            Endpoint::UpdateDashboard => (Method::PUT, "/v1/dashboards/{dash}"),
            Endpoint::UpdateDashboardCompat => (Method::PATCH, "/api/v1/dashboards/{dash}"),
        }
    }
}

/// A request with a generated body to one endpoint.
#[derive(Clone, Debug)]
struct HostileBody {
    endpoint: Endpoint,
    payload: Payload,
    content_type: Option<&'static str>,
}

fn hostile_body() -> BoxedStrategy<HostileBody> {
    let database = hostile_database();
    let dashboard = hostile_dashboard();
    let aimed = prop_oneof![
        (Just(Endpoint::CreateDatabase), payload(database.clone())),
        (Just(Endpoint::UpdateDatabase), payload(database.clone())),
        (Just(Endpoint::UpdateDatabaseCompat), payload(database)),
        (Just(Endpoint::Setup), payload(hostile_setup())),
        (Just(Endpoint::CreateDashboard), payload(dashboard.clone())),
        (Just(Endpoint::UpdateDashboard), payload(dashboard.clone())),
        (Just(Endpoint::UpdateDashboardCompat), payload(dashboard)),
    ];
    (aimed, content_type())
        .prop_map(|((endpoint, payload), content_type)| HostileBody {
            endpoint,
            payload,
            content_type,
        })
        .boxed()
}

/// The ids of the records stored before the hostile requests, for the placeholders.
struct Stored {
    api: Api,
    db: String,
    setup_db: String,
    crd: String,
    dash: String,
    pl: String,
    act: String,
}

impl Stored {
    /// A database with two credentials, one made by setup, and a dashboard with a panel.
    async fn new() -> Self {
        let api = fresh_api();
        let db = api.create_database(&stored_database()).await;
        let setup = api
            .db(
                Method::PUT,
                &format!("{DATABASES}/setup"),
                Some(&setup_database()),
            )
            .await
            .expect(200)
            .json();
        let dash = api.create_dashboard(&stored_dashboard()).await;
        let panel = &dash["panels"][0];
        Self {
            db: str_of(&db["id"]).to_owned(),
            setup_db: str_of(&setup["id"]).to_owned(),
            crd: str_of(&db["credentials"][0]["id"]).to_owned(),
            dash: str_of(&dash["id"]).to_owned(),
            pl: str_of(&panel["id"]).to_owned(),
            act: str_of(&panel["actions"][0]["id"]).to_owned(),
            api,
        }
    }

    /// `text` with the placeholders `{db}`, `{crd}`, `{dash}`, `{pl}`, `{act}`, `{api}` and
    /// `{user}` replaced by the stored records' ids (and the setup api_id, a username).
    fn fill(&self, text: &str) -> String {
        text.replace("{db}", &self.db)
            .replace("{crd}", &self.crd)
            .replace("{dash}", &self.dash)
            .replace("{pl}", &self.pl)
            .replace("{act}", &self.act)
            .replace("{api}", SETUP_API_ID)
            .replace("{user}", "reader")
    }

    fn fill_json(&self, value: &mut Value) {
        match value {
            Value::String(text) => *text = self.fill(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.fill_json(item)),
            Value::Object(object) => object.values_mut().for_each(|item| self.fill_json(item)),
            _ => {}
        }
    }

    /// What every listing and retrieve answers now: equal before and after a refused request.
    async fn snapshot(&self) -> Vec<(u16, String)> {
        let paths = [
            format!("{DATABASES}?limit=500"),
            database_path(&self.db),
            database_path(&self.setup_db),
        ];
        let mut answers = Vec::new();
        for path in &paths {
            let answer = self.api.db(Method::GET, path, None).await;
            answers.push((answer.status.as_u16(), answer.text()));
        }
        for path in [
            format!("{DASHBOARDS}?limit=500"),
            dashboard_path(&self.dash),
        ] {
            let answer = self.api.dash(Method::GET, &path, None).await;
            answers.push((answer.status.as_u16(), answer.text()));
        }
        // Dashboard responses carry no timestamps.
        if let Ok(Some(dashboard)) = self.api.service.storage().dashboard(&self.dash).await {
            let timestamps = format!("{:?} {:?}", dashboard.inserted_at, dashboard.updated_at);
            answers.push((0, timestamps));
        }
        answers
    }

    /// Sends `request`, checks that it is no 5xx and that a refusal changed nothing.
    async fn send_checked(
        &self,
        request: Request<Full<Bytes>>,
        described: &str,
    ) -> Result<(), TestCaseError> {
        let before = self.snapshot().await;
        let answer = self.api.send(request).await;
        prop_assert!(
            answer.status.as_u16() < 500,
            "{} answered {}: {}",
            described,
            answer.status,
            answer.text()
        );
        if answer.status.as_u16() != 200 {
            let after = self.snapshot().await;
            prop_assert_eq!(
                after,
                before,
                "{} was refused ({}) but changed what is stored",
                described,
                answer.status
            );
        }
        Ok(())
    }
}

impl HostileBody {
    fn request(&self, stored: &Stored) -> Request<Full<Bytes>> {
        let (method, path) = self.endpoint.method_and_path();
        let body = match &self.payload {
            Payload::Json(value) => {
                let mut value = value.clone();
                stored.fill_json(&mut value);
                value.to_string().into_bytes()
            }
            Payload::Bytes(bytes) => bytes.clone(),
        };
        raw_request(method, &stored.fill(path), self.content_type, body)
    }
}

// ---------------------------------------------------------------------------------------------
// Property 4: hostile requests never give a 5xx nor change state when refused
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn hostile_bodies_never_fail_and_refusals_change_nothing(requests in vec(hostile_body(), 1..6)) {
        run(async {
            let stored = Stored::new().await;
            for request in &requests {
                stored.send_checked(request.request(&stored), &format!("{request:?}")).await?;
            }
            Ok(())
        })?;
    }
}

/// The caller credentials a request presents.
#[derive(Clone, Copy, Debug)]
enum Caller {
    Both,
    ApiKey,
    Bearer,
    Nobody,
    WrongKey,
}

/// A request to a generated path and query.
#[derive(Clone, Debug)]
struct HostilePath {
    method: Method,
    path: String,
    caller: Caller,
    body: Option<Value>,
}

const PATH_PREFIXES: &[&str] = &[
    "",
    "/api",
    "/api/v1",
    "/api/v1/console/databases",
    "/api/v1/querydesk/databases",
    "/api/v1/console/databases/{db}",
    "/api/v1/console/databases/{db}/check-connection",
    "/api/v1/console/databases/remove",
    "/api/v1/console/databases/remove/{api}",
    "/api/v1/console/databases/{db}/check-connection/{user}",
    "/api/v1/console/databases/{db}/permissions",
    "/api/v1/console/databases/{db}/data-protection",
    "/v1/dashboards",
    "/api/v1/dashboards",
    "/v1/dashboards/{dash}",
    "/healthz",
];

/// Path segments that mean something to the router, or break percent-decoding.
#[rustfmt::skip]
const PATH_WORDS: &[&str] = &[
    "setup", "remove", "check-connection", "permissions", "data-protection", "healthz", "..",
    ".", "", "%2F", "%00", "%FF", "%E2%82", "%C0%AF", "%F0%9F%98%80", "%zz", "%", "%%", "%2",
    "db_", "dash_", "crd_", "{db}", "{crd}", "{dash}", "{pl}", "{act}", "{api}", "{user}",
];

fn path_segment() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(PATH_WORDS).prop_map(str::to_owned),
        2 => "[A-Za-z0-9._~!$&'()*+,;=:@-]{1,12}",
        2 => "\\PC{1,8}".prop_map(|s| percent_encode(&s)),
    ]
    .boxed()
}

/// `limit` and `after` values: in and out of range, not numbers, overflowing, badly encoded.
#[rustfmt::skip]
const QUERY_WORDS: &[&str] = &[
    "", "0", "1", "-1", "50", "500", "501", "abc", "1e3", "%205", "+1", "5.0", "0x10",
    "99999999999999999999999", "-99999999999999999999", "%FF", "%", "{db}", "{dash}", "db_",
    "dash_zzzz",
];

fn query_value() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(QUERY_WORDS).prop_map(str::to_owned),
        1 => "[0-9]{1,25}",
        1 => "\\PC{1,8}".prop_map(|s| percent_encode(&s)),
    ]
    .boxed()
}

fn query() -> BoxedStrategy<String> {
    let keys = ["limit", "after", "limit", "x", "", "LIMIT", "limit%00"];
    vec((select(keys.to_vec()), query_value()), 0..4)
        .prop_map(|pairs| {
            pairs
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect::<Vec<_>>()
                .join("&")
        })
        .boxed()
}

fn hostile_path() -> BoxedStrategy<HostilePath> {
    let methods = [
        Method::GET,
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::HEAD,
        Method::OPTIONS,
    ];
    let callers = [
        Caller::Both,
        Caller::Both,
        Caller::ApiKey,
        Caller::Bearer,
        Caller::Nobody,
        Caller::WrongKey,
    ];
    (
        select(methods.to_vec()),
        select(PATH_PREFIXES),
        prop_oneof![Just(Vec::new()), vec(path_segment(), 1..4)],
        weighted(0.6, query()),
        select(callers.to_vec()),
        weighted(0.3, junk()),
    )
        .prop_map(|(method, prefix, segments, query, caller, body)| {
            let mut path = prefix.to_owned();
            for segment in segments {
                path.push('/');
                path.push_str(&segment);
            }
            if path.is_empty() {
                path.push('/');
            }
            if let Some(query) = query {
                path.push('?');
                path.push_str(&query);
            }
            HostilePath {
                method,
                path,
                caller,
                body,
            }
        })
        .boxed()
}

impl HostilePath {
    fn request(&self, stored: &Stored) -> Request<Full<Bytes>> {
        let path = stored.fill(&self.path);
        let mut builder = Request::builder().method(self.method.clone()).uri(&path);
        let bearer = format!("Bearer {ACCESS_TOKEN}");
        let headers: &[(&str, &str)] = match self.caller {
            Caller::Both => &[("x-api-key", API_KEY), ("authorization", &bearer)],
            Caller::ApiKey => &[("x-api-key", API_KEY)],
            Caller::Bearer => &[("authorization", &bearer)],
            Caller::Nobody => &[],
            Caller::WrongKey => &[("x-api-key", "wrong"), ("authorization", "Bearer wrong")],
        };
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let body = match &self.body {
            Some(body) => {
                builder = builder.header(header::CONTENT_TYPE, "application/json");
                let mut body = body.clone();
                stored.fill_json(&mut body);
                Bytes::from(body.to_string())
            }
            None => Bytes::new(),
        };
        builder
            .body(Full::new(body))
            .unwrap_or_else(|e| panic!("request to {path:?}: {e}"))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn hostile_paths_and_queries_never_fail(requests in vec(hostile_path(), 1..8)) {
        run(async {
            let stored = Stored::new().await;
            for request in &requests {
                stored.send_checked(request.request(&stored), &format!("{request:?}")).await?;
            }
            Ok(())
        })?;
    }
}

// ---------------------------------------------------------------------------------------------
// Property 5: no password, certificate or key in any response
// ---------------------------------------------------------------------------------------------

/// The secrets of one case and where they go.
#[derive(Clone, Debug)]
struct SecretCase {
    /// A database whose credentials all have passwords, with all three certificates.
    create: CreateBody,
    /// New passwords for the stored credentials, by position.
    new_passwords: Vec<String>,
    new_ca: Pem,
    /// The password of a setup create, then of a setup update.
    setup_passwords: [String; 2],
    setup_tls: Tls,
}

fn secret_case() -> BoxedStrategy<SecretCase> {
    (
        create_body(),
        vec(password_text(), 5),
        vec(password_text(), 5),
        pem("CERTIFICATE"),
        prop::array::uniform2(password_text()),
        full_tls(),
        full_tls(),
    )
        .prop_map(
            |(mut create, passwords, new_passwords, new_ca, setup_passwords, tls, setup_tls)| {
                for (credential, password) in create.credentials.iter_mut().zip(passwords) {
                    credential.password = Password::Set(password);
                }
                create.tls = tls;
                SecretCase {
                    create,
                    new_passwords,
                    new_ca,
                    setup_passwords,
                    setup_tls,
                }
            },
        )
        .boxed()
}

impl SecretCase {
    /// Every secret of the case, as it could show up in a response: passwords as they are,
    /// certificates as the base64 that was sent and as the PEM body line inside.
    fn needles(&self) -> Vec<String> {
        let mut needles: Vec<String> = self
            .create
            .credentials
            .iter()
            .filter_map(|c| c.password.stored(None))
            .chain(self.new_passwords.iter().cloned())
            .chain(self.setup_passwords.iter().cloned())
            .collect();
        let pems = self
            .create
            .tls
            .pems()
            .chain(self.setup_tls.pems())
            .chain([&self.new_ca]);
        for pem in pems {
            needles.push(pem.base64.clone());
            needles.push(pem.body.clone());
        }
        needles
    }

    fn setup_body(&self, password: &str) -> Value {
        let mut body = Map::new();
        for (key, value) in [
            ("id", SETUP_API_ID),
            ("adapter", "postgres"),
            ("hostname", "db.internal"),
            ("database", "shop"),
            ("username", "app"),
            ("password", password),
            ("ssl", "enabled"),
        ] {
            body.insert(key.to_owned(), value.into());
        }
        self.setup_tls.add_to(&mut body);
        Value::Object(body)
    }

    /// Bodies that put secrets where they do not belong: each must be refused without echoing
    /// them.
    fn misplaced(&self) -> Vec<Value> {
        let pw = &self.new_passwords[0];
        let other = &self.new_passwords[1];
        let ca = &self.new_ca.base64;
        vec![
            json!({"port": pw}),
            json!({"adapter": pw}),
            json!({"timeout": pw, "ai_max_rows": pw}),
            json!({"ssl_ca_cert": pw}),
            json!({"ssl_ca_cert": format!("{ca}!")}),
            json!({"name": {"password": pw}}),
            json!({"name": ""}),
            json!({"credentials": [{"username": " ", "password": pw}]}),
            json!({"credentials": [{"username": "a", "password": pw}, {"username": "a", "password": other}]}),
            json!({"credentials": [{"password": pw, "default_credential": true}, {"username": "b", "default_credential": true}]}),
            json!({"credentials": []}),
            json!({"credentials": pw}),
            json!({"connection_parameters": [{"name": "user", "value": pw}]}),
            json!({"verify_server_hostname": pw}),
        ]
    }

    /// Broken JSON around a password.
    fn malformed(&self) -> Vec<String> {
        let pw = &self.new_passwords[0];
        vec![
            format!("{{\"credentials\":[{{\"username\":\"u\",\"password\":\"{pw}\""),
            format!("{{\"password\": {pw}}}"),
            pw.clone(),
            format!("\"{pw}\""),
            format!("[\"{pw}\"]"),
        ]
    }
}

/// Calls the service and checks that no answer carries a secret.
struct Leaks {
    api: Api,
    needles: Vec<String>,
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

impl Leaks {
    fn assert_clean(&self, answer: &TestResponse, call: &str) -> Result<(), TestCaseError> {
        for needle in &self.needles {
            prop_assert!(
                !contains(&answer.body, needle.as_bytes()),
                "{} answered a secret in its body: {}",
                call,
                answer.text()
            );
            for (name, value) in &answer.headers {
                prop_assert!(
                    !contains(value.as_bytes(), needle.as_bytes()),
                    "{} answered a secret in header {}",
                    call,
                    name
                );
            }
        }
        Ok(())
    }

    async fn db(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<TestResponse, TestCaseError> {
        let call = format!("{method} {path}");
        let answer = self.api.db(method, path, body).await;
        self.assert_clean(&answer, &call)?;
        Ok(answer)
    }

    async fn raw(&self, method: Method, path: &str, body: &str) -> Result<u16, TestCaseError> {
        let call = format!("{method} {path} with {body:?}");
        let request = raw_request(
            method,
            path,
            Some("application/json"),
            body.as_bytes().to_vec(),
        );
        let answer = self.api.send(request).await;
        self.assert_clean(&answer, &call)?;
        Ok(answer.status.as_u16())
    }

    /// Lists, and checks the connection of every credential of `db`: the checker echoes every
    /// secret it was given, the service must scrub them.
    async fn list_and_check(&self, db: &Value) -> Result<(), TestCaseError> {
        self.db(Method::GET, &format!("{DATABASES}?limit=500"), None)
            .await?;
        self.db(Method::GET, &database_path(str_of(&db["id"])), None)
            .await?;
        for credential in credentials_of(db) {
            let path = check_path(str_of(&db["id"]), str_of(&credential["username"]));
            let answer = self.db(Method::GET, &path, None).await?;
            prop_assert_eq!(answer.status.as_u16(), 200, "check {}", answer.text());
            if db["tunnel_id"].is_null() {
                prop_assert!(
                    answer.text().contains("[REDACTED]"),
                    "the echoing checker was not reached: {}",
                    answer.text()
                );
            }
        }
        Ok(())
    }
}

async fn no_secret_in_any_response(case: SecretCase) -> Checked {
    let leaks = Leaks {
        api: api_checked_by(Arc::new(EchoingChecker)),
        needles: case.needles(),
    };

    let answer = leaks
        .db(Method::POST, DATABASES, Some(&case.create.json()))
        .await?;
    let db = expect_status(answer, 200, "create")?;
    leaks.list_and_check(&db).await?;
    let path = database_path(str_of(&db["id"]));

    let credentials: Vec<Value> = credentials_of(&db)
        .iter()
        .zip(&case.new_passwords)
        .map(|(credential, password)| json!({"id": credential["id"], "password": password}))
        .collect();
    let update = json!({"credentials": credentials, "ssl_ca_cert": case.new_ca.base64});
    let answer = leaks.db(Method::PATCH, &path, Some(&update)).await?;
    let db = expect_status(answer, 200, "update")?;
    leaks.list_and_check(&db).await?;

    for body in case.misplaced() {
        let answer = leaks.db(Method::PATCH, &path, Some(&body)).await?;
        prop_assert_eq!(answer.status.as_u16(), 422, "{}: {}", body, answer.text());
        let mut create = case.create.json();
        if let (Some(create), Some(body)) = (create.as_object_mut(), body.as_object()) {
            create.extend(body.clone());
        }
        let answer = leaks.db(Method::POST, DATABASES, Some(&create)).await?;
        prop_assert_eq!(
            answer.status.as_u16(),
            422,
            "create with {}: {}",
            body,
            answer.text()
        );
    }
    for body in case.malformed() {
        prop_assert_eq!(
            leaks.raw(Method::PATCH, &path, &body).await?,
            400,
            "{}",
            body
        );
        prop_assert_eq!(
            leaks.raw(Method::POST, DATABASES, &body).await?,
            400,
            "{}",
            body
        );
    }

    let setup_path = format!("{DATABASES}/setup");
    let mut setup = Value::Null;
    for password in &case.setup_passwords {
        let body = case.setup_body(password);
        let answer = leaks.db(Method::PUT, &setup_path, Some(&body)).await?;
        setup = expect_status(answer, 200, "setup")?;
        leaks.list_and_check(&setup).await?;
        let mut invalid = body.clone();
        invalid["port"] = json!(password);
        invalid["ssl_key"] = json!(password);
        let answer = leaks.db(Method::PUT, &setup_path, Some(&invalid)).await?;
        prop_assert_eq!(answer.status.as_u16(), 422, "{}", answer.text());
    }

    let answer = leaks.db(Method::DELETE, &path, None).await?;
    expect_status(answer, 200, "delete")?;
    let remove = format!("{DATABASES}/remove/{SETUP_API_ID}");
    let answer = leaks.db(Method::DELETE, &remove, None).await?;
    let removed = expect_status(answer, 200, "remove")?;
    prop_assert_eq!(&removed["id"], &setup["id"]);
    leaks
        .db(Method::GET, &format!("{DATABASES}?limit=500"), None)
        .await?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn no_response_ever_carries_a_secret(case in secret_case()) {
        run(no_secret_in_any_response(case))?;
    }
}

/// A password cut out of the CA certificate's body, so that one secret contains another.
fn password_inside(pem: &Pem, start: Index, len: usize) -> String {
    let start = start.index(pem.body.len() - len);
    pem.body[start..start + len].to_owned()
}

/// The checker echoes a certificate that contains the password: both must be scrubbed.
async fn nested_secrets_are_scrubbed(ca: Pem, password: String) -> Checked {
    let api = api_checked_by(Arc::new(EchoingChecker));
    let body = json!({
        "name": "n", "adapter": "postgres", "hostname": "h", "database": "d",
        "ssl_ca_cert": ca.base64,
        "credentials": [{"username": "u", "password": password}],
    });
    let db = api.create_database(&body).await;
    let path = check_path(str_of(&db["id"]), "u");
    let answer = api.db(Method::GET, &path, None).await;
    prop_assert_eq!(answer.status.as_u16(), 200);
    // No piece of the certificate, however it was cut up, and no password outside the
    // "[REDACTED]" markers (which may contain it: "A", "ED"…).
    let text = answer.text();
    let piece = ca
        .body
        .as_bytes()
        .windows(12)
        .find(|w| contains(text.as_bytes(), w));
    prop_assert!(piece.is_none(), "the CA certificate leaked: {}", text);
    let outside_markers = text.replace("[REDACTED]", "\0");
    prop_assert!(
        !outside_markers.contains(&password),
        "the password leaked: {}",
        text
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_secret_inside_another_is_scrubbed_too(
        ca in pem("CERTIFICATE"),
        start in any::<Index>(),
        len in 1usize..8,
    ) {
        let password = password_inside(&ca, start, len);
        run(nested_secrets_are_scrubbed(ca, password))?;
    }
}
