//! Cases of the HTTP suite: databases. Create, retrieve, update, delete, setup, remove by
//! `api_id`, check-connection, listing and the `/api/v1/querydesk` compatibility prefix, as
//! the README's *Endpoints*, *Check connection* and *Decisions where the spec is silent*
//! describe them.
//!
//! Passwords and certificates never come back in a response, so what the service stored is
//! observed through check-connection: `FakeChecker` records the [`CheckTarget`] the service
//! hands it (host, port, password, parameters, timeout…) and answers what the case asks for.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use dbconsole_core::check::{Adapter, CheckTarget};
use dbconsole_core::{Checkers, ConnectionChecker, Storage};
use http::Method;
use serde_json::{Value, json};

use crate::{Api, DATABASES, TestResponse, base64, minimal_database};

const SETUP: &str = "/api/v1/console/databases/setup";
const COMPAT: &str = "/api/v1/querydesk/databases";
const BLANK: &str = "can't be blank";
const INVALID: &str = "is invalid";
const TAKEN: &str = "has already been taken";
const ADAPTERS: &str = "must be one of: postgres, mysql, clickhouse, sqlserver, oracle";

/// Response keys of a database, exactly (README, *Endpoints*).
const DATABASE_KEYS: [&str; 20] = [
    "id",
    "api_id",
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
    "credentials",
    "inserted_at",
    "updated_at",
];

/// Response keys of a credential, exactly.
const CREDENTIAL_KEYS: [&str; 7] = [
    "id",
    "username",
    "hostname",
    "ai_allowed",
    "timeout",
    "reviews_required",
    "default_credential",
];

const CA_PEM: &str = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUTESTTESTTESTTESTTESTTESTTEST\n-----END CERTIFICATE-----\n";
const CERT_PEM: &str =
    "-----BEGIN CERTIFICATE-----\nMIIBCLIENTCLIENTCLIENTCLIENTCLIENT\n-----END CERTIFICATE-----\n";
const KEY_PEM: &str =
    "-----BEGIN PRIVATE KEY-----\nMIIEKEYKEYKEYKEYKEYKEYKEYKEYKEY\n-----END PRIVATE KEY-----\n";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn at(id: &str) -> String {
    format!("{DATABASES}/{id}")
}

fn id_of(value: &Value) -> String {
    value["id"].as_str().expect("id is a string").to_owned()
}

/// `base` with the keys of `changes` set (or replaced).
fn with(mut base: Value, changes: Value) -> Value {
    let object = base.as_object_mut().expect("an object");
    for (key, value) in changes.as_object().expect("an object") {
        object.insert(key.clone(), value.clone());
    }
    base
}

/// `base` without `key`.
fn without(mut base: Value, key: &str) -> Value {
    base.as_object_mut().expect("an object").remove(key);
    base
}

/// `minimal_database()` with these credential items.
fn with_credentials(credentials: Value) -> Value {
    with(minimal_database(), json!({ "credentials": credentials }))
}

/// A body that sets every field of a database.
fn full_database() -> Value {
    json!({
        "name": "Warehouse",
        "adapter": "mysql",
        "hostname": "10.0.0.7",
        "port": 3307,
        "database": "dw",
        "ssl": true,
        "verify_server_hostname": true,
        "ssl_ca_cert": base64(CA_PEM.as_bytes()),
        "ssl_cert": base64(CERT_PEM.as_bytes()),
        "ssl_key": base64(KEY_PEM.as_bytes()),
        "restrict_access": true,
        "review_bypass_allowed": true,
        "group": "analytics",
        "slack_channel": "#dw-requests",
        "tunnel_id": "tun-1",
        "ai_enabled": true,
        "ai_max_rows": 1000,
        "connection_parameters": [
            {"name": "application_name", "value": "console"},
            {"name": "search_path", "value": ""}
        ],
        "credentials": [
            {
                "username": "admin",
                "password": "pw-admin-9",
                "hostname": "replica.internal",
                "ai_allowed": true,
                "timeout": 5,
                "reviews_required": 2,
                "default_credential": true
            },
            {"username": "reader", "password": "pw-reader-9"}
        ]
    })
}

/// A minimal setup body.
fn setup_body(api_id: &str) -> Value {
    json!({
        "id": api_id,
        "adapter": "postgres",
        "hostname": "pg.internal",
        "database": "billing",
        "username": "svc",
        "password": "pw-svc-1"
    })
}

/// The keys of a JSON object, sorted.
pub(crate) fn sorted_keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

fn sorted(keys: &[&str]) -> Vec<String> {
    let mut keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
    keys.sort();
    keys
}

fn assert_no_key(value: &Value, key: &str) {
    match value {
        Value::Object(map) => {
            assert!(!map.contains_key(key), "`{key}` in a response: {value}");
            map.values().for_each(|v| assert_no_key(v, key));
        }
        Value::Array(items) => items.iter().for_each(|v| assert_no_key(v, key)),
        _ => {}
    }
}

/// Exactly the documented keys, on the database and on every credential, and no secret key.
#[track_caller]
fn assert_database_shape(db: &Value) {
    assert_eq!(sorted_keys(db), sorted(&DATABASE_KEYS), "database keys");
    for credential in db["credentials"].as_array().expect("credentials is a list") {
        assert_eq!(
            sorted_keys(credential),
            sorted(&CREDENTIAL_KEYS),
            "credential keys"
        );
    }
    for key in ["password", "ssl_ca_cert", "ssl_cert", "ssl_key"] {
        assert_no_key(db, key);
    }
}

#[track_caller]
fn assert_no_text(response: &TestResponse, secrets: &[&str]) {
    let text = response.text();
    for secret in secrets {
        assert!(!text.contains(secret), "a secret is in a response: {text}");
    }
}

/// `<prefix>_` and 26 characters of a lowercase ULID.
#[track_caller]
fn assert_id(value: &Value, prefix: &str) {
    let id = value
        .as_str()
        .unwrap_or_else(|| panic!("id is not a string: {value}"));
    let ulid = id
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .unwrap_or_else(|| panic!("{id} does not start with {prefix}_"));
    assert_eq!(ulid.len(), 26, "{id}");
    assert!(
        ulid.chars()
            .all(|c| "0123456789abcdefghjkmnpqrstvwxyz".contains(c)),
        "{id} is not a lowercase ULID"
    );
    assert!(ulid.as_bytes()[0] <= b'7', "{id} overflows a ULID");
}

/// RFC 3339 UTC with exactly six fractional digits: `2026-11-22T10:04:05.123456Z`.
#[track_caller]
fn assert_timestamp(value: &Value) {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("timestamp is not a string: {value}"));
    assert_eq!(text.len(), 27, "{text}");
    for (i, c) in text.bytes().enumerate() {
        match i {
            4 | 7 => assert_eq!(c, b'-', "{text}"),
            10 => assert_eq!(c, b'T', "{text}"),
            13 | 16 => assert_eq!(c, b':', "{text}"),
            19 => assert_eq!(c, b'.', "{text}"),
            26 => assert_eq!(c, b'Z', "{text}"),
            _ => assert!(c.is_ascii_digit(), "{text}"),
        }
    }
    let field = |range: std::ops::Range<usize>| text[range].parse::<u32>().expect("digits");
    assert!((1..=12).contains(&field(5..7)), "{text}");
    assert!((1..=31).contains(&field(8..10)), "{text}");
    assert!(
        field(11..13) < 24 && field(14..16) < 60 && field(17..19) < 61,
        "{text}"
    );
}

async fn get(api: &Api, id: &str) -> Value {
    api.db(Method::GET, &at(id), None).await.expect(200).json()
}

async fn patch(api: &Api, id: &str, body: Value) -> Value {
    api.db(Method::PATCH, &at(id), Some(&body))
        .await
        .expect(200)
        .json()
}

async fn setup(api: &Api, body: &Value) -> Value {
    api.db(Method::PUT, SETUP, Some(body))
        .await
        .expect(200)
        .json()
}

async fn list(api: &Api, query: &str) -> Value {
    api.db(Method::GET, &format!("{DATABASES}{query}"), None)
        .await
        .expect(200)
        .json()
}

/// Sends the request, expects 422 with a JSON body, and returns the body.
async fn rejected(api: &Api, method: Method, path: &str, body: &Value) -> Value {
    let response = api.db(method, path, Some(body)).await.expect(422);
    assert_eq!(response.header("content-type"), Some("application/json"));
    response.json()
}

/// Expects the create to be refused with exactly these errors.
async fn create_fails(api: &Api, body: &Value, errors: Value) {
    let answer = rejected(api, Method::POST, DATABASES, body).await;
    assert_eq!(answer, json!({ "errors": errors }), "body: {body}");
}

/// The error object of a refused create, for cases that check only its shape.
async fn create_errors(api: &Api, body: &Value) -> Value {
    rejected(api, Method::POST, DATABASES, body).await["errors"].clone()
}

async fn expect_not_found_json(api: &Api, method: Method, path: &str, body: Option<&Value>) {
    let response = api.db(method, path, body).await.expect(404);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.json(), json!({"errors": {"detail": "Not Found"}}));
}

async fn check(api: &Api, base: &str, id: &str, username: &str) -> TestResponse {
    api.db(
        Method::GET,
        &format!("{base}/{id}/check-connection/{username}"),
        None,
    )
    .await
}

/// Check-connection that must answer 200 in plain text; returns the text.
async fn check_text(api: &Api, id: &str, username: &str) -> String {
    let response = check(api, DATABASES, id, username).await.expect(200);
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    response.text()
}

#[track_caller]
fn assert_plain_not_found(response: TestResponse) {
    let response = response.expect(404);
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(response.text(), "not found");
}

/// What a [`FakeChecker`] answers.
#[derive(Clone, Debug)]
enum Answer {
    Connected,
    Fails(String),
    Hangs,
}

/// A [`ConnectionChecker`] that records every target it is given and answers as told.
#[derive(Debug)]
struct FakeChecker {
    answer: Answer,
    seen: Mutex<Vec<CheckTarget>>,
}

impl FakeChecker {
    fn calls(&self) -> usize {
        self.seen.lock().expect("lock").len()
    }

    fn last(&self) -> CheckTarget {
        self.seen
            .lock()
            .expect("lock")
            .last()
            .cloned()
            .expect("the checker was called")
    }

    /// The password of the last check, as text.
    fn last_password(&self) -> Option<String> {
        self.last()
            .password
            .map(|p| p.expose_str().expect("utf-8").to_owned())
    }
}

#[async_trait]
impl ConnectionChecker for FakeChecker {
    async fn check(&self, target: &CheckTarget) -> Result<(), String> {
        self.seen.lock().expect("lock").push(target.clone());
        match &self.answer {
            Answer::Connected => Ok(()),
            Answer::Fails(message) => Err(message.clone()),
            Answer::Hangs => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(())
            }
        }
    }
}

/// A service whose every adapter is checked by one fake.
fn checked_api(storage: Arc<dyn Storage>, answer: Answer) -> (Api, Arc<FakeChecker>) {
    let fake = Arc::new(FakeChecker {
        answer,
        seen: Mutex::new(Vec::new()),
    });
    let mut checkers = Checkers::none();
    for adapter in Adapter::ALL {
        checkers = checkers.with(adapter, fake.clone());
    }
    (Api::with_checkers(storage, checkers), fake)
}

// ---------------------------------------------------------------------------------------------
// Create and retrieve
// ---------------------------------------------------------------------------------------------

/// A database created from the required fields only carries the documented defaults.
pub async fn create_returns_documented_defaults(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api.create_database(&minimal_database()).await;
    assert_database_shape(&db);
    let expected = [
        ("name", json!("Orders")),
        ("adapter", json!("postgres")),
        ("hostname", json!("db.internal")),
        ("database", json!("orders")),
        ("api_id", Value::Null),
        ("port", Value::Null),
        ("ssl", json!(false)),
        ("verify_server_hostname", json!(false)),
        ("restrict_access", json!(false)),
        ("review_bypass_allowed", json!(false)),
        ("group", Value::Null),
        ("slack_channel", Value::Null),
        ("tunnel_id", Value::Null),
        ("ai_enabled", json!(false)),
        ("ai_max_rows", json!(500)),
        ("connection_parameters", json!([])),
    ];
    for (key, value) in expected {
        assert_eq!(db[key], value, "{key}");
    }
    let credentials = db["credentials"].as_array().expect("list");
    assert_eq!(credentials.len(), 1);
    let credential = &credentials[0];
    assert_eq!(credential["username"], "reader");
    assert_eq!(credential["hostname"], Value::Null);
    assert_eq!(credential["ai_allowed"], false);
    assert_eq!(credential["timeout"], Value::Null);
    assert_eq!(credential["reviews_required"], 0);
    assert_eq!(credential["default_credential"], false);
}

