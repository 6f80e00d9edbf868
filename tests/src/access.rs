//! Cases of the HTTP suite: permissions, data protection, the delete guard, stored caller keys
//! (docs/api.md, *Permissions* and *Caller credentials*).
//!
//! - `GET|PUT …/databases/{id}/permissions`: `{"database_id", "permissions": [{"subject_kind",
//!   "subject", "access"}]}`, each PUT replacing the whole list;
//! - `GET|PUT …/databases/{id}/data-protection`: `{"database_id", "inherits_from", "policies":
//!   [{"name", "description", "columns": [{"column", "action"}]}]}`, each PUT replacing the
//!   whole document, `inherits_from` never the database itself, an existing database, no cycle;
//! - both deletes refuse (422, naming the heirs, nothing changed) a database whose policies
//!   another database inherits, and take its permissions and policies with it otherwise;
//! - caller keys stored through the [`Storage`] ([`StoredCredentials`]): kind, scope, revocation
//!   and `last_used_at`.

use dbconsole_core::storage::Edits as _;
use std::sync::Arc;

use bytes::Bytes;
use dbconsole_core::auth::{Authenticator as _, StoredCredentials, mint_caller_key};
use dbconsole_core::{ConsoleService, CredentialKind, Scope, StaticCredentials, Storage};
use http::{Method, header};
use http_body_util::Full;
use serde_json::{Value, json};

use crate::{API_KEY, Api, DATABASES, TestResponse, minimal_dashboard, minimal_database};

const SETUP: &str = "/api/v1/console/databases/setup";
const COMPAT: &str = "/api/v1/querydesk/databases";
const COMPAT_DASHBOARDS: &str = "/api/v1/dashboards";
const BLANK: &str = "can't be blank";
const INVALID: &str = "is invalid";
const TAKEN: &str = "has already been taken";
const AT_LEAST_ONE: &str = "should have at least 1 item(s)";
const ITSELF: &str = "can't be the database itself";
const MISSING: &str = "does not exist";
const CYCLE: &str = "would create an inheritance cycle";
/// A well-formed database id that no store holds.
const NO_SUCH_DATABASE: &str = "db_01jzzzzzzzzzzzzzzzzzzzzzzz";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn at(id: &str) -> String {
    format!("{DATABASES}/{id}")
}

fn permissions_path(id: &str) -> String {
    format!("{DATABASES}/{id}/permissions")
}

fn protection_path(id: &str) -> String {
    format!("{DATABASES}/{id}/data-protection")
}

/// Creates a database named `name` and returns its id.
async fn create(api: &Api, name: &str) -> String {
    let mut body = minimal_database();
    body["name"] = json!(name);
    let created = api.create_database(&body).await;
    created["id"].as_str().expect("an id").to_owned()
}

/// A setup body for `api_id`, naming the database `name`.
fn setup_body(api_id: &str, name: &str) -> Value {
    json!({
        "id": api_id,
        "name": name,
        "adapter": "postgres",
        "hostname": "pg.internal",
        "database": "billing",
        "username": "svc",
        "password": "pw-svc-1"
    })
}

async fn get(api: &Api, path: &str) -> Value {
    api.db(Method::GET, path, None).await.expect(200).json()
}

async fn put(api: &Api, path: &str, body: &Value) -> Value {
    api.db(Method::PUT, path, Some(body))
        .await
        .expect(200)
        .json()
}

/// Sends the PUT, expects 422 with a JSON body, and returns the body.
async fn rejected(api: &Api, path: &str, body: &Value) -> Value {
    let response = api.db(Method::PUT, path, Some(body)).await.expect(422);
    assert_eq!(response.header("content-type"), Some("application/json"));
    response.json()
}

/// Expects the PUT to be refused with exactly `errors`, and the document at `path` not to move.
async fn refused(api: &Api, path: &str, body: &Value, errors: Value) {
    let before = get(api, path).await;
    assert_eq!(
        rejected(api, path, body).await,
        json!({ "errors": errors }),
        "body: {body}"
    );
    assert_eq!(get(api, path).await, before, "a refused PUT changed {path}");
}

/// Makes database `heir` inherit the policies of `from` (or nothing, with `None`).
async fn inherit(api: &Api, heir: &str, from: Option<&str>) -> Value {
    put(
        api,
        &protection_path(heir),
        &json!({ "inherits_from": from, "policies": [] }),
    )
    .await
}

/// Two policies as a client sends them.
fn sample_policies() -> Value {
    json!([
        {
            "name": "pii",
            "description": "Personal data",
            "columns": [
                {"column": "users.email", "action": "mask", "mask": "full"},
                {"column": "users.phone", "action": "hide"},
                {"column": "users.card", "action": "mask", "mask": "partial", "keep_first": 0,
                 "keep_last": 4}
            ]
        },
        {
            "name": "billing",
            "description": null,
            "columns": [{"column": "public.invoices.iban", "action": "hide"}]
        }
    ])
}

fn sample_permissions() -> Value {
    json!([
        {"subject_kind": "user", "subject": "alice@example.com", "access": "query"},
        {"subject_kind": "group", "subject": "analysts", "access": "review"},
        {"subject_kind": "user", "subject": "bob@example.com", "access": "admin"}
    ])
}

/// The 422 body of a delete refused because `heirs` (id, name) inherit the database's policies.
fn guard_body(heirs: &[(&str, &str)]) -> Value {
    let names: Vec<String> = heirs
        .iter()
        .map(|(id, name)| format!("{name} ({id})"))
        .collect();
    let inherited_by: Vec<Value> = heirs
        .iter()
        .map(|(id, name)| json!({ "id": id, "name": name }))
        .collect();
    json!({ "errors": {
        "detail": format!("data protection policies are inherited by: {}", names.join(", ")),
        "inherited_by": inherited_by,
    }})
}

