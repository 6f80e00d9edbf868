//! Browsers (docs/console.md, "Signing in"): sign-in with a user-bound key or a one-time link,
//! the session cookie and its flags, the header and origin a cookie needs, sign-out, the key's
//! revocation ending its sessions, an expired or idle session's cookie refused, and the cookie
//! ignored beside another credential; on every backend.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use dbconsole_core::auth::StoredCredentials;
use dbconsole_core::model::{
    AuditAction, AuditEvent, CredentialKind, Principal, Role, Scope, Secret, Session, SessionKind,
    SignInMethod, Timestamp, mint_caller_key,
};
use dbconsole_core::service::browser::{CSRF_HEADER, SessionOptions};
use dbconsole_core::storage::{AuditQuery, Edits as _};
use dbconsole_core::{ConsoleService, Storage};
use http::{Method, Request, header};
use http_body_util::Full;
use serde_json::{Value, json};

use crate::{
    Api, DATABASES, TestResponse, assert_unauthorized_body, minimal_database, test_credentials,
    test_sealer,
};

pub(crate) const SIGN_IN: &str = "/api/v1/console/sign-in";
pub(crate) const LINK: &str = "/api/v1/console/sign-in/link";
const SIGN_OUT: &str = "/api/v1/console/sign-out";
pub(crate) const ME: &str = "/api/v1/console/me";
const QUERIES: &str = "/api/v1/console/queries";
const HOST: &str = "console.test";
pub(crate) const ORIGIN: &str = "http://console.test";

pub(crate) fn api(storage: Arc<dyn Storage>, options: SessionOptions) -> Api {
    let auth = StoredCredentials::new(Arc::clone(&storage), test_credentials());
    let service = ConsoleService::builder(storage, Arc::new(auth), test_sealer())
        .sessions(options)
        .build();
    Api { service }
}

/// A request as a browser of the console sends it: `Host`, and, when asked, the header, the
/// origin and the cookie.
pub(crate) struct Browser<'a> {
    pub(crate) header: bool,
    pub(crate) origin: Option<&'a str>,
    pub(crate) cookie: Option<String>,
}

impl Browser<'_> {
    pub(crate) fn console() -> Self {
        Self {
            header: true,
            origin: Some(ORIGIN),
            cookie: None,
        }
    }

    pub(crate) fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Request<Full<Bytes>> {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::HOST, HOST);
        if self.header {
            request = request.header(CSRF_HEADER, "1");
        }
        if let Some(origin) = self.origin {
            request = request.header(header::ORIGIN, origin);
        }
        if let Some(cookie) = &self.cookie {
            request = request.header(header::COOKIE, format!("other=1; {cookie}"));
        }
        if body.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        request
            .body(Full::new(
                body.map(|b| Bytes::from(b.to_string())).unwrap_or_default(),
            ))
            .expect("a request")
    }
}

/// A key for `principal` with `scope`, stored; its secret.
pub(crate) async fn user_key(
    storage: &Arc<dyn Storage>,
    principal: Option<Principal>,
    scope: Scope,
) -> (String, String) {
    user_credential(storage, CredentialKind::ApiKey, principal, scope).await
}

/// A stored key or access token (`kind`) for `principal` with `scope`; its id and secret.
async fn user_credential(
    storage: &Arc<dyn Storage>,
    kind: CredentialKind,
    principal: Option<Principal>,
    scope: Scope,
) -> (String, String) {
    let (mut key, secret) = mint_caller_key(kind, scope, "browser test");
    key.principal = principal;
    let id = key.id.as_str().to_owned();
    storage
        .insert_caller_key(key, dbconsole_core::storage::testing::origin())
        .await
        .expect("insert_caller_key");
    (id, secret.expose_str().expect("utf-8").to_owned())
}

/// The cookie (`name=value`) a response sets, and the whole `Set-Cookie`.
pub(crate) fn set_cookie(response: &TestResponse) -> (String, String) {
    let whole = response
        .header("set-cookie")
        .expect("a Set-Cookie header")
        .to_owned();
    let pair = whole
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_owned();
    (pair, whole)
}

pub(crate) async fn sign_in(api: &Api, browser: &Browser<'_>, key: &str) -> TestResponse {
    api.answer(browser.request(Method::POST, SIGN_IN, Some(&json!({"key": key}))))
        .await
}