/// Every response (create, retrieve, list) has exactly the documented keys and never a
/// password, certificate or key, neither as a key nor as text.
pub async fn responses_have_exact_keys_and_no_secrets(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let secrets = [
        "pw-admin-9",
        "pw-reader-9",
        "BEGIN CERTIFICATE",
        "PRIVATE KEY",
        &base64(CA_PEM.as_bytes()),
        &base64(CERT_PEM.as_bytes()),
        &base64(KEY_PEM.as_bytes()),
    ];
    let created = api
        .db(Method::POST, DATABASES, Some(&full_database()))
        .await
        .expect(200);
    assert_eq!(created.header("content-type"), Some("application/json"));
    assert_no_text(&created, &secrets);
    let db = created.json();
    assert_database_shape(&db);

    let retrieved = api
        .db(Method::GET, &at(&id_of(&db)), None)
        .await
        .expect(200);
    assert_no_text(&retrieved, &secrets);
    assert_database_shape(&retrieved.json());

    let listed = api.db(Method::GET, DATABASES, None).await.expect(200);
    assert_no_text(&listed, &secrets);
    for item in listed.json()["data"].as_array().expect("data") {
        assert_database_shape(item);
    }
}

/// Database ids are `db_` and credential ids `crd_` followed by a lowercase ULID; every id is
/// new, and database ids sort by creation time.
pub async fn create_assigns_prefixed_ulid_ids(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let first = api.create_database(&full_database()).await;
    let second = api.create_database(&full_database()).await;
    let mut ids = Vec::new();
    for db in [&first, &second] {
        assert_id(&db["id"], "db");
        ids.push(id_of(db));
        for credential in db["credentials"].as_array().expect("list") {
            assert_id(&credential["id"], "crd");
            ids.push(id_of(credential));
        }
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "ids repeat: {ids:?}");
    assert!(id_of(&first) < id_of(&second), "ids sort by creation time");
}

/// `inserted_at` and `updated_at` are RFC 3339 UTC with microseconds and equal on create.
pub async fn create_timestamps_are_equal_rfc3339_micros(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api.create_database(&minimal_database()).await;
    assert_timestamp(&db["inserted_at"]);
    assert_timestamp(&db["updated_at"]);
    assert_eq!(db["inserted_at"], db["updated_at"]);
}

/// Retrieve answers the very object create answered, and echoes every field that was given.
pub async fn retrieve_returns_the_created_object(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let body = full_database();
    let db = api.create_database(&body).await;
    for key in DATABASE_KEYS {
        if let Some(given) = body.get(key).filter(|_| key != "credentials") {
            assert_eq!(&db[key], given, "{key}");
        }
    }
    let credentials = db["credentials"].as_array().expect("list");
    let given = body["credentials"].as_array().expect("list");
    assert_eq!(credentials.len(), given.len());
    for (stored, sent) in credentials.iter().zip(given) {
        for (key, value) in sent.as_object().expect("object") {
            if key != "password" {
                assert_eq!(&stored[key], value, "credential {key}");
            }
        }
    }
    let response = api
        .db(Method::GET, &at(&id_of(&db)), None)
        .await
        .expect(200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.json(), db);
}

/// An empty or whitespace-only string given for an optional string field means null.
pub async fn create_blank_optional_strings_mean_null(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let body = with(
        minimal_database(),
        json!({
            "group": "",
            "slack_channel": "   ",
            "tunnel_id": "\t",
            "credentials": [{"username": "reader", "password": "", "hostname": " "}]
        }),
    );
    let db = api.create_database(&body).await;
    assert_eq!(db["group"], Value::Null);
    assert_eq!(db["slack_channel"], Value::Null);
    assert_eq!(db["tunnel_id"], Value::Null);
    assert_eq!(db["credentials"][0]["hostname"], Value::Null);
    assert_eq!(check_text(&api, &id_of(&db), "reader").await, "ok");
    assert_eq!(
        fake.last_password(),
        None,
        "a blank password is no password"
    );
    assert_eq!(fake.last().host, "db.internal");
}

/// Null given for an optional boolean, number or list on create means its default.
pub async fn create_null_optionals_mean_defaults(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let body = with(
        minimal_database(),
        json!({
            "port": null, "ssl": null, "verify_server_hostname": null, "restrict_access": null,
            "review_bypass_allowed": null, "ai_enabled": null, "ai_max_rows": null,
            "group": null, "slack_channel": null, "tunnel_id": null,
            "connection_parameters": null,
            "credentials": [{
                "username": "reader", "password": null, "hostname": null, "ai_allowed": null,
                "timeout": null, "reviews_required": null, "default_credential": null
            }]
        }),
    );
    let db = api.create_database(&body).await;
    let defaults = api.create_database(&minimal_database()).await;
    for key in DATABASE_KEYS {
        if !["id", "credentials", "inserted_at", "updated_at"].contains(&key) {
            assert_eq!(db[key], defaults[key], "{key}");
        }
    }
    let credential = &db["credentials"][0];
    for key in CREDENTIAL_KEYS.iter().filter(|k| **k != "id") {
        assert_eq!(credential[*key], defaults["credentials"][0][*key], "{key}");
    }
}

/// Unknown request fields are ignored, `"id"` and `"api_id"` included: the service assigns the
/// id, and only setup sets an api_id.
pub async fn create_ignores_unknown_fields(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let body = with(
        minimal_database(),
        json!({
            "id": "",
            "agent_id": "agent-7",
            "cacertfile": "/etc/ca.pem",
            "keyfile": "/etc/key.pem",
            "certfile": "/etc/cert.pem",
            "api_id": "not-through-setup",
            "inserted_at": "1999-01-01T00:00:00.000000Z",
            "credentials": [{"id": "", "username": "reader", "password": "pw", "extra": 1}]
        }),
    );
    let db = api.create_database(&body).await;
    assert_database_shape(&db);
    assert_id(&db["id"], "db");
    assert_id(&db["credentials"][0]["id"], "crd");
    assert_eq!(db["api_id"], Value::Null);
    assert_ne!(db["inserted_at"], "1999-01-01T00:00:00.000000Z");

    let chosen = "db_01aaaaaaaaaaaaaaaaaaaaaaaa";
    let db = api
        .create_database(&with(minimal_database(), json!({ "id": chosen })))
        .await;
    assert_ne!(db["id"], chosen, "the service assigns ids");
    api.db(Method::GET, &at(chosen), None).await.expect(404);
}

/// `default_credential` is stored and echoed as sent: zero defaults is allowed and never
/// promoted, and the flag stays on the item that carried it.
pub async fn create_keeps_default_credential_as_sent(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let none = api
        .create_database(&with_credentials(
            json!([{"username": "a"}, {"username": "b"}]),
        ))
        .await;
    assert_eq!(none["credentials"][0]["default_credential"], false);
    assert_eq!(none["credentials"][1]["default_credential"], false);
    let second = api
        .create_database(&with_credentials(
            json!([{"username": "a"}, {"username": "b", "default_credential": true}]),
        ))
        .await;
    assert_eq!(second["credentials"][0]["default_credential"], false);
    assert_eq!(second["credentials"][1]["default_credential"], true);
}

// ---------------------------------------------------------------------------------------------
// Validation (422)
// ---------------------------------------------------------------------------------------------

/// Every required field that is absent is "can't be blank", all reported at once.
pub async fn create_absent_required_fields_are_blank(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    create_fails(
        &api,
        &json!({}),
        json!({
            "name": [BLANK], "adapter": [BLANK], "hostname": [BLANK],
            "database": [BLANK], "credentials": [BLANK]
        }),
    )
    .await;
    for key in ["name", "adapter", "hostname", "database", "credentials"] {
        create_fails(
            &api,
            &without(minimal_database(), key),
            json!({ key: [BLANK] }),
        )
        .await;
    }
    assert_eq!(
        list(&api, "").await["data"],
        json!([]),
        "nothing was stored"
    );
}

/// A required field given as null, `""` or whitespace is "can't be blank".
pub async fn create_null_or_blank_required_fields_are_blank(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for key in ["name", "adapter", "hostname", "database"] {
        for value in [Value::Null, json!(""), json!("  \t ")] {
            let body = with(minimal_database(), json!({ key: value }));
            create_fails(&api, &body, json!({ key: [BLANK] })).await;
        }
    }
    create_fails(
        &api,
        &with_credentials(Value::Null),
        json!({"credentials": [BLANK]}),
    )
    .await;
    for username in [Value::Null, json!(""), json!(" ")] {
        create_fails(
            &api,
            &with_credentials(json!([{ "username": username, "password": "x" }])),
            json!({"credentials": [{"username": [BLANK]}]}),
        )
        .await;
    }
    assert_eq!(
        list(&api, "").await["data"],
        json!([]),
        "nothing was stored"
    );
}

/// `adapter` is one of the five names, in lower case, exactly.
pub async fn create_adapter_must_be_listed_in_lower_case(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for adapter in [
        "Postgres",
        "POSTGRES",
        "MySQL",
        "postgresql",
        "mongodb",
        " postgres",
    ] {
        let body = with(minimal_database(), json!({ "adapter": adapter }));
        create_fails(&api, &body, json!({"adapter": [ADAPTERS]})).await;
    }
    for adapter in ["postgres", "mysql", "clickhouse", "sqlserver", "oracle"] {
        let body = with(minimal_database(), json!({ "adapter": adapter }));
        assert_eq!(api.create_database(&body).await["adapter"], adapter);
    }
}

/// A value of the wrong JSON type is "is invalid" (and only that), on the field or on the item.
pub async fn create_wrong_json_types_are_invalid(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let top_level = [
        ("name", json!(5)),
        ("adapter", json!(true)),
        ("hostname", json!(["h"])),
        ("database", json!({"n": 1})),
        ("port", json!("5432")),
        ("ssl", json!("true")),
        ("verify_server_hostname", json!(1)),
        ("restrict_access", json!("no")),
        ("review_bypass_allowed", json!(0)),
        ("group", json!(5)),
        ("slack_channel", json!(true)),
        ("tunnel_id", json!(1)),
        ("ai_enabled", json!("yes")),
        ("ai_max_rows", json!("500")),
        ("connection_parameters", json!({"name": "a"})),
        ("connection_parameters", json!(["a=b"])),
        ("credentials", json!({"username": "reader"})),
        ("credentials", json!(["reader"])),
        ("ssl_ca_cert", json!(5)),
    ];
    for (key, value) in top_level {
        let body = with(minimal_database(), json!({ key: value }));
        create_fails(&api, &body, json!({ key: [INVALID] })).await;
    }
    let credential = [
        ("username", json!(5)),
        ("password", json!(1234)),
        ("hostname", json!(false)),
        ("ai_allowed", json!("true")),
        ("timeout", json!("5")),
        ("reviews_required", json!("1")),
        ("default_credential", json!(1)),
    ];
    for (key, value) in credential {
        let mut item = json!({"username": "reader", "password": "pw"});
        item[key] = value;
        create_fails(
            &api,
            &with_credentials(json!([item])),
            json!({"credentials": [{ key: [INVALID] }]}),
        )
        .await;
    }
    for (item, key) in [
        (json!({"name": 5, "value": "x"}), "name"),
        (json!({"name": "a", "value": 5}), "value"),
    ] {
        let body = with(
            minimal_database(),
            json!({ "connection_parameters": [item] }),
        );
        create_fails(
            &api,
            &body,
            json!({"connection_parameters": [{ key: [INVALID] }]}),
        )
        .await;
    }
    assert_eq!(
        list(&api, "").await["data"],
        json!([]),
        "nothing was stored"
    );
}

/// `port` is 1..=65535 or null.
pub async fn create_port_must_be_in_range(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for port in [0, -1] {
        create_fails(
            &api,
            &with(minimal_database(), json!({ "port": port })),
            json!({"port": ["must be greater than or equal to 1"]}),
        )
        .await;
    }
    let errors = create_errors(&api, &with(minimal_database(), json!({"port": 65536}))).await;
    assert_eq!(sorted_keys(&errors), ["port"]);
    assert_eq!(errors["port"].as_array().expect("messages").len(), 1);
    for port in [1, 65535] {
        let db = api
            .create_database(&with(minimal_database(), json!({ "port": port })))
            .await;
        assert_eq!(db["port"], port);
    }
}

