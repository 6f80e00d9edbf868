//! The caller's own view (`GET …/me`, `GET …/me/databases`): who it is, what it may do, and the
//! databases it may query, whatever its credential, on every backend.

use std::sync::Arc;

use dbconsole_core::Storage;
use dbconsole_core::model::{Principal, Role};
use http::Method;
use serde_json::{Value, json};

use crate::console::TestConsole;

const ME: &str = "/api/v1/console/me";
const MY_DATABASES: &str = "/api/v1/console/me/databases";

fn ann() -> Principal {
    Principal::member("Ann@Example.com").groups(["Analysts"])
}
fn bo() -> Principal {
    Principal::member("bo@example.com")
}
fn root() -> Principal {
    Principal::member("root@example.com").role(Role::SuperAdmin)
}

fn console(storage: Arc<dyn Storage>) -> TestConsole {
    TestConsole::builder(storage).trust_principal(true).build()
}

async fn me(console: &TestConsole, principal: Option<Principal>) -> Value {
    console
        .send(Method::GET, ME, principal, None, None)
        .await
        .expect(200)
        .json()
}

/// `GET …/me` names the user (in its normal form), its groups, role and scope, and what its
/// credential lets it do; a key bound to no user has no user and runs nothing.
pub async fn me_describes_the_caller(storage: Arc<dyn Storage>) {
    let console = console(storage);
    assert_eq!(
        me(&console, Some(ann())).await,
        json!({
            "user": "ann@example.com", "groups": ["analysts"], "role": "member", "agent": false,
            "scope": "query",
            "may": {"query": true, "review": true, "bypass_reviews": false,
                    "manage_databases": false, "manage_dashboards": false, "make_dashboards": true,
                    "read_audit": false},
        })
    );
    let admin = me(&console, Some(root())).await;
    assert_eq!(
        (&admin["role"], &admin["scope"]),
        (&json!("super-admin"), &json!("full"))
    );
    assert_eq!(
        admin["may"],
        json!({"query": true, "review": true, "bypass_reviews": true,
               "manage_databases": true, "manage_dashboards": true, "make_dashboards": true,
               "read_audit": true})
    );
    let agent = me(&console, Some(ann().agent(true))).await;
    assert_eq!(
        (&agent["agent"], &agent["scope"]),
        (&json!(true), &json!("ai-agent"))
    );
    assert_eq!(
        (
            &agent["may"]["query"],
            &agent["may"]["review"],
            &agent["may"]["make_dashboards"]
        ),
        (&json!(true), &json!(false), &json!(false))
    );
    let key = me(&console, None).await;
    assert_eq!(
        (&key["user"], &key["groups"], &key["role"], &key["scope"]),
        (&json!(null), &json!([]), &json!(null), &json!("full"))
    );
    assert_eq!(
        (&key["may"]["query"], &key["may"]["manage_databases"]),
        (&json!(false), &json!(true))
    );
    // Reads only: another method is 405.
    console
        .send(Method::POST, ME, Some(ann()), None, Some(&json!({})))
        .await
        .expect(405);
}