/// Stores `session` as a sign-in would (with its `session.create` event).
pub(crate) async fn store_session(storage: &Arc<dyn Storage>, session: Session) {
    let id = session.id.as_str().to_owned();
    let event = AuditEvent::new(
        dbconsole_core::storage::testing::origin(),
        AuditAction::SessionCreate,
        &id,
        Vec::new(),
    );
    storage
        .create_session(session, None, event.into())
        .await
        .expect("create_session");
}

/// The time `ago` before `now`.
fn before(now: Timestamp, ago: Duration) -> Timestamp {
    let micros = i64::try_from(ago.as_micros()).expect("a short duration");
    Timestamp::from_micros(now.as_micros() - micros)
}

/// A user-bound key signs a browser in: 200 with the caller's view and an `HttpOnly`,
/// `SameSite=Lax`, `Path=/` cookie (not `Secure` over plain HTTP); the cookie then authenticates
/// reads with the header, and writes with the header and the console's origin; without them it
/// is refused. Sign-in and sign-out are audited; after sign-out the cookie is refused.
pub async fn a_key_signs_a_browser_in_and_out(storage: Arc<dyn Storage>) {
    let api = api(Arc::clone(&storage), SessionOptions::default());
    let ann = Principal::member("Ann@Example.com").groups(["Analysts"]);
    let (_, key) = user_key(&storage, Some(ann), Scope::Query).await;
    let signed = sign_in(&api, &Browser::console(), &key).await.expect(200);
    assert_eq!(signed.json()["user"], json!("ann@example.com"));
    assert_eq!(signed.json()["scope"], json!("query"));
    let (cookie, whole) = set_cookie(&signed);
    assert!(cookie.starts_with("dbconsole_session=dbc_ses_"), "{whole}");
    for flag in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=43200"] {
        assert!(whole.contains(flag), "the cookie is {flag}: {whole}");
    }
    assert!(
        !whole.contains("Secure"),
        "no Secure over plain HTTP: {whole}"
    );
    assert!(
        !signed.text().contains("dbc_ses_"),
        "the secret is in the cookie only"
    );

    // Signing in again from this browser replaces its session: the old cookie ends.
    let first = Browser {
        cookie: Some(cookie.clone()),
        ..Browser::console()
    };
    let again = sign_in(&api, &first, &key).await.expect(200);
    let (renewed, _) = set_cookie(&again);
    assert_ne!(renewed, cookie, "a new session id at every sign-in");
    api.answer(first.request(Method::GET, ME, None))
        .await
        .expect(401);
    let cookie = renewed;
    let browser = Browser {
        cookie: Some(cookie.clone()),
        ..Browser::console()
    };
    let me = api
        .answer(browser.request(Method::GET, ME, None))
        .await
        .expect(200);
    assert_eq!(me.json()["user"], json!("ann@example.com"));
    assert_eq!(me.header("cache-control"), Some("no-store"));
    assert_eq!(me.header("x-content-type-options"), Some("nosniff"));
    // Without the header the cookie counts for nothing.
    let bare = Browser {
        header: false,
        origin: None,
        cookie: Some(cookie.clone()),
    };
    api.answer(bare.request(Method::GET, ME, None))
        .await
        .expect(403);
    // A write from another origin, or with no origin, is refused and stores nothing.
    let body =
        json!({"database_id": "db_missing", "credential_id": "crd_missing", "query": "select 1"});
    for origin in [Some("http://evil.test"), None] {
        let cross = Browser {
            origin,
            cookie: Some(cookie.clone()),
            ..Browser::console()
        };
        let refused = api
            .answer(cross.request(Method::POST, QUERIES, Some(&body)))
            .await;
        refused.expect(403);
    }
    // The same write from the console's origin reaches the handler (the database is missing).
    let write = api
        .answer(browser.request(Method::POST, QUERIES, Some(&body)))
        .await;
    assert!(
        matches!(write.status.as_u16(), 404 | 422),
        "a same-origin write is the handler's to judge: {}",
        write.status
    );
    // The management routes stay a member's 403.
    api.answer(browser.request(Method::GET, "/api/v1/console/databases", None))
        .await
        .expect(403);

    let out = api
        .answer(browser.request(Method::POST, SIGN_OUT, None))
        .await
        .expect(204);
    let (cleared, whole) = set_cookie(&out);
    assert_eq!(cleared, "dbconsole_session=", "{whole}");
    assert!(whole.contains("Max-Age=0"), "{whole}");
    api.answer(browser.request(Method::GET, ME, None))
        .await
        .expect(401);
    let events = storage
        .list_audit(AuditQuery {
            resource: None,
            after: None,
            limit: 100,
            ..Default::default()
        })
        .await
        .expect("list_audit");
    let actions: Vec<&str> = events.iter().map(|e| e.action.as_str()).collect();
    assert!(
        actions.starts_with(&[
            "session.revoke",
            "session.revoke",
            "session.create",
            "session.create"
        ]),
        "sign-out, the replaced session and both sign-ins are audited, newest first: {actions:?}"
    );
    assert_eq!(events[2].actor.name, "ann@example.com");
}