/// `ai_max_rows` >= 1, `reviews_required` >= 0, `timeout` a whole number of seconds >= 1.
pub async fn create_number_minimums(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    create_fails(
        &api,
        &with(minimal_database(), json!({"ai_max_rows": 0})),
        json!({"ai_max_rows": ["must be greater than or equal to 1"]}),
    )
    .await;
    let cases = [
        (
            json!({"username": "r", "reviews_required": -1}),
            json!({"reviews_required": ["must be greater than or equal to 0"]}),
        ),
        (
            json!({"username": "r", "timeout": 0}),
            json!({"timeout": ["must be greater than or equal to 1"]}),
        ),
        (
            json!({"username": "r", "timeout": 1.5}),
            json!({"timeout": [INVALID]}),
        ),
    ];
    for (item, errors) in cases {
        create_fails(
            &api,
            &with_credentials(json!([item])),
            json!({ "credentials": [errors] }),
        )
        .await;
    }
    let db = api
        .create_database(&with(
            minimal_database(),
            json!({
                "ai_max_rows": 1,
                "credentials": [{"username": "r", "reviews_required": 0, "timeout": 1}]
            }),
        ))
        .await;
    assert_eq!(db["ai_max_rows"], 1);
    assert_eq!(db["credentials"][0]["reviews_required"], 0);
    assert_eq!(db["credentials"][0]["timeout"], 1);
}

/// `credentials: []` on create: "should have at least 1 item(s)".
pub async fn create_credentials_need_one_item(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    create_fails(
        &api,
        &with_credentials(json!([])),
        json!({"credentials": ["should have at least 1 item(s)"]}),
    )
    .await;
}

/// Item errors of a list give one object per item, `{}` for a valid one.
pub async fn create_credential_errors_are_per_item(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    create_fails(
        &api,
        &with_credentials(json!([{"username": "a", "password": "x"}, {"password": "y"}])),
        json!({"credentials": [{}, {"username": [BLANK]}]}),
    )
    .await;
    create_fails(
        &api,
        &with(
            with_credentials(json!([{"username": ""}, {"username": "b", "timeout": 0}])),
            json!({"name": ""}),
        ),
        json!({
            "name": [BLANK],
            "credentials": [
                {"username": [BLANK]},
                {"timeout": ["must be greater than or equal to 1"]}
            ]
        }),
    )
    .await;
}

/// A repeated username is taken, on the later item; usernames compare with case.
pub async fn create_usernames_unique_with_case(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    create_fails(
        &api,
        &with_credentials(json!([
            {"username": "bob"}, {"username": "alice"}, {"username": "bob"}
        ])),
        json!({"credentials": [{}, {}, {"username": [TAKEN]}]}),
    )
    .await;
    let db = api
        .create_database(&with_credentials(
            json!([{"username": "Bob"}, {"username": "bob"}]),
        ))
        .await;
    let names: Vec<&Value> = db["credentials"]
        .as_array()
        .expect("list")
        .iter()
        .map(|c| &c["username"])
        .collect();
    assert_eq!(names, [&json!("Bob"), &json!("bob")]);
}

/// At most one default credential: the second one is refused on its own item.
pub async fn create_second_default_credential_is_refused(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let errors = create_errors(
        &api,
        &with_credentials(json!([
            {"username": "a", "default_credential": true},
            {"username": "b", "default_credential": false},
            {"username": "c", "default_credential": true}
        ])),
    )
    .await;
    assert_eq!(sorted_keys(&errors), ["credentials"]);
    let items = errors["credentials"].as_array().expect("item errors");
    assert_eq!(items.len(), 3);
    assert_eq!(items[0], json!({}));
    assert_eq!(items[1], json!({}));
    assert_eq!(sorted_keys(&items[2]), ["default_credential"]);
}

/// `user` and `database` are reserved parameter names, compared without case.
pub async fn create_reserved_parameter_names(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for name in ["user", "database", "DATABASE", "User"] {
        let body = with(
            minimal_database(),
            json!({"connection_parameters": [
                {"name": "application_name", "value": "x"},
                {"name": name, "value": "y"}
            ]}),
        );
        create_fails(
            &api,
            &body,
            json!({"connection_parameters": [{}, {"name": ["is reserved"]}]}),
        )
        .await;
    }
    let db = api
        .create_database(&with(
            minimal_database(),
            json!({"connection_parameters": [{"name": "username", "value": "x"}]}),
        ))
        .await;
    assert_eq!(
        db["connection_parameters"],
        json!([{"name": "username", "value": "x"}])
    );
}

/// Parameter names are non-blank and unique within the list (the later one is taken).
pub async fn create_parameter_names_blank_or_repeated(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    create_fails(
        &api,
        &with(
            minimal_database(),
            json!({"connection_parameters": [
                {"name": "search_path", "value": "a"},
                {"name": "search_path", "value": "b"}
            ]}),
        ),
        json!({"connection_parameters": [{}, {"name": [TAKEN]}]}),
    )
    .await;
    for name in [Value::Null, json!(""), json!(" ")] {
        create_fails(
            &api,
            &with(
                minimal_database(),
                json!({"connection_parameters": [{"name": name, "value": "a"}]}),
            ),
            json!({"connection_parameters": [{"name": [BLANK]}]}),
        )
        .await;
    }
}

/// Parameter values are kept as given, `""` included; null becomes `""`; order is kept.
pub async fn create_parameter_values_kept_as_given(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api
        .create_database(&with(
            minimal_database(),
            json!({"connection_parameters": [
                {"name": "statement_timeout", "value": " 5s "},
                {"name": "search_path", "value": ""},
                {"name": "application_name", "value": null}
            ]}),
        ))
        .await;
    assert_eq!(
        db["connection_parameters"],
        json!([
            {"name": "statement_timeout", "value": " 5s "},
            {"name": "search_path", "value": ""},
            {"name": "application_name", "value": ""}
        ])
    );
}

/// `verify_server_hostname: true` needs a CA certificate; a base64 PEM (or DER) one will do.
pub async fn create_verify_server_hostname_needs_ca(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let verify = with(
        minimal_database(),
        json!({"ssl": true, "verify_server_hostname": true}),
    );
    let errors = create_errors(&api, &verify).await;
    assert_eq!(sorted_keys(&errors), ["verify_server_hostname"]);
    assert_eq!(
        errors["verify_server_hostname"]
            .as_array()
            .expect("messages")
            .len(),
        1
    );
    let blank_ca = with(verify.clone(), json!({"ssl_ca_cert": ""}));
    assert_eq!(
        sorted_keys(&create_errors(&api, &blank_ca).await),
        ["verify_server_hostname"]
    );

    let pem = with(
        verify.clone(),
        json!({"ssl_ca_cert": base64(CA_PEM.as_bytes())}),
    );
    let db = api.create_database(&pem).await;
    assert_eq!(db["verify_server_hostname"], true);
    assert_eq!(db["ssl"], true);
    let der = with(
        verify,
        json!({"ssl_ca_cert": base64(&[0x30, 0x82, 0x01, 0x0a, 0x02, 0x82])}),
    );
    assert_eq!(
        api.create_database(&der).await["verify_server_hostname"],
        true
    );
}

/// Certificates and keys that are not base64 are invalid.
pub async fn create_invalid_base64_certificate_is_invalid(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for key in ["ssl_ca_cert", "ssl_cert", "ssl_key"] {
        for value in ["not base64!", "%%%%", "abc"] {
            let body = with(minimal_database(), json!({ key: value }));
            create_fails(&api, &body, json!({ key: [INVALID] })).await;
        }
    }
    assert_eq!(
        list(&api, "").await["data"],
        json!([]),
        "nothing was stored"
    );
}

/// A refused update changes nothing: retrieve shows the record as it was, to the timestamp.
pub async fn rejected_update_changes_nothing(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api.create_database(&full_database()).await;
    let id = id_of(&db);
    let bodies = [
        json!({"name": "Renamed", "port": 0}),
        json!({"group": "new", "credentials": []}),
        json!({"credentials": [{"username": "fresh"}, {"username": "fresh"}]}),
        json!({"connection_parameters": [{"name": "user", "value": "x"}], "ai_enabled": false}),
        json!({"ssl_ca_cert": null, "restrict_access": false}),
        json!({"adapter": "Oracle", "hostname": "other"}),
    ];
    for body in bodies {
        rejected(&api, Method::PATCH, &at(&id), &body).await;
        assert_eq!(get(&api, &id).await, db, "after {body}");
    }
}

// ---------------------------------------------------------------------------------------------
// Update (PATCH)
// ---------------------------------------------------------------------------------------------

/// Fields left out of an update keep their values; `updated_at` moves, `inserted_at` does not.
pub async fn patch_keeps_fields_left_out(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api.create_database(&full_database()).await;
    let id = id_of(&db);
    let changes = [
        json!({"name": "Renamed"}),
        json!({}),
        json!({"port": 5433, "ai_enabled": false, "unknown": 1}),
        json!({"adapter": "postgres", "slack_channel": "#other"}),
    ];
    let mut expected = db.clone();
    for change in changes {
        let patched = patch(&api, &id, change.clone()).await;
        assert_database_shape(&patched);
        expected = with(expected, change.clone());
        expected = without(expected, "unknown");
        expected["updated_at"] = patched["updated_at"].clone();
        assert_eq!(patched, expected, "after {change}");
        assert_eq!(get(&api, &id).await, patched);
    }
    assert_eq!(expected["inserted_at"], db["inserted_at"]);
}

/// `updated_at` strictly increases on every update, however quick.
pub async fn patch_updated_at_strictly_increases(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api.create_database(&minimal_database()).await;
    let id = id_of(&db);
    let mut previous = db["updated_at"].as_str().expect("text").to_owned();
    for n in 0..8 {
        let patched = patch(&api, &id, json!({ "ai_max_rows": 10 + n })).await;
        assert_timestamp(&patched["updated_at"]);
        let now = patched["updated_at"].as_str().expect("text").to_owned();
        assert!(now > previous, "{now} is not after {previous}");
        assert_eq!(patched["inserted_at"], db["inserted_at"]);
        previous = now;
    }
}

/// Required fields may be left out of an update, but not blanked or given a bad value.
pub async fn patch_required_fields_cannot_be_blanked(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api.create_database(&minimal_database()).await;
    let id = id_of(&db);
    for key in ["name", "adapter", "hostname", "database"] {
        for value in [Value::Null, json!(""), json!("  ")] {
            let answer = rejected(&api, Method::PATCH, &at(&id), &json!({ key: value })).await;
            assert_eq!(answer, json!({"errors": { key: [BLANK] }}));
        }
    }
    let answer = rejected(&api, Method::PATCH, &at(&id), &json!({"adapter": "Oracle"})).await;
    assert_eq!(answer, json!({"errors": {"adapter": [ADAPTERS]}}));
    let answer = rejected(&api, Method::PATCH, &at(&id), &json!({"name": 7})).await;
    assert_eq!(answer, json!({"errors": {"name": [INVALID]}}));
    assert_eq!(get(&api, &id).await, db);
}

/// Optional fields clear with null or a blank string on update.
pub async fn patch_optional_fields_clear(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api.create_database(&full_database()).await;
    let patched = patch(
        &api,
        &id_of(&db),
        json!({"group": "", "slack_channel": null, "tunnel_id": "  ", "port": null}),
    )
    .await;
    for key in ["group", "slack_channel", "tunnel_id", "port"] {
        assert_eq!(patched[key], Value::Null, "{key}");
    }
}

/// `connection_parameters` on update replaces the list as a whole; `[]` and null clear it;
/// leaving it out keeps it.
pub async fn patch_connection_parameters_replace_as_whole(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api
        .create_database(&with(
            minimal_database(),
            json!({"connection_parameters": [
                {"name": "a", "value": "1"}, {"name": "b", "value": "2"}
            ]}),
        ))
        .await;
    let id = id_of(&db);
    let replaced = json!([{"name": "c", "value": "3"}, {"name": "a", "value": "4"}]);
    let patched = patch(&api, &id, json!({ "connection_parameters": replaced })).await;
    assert_eq!(patched["connection_parameters"], replaced);
    let patched = patch(&api, &id, json!({"name": "Kept"})).await;
    assert_eq!(patched["connection_parameters"], replaced);
    let patched = patch(&api, &id, json!({"connection_parameters": []})).await;
    assert_eq!(patched["connection_parameters"], json!([]));
    patch(
        &api,
        &id,
        json!({"connection_parameters": [{"name": "d", "value": "5"}]}),
    )
    .await;
    let patched = patch(&api, &id, json!({"connection_parameters": null})).await;
    assert_eq!(patched["connection_parameters"], json!([]));
    let answer = rejected(
        &api,
        Method::PATCH,
        &at(&id),
        &json!({"connection_parameters": [{"name": "Database", "value": "x"}]}),
    )
    .await;
    assert_eq!(
        answer,
        json!({"errors": {"connection_parameters": [{"name": ["is reserved"]}]}})
    );
}