/// A caller credential presented in a request.
#[derive(Clone, Copy)]
enum Caller<'a> {
    /// No credential at all.
    Nobody,
    /// `x-api-key: <key>`.
    ApiKey(&'a str),
    /// `Authorization: Bearer <token>`.
    Bearer(&'a str),
}

async fn call(
    api: &Api,
    caller: Caller<'_>,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> TestResponse {
    let builder = Api::request(method, path, body);
    let builder = match caller {
        Caller::Nobody => builder,
        Caller::ApiKey(key) => builder.header("x-api-key", key),
        Caller::Bearer(token) => builder.header(header::AUTHORIZATION, format!("Bearer {token}")),
    };
    let body = Full::new(body.map(|b| Bytes::from(b.to_string())).unwrap_or_default());
    api.send(builder.body(body).expect("a valid request")).await
}

#[track_caller]
fn assert_unauthorized(response: &TestResponse) {
    assert_eq!(response.status.as_u16(), 401, "body: {}", response.text());
    crate::assert_unauthorized_body(response);
}

#[track_caller]
fn assert_forbidden(response: &TestResponse, what: &str) {
    assert_eq!(
        response.status.as_u16(),
        403,
        "{what}; body: {}",
        response.text()
    );
    assert_eq!(
        response.json(),
        json!({"errors": {"detail": "Forbidden"}}),
        "{what}"
    );
}

/// A service that accepts the caller keys stored in `storage` (and no static credential).
fn keyed_api(storage: &Arc<dyn Storage>) -> Api {
    let auth = StoredCredentials::new(storage.clone(), StaticCredentials::default());
    Api {
        service: ConsoleService::builder(storage.clone(), Arc::new(auth), crate::test_sealer())
            .build(),
    }
}

/// Mints a key, stores it, and returns its id and its secret.
async fn stored_key(
    storage: &Arc<dyn Storage>,
    kind: CredentialKind,
    scope: Scope,
    name: &str,
) -> (String, String) {
    let (key, secret) = mint_caller_key(kind, scope, name);
    let id = key.id.as_str().to_owned();
    storage
        .insert_caller_key(key, dbconsole_core::storage::testing::origin())
        .await
        .expect("the key is stored");
    let secret = secret.expose_str().expect("a text secret").to_owned();
    (id, secret)
}

// ---------------------------------------------------------------------------------------------
// Permissions
// ---------------------------------------------------------------------------------------------

/// A new database has no permissions, inherits nothing and has no policies.
pub async fn access_defaults_for_new_database(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    let response = api
        .db(Method::GET, &permissions_path(&id), None)
        .await
        .expect(200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(
        response.json(),
        json!({"database_id": id, "permissions": []})
    );
    assert_eq!(
        get(&api, &protection_path(&id)).await,
        json!({"database_id": id, "inherits_from": null, "policies": []})
    );
}

/// PUT replaces the whole list, answers the stored document, and GET returns the same; the data
/// protection document does not move.
pub async fn access_permissions_put_replaces_list(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    let path = permissions_path(&id);
    let expected = json!({"database_id": id, "permissions": sample_permissions()});
    let answer = put(&api, &path, &json!({"permissions": sample_permissions()})).await;
    assert_eq!(answer, expected);
    assert_eq!(get(&api, &path).await, expected);

    let one = json!([{"subject_kind": "group", "subject": "dba", "access": "admin"}]);
    // Unknown fields are ignored, at the top and in items.
    let body = json!({
        "permissions": [{"subject_kind": "group", "subject": "dba", "access": "admin", "x": 1}],
        "database_id": "db_other"
    });
    assert_eq!(
        put(&api, &path, &body).await,
        json!({"database_id": id, "permissions": one})
    );
    assert_eq!(
        get(&api, &path).await,
        json!({"database_id": id, "permissions": one})
    );
    assert_eq!(
        get(&api, &protection_path(&id)).await,
        json!({"database_id": id, "inherits_from": null, "policies": []})
    );

    assert_eq!(
        put(&api, &path, &json!({"permissions": []})).await,
        json!({"database_id": id, "permissions": []})
    );
    assert_eq!(
        get(&api, &path).await,
        json!({"database_id": id, "permissions": []})
    );
}

/// `"permissions": null` means the empty list; an absent list is blank and changes nothing.
pub async fn access_permissions_null_empty_absent_blank(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    let path = permissions_path(&id);
    put(&api, &path, &json!({"permissions": sample_permissions()})).await;
    refused(&api, &path, &json!({}), json!({"permissions": [BLANK]})).await;
    refused(
        &api,
        &path,
        &json!({"policies": []}),
        json!({"permissions": [BLANK]}),
    )
    .await;
    assert_eq!(
        put(&api, &path, &json!({"permissions": null})).await,
        json!({"database_id": id, "permissions": []})
    );
    assert_eq!(
        get(&api, &path).await,
        json!({"database_id": id, "permissions": []})
    );
}

/// Every item error at once, one object per item (`{}` for a valid one), and nothing stored.
pub async fn access_permissions_item_errors(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    let path = permissions_path(&id);
    put(&api, &path, &json!({"permissions": sample_permissions()})).await;

    let body = json!({"permissions": [
        {"subject_kind": "user", "subject": "alice@example.com", "access": "query"},
        {"subject_kind": "User", "subject": "  ", "access": "owner"},
        {},
        {"subject_kind": 5, "subject": ["x"], "access": true},
        {"subject_kind": null, "subject": null, "access": null}
    ]});
    refused(
        &api,
        &path,
        &body,
        json!({"permissions": [
            {},
            {
                "subject_kind": ["must be one of: user, group"],
                "subject": [BLANK],
                "access": ["must be one of: query, review, admin"]
            },
            {"subject_kind": [BLANK], "subject": [BLANK], "access": [BLANK]},
            {"subject_kind": [INVALID], "subject": [INVALID], "access": [INVALID]},
            {"subject_kind": [BLANK], "subject": [BLANK], "access": [BLANK]}
        ]}),
    )
    .await;

    // The list itself of the wrong type, or holding something other than objects.
    for wrong in [json!("alice"), json!({"a": 1}), json!([1]), json!(true)] {
        refused(
            &api,
            &path,
            &json!({ "permissions": wrong }),
            json!({"permissions": [INVALID]}),
        )
        .await;
    }
}

/// A second item with the same (subject_kind, subject) is taken, on the later item's `subject`;
/// the same subject under the other kind is another subject.
pub async fn access_permissions_duplicate_subject_taken(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    let path = permissions_path(&id);
    let body = json!({"permissions": [
        {"subject_kind": "user", "subject": "alice@example.com", "access": "query"},
        {"subject_kind": "group", "subject": "alice@example.com", "access": "query"},
        {"subject_kind": "user", "subject": "bob@example.com", "access": "query"},
        {"subject_kind": "user", "subject": "alice@example.com", "access": "admin"},
        {"subject_kind": "group", "subject": "alice@example.com", "access": "review"}
    ]});
    refused(
        &api,
        &path,
        &body,
        json!({"permissions": [
            {},
            {},
            {},
            {"subject": [TAKEN]},
            {"subject": [TAKEN]}
        ]}),
    )
    .await;
    assert_eq!(
        get(&api, &path).await,
        json!({"database_id": id, "permissions": []})
    );

    // Without the repeats the same subjects are accepted.
    let accepted = json!([
        {"subject_kind": "user", "subject": "alice@example.com", "access": "query"},
        {"subject_kind": "group", "subject": "alice@example.com", "access": "query"}
    ]);
    assert_eq!(
        put(&api, &path, &json!({"permissions": accepted})).await,
        json!({"database_id": id, "permissions": accepted})
    );
}

// ---------------------------------------------------------------------------------------------
// Data protection
// ---------------------------------------------------------------------------------------------

/// PUT replaces the whole document and GET returns it; a blank description is null; the
/// permissions do not move.
pub async fn access_data_protection_put_replaces_document(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    let parent = create(&api, "Warehouse").await;
    let path = protection_path(&id);
    put(
        &api,
        &permissions_path(&id),
        &json!({"permissions": sample_permissions()}),
    )
    .await;

    let expected = json!({"database_id": id, "inherits_from": null, "policies": sample_policies()});
    assert_eq!(
        put(&api, &path, &json!({"policies": sample_policies()})).await,
        expected
    );
    assert_eq!(get(&api, &path).await, expected);

    let body = json!({
        "inherits_from": parent,
        "policies": [{
            "name": "secrets",
            "description": "",
            "columns": [{"column": "vault.token", "action": "hide"}]
        }],
        "database_id": "ignored"
    });
    let expected = json!({
        "database_id": id,
        "inherits_from": parent,
        "policies": [{
            "name": "secrets",
            "description": null,
            "columns": [{"column": "vault.token", "action": "hide"}]
        }]
    });
    assert_eq!(put(&api, &path, &body).await, expected);
    assert_eq!(get(&api, &path).await, expected);
    assert_eq!(
        get(&api, &permissions_path(&id)).await,
        json!({"database_id": id, "permissions": sample_permissions()})
    );
    // The parent's own document is untouched by its heir's.
    assert_eq!(
        get(&api, &protection_path(&parent)).await,
        json!({"database_id": parent, "inherits_from": null, "policies": []})
    );

    // Null policies mean none; an absent or blank inherits_from means null.
    for body in [
        json!({"policies": null}),
        json!({"inherits_from": "", "policies": []}),
        json!({"inherits_from": null, "policies": []}),
    ] {
        assert_eq!(
            put(&api, &path, &body).await,
            json!({"database_id": id, "inherits_from": null, "policies": []}),
            "{body}"
        );
    }
    assert_eq!(
        get(&api, &path).await,
        json!({"database_id": id, "inherits_from": null, "policies": []})
    );
}

/// Absent policies are blank; wrong types are invalid; nothing changes.
pub async fn access_data_protection_document_errors(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    let path = protection_path(&id);
    put(&api, &path, &json!({"policies": sample_policies()})).await;

    refused(&api, &path, &json!({}), json!({"policies": [BLANK]})).await;
    refused(
        &api,
        &path,
        &json!({"inherits_from": null}),
        json!({"policies": [BLANK]}),
    )
    .await;
    refused(
        &api,
        &path,
        &json!({"inherits_from": 7, "policies": "pii"}),
        json!({"inherits_from": [INVALID], "policies": [INVALID]}),
    )
    .await;
    refused(
        &api,
        &path,
        &json!({"policies": [["pii"]]}),
        json!({"policies": [INVALID]}),
    )
    .await;
}

/// Policy rules: name non-blank and unique; columns at least one; column non-blank and unique
/// within its policy; action hide or mask. All at once, per item, nothing stored.
pub async fn access_data_protection_policy_errors(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    let path = protection_path(&id);
    put(&api, &path, &json!({"policies": sample_policies()})).await;

    let column = |name: &str| json!({"column": name, "action": "hide"});
    let body = json!({"policies": [
        {"name": "pii", "columns": [column("users.email")]},
        {"name": " ", "description": 5, "columns": [column("users.email")]},
        {"name": "pii", "columns": [column("users.phone")]},
        {"name": "no-columns"},
        {"name": "empty-columns", "columns": []},
        {"name": "null-columns", "columns": null},
        {"name": "bad-columns", "columns": [
            column("users.email"),
            {"column": "", "action": "mask"},
            {"column": "users.email", "action": "mask"},
            {"column": "users.ssn", "action": "redact"},
            {},
            {"column": 1, "action": "Hide"}
        ]},
        {"name": "other", "columns": [column("users.email")]}
    ]});
    refused(
        &api,
        &path,
        &body,
        json!({"policies": [
            {},
            {"name": [BLANK], "description": [INVALID]},
            {"name": [TAKEN]},
            {"columns": [BLANK]},
            {"columns": [AT_LEAST_ONE]},
            {"columns": [AT_LEAST_ONE]},
            {"columns": [
                {},
                {"column": [BLANK]},
                {"column": [TAKEN]},
                {"action": ["must be one of: hide, mask"]},
                {"column": [BLANK], "action": [BLANK]},
                {"column": [INVALID], "action": ["must be one of: hide, mask"]}
            ]},
            {}
        ]}),
    )
    .await;

    // The same column in two policies is fine.
    let body = json!({"policies": [
        {"name": "a", "columns": [column("users.email")]},
        {"name": "b", "columns": [column("users.email")]}
    ]});
    let answer = put(&api, &path, &body).await;
    assert_eq!(answer["policies"][1]["columns"][0]["column"], "users.email");
}

/// A database cannot inherit its own policies; the refusal sits beside the other errors.
pub async fn access_inherits_from_itself_refused(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    let path = protection_path(&id);
    put(&api, &path, &json!({"policies": sample_policies()})).await;
    refused(
        &api,
        &path,
        &json!({"inherits_from": id, "policies": []}),
        json!({"inherits_from": [ITSELF]}),
    )
    .await;
    refused(
        &api,
        &path,
        &json!({"inherits_from": id, "policies": [{"name": "", "columns": []}]}),
        json!({
            "inherits_from": [ITSELF],
            "policies": [{"name": [BLANK], "columns": [AT_LEAST_ONE]}]
        }),
    )
    .await;
}

/// `inherits_from` must name a stored database: never stored, or deleted.
pub async fn access_inherits_from_missing_refused(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    let gone = create(&api, "Gone").await;
    api.db(Method::DELETE, &at(&gone), None).await.expect(200);
    let path = protection_path(&id);
    put(&api, &path, &json!({"policies": sample_policies()})).await;
    for target in [NO_SUCH_DATABASE, "anything", gone.as_str()] {
        refused(
            &api,
            &path,
            &json!({"inherits_from": target, "policies": []}),
            json!({"inherits_from": [MISSING]}),
        )
        .await;
    }
}

/// A→B then B→A is a cycle, refused, and B keeps what it had.
pub async fn access_inheritance_cycle_of_two_refused(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let a = create(&api, "A").await;
    let b = create(&api, "B").await;
    inherit(&api, &a, Some(&b)).await;
    put(
        &api,
        &protection_path(&b),
        &json!({"policies": sample_policies()}),
    )
    .await;
    refused(
        &api,
        &protection_path(&b),
        &json!({"inherits_from": a, "policies": []}),
        json!({"inherits_from": [CYCLE]}),
    )
    .await;
    assert_eq!(
        get(&api, &protection_path(&a)).await["inherits_from"],
        json!(b)
    );
}

/// A→B→C then C→A (or C→B) is a cycle; C→D and a longer chain without a loop are fine.
pub async fn access_inheritance_longer_cycle_refused(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let a = create(&api, "A").await;
    let b = create(&api, "B").await;
    let c = create(&api, "C").await;
    let d = create(&api, "D").await;
    inherit(&api, &a, Some(&b)).await;
    inherit(&api, &b, Some(&c)).await;
    for target in [&a, &b] {
        refused(
            &api,
            &protection_path(&c),
            &json!({"inherits_from": target, "policies": []}),
            json!({"inherits_from": [CYCLE]}),
        )
        .await;
    }
    // Extending the chain at its end is no cycle.
    assert_eq!(inherit(&api, &c, Some(&d)).await["inherits_from"], json!(d));
    // …but now D→A closes a loop of four.
    refused(
        &api,
        &protection_path(&d),
        &json!({"inherits_from": a, "policies": []}),
        json!({"inherits_from": [CYCLE]}),
    )
    .await;
    // Re-pointing A within the chain is no cycle either: A→C (C→D) is fine.
    assert_eq!(inherit(&api, &a, Some(&c)).await["inherits_from"], json!(c));
}

// ---------------------------------------------------------------------------------------------
// Routing, existence and authentication
// ---------------------------------------------------------------------------------------------

/// GET and PUT on a missing database answer the JSON 404, for both documents.
pub async fn access_missing_database_not_found(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let not_found = json!({"errors": {"detail": "Not Found"}});
    for path in [
        permissions_path(NO_SUCH_DATABASE),
        protection_path(NO_SUCH_DATABASE),
    ] {
        let response = api.db(Method::GET, &path, None).await.expect(404);
        assert_eq!(response.header("content-type"), Some("application/json"));
        assert_eq!(response.json(), not_found);
    }
    let response = api
        .db(
            Method::PUT,
            &permissions_path(NO_SUCH_DATABASE),
            Some(&json!({"permissions": sample_permissions()})),
        )
        .await
        .expect(404);
    assert_eq!(response.json(), not_found);
    let response = api
        .db(
            Method::PUT,
            &protection_path(NO_SUCH_DATABASE),
            Some(&json!({"policies": sample_policies()})),
        )
        .await
        .expect(404);
    assert_eq!(response.json(), not_found);
    // The PUT created nothing.
    let list = get(&api, DATABASES).await;
    assert_eq!(list["data"], json!([]));
}

/// Other methods answer 405 with `allow: GET, PUT`.
pub async fn access_other_methods_not_allowed(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    for path in [permissions_path(&id), protection_path(&id)] {
        for method in [Method::POST, Method::DELETE, Method::PATCH] {
            let body = json!({"permissions": []});
            let response = api.db(method.clone(), &path, Some(&body)).await.expect(405);
            assert_eq!(
                response.header("allow"),
                Some("GET, PUT"),
                "{method} {path}"
            );
        }
    }
    // Nothing was deleted.
    get(&api, &at(&id)).await;
    get(&api, &permissions_path(&id)).await;
}

/// Without a valid API key: 401 before anything else (existence, method, body).
pub async fn access_requires_api_key(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    for path in [
        permissions_path(&id),
        protection_path(&id),
        permissions_path(NO_SUCH_DATABASE),
        protection_path(NO_SUCH_DATABASE),
    ] {
        for caller in [
            Caller::Nobody,
            Caller::ApiKey("wrong-key"),
            Caller::Bearer(crate::ACCESS_TOKEN),
        ] {
            assert_unauthorized(&call(&api, caller, Method::GET, &path, None).await);
            let body = json!({"permissions": "bad", "policies": "bad"});
            assert_unauthorized(&call(&api, caller, Method::PUT, &path, Some(&body)).await);
            assert_unauthorized(&call(&api, caller, Method::DELETE, &path, None).await);
        }
    }
    // The unauthenticated PUTs stored nothing.
    assert_eq!(
        get(&api, &permissions_path(&id)).await,
        json!({"database_id": id, "permissions": []})
    );
}

/// Bodies that are not a JSON object are 400, other content types 415, for both documents;
/// an empty body is 400 too (PUT replaces the whole document, so it needs one); nothing changes.
pub async fn access_put_needs_json_object(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    put(
        &api,
        &permissions_path(&id),
        &json!({"permissions": sample_permissions()}),
    )
    .await;
    put(
        &api,
        &protection_path(&id),
        &json!({"policies": sample_policies()}),
    )
    .await;
    for path in [permissions_path(&id), protection_path(&id)] {
        let before = get(&api, &path).await;
        for (content_type, body, status) in [
            ("application/json", "{\"permissions\": [", 400),
            ("application/json", "[]", 400),
            ("application/json", "\"x\"", 400),
            ("application/json", "", 400),
            ("text/plain", "{}", 415),
        ] {
            let request = Api::request(Method::PUT, &path, None)
                .header("x-api-key", API_KEY)
                .header(header::CONTENT_TYPE, content_type)
                .body(Full::new(Bytes::from(body)))
                .expect("a valid request");
            let response = api.send(request).await;
            assert_eq!(
                response.status.as_u16(),
                status,
                "{content_type} {body:?}: {}",
                response.text()
            );
            assert!(
                response.json()["errors"]["detail"].is_string(),
                "{}",
                response.text()
            );
        }
        assert_eq!(get(&api, &path).await, before);
    }
}

/// Paths below the documents, or beside them, are unknown routes: 404.
pub async fn access_unknown_subpaths_not_found(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    for path in [
        format!("{}/extra", permissions_path(&id)),
        format!("{}/", protection_path(&id)),
        format!("{DATABASES}/{id}/permission"),
        format!("{DATABASES}/{id}/data_protection"),
        format!("{DATABASES}//permissions"),
    ] {
        let response = api.db(Method::GET, &path, None).await.expect(404);
        assert_eq!(
            response.json(),
            json!({"errors": {"detail": "Not Found"}}),
            "{path}"
        );
    }
}

/// The `/api/v1/querydesk` prefix reaches the same documents.
pub async fn access_querydesk_prefix(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let id = create(&api, "Orders").await;
    let parent = create(&api, "Warehouse").await;
    let compat_permissions = format!("{COMPAT}/{id}/permissions");
    let compat_protection = format!("{COMPAT}/{id}/data-protection");

    let answer = put(
        &api,
        &compat_permissions,
        &json!({"permissions": sample_permissions()}),
    )
    .await;
    assert_eq!(
        answer,
        json!({"database_id": id, "permissions": sample_permissions()})
    );
    assert_eq!(get(&api, &permissions_path(&id)).await, answer);

    let answer = put(
        &api,
        &protection_path(&id),
        &json!({"inherits_from": parent, "policies": sample_policies()}),
    )
    .await;
    assert_eq!(get(&api, &compat_protection).await, answer);

    // The guard answers on the compat prefix too.
    let response = api
        .db(Method::DELETE, &format!("{COMPAT}/{parent}"), None)
        .await
        .expect(422);
    assert_eq!(response.json(), guard_body(&[(&id, "Orders")]));
    let response = api
        .db(Method::POST, &compat_protection, Some(&json!({})))
        .await
        .expect(405);
    assert_eq!(response.header("allow"), Some("GET, PUT"));
    let response = api
        .db(
            Method::GET,
            &format!("{COMPAT}/{NO_SUCH_DATABASE}/permissions"),
            None,
        )
        .await
        .expect(404);
    assert_eq!(response.json(), json!({"errors": {"detail": "Not Found"}}));
}

// ---------------------------------------------------------------------------------------------
// The delete guard, and what a delete takes with it
// ---------------------------------------------------------------------------------------------

/// A inherits B: deleting B by id is 422 naming A, and nothing changes.
pub async fn access_delete_guard_by_id(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let a = create(&api, "Analytics").await;
    let b = create(&api, "Billing").await;
    put(
        &api,
        &protection_path(&b),
        &json!({"policies": sample_policies()}),
    )
    .await;
    put(
        &api,
        &permissions_path(&b),
        &json!({"permissions": sample_permissions()}),
    )
    .await;
    inherit(&api, &a, Some(&b)).await;
    let database_before = get(&api, &at(&b)).await;
    let protection_before = get(&api, &protection_path(&b)).await;
    let permissions_before = get(&api, &permissions_path(&b)).await;

    for _ in 0..2 {
        let response = api.db(Method::DELETE, &at(&b), None).await.expect(422);
        assert_eq!(response.header("content-type"), Some("application/json"));
        assert_eq!(response.json(), guard_body(&[(&a, "Analytics")]));
    }

    assert_eq!(get(&api, &at(&b)).await, database_before);
    assert_eq!(get(&api, &protection_path(&b)).await, protection_before);
    assert_eq!(get(&api, &permissions_path(&b)).await, permissions_before);
    assert_eq!(protection_before["policies"], sample_policies());
    assert_eq!(
        get(&api, &protection_path(&a)).await["inherits_from"],
        json!(b)
    );
    // The heir itself is not guarded: nobody inherits from it.
    let list = get(&api, DATABASES).await;
    assert_eq!(list["data"].as_array().map(Vec::len), Some(2));
}

/// The same guard on `DELETE …/remove/{api_id}`, for a database created through setup.
pub async fn access_delete_guard_by_api_id(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let b = put(&api, SETUP, &setup_body("ext-billing", "Billing")).await;
    let b_id = b["id"].as_str().expect("an id").to_owned();
    let a = create(&api, "Analytics").await;
    put(
        &api,
        &protection_path(&b_id),
        &json!({"policies": sample_policies()}),
    )
    .await;
    inherit(&api, &a, Some(&b_id)).await;
    let before = get(&api, &at(&b_id)).await;

    let remove = format!("{DATABASES}/remove/ext-billing");
    let response = api.db(Method::DELETE, &remove, None).await.expect(422);
    assert_eq!(response.json(), guard_body(&[(&a, "Analytics")]));
    let response = api.db(Method::DELETE, &at(&b_id), None).await.expect(422);
    assert_eq!(response.json(), guard_body(&[(&a, "Analytics")]));

    assert_eq!(get(&api, &at(&b_id)).await, before);
    assert_eq!(
        get(&api, &protection_path(&b_id)).await,
        json!({"database_id": b_id, "inherits_from": null, "policies": sample_policies()})
    );
    // Setup still finds (and updates) the same database: its api_id was kept.
    let again = put(&api, SETUP, &setup_body("ext-billing", "Billing 2")).await;
    assert_eq!(again["id"], json!(b_id));

    // Once A lets go, remove by api_id succeeds.
    inherit(&api, &a, None).await;
    let removed = api
        .db(Method::DELETE, &remove, None)
        .await
        .expect(200)
        .json();
    assert_eq!(removed["id"], json!(b_id));
    api.db(Method::GET, &at(&b_id), None).await.expect(404);
}

/// Several heirs are all named, ordered by id; a heir of a heir is not.
pub async fn access_delete_guard_names_every_heir(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let b = create(&api, "Billing").await;
    let mut heirs = Vec::new();
    for name in ["Heir one", "Heir two", "Heir three"] {
        heirs.push((create(&api, name).await, name));
    }
    let grandchild = create(&api, "Grandchild").await;
    // Written in an order other than the ids'.
    for (id, _) in heirs.iter().rev() {
        inherit(&api, id, Some(&b)).await;
    }
    inherit(&api, &grandchild, Some(&heirs[0].0)).await;
    heirs.sort();
    let expected: Vec<(&str, &str)> = heirs
        .iter()
        .map(|(id, name)| (id.as_str(), *name))
        .collect();

    let response = api.db(Method::DELETE, &at(&b), None).await.expect(422);
    assert_eq!(response.json(), guard_body(&expected));

    // The heir in the middle of the chain is guarded by the grandchild alone.
    let response = api
        .db(Method::DELETE, &at(&heirs[0].0), None)
        .await
        .expect(422);
    assert_eq!(response.json(), guard_body(&[(&grandchild, "Grandchild")]));

    // One heir fewer: the others are still named.
    inherit(&api, &heirs[1].0, None).await;
    let response = api.db(Method::DELETE, &at(&b), None).await.expect(422);
    assert_eq!(response.json(), guard_body(&[expected[0], expected[2]]));
}

/// After the heir clears `inherits_from` (PUT with null) the delete succeeds; a heir that
/// switches to another database frees the first one as well.
pub async fn access_delete_after_heir_lets_go(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let a = create(&api, "Analytics").await;
    let b = create(&api, "Billing").await;
    let c = create(&api, "Crm").await;
    inherit(&api, &a, Some(&b)).await;
    api.db(Method::DELETE, &at(&b), None).await.expect(422);

    let cleared = put(
        &api,
        &protection_path(&a),
        &json!({"inherits_from": null, "policies": []}),
    )
    .await;
    assert_eq!(cleared["inherits_from"], Value::Null);
    let deleted = api
        .db(Method::DELETE, &at(&b), None)
        .await
        .expect(200)
        .json();
    assert_eq!(deleted["id"], json!(b));
    assert_eq!(deleted["name"], "Billing");
    api.db(Method::GET, &at(&b), None).await.expect(404);

    // A now inherits C, then switches to nothing else but D: C is free again.
    let d = create(&api, "Datalake").await;
    inherit(&api, &a, Some(&c)).await;
    api.db(Method::DELETE, &at(&c), None).await.expect(422);
    inherit(&api, &a, Some(&d)).await;
    api.db(Method::DELETE, &at(&c), None).await.expect(200);
    api.db(Method::DELETE, &at(&d), None).await.expect(422);
}

/// Deleting a database takes its permissions and policies: the old id answers 404, a new
/// database starts empty, and a deleted heir no longer guards its parent.
pub async fn access_delete_takes_access_control(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let b = create(&api, "Billing").await;
    let a = create(&api, "Analytics").await;
    put(
        &api,
        &permissions_path(&a),
        &json!({"permissions": sample_permissions()}),
    )
    .await;
    put(
        &api,
        &protection_path(&a),
        &json!({"inherits_from": b, "policies": sample_policies()}),
    )
    .await;

    // The heir itself may go, and its inheritance goes with it.
    api.db(Method::DELETE, &at(&a), None).await.expect(200);
    for path in [permissions_path(&a), protection_path(&a)] {
        let response = api.db(Method::GET, &path, None).await.expect(404);
        assert_eq!(response.json(), json!({"errors": {"detail": "Not Found"}}));
    }
    let fresh = create(&api, "Analytics").await;
    assert_eq!(
        get(&api, &permissions_path(&fresh)).await,
        json!({"database_id": fresh, "permissions": []})
    );
    assert_eq!(
        get(&api, &protection_path(&fresh)).await,
        json!({"database_id": fresh, "inherits_from": null, "policies": []})
    );
    api.db(Method::DELETE, &at(&b), None).await.expect(200);
    api.db(Method::GET, &permissions_path(&b), None)
        .await
        .expect(404);
}

/// A database recreated through setup with the api_id of a deleted one starts empty too.
pub async fn access_setup_after_delete_starts_empty(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let first = put(&api, SETUP, &setup_body("ext-1", "Billing")).await;
    let first_id = first["id"].as_str().expect("an id").to_owned();
    put(
        &api,
        &permissions_path(&first_id),
        &json!({"permissions": sample_permissions()}),
    )
    .await;
    put(
        &api,
        &protection_path(&first_id),
        &json!({"policies": sample_policies()}),
    )
    .await;
    // Setup on an existing database keeps its access control.
    put(&api, SETUP, &setup_body("ext-1", "Billing")).await;
    assert_eq!(
        get(&api, &permissions_path(&first_id)).await["permissions"],
        sample_permissions()
    );
    api.db(Method::DELETE, &format!("{DATABASES}/remove/ext-1"), None)
        .await
        .expect(200);
    let second = put(&api, SETUP, &setup_body("ext-1", "Billing")).await;
    let second_id = second["id"].as_str().expect("an id").to_owned();
    assert_ne!(second_id, first_id);
    assert_eq!(
        get(&api, &permissions_path(&second_id)).await,
        json!({"database_id": second_id, "permissions": []})
    );
    assert_eq!(
        get(&api, &protection_path(&second_id)).await,
        json!({"database_id": second_id, "inherits_from": null, "policies": []})
    );
}

// ---------------------------------------------------------------------------------------------
// Stored caller keys
// ---------------------------------------------------------------------------------------------

/// A stored full API key works on database routes (and the `/api/v1/dashboards` routes), but
/// not as a Bearer token nor on the Bearer-only dashboard routes.
pub async fn access_stored_api_key_on_database_routes(storage: Arc<dyn Storage>) {
    let api = keyed_api(&storage);
    let (_, key) = stored_key(&storage, CredentialKind::ApiKey, Scope::Full, "ci").await;
    let caller = Caller::ApiKey(&key);

    let created = call(
        &api,
        caller,
        Method::POST,
        DATABASES,
        Some(&minimal_database()),
    )
    .await
    .expect(200)
    .json();
    let id = created["id"].as_str().expect("an id");
    call(&api, caller, Method::GET, &at(id), None)
        .await
        .expect(200);
    let body = json!({"permissions": sample_permissions()});
    call(
        &api,
        caller,
        Method::PUT,
        &permissions_path(id),
        Some(&body),
    )
    .await
    .expect(200);
    call(&api, caller, Method::GET, &protection_path(id), None)
        .await
        .expect(200);
    call(&api, caller, Method::GET, &format!("{COMPAT}/{id}"), None)
        .await
        .expect(200);
    call(
        &api,
        caller,
        Method::POST,
        COMPAT_DASHBOARDS,
        Some(&minimal_dashboard()),
    )
    .await
    .expect(200);

    // The harness's static key is not accepted by this service.
    assert_unauthorized(&call(&api, Caller::ApiKey(API_KEY), Method::GET, &at(id), None).await);
    // An API key is not an access token.
    assert_unauthorized(&call(&api, Caller::Bearer(&key), Method::GET, &at(id), None).await);
    let response = call(&api, caller, Method::GET, crate::DASHBOARDS, None).await;
    assert_unauthorized(&response);
    assert_eq!(response.header("www-authenticate"), Some("Bearer"));
    let response = call(
        &api,
        Caller::Bearer(&key),
        Method::GET,
        crate::DASHBOARDS,
        None,
    )
    .await;
    assert_unauthorized(&response);
    // A minted key that was never stored is nobody.
    let (_, unstored) = mint_caller_key(CredentialKind::ApiKey, Scope::Full, "unstored");
    let unstored = unstored.expose_str().expect("a text secret").to_owned();
    assert_unauthorized(&call(&api, Caller::ApiKey(&unstored), Method::GET, &at(id), None).await);
}

/// A stored access token works on dashboard routes, and never on database routes.
pub async fn access_stored_access_token_on_dashboard_routes(storage: Arc<dyn Storage>) {
    let api = keyed_api(&storage);
    let (_, token) = stored_key(&storage, CredentialKind::AccessToken, Scope::Full, "ui").await;
    let (_, key) = stored_key(&storage, CredentialKind::ApiKey, Scope::Full, "ci").await;
    let caller = Caller::Bearer(&token);

    let dashboard = call(
        &api,
        caller,
        Method::POST,
        crate::DASHBOARDS,
        Some(&minimal_dashboard()),
    )
    .await
    .expect(200)
    .json();
    let dashboard_id = dashboard["id"].as_str().expect("an id");
    call(
        &api,
        caller,
        Method::GET,
        &format!("{}/{dashboard_id}", crate::DASHBOARDS),
        None,
    )
    .await
    .expect(200);
    call(
        &api,
        caller,
        Method::GET,
        &format!("{COMPAT_DASHBOARDS}/{dashboard_id}"),
        None,
    )
    .await
    .expect(200);

    let database = call(
        &api,
        Caller::ApiKey(&key),
        Method::POST,
        DATABASES,
        Some(&minimal_database()),
    )
    .await
    .expect(200)
    .json();
    let id = database["id"].as_str().expect("an id");
    for path in [
        DATABASES.to_owned(),
        at(id),
        permissions_path(id),
        protection_path(id),
    ] {
        assert_unauthorized(&call(&api, caller, Method::GET, &path, None).await);
        // Presented where an API key goes, it is still an access token.
        assert_unauthorized(&call(&api, Caller::ApiKey(&token), Method::GET, &path, None).await);
    }
    assert_unauthorized(&call(&api, caller, Method::DELETE, &at(id), None).await);
    call(&api, Caller::ApiKey(&key), Method::GET, &at(id), None)
        .await
        .expect(200);
}

/// Any invalid credential in a request is 401, whatever else it carries: a wrong API key beside
/// a valid access token (or the reverse) never runs as the valid one's caller.
pub async fn access_any_invalid_credential_is_401(storage: Arc<dyn Storage>) {
    let api = keyed_api(&storage);
    let (_, token) = stored_key(&storage, CredentialKind::AccessToken, Scope::Full, "ui").await;
    let (_, key) = stored_key(&storage, CredentialKind::ApiKey, Scope::Full, "ci").await;
    let both = |key: &str, token: &str| {
        let request = Api::request(Method::GET, crate::DASHBOARDS, None)
            .header("x-api-key", key)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Full::new(Bytes::new()))
            .expect("a valid request");
        api.send(request)
    };
    assert_unauthorized(&both("dbc_wrong", &token).await);
    assert_unauthorized(&both(&key, "dbc_wrong").await);
    assert_unauthorized(&both("dbc_wrong", "dbc_wrong").await);
    assert_eq!(both(&key, &token).await.status.as_u16(), 200);
    call(
        &api,
        Caller::Bearer(&token),
        Method::GET,
        crate::DASHBOARDS,
        None,
    )
    .await
    .expect(200);
}

/// A setup-scoped API key may set up and remove by api_id, and gets 403 everywhere else
/// (before existence), changing nothing.
pub async fn access_setup_scope_only_setup_and_remove(storage: Arc<dyn Storage>) {
    let api = keyed_api(&storage);
    let (_, full) = stored_key(&storage, CredentialKind::ApiKey, Scope::Full, "admin").await;
    let (_, setup_key) = stored_key(&storage, CredentialKind::ApiKey, Scope::Setup, "tf").await;
    let admin = Caller::ApiKey(&full);
    let provider = Caller::ApiKey(&setup_key);

    let created = call(
        &api,
        provider,
        Method::PUT,
        SETUP,
        Some(&setup_body("ext-1", "Billing")),
    )
    .await
    .expect(200)
    .json();
    let id = created["id"].as_str().expect("an id").to_owned();
    call(
        &api,
        provider,
        Method::PUT,
        &format!("{COMPAT}/setup"),
        Some(&setup_body("ext-1", "Billing")),
    )
    .await
    .expect(200);
    let dashboard = call(
        &api,
        admin,
        Method::POST,
        COMPAT_DASHBOARDS,
        Some(&minimal_dashboard()),
    )
    .await
    .expect(200)
    .json();
    let dashboard_path = format!(
        "{COMPAT_DASHBOARDS}/{}",
        dashboard["id"].as_str().expect("an id")
    );
    let before = call(&api, admin, Method::GET, &at(&id), None)
        .await
        .expect(200)
        .json();

    let patch = json!({"name": "Renamed"});
    let permissions = json!({"permissions": sample_permissions()});
    let protection = json!({"policies": sample_policies()});
    let forbidden: Vec<(Method, String, Option<&Value>)> = vec![
        (Method::GET, DATABASES.to_owned(), None),
        (Method::POST, DATABASES.to_owned(), Some(&created)),
        (Method::GET, at(&id), None),
        (Method::PATCH, at(&id), Some(&patch)),
        (Method::DELETE, at(&id), None),
        (Method::DELETE, format!("{COMPAT}/{id}"), None),
        (Method::GET, at(NO_SUCH_DATABASE), None),
        (Method::GET, permissions_path(&id), None),
        (Method::PUT, permissions_path(&id), Some(&permissions)),
        (Method::GET, protection_path(&id), None),
        (Method::PUT, protection_path(&id), Some(&protection)),
        (
            Method::GET,
            format!("{DATABASES}/{id}/check-connection/svc"),
            None,
        ),
        (Method::GET, COMPAT_DASHBOARDS.to_owned(), None),
        (Method::POST, COMPAT_DASHBOARDS.to_owned(), Some(&patch)),
        (Method::GET, dashboard_path.clone(), None),
        (Method::PUT, dashboard_path.clone(), Some(&patch)),
        (Method::DELETE, dashboard_path.clone(), None),
    ];
    for (method, path, body) in forbidden {
        let what = format!("{method} {path}");
        assert_forbidden(&call(&api, provider, method, &path, body).await, &what);
    }

    // Nothing moved.
    assert_eq!(
        call(&api, admin, Method::GET, &at(&id), None)
            .await
            .expect(200)
            .json(),
        before
    );
    let list = call(&api, admin, Method::GET, DATABASES, None)
        .await
        .expect(200)
        .json();
    assert_eq!(list["data"].as_array().map(Vec::len), Some(1));
    let access = call(&api, admin, Method::GET, &permissions_path(&id), None)
        .await
        .expect(200)
        .json();
    assert_eq!(access["permissions"], json!([]));
    call(&api, admin, Method::GET, &dashboard_path, None)
        .await
        .expect(200);

    let removed = call(
        &api,
        provider,
        Method::DELETE,
        &format!("{DATABASES}/remove/ext-1"),
        None,
    )
    .await
    .expect(200)
    .json();
    assert_eq!(removed["id"], json!(id));
    call(&api, admin, Method::GET, &at(&id), None)
        .await
        .expect(404);
}

/// A revoked key fails from the very next request on.
pub async fn access_revoked_key_refused_next_request(storage: Arc<dyn Storage>) {
    let api = keyed_api(&storage);
    let (key_id, key) = stored_key(&storage, CredentialKind::ApiKey, Scope::Full, "ci").await;
    let (token_id, token) =
        stored_key(&storage, CredentialKind::AccessToken, Scope::Full, "ui").await;
    call(&api, Caller::ApiKey(&key), Method::GET, DATABASES, None)
        .await
        .expect(200);
    call(
        &api,
        Caller::Bearer(&token),
        Method::GET,
        crate::DASHBOARDS,
        None,
    )
    .await
    .expect(200);

    let revoked = storage
        .delete_caller_key(&key_id, dbconsole_core::storage::testing::origin())
        .await
        .expect("the key is deleted");
    assert_eq!(revoked.id.as_str(), key_id);
    assert_unauthorized(&call(&api, Caller::ApiKey(&key), Method::GET, DATABASES, None).await);
    // The other key is untouched.
    call(
        &api,
        Caller::Bearer(&token),
        Method::GET,
        crate::DASHBOARDS,
        None,
    )
    .await
    .expect(200);
    storage
        .delete_caller_key(&token_id, dbconsole_core::storage::testing::origin())
        .await
        .expect("the token is deleted");
    let response = call(
        &api,
        Caller::Bearer(&token),
        Method::GET,
        crate::DASHBOARDS,
        None,
    )
    .await;
    assert_unauthorized(&response);
    assert!(
        storage
            .list_caller_keys()
            .await
            .expect("keys listed")
            .is_empty()
    );
}

/// `last_used_at` is unset until a key authenticates a request, then set; an unused key and a
/// key presented on the wrong kind of route stay unset.
pub async fn access_last_used_at_recorded(storage: Arc<dyn Storage>) {
    let api = keyed_api(&storage);
    let (used_id, used) = stored_key(&storage, CredentialKind::ApiKey, Scope::Full, "used").await;
    let (idle_id, _) = stored_key(&storage, CredentialKind::ApiKey, Scope::Full, "idle").await;
    let (token_id, token) =
        stored_key(&storage, CredentialKind::AccessToken, Scope::Full, "token").await;

    let keys = storage.list_caller_keys().await.expect("keys listed");
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| k.last_used_at.is_none()), "{keys:?}");
    let mut ids: Vec<&str> = keys.iter().map(|k| k.id.as_str()).collect();
    let listed = ids.clone();
    ids.sort_unstable();
    assert_eq!(listed, ids, "keys are listed by id");

    call(&api, Caller::ApiKey(&used), Method::GET, DATABASES, None)
        .await
        .expect(200);
    // A token presented as an API key authenticates nothing, so it is not "used".
    assert_unauthorized(&call(&api, Caller::ApiKey(&token), Method::GET, DATABASES, None).await);

    // The use is recorded in the background (the request never waits for that write): wait
    // for it, within a bound.
    let keys = crate::eventually(
        std::time::Duration::from_secs(5),
        "the key's use is recorded",
        || async {
            let keys = storage.list_caller_keys().await.expect("keys listed");
            let recorded = keys
                .iter()
                .any(|k| k.id.as_str() == used_id && k.last_used_at.is_some());
            recorded.then_some(keys)
        },
    )
    .await;
    let find = |id: &str| {
        keys.iter()
            .find(|k| k.id.as_str() == id)
            .unwrap_or_else(|| panic!("key {id} listed"))
            .clone()
    };
    let used_key = find(&used_id);
    let used_at = used_key.last_used_at.expect("last_used_at set after a use");
    assert!(used_at >= used_key.created_at);
    assert_eq!(used_key.name, "used");
    assert_eq!(used_key.kind, CredentialKind::ApiKey);
    assert_eq!(used_key.scope, Scope::Full);
    assert_eq!(find(&idle_id).last_used_at, None);
    assert_eq!(find(&token_id).last_used_at, None);
    // No secret is kept, and Debug redacts the digest.
    let debug = format!("{used_key:?}");
    assert!(!debug.contains(&used), "{debug}");
    assert!(debug.contains("REDACTED"), "{debug}");
}

