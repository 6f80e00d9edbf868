//! OIDC bearer tokens ([`OidcAuthenticator`]) against a stand-in issuer served by the test: a
//! discovery document and a key set (ES256 keys made by the test), a key rotation, and the
//! tokens that must be refused: another audience or issuer, expired, not yet valid, signed by
//! a key the issuer does not publish, or with a shared-secret algorithm. Through the service, a
//! token's user runs the query routes, and a static key without a user does not.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use bytes::Bytes;
use dbconsole_core::auth::{Authenticator, StaticCredentials};
use dbconsole_core::model::{CredentialKind, Role, Scope, Secret};
use dbconsole_core::{ConsoleService, Sealer};
use dbconsole_server::oidc::{HttpsIssuer, OidcAuthenticator, OidcOptions};
use dbconsole_storage_memory::MemoryStorage;
use http_body_util::{BodyExt as _, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tower_service::Service as _;

const AUDIENCE: &str = "dbconsole-tests";
const STATIC_KEY: &str = "oidc-test-static-key-0123456789";

struct Key {
    kid: String,
    encoding: EncodingKey,
    jwk: Jwk,
}

fn key(kid: &str) -> Key {
    let pkcs8 =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .expect("a P-256 key");
    let encoding = EncodingKey::from_ec_der(pkcs8.as_ref());
    let mut jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256).expect("its public JWK");
    jwk.common.key_id = Some(kid.to_owned());
    Key {
        kid: kid.to_owned(),
        encoding,
        jwk,
    }
}

/// The stand-in issuer: `/.well-known/openid-configuration` and `/jwks` (what `published`
/// holds at the time of the request); its base URL.
async fn issuer(published: Arc<Mutex<Vec<Jwk>>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let jwks_uri = format!("{base}/jwks");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let published = Arc::clone(&published);
            let jwks_uri = jwks_uri.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let body = match request.uri().path() {
                        "/.well-known/openid-configuration" => {
                            json!({"jwks_uri": jwks_uri}).to_string()
                        }
                        _ => {
                            let keys = published.lock().unwrap().clone();
                            serde_json::to_string(&JwkSet { keys }).unwrap()
                        }
                    };
                    async move {
                        Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from(body))))
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    base
}