/// Credentials on update: an item with a stored id updates that credential and keeps its id
/// (and its password when left out); items without id are new; unlisted ones are deleted; the
/// response keeps the request's order.
pub async fn patch_credentials_merge_by_id(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let db = api
        .create_database(&with_credentials(json!([
            {"username": "reader", "password": "pw-r"},
            {"username": "writer", "password": "pw-w", "reviews_required": 1}
        ])))
        .await;
    let id = id_of(&db);
    let reader = id_of(&db["credentials"][0]);
    let writer = id_of(&db["credentials"][1]);
    let patched = patch(
        &api,
        &id,
        json!({"credentials": [
            {"username": "auditor", "password": "pw-a"},
            {"id": writer, "reviews_required": 3}
        ]}),
    )
    .await;
    assert_database_shape(&patched);
    let credentials = patched["credentials"].as_array().expect("list");
    assert_eq!(credentials.len(), 2);
    assert_eq!(credentials[0]["username"], "auditor");
    assert_id(&credentials[0]["id"], "crd");
    assert_ne!(id_of(&credentials[0]), reader);
    assert_ne!(id_of(&credentials[0]), writer);
    assert_eq!(id_of(&credentials[1]), writer);
    assert_eq!(credentials[1]["username"], "writer");
    assert_eq!(credentials[1]["reviews_required"], 3);
    assert_eq!(get(&api, &id).await, patched);

    assert_plain_not_found(check(&api, DATABASES, &id, "reader").await);
    assert_eq!(check_text(&api, &id, "writer").await, "ok");
    assert_eq!(fake.last_password().as_deref(), Some("pw-w"));
    assert_eq!(check_text(&api, &id, "auditor").await, "ok");
    assert_eq!(fake.last_password().as_deref(), Some("pw-a"));
}

/// Fields left out of a stored credential's item keep their stored values.
pub async fn patch_credential_fields_left_out_keep_values(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api
        .create_database(&with_credentials(json!([{
            "username": "admin", "password": "pw", "hostname": "replica.internal",
            "ai_allowed": true, "timeout": 7, "reviews_required": 2, "default_credential": true
        }])))
        .await;
    let id = id_of(&db);
    let credential = db["credentials"][0].clone();
    let patched = patch(
        &api,
        &id,
        json!({"credentials": [{"id": credential["id"]}]}),
    )
    .await;
    assert_eq!(patched["credentials"], json!([credential]));
    let patched = patch(
        &api,
        &id,
        json!({"credentials": [{"id": credential["id"], "reviews_required": 0, "hostname": ""}]}),
    )
    .await;
    let expected = with(credential, json!({"reviews_required": 0, "hostname": null}));
    assert_eq!(patched["credentials"], json!([expected]));
}

/// An item whose id this database does not have (unknown, another database's, or `""`) is a
/// new credential with a new id, and needs a username like any new one.
pub async fn patch_unknown_credential_id_is_new(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let other = api.create_database(&minimal_database()).await;
    let foreign = id_of(&other["credentials"][0]);
    let db = api.create_database(&minimal_database()).await;
    let id = id_of(&db);
    let own = id_of(&db["credentials"][0]);
    let unknown = "crd_01aaaaaaaaaaaaaaaaaaaaaaaa";
    let patched = patch(
        &api,
        &id,
        json!({"credentials": [
            {"id": unknown, "username": "u1"},
            {"id": foreign, "username": "u2"},
            {"id": "", "username": "u3"}
        ]}),
    )
    .await;
    let ids: Vec<String> = patched["credentials"]
        .as_array()
        .expect("list")
        .iter()
        .map(id_of)
        .collect();
    for (new, old) in ids.iter().zip([unknown, foreign.as_str(), ""]) {
        assert_ne!(new, old);
        assert_ne!(new, &own);
        assert_id(&json!(new), "crd");
    }
    assert_eq!(
        get(&api, &id_of(&other)).await,
        other,
        "other database untouched"
    );
    let answer = rejected(
        &api,
        Method::PATCH,
        &at(&id),
        &json!({"credentials": [{"id": unknown, "password": "x"}]}),
    )
    .await;
    assert_eq!(
        answer,
        json!({"errors": {"credentials": [{"username": [BLANK]}]}})
    );
}

/// `credentials` on update must still hold at least one item; null is blank.
pub async fn patch_credentials_cannot_be_emptied(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api.create_database(&minimal_database()).await;
    let id = id_of(&db);
    let answer = rejected(&api, Method::PATCH, &at(&id), &json!({"credentials": []})).await;
    assert_eq!(
        answer,
        json!({"errors": {"credentials": ["should have at least 1 item(s)"]}})
    );
    let answer = rejected(&api, Method::PATCH, &at(&id), &json!({"credentials": null})).await;
    assert_eq!(answer, json!({"errors": {"credentials": [BLANK]}}));
    assert_eq!(get(&api, &id).await, db);
}

/// Uniqueness is checked on the new list: stored credentials may swap usernames, but a new
/// item may not reuse one, and a second default is refused.
pub async fn patch_usernames_unique_in_new_list(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api
        .create_database(&with_credentials(
            json!([{"username": "alice"}, {"username": "bob"}]),
        ))
        .await;
    let id = id_of(&db);
    let alice = id_of(&db["credentials"][0]);
    let bob = id_of(&db["credentials"][1]);
    let swapped = patch(
        &api,
        &id,
        json!({"credentials": [
            {"id": alice, "username": "bob"}, {"id": bob, "username": "alice"}
        ]}),
    )
    .await;
    assert_eq!(swapped["credentials"][0]["id"], alice);
    assert_eq!(swapped["credentials"][0]["username"], "bob");
    assert_eq!(swapped["credentials"][1]["username"], "alice");

    let answer = rejected(
        &api,
        Method::PATCH,
        &at(&id),
        &json!({"credentials": [{"id": alice}, {"username": "bob"}]}),
    )
    .await;
    assert_eq!(
        answer,
        json!({"errors": {"credentials": [{}, {"username": [TAKEN]}]}})
    );
    let errors = rejected(
        &api,
        Method::PATCH,
        &at(&id),
        &json!({"credentials": [
            {"id": alice, "default_credential": true},
            {"id": bob, "default_credential": true}
        ]}),
    )
    .await["errors"]
        .clone();
    assert_eq!(errors["credentials"][0], json!({}));
    assert_eq!(
        sorted_keys(&errors["credentials"][1]),
        ["default_credential"]
    );

    let cased = patch(
        &api,
        &id,
        json!({"credentials": [{"id": alice}, {"username": "BOB"}]}),
    )
    .await;
    assert_eq!(cased["credentials"][1]["username"], "BOB");
}

/// Retrieve, update and delete of a missing id: 404 `{"errors":{"detail":"Not Found"}}`.
pub async fn missing_database_is_not_found(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    api.create_database(&minimal_database()).await;
    let path = at("db_01aaaaaaaaaaaaaaaaaaaaaaaa");
    expect_not_found_json(&api, Method::GET, &path, None).await;
    expect_not_found_json(&api, Method::PATCH, &path, Some(&json!({"name": "x"}))).await;
    expect_not_found_json(&api, Method::PATCH, &path, Some(&json!({"port": 0}))).await;
    expect_not_found_json(&api, Method::DELETE, &path, None).await;
    assert_eq!(
        list(&api, "").await["data"].as_array().expect("data").len(),
        1
    );
}

/// On update, `verify_server_hostname: true` is checked against the stored CA certificate,
/// and clearing the CA under it is refused.
pub async fn patch_verify_server_hostname_uses_stored_ca(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = api.create_database(&minimal_database()).await;
    let id = id_of(&db);
    let errors = rejected(
        &api,
        Method::PATCH,
        &at(&id),
        &json!({"verify_server_hostname": true}),
    )
    .await["errors"]
        .clone();
    assert_eq!(sorted_keys(&errors), ["verify_server_hostname"]);
    patch(&api, &id, json!({"ssl_ca_cert": base64(CA_PEM.as_bytes())})).await;
    let patched = patch(&api, &id, json!({"verify_server_hostname": true})).await;
    assert_eq!(patched["verify_server_hostname"], true);
    let errors =
        rejected(&api, Method::PATCH, &at(&id), &json!({"ssl_ca_cert": null})).await["errors"]
            .clone();
    assert_eq!(sorted_keys(&errors), ["verify_server_hostname"]);
    let patched = patch(
        &api,
        &id,
        json!({"ssl_ca_cert": null, "verify_server_hostname": false}),
    )
    .await;
    assert_eq!(patched["verify_server_hostname"], false);
}

// ---------------------------------------------------------------------------------------------
// Setup
// ---------------------------------------------------------------------------------------------

/// Setup creates a database whose api_id is the body's id, named after the database, with
/// exactly one default credential carrying reviews_required.
pub async fn setup_creates_database(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let body = with(setup_body("ext-1"), json!({"reviews_required": 2}));
    let response = api.db(Method::PUT, SETUP, Some(&body)).await.expect(200);
    assert_no_text(&response, &["pw-svc-1"]);
    let db = response.json();
    assert_database_shape(&db);
    assert_id(&db["id"], "db");
    assert_eq!(db["api_id"], "ext-1");
    assert_eq!(db["name"], "billing");
    assert_eq!(db["adapter"], "postgres");
    assert_eq!(db["hostname"], "pg.internal");
    assert_eq!(db["database"], "billing");
    assert_eq!(db["inserted_at"], db["updated_at"]);
    for (key, value) in [
        ("port", Value::Null),
        ("ssl", json!(false)),
        ("verify_server_hostname", json!(false)),
        ("review_bypass_allowed", json!(false)),
        ("group", Value::Null),
        ("tunnel_id", Value::Null),
        ("ai_max_rows", json!(500)),
    ] {
        assert_eq!(db[key], value, "{key}");
    }
    let credentials = db["credentials"].as_array().expect("list");
    assert_eq!(credentials.len(), 1);
    assert_id(&credentials[0]["id"], "crd");
    assert_eq!(credentials[0]["username"], "svc");
    assert_eq!(credentials[0]["default_credential"], true);
    assert_eq!(credentials[0]["reviews_required"], 2);
    assert_eq!(get(&api, &id_of(&db)).await, db);

    let named = setup(&api, &with(setup_body("ext-2"), json!({"name": "Billing"}))).await;
    assert_eq!(named["name"], "Billing");
    assert_eq!(named["credentials"][0]["reviews_required"], 0);
    let blank_name = setup(&api, &with(setup_body("ext-3"), json!({"name": ""}))).await;
    assert_eq!(blank_name["name"], "billing");
}

/// A read after each kind of write answers what was written (the server caches reads: every
/// write must reach them): read, PATCH, read, setup by `api_id`, read, remove by `api_id`,
/// read; and the same for a delete by id.
pub async fn retrieve_after_each_write_answers_the_write(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = setup(&api, &setup_body("ext-1")).await;
    let id = id_of(&db);
    assert_eq!(get(&api, &id).await, db);
    let patched = patch(&api, &id, json!({"name": "Patched"})).await;
    assert_eq!(get(&api, &id).await, patched);
    let set_up = setup(
        &api,
        &with(setup_body("ext-1"), json!({"hostname": "pg2.internal"})),
    )
    .await;
    assert_eq!(set_up["id"], db["id"]);
    assert_eq!(get(&api, &id).await, set_up);
    api.db(Method::DELETE, &format!("{DATABASES}/remove/ext-1"), None)
        .await
        .expect(200);
    api.db(Method::GET, &at(&id), None).await.expect(404);

    let other = api.create_database(&minimal_database()).await;
    let other_id = id_of(&other);
    assert_eq!(get(&api, &other_id).await, other);
    api.db(Method::DELETE, &at(&other_id), None)
        .await
        .expect(200);
    api.db(Method::GET, &at(&other_id), None).await.expect(404);
}