/// Static credentials given to [`StoredCredentials`] keep working beside stored keys.
pub async fn access_stored_credentials_keep_static_ones(storage: Arc<dyn Storage>) {
    let fixed = StaticCredentials::new(
        Some(&dbconsole_core::Secret::from(API_KEY)),
        Some(&dbconsole_core::Secret::from(crate::ACCESS_TOKEN)),
    );
    let auth = Arc::new(StoredCredentials::new(storage.clone(), fixed));
    let api = Api {
        service: ConsoleService::builder(storage.clone(), auth.clone(), crate::test_sealer())
            .build(),
    };
    let (_, setup_key) = stored_key(&storage, CredentialKind::ApiKey, Scope::Setup, "tf").await;
    // A static credential is known at once; a stored key or an unknown one needs the storage.
    assert_eq!(
        auth.authenticate_now(CredentialKind::ApiKey, API_KEY),
        Some(Some(dbconsole_core::auth::Caller::full(
            dbconsole_core::auth::STATIC_API_KEY
        )))
    );
    assert_eq!(
        auth.authenticate_now(CredentialKind::AccessToken, API_KEY),
        None
    );
    assert_eq!(
        auth.authenticate_now(CredentialKind::ApiKey, &setup_key),
        None
    );
    assert_eq!(auth.authenticate_now(CredentialKind::ApiKey, "nope"), None);
    api.db(Method::GET, DATABASES, None).await.expect(200);
    api.dash(Method::GET, crate::DASHBOARDS, None)
        .await
        .expect(200);
    assert_forbidden(
        &call(
            &api,
            Caller::ApiKey(&setup_key),
            Method::GET,
            DATABASES,
            None,
        )
        .await,
        "setup key on the listing",
    );
    assert_unauthorized(&call(&api, Caller::ApiKey("nope"), Method::GET, DATABASES, None).await);
}

