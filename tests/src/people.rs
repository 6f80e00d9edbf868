//! People (docs/people.md): invitations that enroll once, user records that every sign-in
//! keeps and every request follows (groups, role, deactivation), the Users routes for super
//! admins only, recovery links, the adoption of identities stored before users were, and the
//! passkey routes' guards; on every backend.

use std::sync::Arc;
use std::time::Duration;

use dbconsole_core::Storage;
use dbconsole_core::model::{
    AuditAction, Principal, Role, Scope, Session, SessionKind, SignInMethod, UserSource,
};
use dbconsole_core::service::browser::SessionOptions;
use dbconsole_core::storage::AuditQuery;
use http::Method;
use serde_json::{Value, json};

use crate::browser::{
    Browser, LINK, ME, ORIGIN, api, set_cookie, sign_in, store_session, user_key,
};
use crate::{Api, TestResponse};

const USERS: &str = "/api/v1/console/users";
const INVITATIONS: &str = "/api/v1/console/invitations";
const ENROLL: &str = "/api/v1/console/sign-in/invitation";

/// A browser carrying the session cookie `cookie`.
fn with_cookie(cookie: &str) -> Browser<'static> {
    Browser {
        cookie: Some(cookie.to_owned()),
        ..Browser::console()
    }
}

/// The token at the end of a link (`…#invite=<token>`).
fn token_of(link: &str) -> String {
    link.rsplit_once('=').expect("a token").1.to_owned()
}

async fn enroll(api: &Api, token: &str) -> TestResponse {
    api.answer(Browser::console().request(Method::POST, ENROLL, Some(&json!({"token": token}))))
        .await
}

async fn me(api: &Api, cookie: &str) -> TestResponse {
    api.answer(with_cookie(cookie).request(Method::GET, ME, None))
        .await
}

async fn events(storage: &Arc<dyn Storage>, action: AuditAction) -> Vec<Value> {
    storage
        .list_audit(AuditQuery {
            limit: usize::MAX,
            ..Default::default()
        })
        .await
        .expect("list_audit")
        .into_iter()
        .filter(|e| e.action == action)
        .map(|e| json!({"resource": e.resource_id, "changes": e.changes}))
        .collect()
}