/// Sign-in is refused without the header (403), from another origin (403), with a wrong key
/// (401), a key bound to no user or an agent's (403), and an empty one (422); none stores a
/// session or sets a cookie.
pub async fn refused_sign_ins_store_nothing(storage: Arc<dyn Storage>) {
    let api = api(Arc::clone(&storage), SessionOptions::default());
    let (_, unbound) = user_key(&storage, None, Scope::Full).await;
    let (_, agent) = user_key(
        &storage,
        Some(Principal::member("bot@example.com").agent(true)),
        Scope::Agent,
    )
    .await;
    let (_, good) = user_key(
        &storage,
        Some(Principal::member("ann@example.com")),
        Scope::Query,
    )
    .await;
    let no_header = Browser {
        header: false,
        ..Browser::console()
    };
    let elsewhere = Browser {
        origin: Some("https://console.test.evil"),
        ..Browser::console()
    };
    let cases: [(&Browser<'_>, &str, u16); 6] = [
        (&no_header, good.as_str(), 403),
        (&elsewhere, good.as_str(), 403),
        (&Browser::console(), "dbc_ak_wrong", 401),
        (&Browser::console(), unbound.as_str(), 403),
        (&Browser::console(), agent.as_str(), 403),
        (&Browser::console(), "  ", 422),
    ];
    for (browser, key, status) in cases {
        let answer = sign_in(&api, browser, key).await.expect(status);
        assert_eq!(answer.header("set-cookie"), None, "no cookie on a refusal");
    }
    assert!(
        storage
            .list_sessions()
            .await
            .expect("list_sessions")
            .is_empty(),
        "a refused sign-in stores no session"
    );
}

/// A one-time sign-in link signs a browser in once: a second exchange, an unknown token and an
/// expired link are 401.
pub async fn a_sign_in_link_works_once(storage: Arc<dyn Storage>) {
    let api = api(Arc::clone(&storage), SessionOptions::default());
    let root = Principal::member("root@example.com").role(Role::SuperAdmin);
    let mint = |lifetime| {
        Session::mint(
            SessionKind::SignInLink,
            root.clone(),
            Scope::Full,
            SignInMethod::Link,
            lifetime,
        )
    };
    let (link, token) = mint(Duration::from_secs(900));
    let (mut old, old_token) = mint(Duration::from_secs(900));
    old.expires_at = old.created_at;
    for session in [link, old] {
        store_session(&storage, session).await;
    }
    let token = token.expose_str().expect("utf-8").to_owned();
    let exchange = |token: String| {
        let api = api.clone();
        async move {
            api.answer(Browser::console().request(
                Method::POST,
                LINK,
                Some(&json!({"token": token})),
            ))
            .await
        }
    };
    let signed = exchange(token.clone()).await.expect(200);
    assert_eq!(signed.json()["role"], json!("super-admin"));
    let (cookie, _) = set_cookie(&signed);
    let browser = Browser {
        cookie: Some(cookie),
        ..Browser::console()
    };
    api.answer(browser.request(Method::GET, "/api/v1/console/databases", None))
        .await
        .expect(200);
    exchange(token).await.expect(401);
    exchange("dbc_sil_unknown".to_owned()).await.expect(401);
    exchange(old_token.expose_str().expect("utf-8").to_owned())
        .await
        .expect(401);
    // A link is no session: its token as a cookie is refused.
    let as_cookie = Browser {
        cookie: Some(format!(
            "dbconsole_session={}",
            old_token.expose_str().unwrap_or_default()
        )),
        ..Browser::console()
    };
    api.answer(as_cookie.request(Method::GET, ME, None))
        .await
        .expect(401);
}

/// Revoking the key a session was made from ends the session; a request with `x-api-key` is
/// judged by it alone (a wrong key beside a good cookie is 401); over https the cookie is
/// `Secure` with a `__Host-` name, and the origin is the public URL's.
pub async fn sessions_follow_their_key_and_yield_to_headers(storage: Arc<dyn Storage>) {
    let options = SessionOptions::for_public_url("https://console.example.com/").expect("a URL");
    let api = api(Arc::clone(&storage), options);
    let (key_id, key) = user_key(
        &storage,
        Some(Principal::member("ann@example.com")),
        Scope::Query,
    )
    .await;
    let public = Browser {
        origin: Some("https://console.example.com"),
        ..Browser::console()
    };
    sign_in(&api, &Browser::console(), &key).await.expect(403);
    let signed = sign_in(&api, &public, &key).await.expect(200);
    let (cookie, whole) = set_cookie(&signed);
    assert!(cookie.starts_with("__Host-dbconsole_session="), "{whole}");
    assert!(whole.contains("; Secure"), "{whole}");
    let browser = Browser {
        cookie: Some(cookie.clone()),
        ..public
    };
    api.answer(browser.request(Method::GET, ME, None))
        .await
        .expect(200);
    let mut wrong_key = browser.request(Method::GET, ME, None);
    wrong_key
        .headers_mut()
        .insert("x-api-key", http::HeaderValue::from_static("dbc_ak_wrong"));
    api.answer(wrong_key).await.expect(401);
    // Headers decide alone whatever they hold: a blank key, a Basic or a blank authorization.
    for (name, value) in [
        ("x-api-key", ""),
        ("authorization", "Basic YWxpY2U6cHc="),
        ("authorization", ""),
    ] {
        let mut other = browser.request(Method::GET, ME, None);
        other
            .headers_mut()
            .insert(name, http::HeaderValue::from_static(value));
        api.answer(other).await.expect(401);
    }
    storage
        .delete_caller_key(&key_id, dbconsole_core::storage::testing::origin())
        .await
        .expect("delete_caller_key");
    api.answer(browser.request(Method::GET, ME, None))
        .await
        .expect(401);
}

/// A session whose maximum age has passed, and one last seen longer ago than the idle time,
/// are no callers: their cookie (with the header, and the console's origin on a write) is 401
/// "the session has ended" on a read (`GET …/me`) and on a write (which stores nothing), though
/// both are still stored (not pruned yet). A live session of the same user, stored the same
/// way, reads and writes.
pub async fn an_expired_or_idle_session_is_no_caller(storage: Arc<dyn Storage>) {
    let idle = Duration::from_secs(600);
    let options = SessionOptions {
        idle,
        ..SessionOptions::default()
    };
    let max_age = options.max_age;
    let api = api(Arc::clone(&storage), options);
    let root = Principal::member("root@example.com").role(Role::SuperAdmin);
    let mint = || {
        Session::mint(
            SessionKind::Browser,
            root.clone(),
            Scope::Full,
            SignInMethod::Key,
            max_age,
        )
    };
    let now = Timestamp::now();
    // Expired: created longer ago than the maximum age, used a moment ago.
    let (mut expired, expired_secret) = mint();
    expired.created_at = before(now, max_age + Duration::from_secs(60));
    expired.expires_at = before(now, Duration::from_secs(60));
    expired.last_seen_at = before(now, Duration::from_secs(1));
    // Idle: far from its end, but last seen longer ago than the idle time.
    let (mut idle_one, idle_secret) = mint();
    idle_one.created_at = before(now, idle * 2);
    idle_one.last_seen_at = before(now, idle + Duration::from_secs(60));
    idle_one.expires_at = idle_one.created_at.plus(max_age);
    let (live, live_secret) = mint();
    let ended = [
        ("expired", expired.digest, expired_secret),
        ("idle", idle_one.digest, idle_secret),
    ];
    for session in [expired, idle_one, live] {
        store_session(&storage, session).await;
    }
    let browser_with = |secret: &Secret| Browser {
        cookie: Some(format!(
            "dbconsole_session={}",
            secret.expose_str().expect("utf-8")
        )),
        ..Browser::console()
    };

    for (what, digest, secret) in &ended {
        let browser = browser_with(secret);
        let refused = [
            api.answer(browser.request(Method::GET, ME, None)).await,
            api.answer(browser.request(Method::POST, DATABASES, Some(&minimal_database())))
                .await,
        ];
        for answer in refused {
            assert_eq!(
                answer.status.as_u16(),
                401,
                "the {what} session is no caller: {}",
                answer.text()
            );
            assert_unauthorized_body(&answer);
            assert_eq!(
                answer.json()["errors"]["hint"],
                json!("the session has ended: sign in again"),
                "the {what} session"
            );
            assert_eq!(answer.header("set-cookie"), None, "the {what} session");
        }
        assert!(
            storage
                .session_by_digest(digest)
                .await
                .expect("session_by_digest")
                .is_some(),
            "the {what} session is still stored: its time, not its absence, refused it"
        );
    }
    let live = browser_with(&live_secret);
    let listed = api
        .answer(live.request(Method::GET, DATABASES, None))
        .await
        .expect(200);
    assert_eq!(
        listed.json()["data"],
        json!([]),
        "no refused write stored a database"
    );
    // The control: a live session, stored the same way, is the caller.
    let me = api
        .answer(live.request(Method::GET, ME, None))
        .await
        .expect(200);
    assert_eq!(me.json()["user"], json!("root@example.com"));
    api.answer(live.request(Method::POST, DATABASES, Some(&minimal_database())))
        .await
        .expect(200);
}

/// S17: a session keeps the kind of credential it was signed in with. A `full`-scope access
/// token (made for the dashboard routes) signs a browser in, and the session reaches what the
/// token reaches: the dashboards, never an API-key route (the databases, whose check-connection
/// would send a stored password where the caller says). The same user's API key reaches them.
pub async fn a_session_reaches_what_its_key_reaches(storage: Arc<dyn Storage>) {
    let api = api(Arc::clone(&storage), SessionOptions::default());
    let root = Principal::member("root@example.com").role(Role::SuperAdmin);
    let signed_in = |kind| {
        let (storage, api, root) = (Arc::clone(&storage), &api, root.clone());
        async move {
            let (_, token) = user_credential(&storage, kind, Some(root), Scope::Full).await;
            let signed = sign_in(api, &Browser::console(), &token).await.expect(200);
            Browser {
                cookie: Some(set_cookie(&signed).0),
                ..Browser::console()
            }
        }
    };
    let token_session = signed_in(CredentialKind::AccessToken).await;
    api.answer(token_session.request(Method::GET, "/api/v1/dashboards", None))
        .await
        .expect(200);
    for (method, path, body) in [
        (Method::GET, DATABASES, None),
        (Method::POST, DATABASES, Some(minimal_database())),
        (Method::GET, "/api/v1/console/audit", None),
        (Method::GET, "/api/v1/console/deliveries", None),
    ] {
        let refused = api
            .answer(token_session.request(method, path, body.as_ref()))
            .await;
        assert_eq!(refused.status.as_u16(), 403, "{path}: {}", refused.text());
        assert!(
            refused.text().contains("access token"),
            "{}",
            refused.text()
        );
    }
    assert!(
        api.answer(
            Request::get(DATABASES)
                .header("x-api-key", crate::API_KEY)
                .body(Full::default())
                .expect("a request")
        )
        .await
        .json()["data"]
            .as_array()
            .is_some_and(Vec::is_empty),
        "nothing was made"
    );
    let key_session = signed_in(CredentialKind::ApiKey).await;
    api.answer(key_session.request(Method::GET, DATABASES, None))
        .await
        .expect(200);
}

/// A user holds at most `max_per_user` live sessions: a sign-in beyond it ends the user's
/// oldest (audited `over the cap`); another user's sessions are not counted.
pub async fn a_user_holds_at_most_the_cap_of_sessions(storage: Arc<dyn Storage>) {
    let options = SessionOptions {
        max_per_user: 3,
        ..SessionOptions::default()
    };
    let api = api(Arc::clone(&storage), options);
    let ann = Principal::member("ann@example.com");
    let (_, key) = user_key(&storage, Some(ann), Scope::Query).await;
    let (_, bob_key) = user_key(
        &storage,
        Some(Principal::member("bob@example.com")),
        Scope::Query,
    )
    .await;
    let bob = sign_in(&api, &Browser::console(), &bob_key)
        .await
        .expect(200);
    let mut cookies = Vec::new();
    for _ in 0..5 {
        let signed = sign_in(&api, &Browser::console(), &key).await.expect(200);
        cookies.push(set_cookie(&signed).0);
    }
    let status = |cookie: String| {
        let api = &api;
        async move {
            let browser = Browser {
                cookie: Some(cookie),
                ..Browser::console()
            };
            api.answer(browser.request(Method::GET, ME, None))
                .await
                .status
                .as_u16()
        }
    };
    let mut statuses = Vec::new();
    for cookie in &cookies {
        statuses.push(status(cookie.clone()).await);
    }
    assert_eq!(statuses, [401, 401, 200, 200, 200], "the oldest two ended");
    assert_eq!(
        status(set_cookie(&bob).0).await,
        200,
        "bob's own is not counted"
    );
    let events = storage
        .list_audit(AuditQuery {
            resource: None,
            after: None,
            limit: 100,
            ..Default::default()
        })
        .await
        .expect("list_audit");
    let capped = events
        .iter()
        .filter(|e| {
            e.action.as_str() == "session.revoke"
                && format!("{:?}", e.changes).contains("over the cap")
        })
        .count();
    assert_eq!(capped, 2, "each ended session is audited");
}

/// A person lists their own live sessions (the current one marked, no secret) and ends one of
/// them (another device's): its cookie is refused from then on, the event says `by its user`.
/// Another user's session is 404 to them, and stays.
pub async fn people_list_and_end_their_own_sessions(storage: Arc<dyn Storage>) {
    let api = api(Arc::clone(&storage), SessionOptions::default());
    let (_, key) = user_key(
        &storage,
        Some(Principal::member("ann@example.com")),
        Scope::Query,
    )
    .await;
    let (_, bob_key) = user_key(
        &storage,
        Some(Principal::member("bob@example.com")),
        Scope::Query,
    )
    .await;
    let browser = |signed: &TestResponse| Browser {
        cookie: Some(set_cookie(signed).0),
        ..Browser::console()
    };
    let laptop = browser(&sign_in(&api, &Browser::console(), &key).await.expect(200));
    let phone = browser(&sign_in(&api, &Browser::console(), &key).await.expect(200));
    let bob = browser(
        &sign_in(&api, &Browser::console(), &bob_key)
            .await
            .expect(200),
    );
    let listed = api
        .answer(laptop.request(Method::GET, "/api/v1/console/me/sessions", None))
        .await
        .expect(200);
    let sessions = listed.json()["data"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(sessions.len(), 2, "ann's two, not bob's: {}", listed.text());
    assert!(!listed.text().contains("dbc_ses_"), "no secret listed");
    let current: Vec<&Value> = sessions.iter().filter(|s| s["current"] == true).collect();
    assert_eq!(current.len(), 1, "{}", listed.text());
    let other = sessions
        .iter()
        .find(|s| s["current"] == false)
        .and_then(|s| s["id"].as_str())
        .expect("the phone's")
        .to_owned();
    // Bob can't end it (404), and can't see it.
    api.answer(bob.request(
        Method::DELETE,
        &format!("/api/v1/console/me/sessions/{other}"),
        None,
    ))
    .await
    .expect(404);
    api.answer(phone.request(Method::GET, ME, None))
        .await
        .expect(200);
    api.answer(laptop.request(
        Method::DELETE,
        &format!("/api/v1/console/me/sessions/{other}"),
        None,
    ))
    .await
    .expect(204);
    api.answer(phone.request(Method::GET, ME, None))
        .await
        .expect(401);
    api.answer(laptop.request(Method::GET, ME, None))
        .await
        .expect(200);
    api.answer(bob.request(Method::GET, ME, None))
        .await
        .expect(200);
    let events = storage
        .list_audit(AuditQuery {
            resource: Some(&other),
            after: None,
            limit: 10,
            ..Default::default()
        })
        .await
        .expect("list_audit");
    assert!(
        events.iter().any(|e| e.action.as_str() == "session.revoke"
            && format!("{:?}", e.changes).contains("by its user")),
        "{events:?}"
    );
}

/// Every case of this module, as tests over the store `$storage` makes.
#[macro_export]
macro_rules! browser_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            browser,
            $storage,
            [
                a_key_signs_a_browser_in_and_out,
                refused_sign_ins_store_nothing,
                a_sign_in_link_works_once,
                sessions_follow_their_key_and_yield_to_headers,
                an_expired_or_idle_session_is_no_caller,
                a_session_reaches_what_its_key_reaches,
                a_user_holds_at_most_the_cap_of_sessions,
                people_list_and_end_their_own_sessions,
            ]
        );
    };
}