/// Every string field has a length bound and refuses control characters where no one needs
/// them; `hostname` is a host name or an IP address (docs/api.md, *Limits*). A refused body changes
/// nothing.
pub async fn strings_are_bounded_and_clean(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let long = |n: usize| "x".repeat(n);
    let too_long = |n: usize| json!([format!("should be at most {n} character(s)")]);
    let control = json!(["must not contain control characters"]);
    let not_a_host = json!(["must be a host name or an IP address"]);
    let at_limit = with(
        minimal_database(),
        json!({"name": long(255), "database": "é".repeat(255), "group": long(255)}),
    );
    let stored = api.create_database(&at_limit).await;
    assert_eq!(stored["name"], long(255));

    for (change, errors) in [
        (json!({"name": long(256)}), json!({"name": too_long(255)})),
        (
            json!({"name": long(900_000)}),
            json!({"name": too_long(255)}),
        ),
        (
            json!({"hostname": long(70_000)}),
            json!({"hostname": too_long(253)}),
        ),
        (
            json!({"slack_channel": long(256)}),
            json!({"slack_channel": too_long(255)}),
        ),
        (json!({"name": "Orders\u{0}"}), json!({"name": control})),
        (
            json!({"name": "\u{1b}[31mOrders"}),
            json!({"name": control}),
        ),
        (
            json!({"database": "orders\nDROP"}),
            json!({"database": control}),
        ),
        (json!({"tunnel_id": "t\t1"}), json!({"tunnel_id": control})),
        (
            json!({"hostname": "db.internal\n"}),
            json!({"hostname": not_a_host}),
        ),
        (
            json!({"hostname": "db internal"}),
            json!({"hostname": not_a_host}),
        ),
        (
            json!({"hostname": "db.internal:5432"}),
            json!({"hostname": not_a_host}),
        ),
        (json!({"hostname": "-db"}), json!({"hostname": not_a_host})),
        (
            json!({"connection_parameters": [{"name": "search_path", "value": "a\nb"}]}),
            json!({"connection_parameters": [{"value": control}]}),
        ),
        (
            json!({"connection_parameters": [{"name": long(256), "value": long(4097)}]}),
            json!({"connection_parameters": [{"name": too_long(255), "value": too_long(4096)}]}),
        ),
        (
            json!({"credentials": [{"username": "a\u{7f}", "password": "p\u{0}w"}]}),
            json!({"credentials": [{
                "username": control,
                "password": ["must not contain a NUL character"],
            }]}),
        ),
        (
            json!({"credentials": [{"username": "a", "password": long(1025), "hostname": "h h"}]}),
            json!({"credentials": [{"password": too_long(1024), "hostname": not_a_host}]}),
        ),
    ] {
        create_fails(
            &api,
            &with(minimal_database(), change.clone()),
            errors.clone(),
        )
        .await;
        let answer = rejected(&api, Method::PATCH, &at(&id_of(&stored)), &change).await;
        assert_eq!(answer, json!({ "errors": errors }), "PATCH {change}");
    }
    for good in [
        "127.0.0.1",
        "::1",
        "2001:db8::5",
        "db-1.eu_west.internal.",
        "localhost",
    ] {
        let db = api
            .create_database(&with(minimal_database(), json!({ "hostname": good })))
            .await;
        assert_eq!(db["hostname"], good);
    }
    // A password may hold any character but NUL.
    let body = with(
        minimal_database(),
        json!({"credentials": [{"username": "a", "password": "p\u{1b}\n\tw"}]}),
    );
    api.create_database(&body).await;
    // Setup reads the same rules.
    let answer = rejected(
        &api,
        Method::PUT,
        SETUP,
        &with(
            setup_body("ext-1"),
            json!({"id": long(256), "hostname": "a\u{0}b"}),
        ),
    )
    .await;
    assert_eq!(
        answer,
        json!({"errors": {"id": too_long(255), "hostname": not_a_host}})
    );
    assert_eq!(get(&api, &id_of(&stored)).await, stored);
    assert_eq!(list(&api, "").await["data"].as_array().unwrap().len(), 7);
}

/// Wrong JSON types are "is invalid" wherever they appear, ids of list items included; a whole
/// number beyond 64 bits gets the bound it breaks, like any other.
pub async fn wrong_types_and_huge_numbers_are_named(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let stored = api.create_database(&minimal_database()).await;
    for id in [json!(42), json!(true), json!({"id": "x"}), json!(["crd_x"])] {
        let change = json!({"credentials": [{"id": id, "username": "reader"}]});
        let answer = rejected(&api, Method::PATCH, &at(&id_of(&stored)), &change).await;
        assert_eq!(
            answer,
            json!({"errors": {"credentials": [{"id": ["is invalid"]}]}}),
            "id {id}"
        );
    }
    let huge = |text: &str| serde_json::from_str::<Value>(text).unwrap();
    for (field, value, message) in [
        (
            "port",
            huge("18446744073709551616"),
            "must be less than or equal to 65535",
        ),
        ("port", huge("1e30"), "must be less than or equal to 65535"),
        (
            "port",
            huge("-99999999999999999999"),
            "must be greater than or equal to 1",
        ),
        (
            "ai_max_rows",
            huge("99999999999999999999"),
            "must be less than or equal to 4294967295",
        ),
        (
            "ai_max_rows",
            huge("9223372036854775808"),
            "must be less than or equal to 4294967295",
        ),
    ] {
        let answer = rejected(
            &api,
            Method::PATCH,
            &at(&id_of(&stored)),
            &json!({ field: value }),
        )
        .await;
        assert_eq!(
            answer,
            json!({"errors": { field: [message] }}),
            "{field} {value}"
        );
    }
    assert_eq!(get(&api, &id_of(&stored)).await, stored);
}

/// A second setup with the same id updates the same database.
pub async fn setup_again_updates_same_database(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let first = setup(&api, &setup_body("ext-1")).await;
    let second = setup(
        &api,
        &with(
            setup_body("ext-1"),
            json!({"hostname": "pg2.internal", "port": 6543}),
        ),
    )
    .await;
    assert_eq!(second["id"], first["id"]);
    assert_eq!(second["api_id"], "ext-1");
    assert_eq!(second["hostname"], "pg2.internal");
    assert_eq!(second["port"], 6543);
    assert_eq!(second["inserted_at"], first["inserted_at"]);
    assert!(second["updated_at"].as_str() > first["updated_at"].as_str());
    let other = setup(&api, &setup_body("ext-2")).await;
    assert_ne!(other["id"], first["id"]);
    let data = list(&api, "").await["data"].clone();
    assert_eq!(data, json!([second, other]));
}

/// The credential keeps its id while the username stays (and takes the new password); a new
/// username replaces it.
pub async fn setup_keeps_credential_id_for_same_username(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let first = setup(&api, &setup_body("ext-1")).await;
    let id = id_of(&first);
    let credential = id_of(&first["credentials"][0]);
    let same = setup(
        &api,
        &with(setup_body("ext-1"), json!({"password": "pw-svc-2"})),
    )
    .await;
    assert_eq!(id_of(&same["credentials"][0]), credential);
    assert_eq!(check_text(&api, &id, "svc").await, "ok");
    assert_eq!(fake.last_password().as_deref(), Some("pw-svc-2"));

    let renamed = setup(
        &api,
        &with(
            setup_body("ext-1"),
            json!({"username": "svc2", "password": "pw-3"}),
        ),
    )
    .await;
    assert_eq!(renamed["credentials"].as_array().expect("list").len(), 1);
    assert_ne!(id_of(&renamed["credentials"][0]), credential);
    assert_eq!(renamed["credentials"][0]["username"], "svc2");
    assert_plain_not_found(check(&api, DATABASES, &id, "svc").await);
    assert_eq!(check_text(&api, &id, "svc2").await, "ok");
    assert_eq!(fake.last_password().as_deref(), Some("pw-3"));
}

/// After setup the database has exactly one credential, even when an update added others.
pub async fn setup_leaves_exactly_one_credential(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let first = setup(&api, &setup_body("ext-1")).await;
    let id = id_of(&first);
    let credential = first["credentials"][0]["id"].clone();
    let patched = patch(
        &api,
        &id,
        json!({"credentials": [{"id": credential}, {"username": "extra", "password": "x"}]}),
    )
    .await;
    assert_eq!(patched["credentials"].as_array().expect("list").len(), 2);
    let again = setup(&api, &setup_body("ext-1")).await;
    let credentials = again["credentials"].as_array().expect("list");
    assert_eq!(credentials.len(), 1);
    assert_eq!(credentials[0]["id"], credential);
    assert_eq!(credentials[0]["default_credential"], true);
}

/// Setup is declarative: optional fields it maps and leaves out get their defaults
/// (certificates cleared, so verify_server_hostname turns false); fields it does not map keep
/// the values an update gave them.
pub async fn setup_is_declarative(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let full = with(
        setup_body("ext-1"),
        json!({
            "name": "Billing", "port": 6543, "group": "finance", "tunnel_id": "tun-9",
            "ssl": "enabled",
            "ssl_ca_cert": base64(CA_PEM.as_bytes()),
            "ssl_cert": base64(CERT_PEM.as_bytes()),
            "ssl_key": base64(KEY_PEM.as_bytes()),
            "reviews_required": 2, "review_bypass_allowed": true
        }),
    );
    let first = setup(&api, &full).await;
    for (key, value) in [
        ("name", json!("Billing")),
        ("port", json!(6543)),
        ("group", json!("finance")),
        ("tunnel_id", json!("tun-9")),
        ("ssl", json!(true)),
        ("review_bypass_allowed", json!(true)),
    ] {
        assert_eq!(first[key], value, "{key}");
    }
    let id = id_of(&first);
    let unmapped = json!({
        "restrict_access": true, "slack_channel": "#billing", "ai_enabled": true,
        "ai_max_rows": 42, "verify_server_hostname": true,
        "connection_parameters": [{"name": "application_name", "value": "console"}]
    });
    patch(&api, &id, unmapped.clone()).await;

    let second = setup(&api, &setup_body("ext-1")).await;
    assert_eq!(second["id"], first["id"]);
    for (key, value) in [
        ("name", json!("billing")),
        ("port", Value::Null),
        ("group", Value::Null),
        ("tunnel_id", Value::Null),
        ("ssl", json!(false)),
        ("review_bypass_allowed", json!(false)),
        ("verify_server_hostname", json!(false)),
    ] {
        assert_eq!(second[key], value, "{key} resets");
    }
    assert_eq!(second["credentials"][0]["reviews_required"], 0);
    for (key, value) in unmapped.as_object().expect("object") {
        if key != "verify_server_hostname" {
            assert_eq!(&second[key], value, "{key} is kept");
        }
    }
    assert_eq!(check_text(&api, &id, "svc").await, "ok");
    let target = fake.last();
    assert!(target.ca_cert.is_none(), "CA certificate cleared");
    assert!(target.client_cert.is_none(), "client certificate cleared");
    assert!(target.client_key.is_none(), "client key cleared");
}

/// Setup keeps verify_server_hostname (an unmapped field) while it sends a CA certificate.
pub async fn setup_keeps_verify_with_ca(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let with_ca = with(
        setup_body("ext-1"),
        json!({"ssl": "enabled", "ssl_ca_cert": base64(CA_PEM.as_bytes())}),
    );
    let first = setup(&api, &with_ca).await;
    patch(
        &api,
        &id_of(&first),
        json!({"verify_server_hostname": true}),
    )
    .await;
    let again = setup(&api, &with_ca).await;
    assert_eq!(again["verify_server_hostname"], true);
}

/// `ssl` is true only for the string "enabled".
pub async fn setup_ssl_only_for_enabled(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for (value, expected) in [
        (json!("enabled"), true),
        (json!("disabled"), false),
        (json!(""), false),
        (json!("  "), false),
        (Value::Null, false),
    ] {
        let db = setup(&api, &with(setup_body("ext-1"), json!({ "ssl": value }))).await;
        assert_eq!(db["ssl"], expected, "ssl {value}");
    }
    // A typo never turns TLS off: it is refused, and the stored database keeps TLS on.
    let on = setup(
        &api,
        &with(setup_body("ext-1"), json!({ "ssl": "enabled" })),
    )
    .await;
    for typo in ["true", "on", "Enabled", "enable", "disabled ", "yes"] {
        let body = with(setup_body("ext-1"), json!({ "ssl": typo }));
        let answer = rejected(&api, Method::PUT, SETUP, &body).await;
        assert_eq!(
            answer,
            json!({"errors": {"ssl": ["must be one of: enabled, disabled"]}}),
            "ssl {typo:?}"
        );
    }
    let answer = rejected(
        &api,
        Method::PUT,
        SETUP,
        &with(setup_body("ext-1"), json!({"ssl": true})),
    )
    .await;
    assert_eq!(answer, json!({"errors": {"ssl": ["is invalid"]}}));
    assert_eq!(get(&api, &id_of(&on)).await, on);
}