/// A super admin invites a person: the link (shown once, never listed) enrolls them once, with
/// the invitation's groups and role in a new record; the pending list empties; a second
/// invitation of a user is 409, a revoked one enrolls nobody; each step is audited.
pub async fn an_invitation_enrolls_once(storage: Arc<dyn Storage>) {
    let api = api(Arc::clone(&storage), SessionOptions::default());
    let made = api
        .db(
            Method::POST,
            INVITATIONS,
            Some(&json!({"user": "Ann@Example.com", "groups": ["Analysts"], "role": "member"})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(made["user"], "ann@example.com");
    assert_eq!(made["groups"], json!(["analysts"]));
    let link = made["link"].as_str().expect("a link").to_owned();
    assert!(link.starts_with("/console/#invite=dbc_inv_"), "{link}");
    let listed = api
        .db(Method::GET, INVITATIONS, None)
        .await
        .expect(200)
        .json();
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(1));
    assert!(
        !listed.to_string().contains("dbc_inv_"),
        "a pending invitation never shows its token"
    );
    let token = token_of(&link);
    let signed = enroll(&api, &token).await.expect(200);
    assert_eq!(signed.json()["user"], "ann@example.com");
    assert_eq!(signed.json()["scope"], "query");
    let (cookie, _) = set_cookie(&signed);
    me(&api, &cookie).await.expect(200);
    enroll(&api, &token).await.expect(401);
    let user = api
        .db(Method::GET, &format!("{USERS}/ANN@example.com"), None)
        .await
        .expect(200)
        .json();
    assert_eq!(user["source"], "invitation");
    assert_eq!(user["groups"], json!(["analysts"]));
    assert!(user["last_sign_in_at"].is_string(), "{user}");
    let pending = api
        .db(Method::GET, INVITATIONS, None)
        .await
        .expect(200)
        .json();
    assert_eq!(
        pending["data"],
        json!([]),
        "an enrolled invitation is no longer pending"
    );
    api.db(
        Method::POST,
        INVITATIONS,
        Some(&json!({"user": "ann@example.com"})),
    )
    .await
    .expect(409);
    let bob = api
        .db(
            Method::POST,
            INVITATIONS,
            Some(&json!({"user": "bob@example.com"})),
        )
        .await
        .expect(201)
        .json();
    api.db(
        Method::POST,
        INVITATIONS,
        Some(&json!({"user": "bob@example.com"})),
    )
    .await
    .expect(409);
    let id = bob["id"].as_str().expect("an id");
    api.db(Method::DELETE, &format!("{INVITATIONS}/{id}"), None)
        .await
        .expect(204);
    api.db(Method::DELETE, &format!("{INVITATIONS}/{id}"), None)
        .await
        .expect(404);
    enroll(&api, &token_of(bob["link"].as_str().expect("a link")))
        .await
        .expect(401);
    assert!(
        api.db(Method::GET, &format!("{USERS}/bob@example.com"), None)
            .await
            .status
            == 404,
        "a revoked invitation made no user"
    );
    // Someone of the invited name became a user since: the invitation signs nobody in as
    // them, and stays pending.
    let eve = api
        .db(
            Method::POST,
            INVITATIONS,
            Some(&json!({"user": "eve@example.com"})),
        )
        .await
        .expect(201)
        .json();
    dbconsole_core::service::users::ensure_user(
        &*storage,
        dbconsole_core::storage::testing::origin(),
        &Principal::member("EVE@example.com").role(Role::SuperAdmin),
        UserSource::Key,
    )
    .await
    .expect("ensure_user");
    enroll(&api, &token_of(eve["link"].as_str().expect("a link")))
        .await
        .expect(409);
    let still = api
        .db(Method::GET, INVITATIONS, None)
        .await
        .expect(200)
        .json();
    assert_eq!(still["data"][0]["user"], "eve@example.com");
    assert_eq!(
        events(&storage, AuditAction::InvitationCreate).await.len(),
        3
    );
    assert_eq!(
        events(&storage, AuditAction::InvitationRevoke).await.len(),
        1
    );
    assert_eq!(events(&storage, AuditAction::UserCreate).await.len(), 2);
}

/// A session signed in with a link carries the record's groups and role as they are now: a
/// super admin's change reaches the next request; a key's session keeps the key's.
pub async fn link_sessions_follow_the_record(storage: Arc<dyn Storage>) {
    let api = api(Arc::clone(&storage), SessionOptions::default());
    let (link, token) = Session::mint(
        SessionKind::SignInLink,
        Principal::member("carl@example.com").groups(["ops"]),
        Scope::Query,
        SignInMethod::Link,
        Duration::from_secs(900),
    );
    store_session(&storage, link).await;
    let signed = api
        .answer(Browser::console().request(
            Method::POST,
            LINK,
            Some(&json!({"token": token.expose_str().expect("utf-8")})),
        ))
        .await
        .expect(200);
    let (cookie, _) = set_cookie(&signed);
    let record = api
        .db(Method::GET, &format!("{USERS}/carl@example.com"), None)
        .await
        .expect(200)
        .json();
    assert_eq!(record["source"], "link");
    api.db(
        Method::PATCH,
        &format!("{USERS}/carl@example.com"),
        Some(&json!({"groups": ["ops", "dba"], "role": "super-admin"})),
    )
    .await
    .expect(200);
    let now = me(&api, &cookie).await.expect(200).json();
    assert_eq!(now["groups"], json!(["ops", "dba"]));
    assert_eq!(now["role"], "super-admin");
    assert_eq!(
        now["scope"], "full",
        "a super admin's session has full scope"
    );
    api.answer(with_cookie(&cookie).request(Method::GET, USERS, None))
        .await
        .expect(200);
    // Demoted (another super admin remains): the next request is a member's.
    dbconsole_core::service::users::ensure_user(
        &*storage,
        dbconsole_core::storage::testing::origin(),
        &Principal::member("root@example.com").role(Role::SuperAdmin),
        UserSource::Key,
    )
    .await
    .expect("ensure_user");
    api.db(
        Method::PATCH,
        &format!("{USERS}/carl@example.com"),
        Some(&json!({"role": "member"})),
    )
    .await
    .expect(200);
    api.answer(with_cookie(&cookie).request(Method::GET, USERS, None))
        .await
        .expect(403);
    // A key's session keeps the key's principal, whatever the record says.
    let (_, key) = user_key(
        &storage,
        Some(Principal::member("carl@example.com").groups(["keyed"])),
        Scope::Query,
    )
    .await;
    let keyed = sign_in(&api, &Browser::console(), &key).await.expect(200);
    let (key_cookie, _) = set_cookie(&keyed);
    assert_eq!(
        me(&api, &key_cookie).await.expect(200).json()["groups"],
        json!(["keyed"])
    );
    let changes = events(&storage, AuditAction::UserUpdate).await;
    assert_eq!(changes.len(), 2, "{changes:?}");
}

/// Deactivating a user ends their sessions and links at once, refuses their keys (on every
/// route) and a new link's exchange; making them active again lets the key work again.
pub async fn a_deactivated_user_is_refused_everywhere(storage: Arc<dyn Storage>) {
    let api = api(Arc::clone(&storage), SessionOptions::default());
    let dee = Principal::member("dee@example.com").groups(["ops"]);
    let (_, key) = user_key(&storage, Some(dee.clone()), Scope::Query).await;
    let signed = sign_in(&api, &Browser::console(), &key).await.expect(200);
    let (cookie, _) = set_cookie(&signed);
    let (pending, pending_token) = Session::mint(
        SessionKind::SignInLink,
        dee.clone(),
        Scope::Query,
        SignInMethod::Link,
        Duration::from_secs(900),
    );
    store_session(&storage, pending).await;
    let by_key = |key: String| {
        let api = api.clone();
        async move {
            api.answer(
                http::Request::builder()
                    .method(Method::GET)
                    .uri(ME)
                    .header("x-api-key", key)
                    .body(http_body_util::Full::new(bytes::Bytes::new()))
                    .expect("a request"),
            )
            .await
        }
    };
    by_key(key.clone()).await.expect(200);
    let off = api
        .db(
            Method::PATCH,
            &format!("{USERS}/dee@example.com"),
            Some(&json!({"active": false})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(off["active"], json!(false));
    assert!(off["deactivated_at"].is_string());
    me(&api, &cookie).await.expect(401);
    let refused = by_key(key.clone()).await.expect(401);
    assert!(refused.text().contains("deactivated"), "{}", refused.text());
    api.answer(Browser::console().request(
        Method::POST,
        LINK,
        Some(&json!({"token": pending_token.expose_str().expect("utf-8")})),
    ))
    .await
    .expect(401);
    assert!(
        storage
            .list_sessions()
            .await
            .expect("list_sessions")
            .iter()
            .all(|s| s.principal.user != "dee@example.com"),
        "every session and link of a deactivated user ended"
    );
    // Listed as inactive, and searchable.
    let found = api
        .db(Method::GET, &format!("{USERS}?search=DEE"), None)
        .await
        .expect(200)
        .json();
    assert_eq!(found["data"][0]["active"], json!(false));
    api.db(
        Method::PATCH,
        &format!("{USERS}/dee@example.com"),
        Some(&json!({"active": true})),
    )
    .await
    .expect(200);
    by_key(key).await.expect(200);
    assert_eq!(
        events(&storage, AuditAction::UserUpdate).await,
        vec![
            json!({"resource": "dee@example.com", "changes": ["active again"]}),
            json!({"resource": "dee@example.com", "changes": ["deactivated"]}),
        ]
    );
}

/// The Users routes: super admins only (a member's session is 403); every bad body a clear
/// 422 that changes nothing; nobody deactivates or demotes themselves; an OIDC user's groups
/// and role are the issuer's; a recovery link signs in once, for an active user only.
pub async fn users_routes_guard_and_validate(storage: Arc<dyn Storage>) {
    let api = api(Arc::clone(&storage), SessionOptions::default());
    let (_, member_key) = user_key(
        &storage,
        Some(Principal::member("mo@example.com")),
        Scope::Query,
    )
    .await;
    let member = sign_in(&api, &Browser::console(), &member_key)
        .await
        .expect(200);
    let (member_cookie, _) = set_cookie(&member);
    for (method, path) in [
        (Method::GET, USERS.to_owned()),
        (Method::GET, INVITATIONS.to_owned()),
        (Method::PATCH, format!("{USERS}/mo@example.com")),
        (
            Method::POST,
            format!("{USERS}/mo@example.com/recovery-link"),
        ),
    ] {
        api.answer(with_cookie(&member_cookie).request(method, &path, Some(&json!({}))))
            .await
            .expect(403);
    }
    let path = format!("{USERS}/mo@example.com");
    for bad in [
        json!({"role": "owner"}),
        json!({"groups": "ops"}),
        json!({"groups": ["ops\u{1f}x"]}),
        json!({"active": "no"}),
        json!({"name": "other"}),
        json!({"display_name": "line\nbreak"}),
    ] {
        api.db(Method::PATCH, &path, Some(&bad)).await.expect(422);
    }
    for bad in [
        json!({}),
        json!({"user": "  "}),
        json!({"user": "a\u{7}b"}),
        json!({"user": "x@example.com", "role": "root"}),
        json!({"user": "x@example.com", "extra": 1}),
    ] {
        api.db(Method::POST, INVITATIONS, Some(&bad))
            .await
            .expect(422);
    }
    let untouched = api.db(Method::GET, &path, None).await.expect(200).json();
    assert_eq!(untouched["role"], "member");
    assert_eq!(untouched["groups"], json!([]));
    api.db(Method::GET, &format!("{USERS}/nobody"), None)
        .await
        .expect(404);
    // A super admin can't lock themselves out.
    let (_, root_key) = user_key(
        &storage,
        Some(Principal::member("root@example.com").role(Role::SuperAdmin)),
        Scope::Full,
    )
    .await;
    let root = sign_in(&api, &Browser::console(), &root_key)
        .await
        .expect(200);
    let (root_cookie, _) = set_cookie(&root);
    for body in [json!({"active": false}), json!({"role": "member"})] {
        api.answer(with_cookie(&root_cookie).request(
            Method::PATCH,
            &format!("{USERS}/root@example.com"),
            Some(&body),
        ))
        .await
        .expect(409);
    }
    // Nor can anyone leave the console without an active super admin.
    api.db(
        Method::PATCH,
        &format!("{USERS}/root@example.com"),
        Some(&json!({"active": false})),
    )
    .await
    .expect(409);
    // A key's user seen for the first time gets a record: a member's, whatever a query key's
    // principal says.
    let (_, newbie) = user_key(
        &storage,
        Some(Principal::member("Newbie@Example.com").role(Role::SuperAdmin)),
        Scope::Query,
    )
    .await;
    let seen = sign_in(&api, &Browser::console(), &newbie)
        .await
        .expect(200);
    assert_eq!(seen.json()["user"], "newbie@example.com");
    let record = api
        .db(Method::GET, &format!("{USERS}/newbie@example.com"), None)
        .await
        .expect(200)
        .json();
    assert_eq!(record["role"], "member");
    assert_eq!(record["source"], "key");
    // An OIDC user's groups and role come from the issuer.
    dbconsole_core::service::users::ensure_user(
        &*storage,
        dbconsole_core::storage::testing::origin(),
        &Principal::member("olga@example.com").groups(["sso"]),
        UserSource::Oidc,
    )
    .await
    .expect("ensure_user");
    api.db(
        Method::PATCH,
        &format!("{USERS}/olga@example.com"),
        Some(&json!({"groups": ["other"]})),
    )
    .await
    .expect(422);
    api.db(
        Method::PATCH,
        &format!("{USERS}/olga@example.com"),
        Some(&json!({"display_name": "Olga"})),
    )
    .await
    .expect(200);
    // A recovery link: once, for an active user.
    let made = api
        .db(
            Method::POST,
            &format!("{USERS}/mo@example.com/recovery-link"),
            None,
        )
        .await
        .expect(201)
        .json();
    let token = token_of(made["link"].as_str().expect("a link"));
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
    exchange(token.clone()).await.expect(200);
    exchange(token).await.expect(401);
    api.db(Method::PATCH, &path, Some(&json!({"active": false})))
        .await
        .expect(200);
    api.db(
        Method::POST,
        &format!("{USERS}/mo@example.com/recovery-link"),
        None,
    )
    .await
    .expect(409);
}

/// A passkey is enrolled only from a session signed in with an invitation, a link, a passkey
/// or the issuer: a key's session (whose scope is the key's) and a bare key are refused; the
/// options ask for a discoverable credential with user verification and set the ceremony's
/// `HttpOnly` cookie; a finish without that cookie, or with a credential that is none, changes
/// nothing. Without a relying party, passkeys answer 409.
pub async fn passkeys_are_enrolled_from_people_sessions_only(storage: Arc<dyn Storage>) {
    const START: &str = "/api/v1/console/me/passkeys/registration";
    const FINISH: &str = "/api/v1/console/me/passkeys";
    let options = SessionOptions {
        passkey_origin: Some(ORIGIN.to_owned()),
        ..SessionOptions::default()
    };
    let api = api(Arc::clone(&storage), options);
    let (_, key) = user_key(
        &storage,
        Some(Principal::member("pat@example.com")),
        Scope::Query,
    )
    .await;
    let keyed = sign_in(&api, &Browser::console(), &key).await.expect(200);
    let (key_cookie, _) = set_cookie(&keyed);
    api.answer(with_cookie(&key_cookie).request(Method::POST, START, None))
        .await
        .expect(403);
    let made = api
        .db(
            Method::POST,
            INVITATIONS,
            Some(&json!({"user": "quinn@example.com"})),
        )
        .await
        .expect(201)
        .json();
    let signed = enroll(&api, &token_of(made["link"].as_str().expect("a link")))
        .await
        .expect(200);
    let (cookie, _) = set_cookie(&signed);
    let started = api
        .answer(with_cookie(&cookie).request(Method::POST, START, None))
        .await
        .expect(200);
    let public_key = &started.json()["publicKey"];
    assert_eq!(
        public_key["authenticatorSelection"]["residentKey"],
        "required"
    );
    assert_eq!(
        public_key["authenticatorSelection"]["userVerification"],
        "required"
    );
    assert_eq!(public_key["rp"]["id"], "console.test");
    let ceremony = started
        .header("set-cookie")
        .expect("a ceremony cookie")
        .to_owned();
    assert!(
        ceremony.contains("HttpOnly") && ceremony.contains("Max-Age=300"),
        "{ceremony}"
    );
    let body = json!({"name": "laptop", "credential": {"id": "x", "rawId": "x", "type": "public-key", "response": {"attestationObject": "AA", "clientDataJSON": "AA"}}});
    // No ceremony cookie: nothing to finish.
    api.answer(with_cookie(&cookie).request(Method::POST, FINISH, Some(&body)))
        .await
        .expect(409);
    let both = format!(
        "{cookie}; {}",
        ceremony.split(';').next().unwrap_or_default()
    );
    api.answer(with_cookie(&both).request(Method::POST, FINISH, Some(&body)))
        .await
        .expect(422);
    api.answer(with_cookie(&both).request(
        Method::POST,
        FINISH,
        Some(&json!({"name": "", "credential": {}})),
    ))
    .await
    .expect(422);
    let listed = api
        .answer(with_cookie(&cookie).request(Method::GET, FINISH, None))
        .await
        .expect(200)
        .json();
    assert_eq!(listed["data"], json!([]), "nothing was enrolled");
    // Without a relying party (no public URL with a host name): 409, said plainly.
    let off = crate::browser::api(Arc::clone(&storage), SessionOptions::default());
    off.answer(with_cookie(&cookie).request(Method::POST, START, None))
        .await
        .expect(409);
    off.answer(Browser::console().request(
        Method::POST,
        "/api/v1/console/sign-in/passkey/options",
        None,
    ))
    .await
    .expect(409);
}

/// An upgrade gives every identity already stored (a key's user, a query's author, a `user`
/// permission's subject, a session's user) a record, once: a second pass makes none.
pub async fn an_upgrade_adopts_every_stored_identity(storage: Arc<dyn Storage>) {
    let api = api(Arc::clone(&storage), SessionOptions::default());
    user_key(
        &storage,
        Some(
            Principal::member("Keyed@Example.com")
                .groups(["ops"])
                .role(Role::SuperAdmin),
        ),
        Scope::Full,
    )
    .await;
    let (session, _) = Session::mint(
        SessionKind::Browser,
        Principal::member("sess@example.com"),
        Scope::Query,
        SignInMethod::Key,
        Duration::from_secs(900),
    );
    store_session(&storage, session).await;
    let db = api
        .db(
            Method::POST,
            crate::DATABASES,
            Some(&crate::minimal_database()),
        )
        .await
        .expect(200)
        .json();
    let id = db["id"].as_str().expect("an id");
    api.db(
        Method::PUT,
        &format!("{}/{id}/permissions", crate::DATABASES),
        Some(&json!({"permissions": [{"subject_kind": "user", "subject": "granted@example.com", "access": "query"}]})),
    )
    .await
    .expect(200);
    let origin = dbconsole_core::storage::testing::origin();
    let made = dbconsole_core::service::users::adopt_identities(&*storage, origin)
        .await
        .expect("adopt");
    assert_eq!(made, 3);
    let keyed = storage
        .user("keyed@example.com")
        .await
        .expect("user")
        .expect("a record");
    assert_eq!(keyed.role, Role::SuperAdmin);
    assert_eq!(keyed.groups, vec!["ops".to_owned()]);
    assert_eq!(keyed.source, UserSource::Upgrade);
    assert!(
        storage
            .user("granted@example.com")
            .await
            .expect("user")
            .is_some()
    );
    assert!(
        storage
            .user("sess@example.com")
            .await
            .expect("user")
            .is_some()
    );
    assert_eq!(
        dbconsole_core::service::users::adopt_identities(&*storage, origin)
            .await
            .expect("adopt again"),
        0
    );
}

#[macro_export]
#[doc(hidden)]
macro_rules! people_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            people,
            $storage,
            [
                an_invitation_enrolls_once,
                link_sessions_follow_the_record,
                a_deactivated_user_is_refused_everywhere,
                users_routes_guard_and_validate,
                passkeys_are_enrolled_from_people_sessions_only,
                an_upgrade_adopts_every_stored_identity,
            ]
        );
    };
}
