//! Cases of the HTTP suite: versions (docs/api.md, *No silent overwrites*). Every answer that carries
//! a database or a dashboard carries its `ETag`; every write moves it; `If-None-Match` answers
//! 304; `If-Match` makes `PATCH`, `PUT` (setup, dashboards) and `DELETE` conditional, 412 and
//! nothing changed when it does not match; without it nothing changes from before; and of two
//! editors holding one version, exactly one wins.

use std::sync::Arc;

use dbconsole_core::Storage;
use http::Method;
use serde_json::{Value, json};

use crate::{Api, DASHBOARDS, DATABASES, TestResponse, minimal_dashboard, minimal_database};

const SETUP: &str = "/api/v1/console/databases/setup";
const PRECONDITION_FAILED: &str = "Precondition Failed: the record has changed since that version (If-Match does not match its ETag); nothing was changed";

/// A call with the route's credential and these extra headers.
async fn call(
    api: &Api,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> TestResponse {
    api.call_with(method, path, headers, body).await
}

#[track_caller]
fn etag(response: &TestResponse) -> String {
    let tag = response
        .header("etag")
        .unwrap_or_else(|| panic!("no ETag: {:?}", response.headers))
        .to_owned();
    assert!(
        tag.starts_with('"') && tag.ends_with('"') && tag.len() > 2,
        "a strong entity tag: {tag}"
    );
    tag
}

#[track_caller]
fn assert_precondition_failed(response: TestResponse) {
    let response = response.expect(412);
    assert_eq!(response.header("content-type"), Some("application/json"));
    assert_eq!(
        response.json(),
        json!({"errors": {"detail": PRECONDITION_FAILED}})
    );
}

/// Every answer carrying a database or a dashboard carries its `ETag`: create, retrieve (on
/// every path of the record), update and setup; it changes with every write, and a delete's
/// answer (the record is gone) carries none.
pub async fn versions_every_record_answer_carries_its_etag(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = call(
        &api,
        Method::POST,
        DATABASES,
        &[],
        Some(&minimal_database()),
    )
    .await
    .expect(200);
    let id = created.json()["id"].as_str().expect("id").to_owned();
    let path = format!("{DATABASES}/{id}");
    let first = etag(&created);
    for path in [path.clone(), format!("/api/v1/querydesk/databases/{id}")] {
        let fetched = call(&api, Method::GET, &path, &[], None).await.expect(200);
        assert_eq!(etag(&fetched), first, "{path}");
    }
    let patched = call(
        &api,
        Method::PATCH,
        &path,
        &[],
        Some(&json!({"name": "Renamed"})),
    )
    .await
    .expect(200);
    let second = etag(&patched);
    assert_ne!(second, first, "a write moves the version");
    let fetched = call(&api, Method::GET, &path, &[], None).await.expect(200);
    assert_eq!(etag(&fetched), second);

    let setup = json!({
        "id": "ext-versions", "adapter": "postgres", "hostname": "db.internal",
        "database": "orders", "username": "svc", "password": "pw-svc",
    });
    let created = call(&api, Method::PUT, SETUP, &[], Some(&setup))
        .await
        .expect(200);
    let again = call(&api, Method::PUT, SETUP, &[], Some(&setup))
        .await
        .expect(200);
    assert_ne!(etag(&created), etag(&again));

    let deleted = call(&api, Method::DELETE, &path, &[], None)
        .await
        .expect(200);
    assert_eq!(deleted.header("etag"), None);

    let board = call(
        &api,
        Method::POST,
        DASHBOARDS,
        &[],
        Some(&minimal_dashboard()),
    )
    .await
    .expect(200);
    let board_id = board.json()["id"].as_str().expect("id").to_owned();
    let board_path = format!("{DASHBOARDS}/{board_id}");
    let first = etag(&board);
    for path in [board_path.clone(), format!("/api{board_path}")] {
        let fetched = call(&api, Method::GET, &path, &[], None).await.expect(200);
        assert_eq!(etag(&fetched), first, "{path}");
    }
    let put = call(
        &api,
        Method::PUT,
        &board_path,
        &[],
        Some(&json!({"name": "Ops 2"})),
    )
    .await
    .expect(200);
    assert_ne!(etag(&put), first);
    let deleted = call(&api, Method::DELETE, &board_path, &[], None)
        .await
        .expect(200);
    assert_eq!(deleted.header("etag"), None);
}

/// `If-None-Match` with the current `ETag` (or `*`) answers 304 with no body and the `ETag`;
/// after a write the old one gets the whole record again.
pub async fn versions_if_none_match_answers_304(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = call(
        &api,
        Method::POST,
        DATABASES,
        &[],
        Some(&minimal_database()),
    )
    .await
    .expect(200);
    let id = created.json()["id"].as_str().expect("id").to_owned();
    let path = format!("{DATABASES}/{id}");
    let tag = etag(&created);
    for value in [tag.as_str(), "*", &format!("\"0\", W/{tag}")] {
        let fresh = call(&api, Method::GET, &path, &[("if-none-match", value)], None)
            .await
            .expect(304);
        assert!(fresh.body.is_empty(), "{value}");
        assert_eq!(fresh.header("etag"), Some(tag.as_str()));
    }
    call(
        &api,
        Method::PATCH,
        &path,
        &[],
        Some(&json!({"name": "Renamed"})),
    )
    .await
    .expect(200);
    let changed = call(&api, Method::GET, &path, &[("if-none-match", &tag)], None)
        .await
        .expect(200);
    assert_eq!(changed.json()["name"], "Renamed");
    assert_ne!(etag(&changed), tag);

    let board = call(
        &api,
        Method::POST,
        DASHBOARDS,
        &[],
        Some(&minimal_dashboard()),
    )
    .await
    .expect(200);
    let board_path = format!("{DASHBOARDS}/{}", board.json()["id"].as_str().expect("id"));
    let tag = etag(&board);
    call(
        &api,
        Method::GET,
        &board_path,
        &[("if-none-match", &tag)],
        None,
    )
    .await
    .expect(304);
    // A missing record is still 404.
    call(
        &api,
        Method::GET,
        &format!("{DATABASES}/db_01aaaaaaaaaaaaaaaaaaaaaaaa"),
        &[("if-none-match", "*")],
        None,
    )
    .await
    .expect(404);
}

/// `If-Match` with an `ETag` that is not the record's answers 412 and changes nothing, for every
/// conditional write; with the current one (or `*`) the write goes through; a weak tag never
/// matches; a header that is not entity tags is 400.
pub async fn versions_if_match_guards_every_write(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = call(
        &api,
        Method::POST,
        DATABASES,
        &[],
        Some(&minimal_database()),
    )
    .await
    .expect(200);
    let database = created.json();
    let id = database["id"].as_str().expect("id").to_owned();
    let path = format!("{DATABASES}/{id}");
    let current = etag(&created);
    let stale = "\"1\"";
    let weak = format!("W/{current}");
    let rename = json!({"name": "Renamed"});

    for value in [stale, weak.as_str()] {
        assert_precondition_failed(
            call(
                &api,
                Method::PATCH,
                &path,
                &[("if-match", value)],
                Some(&rename),
            )
            .await,
        );
        assert_precondition_failed(
            call(&api, Method::DELETE, &path, &[("if-match", value)], None).await,
        );
    }
    let unchanged = call(&api, Method::GET, &path, &[], None).await.expect(200);
    assert_eq!(
        unchanged.json(),
        database,
        "a refused write changes nothing"
    );
    for malformed in ["1", "\"unterminated"] {
        let response = call(
            &api,
            Method::PATCH,
            &path,
            &[("if-match", malformed)],
            Some(&rename),
        )
        .await
        .expect(400);
        assert!(
            response.json()["errors"]["detail"]
                .as_str()
                .expect("detail")
                .contains("If-Match")
        );
    }
    let renamed = call(
        &api,
        Method::PATCH,
        &path,
        &[("if-match", &format!("\"1\", {current}"))],
        Some(&rename),
    )
    .await
    .expect(200);
    assert_eq!(renamed.json()["name"], "Renamed");
    let current = etag(&renamed);
    let any = call(
        &api,
        Method::PATCH,
        &path,
        &[("if-match", "*")],
        Some(&json!({"name": "Any"})),
    )
    .await
    .expect(200);
    let current_after_any = etag(&any);
    assert_ne!(current_after_any, current);
    // The old version no longer matches.
    assert_precondition_failed(
        call(
            &api,
            Method::PATCH,
            &path,
            &[("if-match", &current)],
            Some(&rename),
        )
        .await,
    );
    // Without If-Match, as before: the write goes through.
    call(
        &api,
        Method::PATCH,
        &path,
        &[],
        Some(&json!({"name": "Plain"})),
    )
    .await
    .expect(200);

    // Setup: by the version of the database with that api_id; none yet: not met.
    let setup = json!({
        "id": "ext-if-match", "adapter": "postgres", "hostname": "db.internal",
        "database": "orders", "username": "svc", "password": "pw-svc",
    });
    assert_precondition_failed(
        call(&api, Method::PUT, SETUP, &[("if-match", "*")], Some(&setup)).await,
    );
    let listed = call(&api, Method::GET, DATABASES, &[], None)
        .await
        .expect(200)
        .json();
    assert_eq!(
        listed["data"].as_array().expect("data").len(),
        1,
        "setup created nothing"
    );
    let set_up = call(&api, Method::PUT, SETUP, &[], Some(&setup))
        .await
        .expect(200);
    assert_precondition_failed(
        call(
            &api,
            Method::PUT,
            SETUP,
            &[("if-match", stale)],
            Some(&setup),
        )
        .await,
    );
    let again = call(
        &api,
        Method::PUT,
        SETUP,
        &[("if-match", &etag(&set_up))],
        Some(&setup),
    )
    .await
    .expect(200);
    let remove = format!("{DATABASES}/remove/ext-if-match");
    assert_precondition_failed(
        call(
            &api,
            Method::DELETE,
            &remove,
            &[("if-match", &etag(&set_up))],
            None,
        )
        .await,
    );
    call(
        &api,
        Method::DELETE,
        &remove,
        &[("if-match", &etag(&again))],
        None,
    )
    .await
    .expect(200);

    let tag = current_after_any;
    let latest = call(&api, Method::GET, &path, &[], None).await.expect(200);
    assert_ne!(etag(&latest), tag);
    call(
        &api,
        Method::DELETE,
        &path,
        &[("if-match", &etag(&latest))],
        None,
    )
    .await
    .expect(200);
    call(&api, Method::GET, &path, &[], None).await.expect(404);

    // Dashboards: PUT (and the compat PATCH) and DELETE.
    let board = call(
        &api,
        Method::POST,
        DASHBOARDS,
        &[],
        Some(&minimal_dashboard()),
    )
    .await
    .expect(200);
    let board_json = board.json();
    let board_path = format!("{DASHBOARDS}/{}", board_json["id"].as_str().expect("id"));
    let compat_path = format!("/api{board_path}");
    let change = json!({"name": "Ops 2"});
    assert_precondition_failed(
        call(
            &api,
            Method::PUT,
            &board_path,
            &[("if-match", stale)],
            Some(&change),
        )
        .await,
    );
    assert_precondition_failed(
        call(
            &api,
            Method::PATCH,
            &compat_path,
            &[("if-match", stale)],
            Some(&change),
        )
        .await,
    );
    assert_precondition_failed(
        call(
            &api,
            Method::DELETE,
            &board_path,
            &[("if-match", stale)],
            None,
        )
        .await,
    );
    assert_eq!(
        call(&api, Method::GET, &board_path, &[], None)
            .await
            .expect(200)
            .json(),
        board_json
    );
    let put = call(
        &api,
        Method::PUT,
        &board_path,
        &[("if-match", &etag(&board))],
        Some(&change),
    )
    .await
    .expect(200);
    call(
        &api,
        Method::DELETE,
        &board_path,
        &[("if-match", &etag(&put))],
        None,
    )
    .await
    .expect(200);
}

/// Two editors read the same version and both send a change with its `ETag` in `If-Match`, at
/// the same moment: exactly one is answered 200, the other 412, and the record is the winner's.
/// Twenty rounds, databases and dashboards.
pub async fn versions_two_editors_exactly_one_wins(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = call(
        &api,
        Method::POST,
        DATABASES,
        &[],
        Some(&minimal_database()),
    )
    .await
    .expect(200);
    let path = format!("{DATABASES}/{}", created.json()["id"].as_str().expect("id"));
    let board = call(
        &api,
        Method::POST,
        DASHBOARDS,
        &[],
        Some(&minimal_dashboard()),
    )
    .await
    .expect(200);
    let board_path = format!("{DASHBOARDS}/{}", board.json()["id"].as_str().expect("id"));
    for round in 0..20 {
        for (path, method) in [(&path, Method::PATCH), (&board_path, Method::PUT)] {
            let seen = call(&api, Method::GET, path, &[], None).await.expect(200);
            let tag = etag(&seen);
            let edit = |editor: &'static str| {
                let api = api.clone();
                let path = path.clone();
                let method = method.clone();
                let tag = tag.clone();
                tokio::spawn(async move {
                    let name = json!({"name": format!("{editor} {round}")});
                    call(&api, method, &path, &[("if-match", &tag)], Some(&name)).await
                })
            };
            let (alice, bob) = (edit("alice"), edit("bob"));
            let answers = [alice.await.expect("alice"), bob.await.expect("bob")];
            let statuses: Vec<u16> = answers.iter().map(|a| a.status.as_u16()).collect();
            let won: Vec<&TestResponse> = answers.iter().filter(|a| a.status == 200).collect();
            assert_eq!(
                won.len(),
                1,
                "round {round} {path}: exactly one editor wins, got {statuses:?}"
            );
            assert!(
                statuses.contains(&412),
                "round {round}: the other is refused, got {statuses:?}"
            );
            let stored = call(&api, Method::GET, path, &[], None)
                .await
                .expect(200)
                .json();
            assert_eq!(
                stored["name"],
                won[0].json()["name"],
                "the record is the winner's"
            );
        }
    }
}