/// Every case of this module, as tests over the store `$storage` makes.
#[macro_export]
macro_rules! access_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            access,
            $storage,
            [
                access_defaults_for_new_database,
                access_permissions_put_replaces_list,
                access_permissions_null_empty_absent_blank,
                access_permissions_item_errors,
                access_permissions_duplicate_subject_taken,
                access_data_protection_put_replaces_document,
                access_data_protection_document_errors,
                access_data_protection_policy_errors,
                access_inherits_from_itself_refused,
                access_inherits_from_missing_refused,
                access_inheritance_cycle_of_two_refused,
                access_inheritance_longer_cycle_refused,
                access_missing_database_not_found,
                access_other_methods_not_allowed,
                access_requires_api_key,
                access_put_needs_json_object,
                access_unknown_subpaths_not_found,
                access_querydesk_prefix,
                access_delete_guard_by_id,
                access_delete_guard_by_api_id,
                access_delete_guard_names_every_heir,
                access_delete_after_heir_lets_go,
                access_delete_takes_access_control,
                access_setup_after_delete_starts_empty,
                access_stored_api_key_on_database_routes,
                access_stored_access_token_on_dashboard_routes,
                access_any_invalid_credential_is_401,
                access_setup_scope_only_setup_and_remove,
                access_revoked_key_refused_next_request,
                access_last_used_at_recorded,
                access_stored_credentials_keep_static_ones,
            ]
        );
    };
}