/// The required setup fields: absent, null or blank is "can't be blank" on that key; a refused
/// setup changes nothing.
pub async fn setup_required_fields(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let stored = setup(&api, &setup_body("ext-1")).await;
    for key in [
        "id", "adapter", "hostname", "database", "username", "password",
    ] {
        let answer = rejected(&api, Method::PUT, SETUP, &without(setup_body("ext-1"), key)).await;
        assert_eq!(answer, json!({"errors": { key: [BLANK] }}), "without {key}");
        for value in [Value::Null, json!(""), json!(" ")] {
            let body = with(setup_body("ext-1"), json!({ key: value }));
            let answer = rejected(&api, Method::PUT, SETUP, &body).await;
            assert_eq!(
                answer,
                json!({"errors": { key: [BLANK] }}),
                "{key}: {value}"
            );
        }
    }
    let answer = rejected(
        &api,
        Method::PUT,
        SETUP,
        &with(setup_body("ext-1"), json!({"password": 5})),
    )
    .await;
    assert_eq!(answer, json!({"errors": {"password": [INVALID]}}));
    let answer = rejected(
        &api,
        Method::PUT,
        SETUP,
        &with(
            setup_body("ext-1"),
            json!({"adapter": "Postgres", "port": 0}),
        ),
    )
    .await;
    assert_eq!(
        answer,
        json!({"errors": {
            "adapter": [ADAPTERS],
            "port": ["must be greater than or equal to 1"]
        }})
    );
    let answer = rejected(
        &api,
        Method::PUT,
        SETUP,
        &with(setup_body("ext-1"), json!({"reviews_required": -1})),
    )
    .await;
    assert_eq!(
        answer,
        json!({"errors": {"reviews_required": ["must be greater than or equal to 0"]}})
    );
    for key in ["ssl_ca_cert", "ssl_cert", "ssl_key"] {
        let body = with(setup_body("ext-1"), json!({ key: "not base64!" }));
        let answer = rejected(&api, Method::PUT, SETUP, &body).await;
        assert_eq!(answer, json!({"errors": { key: [INVALID] }}));
    }
    assert_eq!(get(&api, &id_of(&stored)).await, stored);
    assert_eq!(list(&api, "").await["data"], json!([stored]));
}

// ---------------------------------------------------------------------------------------------
// Delete and remove by api_id
// ---------------------------------------------------------------------------------------------

/// Delete answers 200 with the deleted object; the database (and its credentials) are gone.
pub async fn delete_returns_deleted_object(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let doomed = api.create_database(&full_database()).await;
    let kept = api.create_database(&minimal_database()).await;
    let id = id_of(&doomed);
    let response = api.db(Method::DELETE, &at(&id), None).await.expect(200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(response.json(), doomed);
    expect_not_found_json(&api, Method::GET, &at(&id), None).await;
    expect_not_found_json(&api, Method::DELETE, &at(&id), None).await;
    assert_plain_not_found(check(&api, DATABASES, &id, "admin").await);
    assert_eq!(list(&api, "").await["data"], json!([kept]));
}

/// Remove by api_id answers 200 with the deleted object, then the id and the api_id are gone;
/// unknown api_ids (and plain ids) are 404.
pub async fn remove_by_api_id(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let plain = api.create_database(&minimal_database()).await;
    let managed = setup(&api, &setup_body("ext-1")).await;
    let remove = |api_id: &str| format!("{DATABASES}/remove/{api_id}");
    let response = api
        .db(Method::DELETE, &remove("ext-1"), None)
        .await
        .expect(200);
    assert_eq!(response.json(), managed);
    expect_not_found_json(&api, Method::GET, &at(&id_of(&managed)), None).await;
    expect_not_found_json(&api, Method::DELETE, &remove("ext-1"), None).await;
    expect_not_found_json(&api, Method::DELETE, &remove("unknown"), None).await;
    expect_not_found_json(&api, Method::DELETE, &remove(&id_of(&plain)), None).await;
    assert_eq!(get(&api, &id_of(&plain)).await, plain);
}

/// After a delete (by api_id or by id), setup with the same id creates a new database.
pub async fn setup_after_delete_creates_anew(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let first = setup(&api, &setup_body("ext-1")).await;
    api.db(Method::DELETE, &format!("{DATABASES}/remove/ext-1"), None)
        .await
        .expect(200);
    let second = setup(&api, &setup_body("ext-1")).await;
    assert_ne!(second["id"], first["id"]);
    assert_eq!(second["api_id"], "ext-1");
    api.db(Method::DELETE, &at(&id_of(&second)), None)
        .await
        .expect(200);
    expect_not_found_json(
        &api,
        Method::DELETE,
        &format!("{DATABASES}/remove/ext-1"),
        None,
    )
    .await;
    let third = setup(&api, &setup_body("ext-1")).await;
    assert_ne!(third["id"], second["id"]);
    assert_eq!(list(&api, "").await["data"], json!([third]));
}

// ---------------------------------------------------------------------------------------------
// Check connection
// ---------------------------------------------------------------------------------------------

/// An unknown database or username is 404 plain text `not found`; usernames compare with case.
pub async fn check_connection_not_found_is_plain_text(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let db = api
        .create_database(&with_credentials(json!([{"username": "Reader"}])))
        .await;
    let id = id_of(&db);
    assert_plain_not_found(check(&api, DATABASES, "db_01aaaaaaaaaaaaaaaaaaaaaaaa", "Reader").await);
    assert_plain_not_found(check(&api, DATABASES, &id, "reader").await);
    assert_plain_not_found(check(&api, DATABASES, &id, "nobody").await);
    assert_eq!(fake.calls(), 0);
    assert_eq!(check_text(&api, &id, "Reader").await, "ok");
}

/// With no checker built in, check-connection answers 200 saying so, naming the adapter.
pub async fn check_connection_without_checker(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for adapter in ["postgres", "clickhouse"] {
        let db = api
            .create_database(&with(minimal_database(), json!({ "adapter": adapter })))
            .await;
        let text = check_text(&api, &id_of(&db), "reader").await;
        assert!(text.contains(adapter), "{text}");
        assert!(text.contains("not built"), "{text}");
    }
}

/// A connection that succeeds answers `ok`; the checker gets the database's connection
/// details, and the credential's hostname overrides the database's.
pub async fn check_connection_ok_with_target(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let body = with(
        minimal_database(),
        json!({
            "port": 6432, "ssl": true, "verify_server_hostname": true,
            "ssl_ca_cert": base64(CA_PEM.as_bytes()),
            "connection_parameters": [
                {"name": "application_name", "value": "console"},
                {"name": "search_path", "value": ""}
            ],
            "credentials": [
                {"username": "reader", "password": "pw-1", "hostname": "replica.internal"},
                {"username": "writer", "password": "pw-2"}
            ]
        }),
    );
    let db = api.create_database(&body).await;
    let id = id_of(&db);
    assert_eq!(check_text(&api, &id, "reader").await, "ok");
    let target = fake.last();
    assert_eq!(target.adapter, Adapter::Postgres);
    assert_eq!(target.host, "replica.internal");
    assert_eq!(target.port, 6432);
    assert_eq!(target.database, "orders");
    assert_eq!(target.username, "reader");
    assert_eq!(fake.last_password().as_deref(), Some("pw-1"));
    assert!(target.ssl && target.verify_server_hostname);
    assert_eq!(
        target.ca_cert.as_ref().map(|c| c.expose().to_vec()),
        Some(CA_PEM.as_bytes().to_vec())
    );
    let parameters: Vec<(&str, &str)> = target
        .connection_parameters
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect();
    assert_eq!(
        parameters,
        [("application_name", "console"), ("search_path", "")]
    );
    assert_eq!(check_text(&api, &id, "writer").await, "ok");
    assert_eq!(fake.last().host, "db.internal");
    assert_eq!(fake.last_password().as_deref(), Some("pw-2"));
}

/// A failed connection answers 200 with the driver's message on one line, password scrubbed.
pub async fn check_connection_failure_is_one_line_without_password(storage: Arc<dyn Storage>) {
    let password = "pw-Secret-77";
    let message = format!(
        "FATAL: password authentication failed for user \"reader\"\nDETAIL: password \"{password}\" rejected\r\n\tretry later"
    );
    let (api, fake) = checked_api(storage, Answer::Fails(message));
    let db = api
        .create_database(&with_credentials(
            json!([{"username": "reader", "password": password}]),
        ))
        .await;
    let text = check_text(&api, &id_of(&db), "reader").await;
    assert_eq!(fake.calls(), 1);
    assert!(!text.contains(password), "{text}");
    assert!(!text.contains('\n') && !text.contains('\r'), "{text:?}");
    assert!(
        text.starts_with("FATAL: password authentication failed for user \"reader\" DETAIL:"),
        "{text}"
    );
    assert!(text.ends_with("rejected retry later"), "{text}");
}

/// Without a port, the checker gets the adapter's default port (clickhouse: 8443 with ssl).
pub async fn check_connection_default_ports(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let cases = [
        ("postgres", false, 5432),
        ("mysql", false, 3306),
        ("clickhouse", false, 8123),
        ("clickhouse", true, 8443),
        ("sqlserver", false, 1433),
        ("oracle", false, 1521),
    ];
    for (adapter, ssl, port) in cases {
        let body = with(
            minimal_database(),
            json!({ "adapter": adapter, "ssl": ssl }),
        );
        let db = api.create_database(&body).await;
        assert_eq!(db["port"], Value::Null);
        assert_eq!(check_text(&api, &id_of(&db), "reader").await, "ok");
        let target = fake.last();
        assert_eq!(target.adapter.as_str(), adapter);
        assert_eq!(target.port, port, "{adapter} ssl={ssl}");
    }
}

/// The password is kept by an update that leaves it out (of the item, or leaves credentials
/// out altogether), and cleared by `null` or `""`.
pub async fn check_connection_password_kept_and_cleared(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let db = api.create_database(&minimal_database()).await;
    let id = id_of(&db);
    let credential = db["credentials"][0]["id"].clone();
    let steps = [
        (json!({"name": "Renamed"}), Some("pw-reader-1")),
        (
            json!({"credentials": [{"id": credential, "reviews_required": 1}]}),
            Some("pw-reader-1"),
        ),
        (
            json!({"credentials": [{"id": credential, "password": null}]}),
            None,
        ),
        (
            json!({"credentials": [{"id": credential, "password": "pw-new"}]}),
            Some("pw-new"),
        ),
        (
            json!({"credentials": [{"id": credential, "username": "reader2"}]}),
            Some("pw-new"),
        ),
        (
            json!({"credentials": [{"id": credential, "password": ""}]}),
            None,
        ),
    ];
    for (body, expected) in steps {
        let patched = patch(&api, &id, body.clone()).await;
        let username = patched["credentials"][0]["username"]
            .as_str()
            .expect("username")
            .to_owned();
        assert_eq!(check_text(&api, &id, &username).await, "ok");
        assert_eq!(fake.last_password().as_deref(), expected, "after {body}");
    }
}

/// The credential's timeout bounds the check (else the 10 s default): a checker that takes
/// longer is answered 200 with a message that says it timed out. Not in the per-backend suite:
/// the timeout is the service's, whatever the store, so `tests/tests/check_timeout.rs` runs it
/// once, on the memory store with the clock paused (no real second waited).
pub async fn check_connection_timeout(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Hangs);
    let db = api
        .create_database(&with_credentials(json!([
            {"username": "slow", "timeout": 1},
            {"username": "other", "timeout": 4}
        ])))
        .await;
    let text = check_text(&api, &id_of(&db), "slow").await;
    assert!(text.contains("timed out"), "{text}");
    assert_eq!(fake.last().timeout, Duration::from_secs(1));

    let (api, fake) = checked_api(Arc::clone(api.service.storage()), Answer::Connected);
    assert_eq!(check_text(&api, &id_of(&db), "other").await, "ok");
    assert_eq!(fake.last().timeout, Duration::from_secs(4));
    let plain = api.create_database(&minimal_database()).await;
    assert_eq!(check_text(&api, &id_of(&plain), "reader").await, "ok");
    assert_eq!(fake.last().timeout, Duration::from_secs(10));
}