/// A database's permissions and data protection carry an `ETag` (a digest of the document):
/// a `PUT` with the one read applies and answers the new one; a `PUT` with a stale one (another
/// admin wrote in between) is 412 and changes nothing; without `If-Match`, writes apply.
pub async fn versions_access_documents_are_guarded(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let db = call(
        &api,
        Method::POST,
        DATABASES,
        &[],
        Some(&minimal_database()),
    )
    .await
    .expect(200)
    .json();
    let id = db["id"].as_str().unwrap();
    let documents = [
        (
            format!("{DATABASES}/{id}/permissions"),
            json!({"permissions": [{"subject_kind": "user", "subject": "ann@example.com", "access": "query"}]}),
            json!({"permissions": [{"subject_kind": "user", "subject": "bo@example.com", "access": "review"}]}),
        ),
        (
            format!("{DATABASES}/{id}/data-protection"),
            json!({"policies": [{"name": "pii", "columns": [{"column": "users.email", "action": "mask"}]}]}),
            json!({"policies": [{"name": "pii", "columns": [{"column": "users.ssn", "action": "hide"}]}]}),
        ),
    ];
    for (path, first, second) in documents {
        let read = call(&api, Method::GET, &path, &[], None).await.expect(200);
        let v0 = etag(&read);
        let again = call(&api, Method::GET, &path, &[], None).await.expect(200);
        assert_eq!(etag(&again), v0, "{path}: the same document, the same ETag");
        // Admin A writes with the version read.
        let written = call(&api, Method::PUT, &path, &[("if-match", &v0)], Some(&first))
            .await
            .expect(200);
        let v1 = etag(&written);
        assert_ne!(v1, v0, "{path}: a write moves the ETag");
        // Admin B still holds v0: refused, nothing changed.
        assert_precondition_failed(
            call(
                &api,
                Method::PUT,
                &path,
                &[("if-match", &v0)],
                Some(&second),
            )
            .await,
        );
        let now = call(&api, Method::GET, &path, &[], None).await.expect(200);
        assert_eq!(etag(&now), v1, "{path}: the refused write changed nothing");
        assert_eq!(now.json(), written.json());
        // With the current version, or none at all, it applies.
        call(
            &api,
            Method::PUT,
            &path,
            &[("if-match", &v1)],
            Some(&second),
        )
        .await
        .expect(200);
        call(&api, Method::PUT, &path, &[], Some(&first))
            .await
            .expect(200);
    }
}

/// Every case of this module, as tests over the store `$storage` makes.
#[macro_export]
macro_rules! version_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            versions,
            $storage,
            [
                versions_every_record_answer_carries_its_etag,
                versions_if_none_match_answers_304,
                versions_if_match_guards_every_write,
                versions_two_editors_exactly_one_wins,
                versions_access_documents_are_guarded,
            ]
        );
    };
}