/// `GET …/me/databases`: every database the caller may query and nothing else: restricted ones
/// where a permission names the user or a group, all of them for a super admin, `ai_enabled`
/// ones with their `ai_allowed` credentials for an agent; never a password, host or setting.
pub async fn me_databases_are_those_the_caller_may_query(storage: Arc<dyn Storage>) {
    let console = console(storage);
    let create = |name: &str, extra: Value| {
        let mut body = json!({
            "name": name, "adapter": "postgres", "hostname": "db.internal", "database": "orders",
            "group": "Sales",
            "credentials": [
                {"username": "reader", "password": "pw-reader-1", "reviews_required": 1,
                 "ai_allowed": true, "default_credential": true},
                {"username": "writer", "password": "pw-writer-1"},
            ],
        });
        for (key, value) in extra.as_object().expect("an object") {
            body[key] = value.clone();
        }
        let api = &console.api;
        async move { api.create_database(&body).await }
    };
    let open = create("Open", json!({"ai_enabled": true})).await;
    let granted = create("Granted", json!({"restrict_access": true})).await;
    let closed = create("Closed", json!({"restrict_access": true})).await;
    let id = |db: &Value| db["id"].as_str().expect("an id").to_owned();
    console
        .send(
            Method::PUT,
            &format!("/api/v1/console/databases/{}/permissions", id(&granted)),
            None,
            None,
            Some(&json!({"permissions": [
                {"subject_kind": "group", "subject": "ANALYSTS", "access": "query"}
            ]})),
        )
        .await
        .expect(200);
    let listed = |principal: Principal| {
        let console = &console;
        async move {
            let page = console
                .send(Method::GET, MY_DATABASES, Some(principal), None, None)
                .await
                .expect(200)
                .json();
            assert_eq!(page["next"], json!(null));
            page["data"].as_array().expect("data").clone()
        }
    };
    let names = |data: &[Value]| -> Vec<String> {
        let mut names: Vec<String> = data
            .iter()
            .map(|db| db["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    let ann_sees = listed(ann()).await;
    assert_eq!(names(&ann_sees), ["Granted", "Open"]);
    let open_view = ann_sees.iter().find(|db| db["name"] == "Open").unwrap();
    let credentials = open["credentials"].as_array().unwrap();
    assert_eq!(
        *open_view,
        json!({
            "id": id(&open), "name": "Open", "group": "Sales", "adapter": "postgres",
            "restrict_access": false, "review_bypass_allowed": false,
            "credentials": [
                {"id": credentials[0]["id"], "username": "reader", "reviews_required": 1,
                 "default_credential": true},
                {"id": credentials[1]["id"], "username": "writer", "reviews_required": 0,
                 "default_credential": false},
            ],
        })
    );
    assert_eq!(names(&listed(bo()).await), ["Open"]);
    assert_eq!(names(&listed(root()).await), ["Closed", "Granted", "Open"]);
    let agent = listed(ann().agent(true)).await;
    assert_eq!(names(&agent), ["Open"]);
    assert_eq!(
        agent[0]["credentials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["username"].clone())
            .collect::<Vec<_>>(),
        [json!("reader")]
    );
    let text = console
        .send(Method::GET, MY_DATABASES, Some(root()), None, None)
        .await
        .text();
    assert!(!text.contains("pw-"), "no password");
    assert!(!text.contains("db.internal"), "no host");
    let _ = id(&closed);
    // A key bound to no user has no databases to query.
    console
        .send(Method::GET, MY_DATABASES, None, None, None)
        .await
        .expect(403);
}

/// `…/me/settings`: the defaults until set; a theme and a time zone kept in the caller's own
/// user record (one event), null again for the browser's; another value 422 and an unknown key
/// 422, changing nothing; a caller without a user record 409.
pub async fn me_settings_are_kept_in_the_callers_record(storage: Arc<dyn Storage>) {
    use dbconsole_core::model::{User, UserSource};
    const SETTINGS: &str = "/api/v1/console/me/settings";
    storage
        .put_user(
            User::new("ann@example.com", vec![], Role::Member, UserSource::Key),
            None,
            None,
        )
        .await
        .unwrap();
    let console = console(storage.clone());
    let get = |who: Principal| {
        let console = &console;
        async move {
            console
                .send(Method::GET, SETTINGS, Some(who), None, None)
                .await
                .expect(200)
                .json()
        }
    };
    assert_eq!(get(ann()).await, json!({"theme": null, "time_zone": null}));
    let put = |who: Principal, body: Value| {
        let console = &console;
        async move {
            console
                .as_(&who, Method::PUT, SETTINGS, Some(body), None)
                .await
        }
    };
    let kept = put(ann(), json!({"theme": "dark", "time_zone": "UTC"}))
        .await
        .expect(200)
        .json();
    assert_eq!(kept, json!({"theme": "dark", "time_zone": "UTC"}));
    assert_eq!(get(ann()).await, kept);
    assert_eq!(
        storage
            .user("ann@example.com")
            .await
            .unwrap()
            .unwrap()
            .settings
            .theme
            .as_deref(),
        Some("dark")
    );
    for bad in [
        json!({"theme": "neon"}),
        json!({"time_zone": "Mars/Olympus"}),
        json!({"theme": "light", "font": "big"}),
        json!({"theme": 1}),
    ] {
        put(ann(), bad.clone()).await.expect(422);
    }
    assert_eq!(get(ann()).await, kept, "a refused change changes nothing");
    put(ann(), json!({"theme": null})).await.expect(200);
    assert_eq!(get(ann()).await, json!({"theme": null, "time_zone": null}));
    put(bo(), json!({"theme": "dark"})).await.expect(409);
    assert_eq!(get(bo()).await, json!({"theme": null, "time_zone": null}));
}

/// Defines the suite's tests over a storage constructor.
#[macro_export]
macro_rules! me_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            me,
            $storage,
            [
                me_describes_the_caller,
                me_databases_are_those_the_caller_may_query,
                me_settings_are_kept_in_the_callers_record,
            ]
        );
    };
}