/// A database reached through a tunnel, with no tunnel dialer provided: 200 with a message
/// that names the tunnel, and no direct connection attempt.
pub async fn check_connection_tunnel_without_dialer(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let db = api
        .create_database(&with(minimal_database(), json!({"tunnel_id": "tun-42"})))
        .await;
    let text = check_text(&api, &id_of(&db), "reader").await;
    assert!(text.contains("tun-42"), "{text}");
    assert_ne!(text, "ok");
    assert_eq!(fake.calls(), 0, "no direct connection to a tunnelled host");
}

/// The username in the path is percent-decoded.
pub async fn check_connection_percent_encoded_username(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let db = api
        .create_database(&with_credentials(json!([{"username": "app user@corp"}])))
        .await;
    assert_eq!(
        check_text(&api, &id_of(&db), "app%20user%40corp").await,
        "ok"
    );
    assert_eq!(fake.last().username, "app user@corp");
}

// ---------------------------------------------------------------------------------------------
// Check before saving
// ---------------------------------------------------------------------------------------------

const CHECK_UNSAVED: &str = "/api/v1/console/databases/check-connection";
const NO_SUCH_CREDENTIAL: &str = "does not name a credential of this database";

fn check_edited_path(id: &str) -> String {
    format!("{DATABASES}/{id}/check-connection")
}

/// A check before saving that must answer 200 in plain text; returns the text.
async fn check_unsaved_text(api: &Api, path: &str, body: &Value) -> String {
    let response = api.db(Method::POST, path, Some(body)).await.expect(200);
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    response.text()
}

/// `POST …/databases/check-connection` opens a real connection with the body's details
/// exactly as the stored check does (host, port, password, TLS, parameters, timeout) and
/// stores nothing.
pub async fn check_unsaved_uses_the_body_and_stores_nothing(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(Arc::clone(&storage), Answer::Connected);
    let body = with(
        minimal_database(),
        json!({
            "username": "writer",
            "port": 6432, "ssl": true, "verify_server_hostname": true,
            "ssl_ca_cert": base64(CA_PEM.as_bytes()),
            "connection_parameters": [{"name": "application_name", "value": "console"}],
            "credentials": [
                {"username": "reader", "password": "pw-1"},
                {"username": "writer", "password": "pw-2", "hostname": "primary.internal", "timeout": 3}
            ]
        }),
    );
    assert_eq!(check_unsaved_text(&api, CHECK_UNSAVED, &body).await, "ok");
    let target = fake.last();
    assert_eq!(target.host, "primary.internal");
    assert_eq!(target.port, 6432);
    assert_eq!(target.username, "writer");
    assert_eq!(fake.last_password().as_deref(), Some("pw-2"));
    assert!(target.ssl && target.verify_server_hostname);
    assert_eq!(
        target.ca_cert.as_ref().map(|c| c.expose().to_vec()),
        Some(CA_PEM.as_bytes().to_vec())
    );
    assert_eq!(target.connection_parameters.len(), 1);
    assert_eq!(target.timeout, Duration::from_secs(3));
    // The same body through the querydesk prefix.
    let compat = format!("{COMPAT}/check-connection");
    assert_eq!(check_unsaved_text(&api, &compat, &body).await, "ok");

    let listed = api
        .db(Method::GET, DATABASES, None)
        .await
        .expect(200)
        .json();
    assert_eq!(listed["data"], json!([]), "nothing is stored");
    assert_eq!(storage.record_counts().await.expect("counts").databases, 0);
}

/// The body is validated as a create is (the same 422 errors), plus `username`, which must
/// name one of its credentials; nothing is checked then.
pub async fn check_unsaved_validates_like_create(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let refused = |body: Value| {
        let api = &api;
        async move { rejected(api, Method::POST, CHECK_UNSAVED, &body).await["errors"].clone() }
    };
    assert_eq!(
        refused(with(minimal_database(), json!({"username": null}))).await,
        json!({"username": [BLANK]})
    );
    assert_eq!(
        refused(with(minimal_database(), json!({"username": "  "}))).await,
        json!({"username": [BLANK]})
    );
    assert_eq!(
        refused(with(minimal_database(), json!({"username": 7}))).await,
        json!({"username": [INVALID]})
    );
    assert_eq!(
        refused(with(minimal_database(), json!({"username": "nobody"}))).await,
        json!({"username": [NO_SUCH_CREDENTIAL]})
    );
    // The create's own errors, and the username's beside them.
    let broken = with(
        without(minimal_database(), "hostname"),
        json!({"port": 0, "adapter": "db2"}),
    );
    let expected = create_errors(&api, &broken).await;
    assert_eq!(
        refused(with(broken.clone(), json!({"username": "reader"}))).await,
        expected
    );
    assert_eq!(refused(broken).await, expected);
    assert_eq!(fake.calls(), 0);
}

/// Without `username`, the check tries the default credential, else the first.
pub async fn check_unsaved_without_username_tries_the_default_credential(
    storage: Arc<dyn Storage>,
) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    assert_eq!(
        check_unsaved_text(&api, CHECK_UNSAVED, &minimal_database()).await,
        "ok"
    );
    let two = with(
        minimal_database(),
        json!({"credentials": [
            {"username": "first", "password": "pw-1"},
            {"username": "admin", "password": "pw-2", "default_credential": true},
        ]}),
    );
    assert_eq!(check_unsaved_text(&api, CHECK_UNSAVED, &two).await, "ok");
    let users: Vec<String> = fake
        .seen
        .lock()
        .expect("lock")
        .iter()
        .map(|target| target.username.clone())
        .collect();
    assert_eq!(users, ["reader", "admin"]);
}

/// A failed check answers 200 with the driver's message on one line, the body's password
/// scrubbed from it.
pub async fn check_unsaved_failure_is_scrubbed(storage: Arc<dyn Storage>) {
    let password = "pw-Unsaved-31";
    let message = format!("FATAL: password \"{password}\" rejected\nfor user reader");
    let (api, fake) = checked_api(storage, Answer::Fails(message));
    let body = with(
        with_credentials(json!([{"username": "reader", "password": password}])),
        json!({"username": "reader"}),
    );
    let text = check_unsaved_text(&api, CHECK_UNSAVED, &body).await;
    assert_eq!(fake.calls(), 1);
    assert!(!text.contains(password), "{text}");
    assert!(!text.contains('\n'), "{text:?}");
    assert!(text.starts_with("FATAL: password"), "{text}");
}

/// `POST …/databases/{id}/check-connection` merges the body over the stored database as a
/// PATCH would (a new password, another host) and checks that, without saving it: the stored
/// database and its own check are unchanged. An unknown id is 404.
pub async fn check_edited_merges_without_saving(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let db = api.create_database(&minimal_database()).await;
    let id = id_of(&db);
    let credential = db["credentials"][0]["id"].clone();
    let body = json!({
        "username": "reader",
        "hostname": "moved.internal",
        "credentials": [{"id": credential, "password": "pw-rotated"}]
    });
    assert_eq!(
        check_unsaved_text(&api, &check_edited_path(&id), &body).await,
        "ok"
    );
    assert_eq!(fake.last().host, "moved.internal");
    assert_eq!(fake.last_password().as_deref(), Some("pw-rotated"));
    // Only `username`: the stored database as it is.
    let plain = json!({"username": "reader"});
    assert_eq!(
        check_unsaved_text(&api, &check_edited_path(&id), &plain).await,
        "ok"
    );
    assert_eq!(fake.last().host, "db.internal");
    assert_eq!(fake.last_password().as_deref(), Some("pw-reader-1"));

    let stored = api.db(Method::GET, &at(&id), None).await.expect(200).json();
    assert_eq!(stored, db, "nothing was saved");
    assert_eq!(check_text(&api, &id, "reader").await, "ok");
    assert_eq!(fake.last_password().as_deref(), Some("pw-reader-1"));

    // The merged body is validated as an update is.
    let errors = rejected(
        &api,
        Method::POST,
        &check_edited_path(&id),
        &json!({"username": "reader", "hostname": ""}),
    )
    .await;
    assert_eq!(errors, json!({"errors": {"hostname": [BLANK]}}));
    let errors = rejected(
        &api,
        Method::POST,
        &check_edited_path(&id),
        &json!({"username": "writer"}),
    )
    .await;
    assert_eq!(
        errors,
        json!({"errors": {"username": [NO_SUCH_CREDENTIAL]}})
    );
    let calls = fake.calls();
    expect_not_found_json(
        &api,
        Method::POST,
        &check_edited_path("db_01aaaaaaaaaaaaaaaaaaaaaaaa"),
        Some(&plain),
    )
    .await;
    assert_eq!(fake.calls(), calls);
}

/// A stored password goes only to the host, port, tunnel and TLS settings it was given for
/// (S17: a check of the stored database "with the body's changes" pointed at the caller's own
/// listener sent it the stored password). A check whose body moves the destination without
/// the password is 422 naming `password`, and nothing connects; an update that moves it is
/// accepted (a PATCH of `hostname` alone answers 200), and the password is held back until it
/// is given again; given again, it goes to the new destination.
pub async fn a_stored_password_goes_only_where_it_was_given_for(storage: Arc<dyn Storage>) {
    let (api, fake) = checked_api(storage, Answer::Connected);
    let db = api.create_database(&minimal_database()).await;
    let id = id_of(&db);
    let credential = db["credentials"][0]["id"].clone();
    assert_eq!(check_text(&api, &id, "reader").await, "ok");
    let calls = fake.calls();
    for moved in [
        json!({"hostname": "listener.attacker.test"}),
        json!({"port": 6543}),
        json!({"tunnel_id": "other-tunnel"}),
        json!({"ssl": true}),
        json!({"credentials": [{"id": credential, "hostname": "listener.attacker.test"}]}),
        json!({"adapter": "mysql"}),
    ] {
        let body = with(json!({"username": "reader"}), moved.clone());
        let refused = rejected(&api, Method::POST, &check_edited_path(&id), &body).await;
        let text = refused["errors"]["password"][0]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains("given again"), "{moved}: {refused}");
        assert_eq!(fake.calls(), calls, "{moved}: nothing connected");
    }
    // The same change with the password: checked, as given.
    let given = json!({"username": "reader", "hostname": "moved.internal",
                       "credentials": [{"id": credential, "password": "pw-given"}]});
    assert_eq!(
        check_unsaved_text(&api, &check_edited_path(&id), &given).await,
        "ok"
    );
    assert_eq!(fake.last_password().as_deref(), Some("pw-given"));
    // An update that moves it is accepted; the stored password is held back.
    patch(&api, &id, json!({"hostname": "moved.internal"})).await;
    let held = api
        .db(
            Method::GET,
            &format!("{DATABASES}/{id}/check-connection/reader"),
            None,
        )
        .await
        .expect(422)
        .json();
    assert!(
        held["errors"]["password"][0]
            .as_str()
            .is_some_and(|t| t.contains("given again")),
        "{held}"
    );
    // Another update does not free it: it stays bound where it was given.
    let calls = fake.calls();
    patch(&api, &id, json!({"name": "Renamed"})).await;
    api.db(
        Method::GET,
        &format!("{DATABASES}/{id}/check-connection/reader"),
        None,
    )
    .await
    .expect(422);
    assert_eq!(fake.calls(), calls);
    // Given again: it goes to the new destination.
    patch(
        &api,
        &id,
        json!({"credentials": [{"id": credential, "password": "pw-again"}]}),
    )
    .await;
    assert_eq!(check_text(&api, &id, "reader").await, "ok");
    assert_eq!(fake.last().host, "moved.internal");
    assert_eq!(fake.last_password().as_deref(), Some("pw-again"));
    // Another CA certificate (a TLS setting whose content is not opened to compare) holds it
    // back too, in a check with changes and in an update.
    let ca = json!({"username": "reader", "ssl_ca_cert": "Q0EtUEVN"});
    let calls = fake.calls();
    rejected(&api, Method::POST, &check_edited_path(&id), &ca).await;
    // The data protection document's provisioning password is held back by it too.
    api.db(
        Method::PUT,
        &format!("{DATABASES}/{id}/data-protection"),
        Some(&json!({"policies": [],
                     "provisioning": {"username": "owner", "password": "pw-owner"}})),
    )
    .await
    .expect(200);
    patch(&api, &id, json!({"ssl_ca_cert": "Q0EtUEVN"})).await;
    api.db(
        Method::GET,
        &format!("{DATABASES}/{id}/check-connection/reader"),
        None,
    )
    .await
    .expect(422);
    let provisioning = api
        .db(
            Method::GET,
            &format!("{DATABASES}/{id}/data-protection/provisioning/check-connection"),
            None,
        )
        .await
        .expect(422)
        .text();
    assert!(provisioning.contains("given again"), "{provisioning}");
    assert_eq!(fake.calls(), calls);
}