fn options(issuer: &str) -> OidcOptions {
    OidcOptions {
        issuer: issuer.to_owned(),
        audience: AUDIENCE.to_owned(),
        jwks_url: None,
        user_claim: "email".to_owned(),
        groups_claim: "groups".to_owned(),
        super_admin_group: Some("console-admins".to_owned()),
        agent_claim: Some("dbconsole_agent".to_owned()),
        min_refresh: Duration::ZERO,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn token(key: &Key, claims: Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(key.kid.clone());
    jsonwebtoken::encode(&header, &claims, &key.encoding).expect("a signed token")
}

fn claims(issuer: &str, extra: Value) -> Value {
    let mut claims = json!({
        "iss": issuer, "aud": AUDIENCE, "exp": now() + 300, "iat": now(),
        "email": "alice@example.com", "email_verified": true, "groups": ["data-team"],
    });
    for (name, value) in extra.as_object().unwrap() {
        claims[name] = value.clone();
    }
    claims
}

fn authenticator(issuer: &str) -> OidcAuthenticator {
    let fixed = StaticCredentials::new(Some(&Secret::from(STATIC_KEY)), None);
    OidcAuthenticator::new(
        Arc::new(fixed),
        options(issuer),
        Arc::new(HttpsIssuer::new().expect("the machine's roots")),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_of_the_issuer_are_principals_and_others_are_refused() {
    let first = key("k1");
    let published = Arc::new(Mutex::new(vec![first.jwk.clone()]));
    let base = issuer(Arc::clone(&published)).await;
    let auth = authenticator(&base);
    let check = |token: String| {
        let auth = &auth;
        async move {
            auth.authenticate(CredentialKind::AccessToken, &token)
                .await
                .expect("the check itself works")
        }
    };

    let caller = check(token(&first, claims(&base, json!({}))))
        .await
        .expect("a valid token");
    let principal = caller.principal.expect("a principal");
    assert_eq!(principal.user, "alice@example.com");
    assert_eq!(principal.groups, ["data-team"]);
    assert_eq!((principal.role, principal.agent), (Role::Member, false));
    assert_eq!(caller.scope, Scope::Query);

    let admin = check(token(
        &first,
        claims(&base, json!({"groups": ["console-admins"]})),
    ))
    .await
    .expect("a super admin's token");
    assert_eq!(admin.scope, Scope::Full);
    assert_eq!(admin.principal.unwrap().role, Role::SuperAdmin);
    let agent = check(token(
        &first,
        claims(&base, json!({"dbconsole_agent": true})),
    ))
    .await
    .expect("an agent's token");
    assert_eq!(agent.scope, Scope::Agent);
    assert!(agent.principal.unwrap().agent);

    for (why, refused) in [
        (
            "another audience",
            claims(&base, json!({"aud": "someone-else"})),
        ),
        (
            "another issuer",
            claims(&base, json!({"iss": "https://evil.example"})),
        ),
        ("expired", claims(&base, json!({"exp": now() - 3600}))),
        ("not yet valid", claims(&base, json!({"nbf": now() + 3600}))),
        ("no user", claims(&base, json!({"email": null}))),
        // O18: an address the issuer did not verify names nobody.
        (
            "an unverified e-mail",
            claims(&base, json!({"email_verified": false})),
        ),
        (
            "an e-mail without email_verified",
            claims(&base, json!({"email_verified": null})),
        ),
        (
            "a string for email_verified",
            claims(&base, json!({"email_verified": "true"})),
        ),
    ] {
        assert!(
            check(token(&first, refused)).await.is_none(),
            "a token with {why} is refused"
        );
    }
    let stranger = key("k1");
    assert!(
        check(token(&stranger, claims(&base, json!({}))))
            .await
            .is_none(),
        "a token signed by a key the issuer does not publish is refused"
    );
    let shared = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(&base, json!({})),
        &EncodingKey::from_secret(b"guessable"),
    )
    .unwrap();
    assert!(check(shared).await.is_none(), "HS256 is refused");
    // An access token for several audiences names the client that asked for it in `azp`, not
    // the API: accepted (the ID token's rule is the sign-in's, oidc_login.rs).
    let several = check(token(
        &first,
        claims(
            &base,
            json!({"aud": [AUDIENCE, "https://issuer/userinfo"], "azp": "spa-client"}),
        ),
    ))
    .await;
    assert!(several.is_some(), "an access token for several audiences");

    // The issuer rotates: a token naming the new kid makes the set be fetched again.
    let second = key("k2");
    published.lock().unwrap().push(second.jwk.clone());
    let rotated = check(token(&second, claims(&base, json!({}))))
        .await
        .expect("a token of the new key");
    assert_eq!(rotated.principal.unwrap().user, "alice@example.com");

    // Anything that is not a JWT goes to the stored credentials as before.
    let fixed = auth
        .authenticate(CredentialKind::ApiKey, STATIC_KEY)
        .await
        .unwrap()
        .expect("the static key");
    assert!(fixed.principal.is_none());
    assert!(
        auth.authenticate(CredentialKind::AccessToken, "not-a-jwt")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_issuer_is_an_error_not_a_refusal() {
    let first = key("k1");
    let auth = authenticator("http://127.0.0.1:1");
    let error = auth
        .authenticate(
            CredentialKind::AccessToken,
            &token(&first, claims("http://127.0.0.1:1", json!({}))),
        )
        .await
        .expect_err("the key set can't be fetched");
    assert!(error.to_string().contains("key set"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_user_runs_the_query_routes() {
    let first = key("k1");
    let base = issuer(Arc::new(Mutex::new(vec![first.jwk.clone()]))).await;
    let mut service = ConsoleService::builder(
        Arc::new(MemoryStorage::new()),
        Arc::new(authenticator(&base)),
        Sealer::ephemeral().unwrap(),
    )
    .build();
    let mut call = |credential: (&'static str, String)| {
        let request = http::Request::builder()
            .uri("/api/v1/console/queries")
            .header(credential.0, credential.1)
            .body(Full::new(Bytes::new()))
            .unwrap();
        service.call(request)
    };
    let with_token = call((
        "authorization",
        format!("Bearer {}", token(&first, claims(&base, json!({})))),
    ))
    .await
    .unwrap();
    assert_eq!(with_token.status(), 200);
    let body = with_token.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap()["data"],
        json!([])
    );
    let without_user = call(("x-api-key", STATIC_KEY.to_owned())).await.unwrap();
    assert_eq!(without_user.status(), 403);
}

/// S19: `/sign-in` takes stored keys only. An issuer's access token (valid, or expired inside
/// the validator's leeway) is no key: it would have become a 12-hour session tied to nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_token_is_no_sign_in_key() {
    let first = key("k1");
    let base = issuer(Arc::new(Mutex::new(vec![first.jwk.clone()]))).await;
    let mut service = ConsoleService::builder(
        Arc::new(MemoryStorage::new()),
        Arc::new(authenticator(&base)),
        Sealer::ephemeral().unwrap(),
    )
    .build();
    for claims in [
        claims(&base, json!({"groups": ["console-admins"]})),
        claims(
            &base,
            json!({"groups": ["console-admins"], "exp": now() - 25}),
        ),
    ] {
        let body = json!({ "key": token(&first, claims) }).to_string();
        let request = http::Request::builder()
            .method("POST")
            .uri("/api/v1/console/sign-in")
            .header("content-type", "application/json")
            .header("x-dbconsole-request", "1")
            .header("host", "localhost")
            .header("origin", "http://localhost")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let answer = service.call(request).await.unwrap();
        assert_eq!(answer.status(), 401, "an issuer's token signs nobody in");
        assert!(answer.headers().get("set-cookie").is_none());
    }
}