// ---------------------------------------------------------------------------------------------
// Listing
// ---------------------------------------------------------------------------------------------

/// Listing answers `{"data":[...],"next":...}` ordered by id, pages with `limit` and `after`
/// until `next` is null, and its items are the objects retrieve returns.
pub async fn list_pages_in_id_order(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    assert_eq!(list(&api, "").await, json!({"data": [], "next": null}));
    let mut created = Vec::new();
    for n in 0..5 {
        let body = with(minimal_database(), json!({ "name": format!("db {n}") }));
        created.push(api.create_database(&body).await);
    }
    let ids: Vec<String> = created.iter().map(id_of).collect();
    let mut sorted_ids = ids.clone();
    sorted_ids.sort();
    assert_eq!(ids, sorted_ids, "ids sort in creation order");

    let all = list(&api, "").await;
    assert_eq!(sorted_keys(&all), ["data", "next"]);
    assert_eq!(all["next"], Value::Null);
    assert_eq!(all["data"], json!(created));

    for limit in [1, 2, 3, 5] {
        let mut seen = Vec::new();
        let mut query = format!("?limit={limit}");
        loop {
            let page = list(&api, &query).await;
            let data = page["data"].as_array().expect("data").clone();
            assert!(!data.is_empty() && data.len() <= limit);
            seen.extend(data);
            match page["next"].as_str() {
                Some(next) => {
                    assert_eq!(Some(next), seen.last().map(id_of).as_deref());
                    query = format!("?limit={limit}&after={next}");
                }
                None => break,
            }
            assert!(seen.len() < 5, "next is null exactly when nothing follows");
        }
        assert_eq!(json!(seen), json!(created), "limit {limit}");
    }
    for db in &created {
        assert_eq!(&get(&api, &id_of(db)).await, db);
    }
}

/// `after` may be any string; it is exclusive.
pub async fn list_after_any_string(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let first = api.create_database(&minimal_database()).await;
    let second = api.create_database(&minimal_database()).await;
    let cases = [
        ("?after=zzz".to_owned(), json!([])),
        ("?after=db_".to_owned(), json!([first, second])),
        ("?after=".to_owned(), json!([first, second])),
        (format!("?after={}", id_of(&first)), json!([second])),
        (format!("?after={}", id_of(&second)), json!([])),
    ];
    for (query, expected) in cases {
        let page = list(&api, &query).await;
        assert_eq!(page, json!({"data": expected, "next": null}), "{query}");
    }
}

/// `limit` outside 1..=500 or not a number is 422 on `limit`.
pub async fn list_limit_out_of_range(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    api.create_database(&minimal_database()).await;
    for bad in ["0", "-1", "501", "abc", "1.5", ""] {
        let response = api
            .db(Method::GET, &format!("{DATABASES}?limit={bad}"), None)
            .await
            .expect(422);
        let errors = response.json()["errors"].clone();
        assert_eq!(sorted_keys(&errors), ["limit"], "limit={bad}");
        if bad == "0" {
            assert_eq!(
                errors["limit"],
                json!(["must be greater than or equal to 1"])
            );
        }
    }
    for good in ["1", "500"] {
        let page = list(&api, &format!("?limit={good}")).await;
        assert_eq!(page["data"].as_array().expect("data").len(), 1);
        assert_eq!(page["next"], Value::Null);
    }
}

// ---------------------------------------------------------------------------------------------
// Compatibility prefix
// ---------------------------------------------------------------------------------------------

/// `/api/v1/querydesk/databases` answers the same operations on the same records.
pub async fn querydesk_prefix_answers_same_operations(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let compat = |rest: &str| format!("{COMPAT}{rest}");
    let db = api
        .db(Method::POST, COMPAT, Some(&minimal_database()))
        .await
        .expect(200)
        .json();
    assert_database_shape(&db);
    let id = id_of(&db);
    assert_eq!(get(&api, &id).await, db);
    let fetched = api
        .db(Method::GET, &compat(&format!("/{id}")), None)
        .await
        .expect(200)
        .json();
    assert_eq!(fetched, db);
    let patched = api
        .db(
            Method::PATCH,
            &compat(&format!("/{id}")),
            Some(&json!({"name": "Compat"})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(patched["name"], "Compat");
    assert_eq!(get(&api, &id).await, patched);
    let listed = api
        .db(Method::GET, &compat("?limit=10"), None)
        .await
        .expect(200)
        .json();
    assert_eq!(listed, json!({"data": [patched], "next": null}));

    let response = check(&api, COMPAT, &id, "reader").await.expect(200);
    assert!(response.text().contains("not built"), "{}", response.text());
    assert_plain_not_found(check(&api, COMPAT, &id, "nobody").await);

    let managed = api
        .db(Method::PUT, &compat("/setup"), Some(&setup_body("ext-1")))
        .await
        .expect(200)
        .json();
    assert_eq!(managed["api_id"], "ext-1");
    assert_eq!(setup(&api, &setup_body("ext-1")).await["id"], managed["id"]);
    let removed = api
        .db(Method::DELETE, &compat("/remove/ext-1"), None)
        .await
        .expect(200)
        .json();
    assert_eq!(removed["id"], managed["id"]);

    let rejected_body = api
        .db(Method::POST, COMPAT, Some(&json!({})))
        .await
        .expect(422)
        .json();
    assert_eq!(rejected_body["errors"]["name"], json!([BLANK]));

    let deleted = api
        .db(Method::DELETE, &compat(&format!("/{id}")), None)
        .await
        .expect(200)
        .json();
    assert_eq!(deleted, patched);
    expect_not_found_json(&api, Method::GET, &compat(&format!("/{id}")), None).await;
}

/// Every case of this module, as tests over the store `$storage` makes.
#[macro_export]
macro_rules! database_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            databases,
            $storage,
            [
                create_returns_documented_defaults,
                responses_have_exact_keys_and_no_secrets,
                create_assigns_prefixed_ulid_ids,
                create_timestamps_are_equal_rfc3339_micros,
                retrieve_returns_the_created_object,
                create_blank_optional_strings_mean_null,
                create_null_optionals_mean_defaults,
                create_ignores_unknown_fields,
                create_keeps_default_credential_as_sent,
                create_absent_required_fields_are_blank,
                create_null_or_blank_required_fields_are_blank,
                create_adapter_must_be_listed_in_lower_case,
                create_wrong_json_types_are_invalid,
                create_port_must_be_in_range,
                create_number_minimums,
                create_credentials_need_one_item,
                create_credential_errors_are_per_item,
                create_usernames_unique_with_case,
                create_second_default_credential_is_refused,
                create_reserved_parameter_names,
                create_parameter_names_blank_or_repeated,
                create_parameter_values_kept_as_given,
                create_verify_server_hostname_needs_ca,
                create_invalid_base64_certificate_is_invalid,
                rejected_update_changes_nothing,
                patch_keeps_fields_left_out,
                patch_updated_at_strictly_increases,
                patch_required_fields_cannot_be_blanked,
                patch_optional_fields_clear,
                patch_connection_parameters_replace_as_whole,
                patch_credentials_merge_by_id,
                patch_credential_fields_left_out_keep_values,
                patch_unknown_credential_id_is_new,
                patch_credentials_cannot_be_emptied,
                patch_usernames_unique_in_new_list,
                missing_database_is_not_found,
                patch_verify_server_hostname_uses_stored_ca,
                setup_creates_database,
                setup_again_updates_same_database,
                retrieve_after_each_write_answers_the_write,
                strings_are_bounded_and_clean,
                wrong_types_and_huge_numbers_are_named,
                setup_keeps_credential_id_for_same_username,
                setup_leaves_exactly_one_credential,
                setup_is_declarative,
                setup_keeps_verify_with_ca,
                setup_ssl_only_for_enabled,
                setup_required_fields,
                delete_returns_deleted_object,
                remove_by_api_id,
                setup_after_delete_creates_anew,
                check_connection_not_found_is_plain_text,
                check_connection_without_checker,
                check_connection_ok_with_target,
                check_connection_failure_is_one_line_without_password,
                check_connection_default_ports,
                check_connection_password_kept_and_cleared,
                check_connection_tunnel_without_dialer,
                check_connection_percent_encoded_username,
                check_unsaved_uses_the_body_and_stores_nothing,
                check_unsaved_validates_like_create,
                check_unsaved_without_username_tries_the_default_credential,
                check_unsaved_failure_is_scrubbed,
                check_edited_merges_without_saving,
                a_stored_password_goes_only_where_it_was_given_for,
                list_pages_in_id_order,
                list_after_any_string,
                list_limit_out_of_range,
                list_filters_keep_exactly_the_matches,
                querydesk_prefix_answers_same_operations,
            ]
        );
    };
}

// ---------------------------------------------------------------------------------------------
// Listing filters
// ---------------------------------------------------------------------------------------------

/// `?adapter=`, `?group=`, `?name_prefix=`, `?api_id=`, `?tunnel_id=` keep exactly the
/// matching databases, combine, page with `limit` and `after` (on the compat prefix too), follow
/// updates; an unknown adapter is 422.
pub async fn list_filters_keep_exactly_the_matches(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let bodies = [
        json!({"name": "orders-eu", "group": "prod"}),
        json!({"name": "orders-us", "group": "prod", "tunnel_id": "tun-a"}),
        json!({"name": "Orders-old", "adapter": "mysql", "group": "archive"}),
        json!({"name": "events", "adapter": "clickhouse", "group": "prod", "tunnel_id": "tun-a"}),
        json!({"name": "billing", "group": "prod"}),
    ];
    let mut ids = Vec::new();
    for body in bodies {
        let db = api.create_database(&with(minimal_database(), body)).await;
        ids.push(id_of(&db));
    }
    let setup = json!({
        "id": "ext-filters", "adapter": "postgres", "hostname": "db.internal",
        "database": "app", "username": "svc", "password": "pw", "name": "orders-setup",
    });
    api.db(Method::PUT, SETUP, Some(&setup)).await.expect(200);
    let cases = [
        (
            "adapter=postgres",
            vec!["orders-eu", "orders-us", "billing", "orders-setup"],
        ),
        ("adapter=clickhouse", vec!["events"]),
        (
            "group=prod",
            vec!["orders-eu", "orders-us", "events", "billing"],
        ),
        (
            "name_prefix=orders",
            vec!["orders-eu", "orders-us", "orders-setup"],
        ),
        ("name_prefix=Orders", vec!["Orders-old"]),
        ("name_prefix=orders-u", vec!["orders-us"]),
        ("api_id=ext-filters", vec!["orders-setup"]),
        ("tunnel_id=tun-a", vec!["orders-us", "events"]),
        (
            "group=prod&adapter=postgres&tunnel_id=tun-a",
            vec!["orders-us"],
        ),
        (
            "group=prod&name_prefix=orders",
            vec!["orders-eu", "orders-us"],
        ),
        ("api_id=ext-filters&group=prod", vec![]),
        ("group=nobody", vec![]),
        (
            "group=&name_prefix=",
            vec![
                "orders-eu",
                "orders-us",
                "Orders-old",
                "events",
                "billing",
                "orders-setup",
            ],
        ),
    ];
    for (filters, expected) in cases {
        assert_eq!(
            api.listed_names(DATABASES, filters).await,
            expected,
            "{filters}"
        );
        assert_eq!(
            api.listed_names(COMPAT, filters).await,
            expected,
            "compat {filters}"
        );
    }
    // A filter follows an update.
    patch(
        &api,
        &ids[4],
        json!({"group": "archive", "name": "orders-billing"}),
    )
    .await;
    assert_eq!(
        api.listed_names(DATABASES, "group=prod").await,
        ["orders-eu", "orders-us", "events"]
    );
    assert_eq!(
        api.listed_names(DATABASES, "name_prefix=orders-b").await,
        ["orders-billing"]
    );
    for bad in ["adapter=db2", "adapter="] {
        let errors = api
            .db(Method::GET, &format!("{DATABASES}?{bad}"), None)
            .await
            .expect(422)
            .json();
        assert_eq!(errors, json!({"errors": {"adapter": [ADAPTERS]}}), "{bad}");
    }
    let errors = api
        .db(
            Method::GET,
            &format!("{DATABASES}?adapter=db2&limit=0"),
            None,
        )
        .await
        .expect(422)
        .json();
    let fields: Vec<&String> = errors["errors"]
        .as_object()
        .expect("errors")
        .keys()
        .collect();
    assert_eq!(fields, ["adapter", "limit"], "both errors at once");
}
