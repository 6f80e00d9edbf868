//! Browsers signing in through OIDC (the service's `…/oidc` routes, with [`OidcLogin`]'s
//! client): the authorization code flow with PKCE, `state` and `nonce` against a stand-in
//! issuer served by the test over HTTP (reached through the server's own issuer client), which
//! implements the authorization and token endpoints and checks the PKCE verifier itself. Then
//! the refusals: a callback whose state or cookie is not the browser's, an ID token with another
//! nonce or audience, an agent's identity; a return path that would leave the console; an OIDC
//! sign-in ending the browser's previous session; and an issuer that can't be reached.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
use base64::Engine as _;
use bytes::Bytes;
use dbconsole_core::auth::StaticCredentials;
use dbconsole_core::{ConsoleService, Sealer};
use dbconsole_server::oidc::{HttpsIssuer, OidcAuthenticator, OidcClient, OidcLogin, OidcOptions};
use dbconsole_storage_memory::MemoryStorage;
use http_body_util::{BodyExt as _, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use tokio::net::TcpListener;
use tower_service::Service as _;

const CLIENT_ID: &str = "dbconsole-console";
const CLIENT_SECRET: &str = "s3cret-of-the-client";

/// What the stand-in issuer does with the next code it hands out.
#[derive(Clone, Default)]
struct Behaviour {
    /// Claims added to (or replacing those of) the ID token.
    extra: Value,
    /// Another nonce than the one asked for.
    wrong_nonce: bool,
}

/// Code → (nonce, code challenge, redirect URI), as the issuer handed it out.
type Codes = Arc<Mutex<HashMap<String, (String, String, String)>>>;

struct Issuer {
    base: String,
    behaviour: Arc<Mutex<Behaviour>>,
    codes: Codes,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn form(text: &str) -> HashMap<String, String> {
    form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

async fn issuer() -> Issuer {
    let pkcs8 =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .unwrap();
    let encoding = EncodingKey::from_ec_der(pkcs8.as_ref());
    let mut jwk: Jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256).unwrap();
    jwk.common.key_id = Some("k1".to_owned());
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let behaviour = Arc::new(Mutex::new(Behaviour::default()));
    let codes: Codes = Arc::default();
    let state = (
        base.clone(),
        Arc::clone(&behaviour),
        Arc::clone(&codes),
        encoding,
        jwk,
    );
    let shared = Arc::new(state);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let shared = Arc::clone(&shared);
                    async move {
                        let (base, behaviour, codes, encoding, jwk) = &*shared;
                        let path = request.uri().path().to_owned();
                        let query = request.uri().query().unwrap_or_default().to_owned();
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        let mut response = hyper::Response::new(Full::new(Bytes::new()));
                        match path.as_str() {
                            "/.well-known/openid-configuration" => {
                                *response.body_mut() = Full::new(Bytes::from(
                                    json!({
                                        "issuer": base,
                                        "jwks_uri": format!("{base}/jwks"),
                                        "authorization_endpoint": format!("{base}/authorize"),
                                        "token_endpoint": format!("{base}/token"),
                                    })
                                    .to_string(),
                                ));
                            }
                            "/jwks" => {
                                *response.body_mut() = Full::new(Bytes::from(
                                    serde_json::to_string(&JwkSet {
                                        keys: vec![jwk.clone()],
                                    })
                                    .unwrap(),
                                ));
                            }
                            "/authorize" => {
                                let asked = form(&query);
                                assert_eq!(asked["response_type"], "code");
                                assert_eq!(asked["client_id"], CLIENT_ID);
                                assert_eq!(asked["code_challenge_method"], "S256");
                                assert!(asked["scope"].split(' ').any(|s| s == "openid"));
                                let code = format!("code-{}", codes.lock().unwrap().len());
                                codes.lock().unwrap().insert(
                                    code.clone(),
                                    (
                                        asked["nonce"].clone(),
                                        asked["code_challenge"].clone(),
                                        asked["redirect_uri"].clone(),
                                    ),
                                );
                                let to = format!(
                                    "{}?code={code}&state={}",
                                    asked["redirect_uri"],
                                    form_urlencoded::byte_serialize(asked["state"].as_bytes())
                                        .collect::<String>()
                                );
                                *response.status_mut() = hyper::StatusCode::FOUND;
                                response
                                    .headers_mut()
                                    .insert("location", to.parse().unwrap());
                            }
                            "/token" => {
                                let sent = form(std::str::from_utf8(&body).unwrap());
                                let known = codes.lock().unwrap().remove(&sent["code"]);
                                let ok = match &known {
                                    Some((_, challenge, redirect)) => {
                                        let computed =
                                            base64::engine::general_purpose::URL_SAFE_NO_PAD
                                                .encode(Sha256::digest(
                                                    sent["code_verifier"].as_bytes(),
                                                ));
                                        computed == *challenge
                                            && sent.get("redirect_uri") == Some(redirect)
                                            && sent["client_id"] == CLIENT_ID
                                            && sent.get("client_secret").map(String::as_str)
                                                == Some(CLIENT_SECRET)
                                            && sent["grant_type"] == "authorization_code"
                                    }
                                    None => false,
                                };
                                if ok {
                                    let (nonce, _, _) = known.unwrap();
                                    let wanted = behaviour.lock().unwrap().clone();
                                    let mut claims = json!({
                                        "iss": base, "aud": CLIENT_ID, "exp": now() + 300, "iat": now(),
                                        "email": "Carol@Example.com", "email_verified": true, "groups": ["console-admins"],
                                        "nonce": if wanted.wrong_nonce { "another".to_owned() } else { nonce },
                                    });
                                    for (name, value) in
                                        wanted.extra.as_object().into_iter().flatten()
                                    {
                                        claims[name] = value.clone();
                                    }
                                    let mut header = Header::new(Algorithm::ES256);
                                    header.kid = Some("k1".to_owned());
                                    let id_token =
                                        jsonwebtoken::encode(&header, &claims, encoding).unwrap();
                                    *response.body_mut() = Full::new(Bytes::from(
                                        json!({"access_token": "opaque", "token_type": "Bearer", "id_token": id_token}).to_string(),
                                    ));
                                } else {
                                    *response.status_mut() = hyper::StatusCode::BAD_REQUEST;
                                    *response.body_mut() = Full::new(Bytes::from(
                                        json!({"error": "invalid_grant"}).to_string(),
                                    ));
                                }
                            }
                            _ => *response.status_mut() = hyper::StatusCode::NOT_FOUND,
                        }
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Issuer {
        base,
        behaviour,
        codes,
    }
}

struct Fixture {
    issuer: Issuer,
    service: ConsoleService,
}

impl Fixture {
    /// The service's answer to `request`.
    async fn answer(
        &self,
        request: http::Request<()>,
    ) -> http::Response<dbconsole_core::ResponseBody> {
        let (parts, ()) = request.into_parts();
        let request = http::Request::from_parts(parts, Full::new(Bytes::new()));
        let mut service = self.service.clone();
        service.call(request).await.unwrap()
    }
}

fn fixture(issuer: Issuer) -> Fixture {
    let options = OidcOptions {
        issuer: issuer.base.clone(),
        audience: "bearer-audience".to_owned(),
        jwks_url: None,
        user_claim: "email".to_owned(),
        groups_claim: "groups".to_owned(),
        super_admin_group: Some("console-admins".to_owned()),
        agent_claim: Some("dbconsole_agent".to_owned()),
        min_refresh: Duration::ZERO,
    };
    let verifier = Arc::new(OidcAuthenticator::new(
        Arc::new(StaticCredentials::default()),
        options,
        Arc::new(HttpsIssuer::new().unwrap()),
    ));
    let client = OidcClient {
        client_id: CLIENT_ID.to_owned(),
        client_secret: Some(dbconsole_core::Secret::from(CLIENT_SECRET)),
        scopes: "email profile groups".to_owned(),
    };
    let login = OidcLogin::new(
        Arc::clone(&verifier),
        client,
        Some("http://console.test".to_owned()),
    );
    let service = ConsoleService::builder(
        Arc::new(MemoryStorage::new()),
        verifier as Arc<dyn dbconsole_core::Authenticator>,
        Sealer::ephemeral().unwrap(),
    )
    .oidc_login(Arc::new(login))
    .build();
    Fixture { issuer, service }
}

fn get(uri: &str, cookie: Option<&str>) -> http::Request<()> {
    let mut request = http::Request::get(uri).header("host", "console.test");
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    request.body(()).unwrap()
}

fn header(response: &http::Response<dbconsole_core::ResponseBody>, name: &str) -> String {
    response
        .headers()
        .get_all(name)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The issuer's answer to a GET of `url` (its Location).
async fn follow_issuer(url: &str) -> String {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let response = client
        .request(
            hyper::Request::get(url)
                .body(Full::new(Bytes::new()))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 302, "the issuer redirects back");
    response.headers()["location"].to_str().unwrap().to_owned()
}

/// Start → issuer → callback; the callback's answer.
async fn sign_in(
    f: &Fixture,
    return_to: &str,
    cookie_of: impl Fn(&str) -> Option<String>,
) -> http::Response<dbconsole_core::ResponseBody> {
    let started = f
        .answer(get(
            &format!("/api/v1/console/oidc/start?return_to={return_to}"),
            None,
        ))
        .await;
    assert_eq!(started.status(), 302, "start redirects to the issuer");
    let to_issuer = header(&started, "location");
    assert!(
        to_issuer.starts_with(&format!("{}/authorize?", f.issuer.base)),
        "{to_issuer}"
    );
    let flow_cookie = header(&started, "set-cookie");
    assert!(
        flow_cookie.contains("HttpOnly") && flow_cookie.contains("SameSite=Lax"),
        "{flow_cookie}"
    );
    assert!(
        flow_cookie.contains("Path=/api/v1/console/oidc"),
        "{flow_cookie}"
    );
    let pair = flow_cookie.split(';').next().unwrap().to_owned();
    let back = follow_issuer(&to_issuer).await;
    let callback = back
        .strip_prefix("http://console.test")
        .expect("back to the public URL")
        .to_owned();
    f.answer(get(&callback, cookie_of(&pair).as_deref())).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_signs_in_through_the_issuer_with_pkce_state_and_nonce() {
    let f = fixture(issuer().await);
    let enabled = f.answer(get("/api/v1/console/oidc", None)).await;
    assert_eq!(enabled.status(), 200);

    let done = sign_in(&f, "/console/queries/qry_1", |pair| Some(pair.to_owned())).await;
    assert_eq!(done.status(), 302, "{:?}", done.headers());
    assert_eq!(header(&done, "location"), "/console/queries/qry_1");
    let cookies = header(&done, "set-cookie");
    let session = cookies
        .lines()
        .find(|c| c.starts_with("dbconsole_session=dbc_ses_"))
        .unwrap_or_else(|| panic!("a session cookie: {cookies}"));
    assert!(
        session.contains("HttpOnly") && session.contains("SameSite=Lax"),
        "{session}"
    );
    assert!(
        cookies.contains("dbconsole_oidc=; "),
        "the flow's cookie is cleared: {cookies}"
    );
    // The session is the issuer's user, a super admin by the group claim.
    let pair = session.split(';').next().unwrap().to_owned();
    let me = http::Request::get("/api/v1/console/me")
        .header("cookie", pair)
        .header("x-dbconsole-request", "1")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let mut service = f.service.clone();
    let me = service.call(me).await.unwrap();
    assert_eq!(me.status(), 200);
    let me: Value =
        serde_json::from_slice(&me.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(
        (me["user"].as_str(), me["role"].as_str()),
        (Some("carol@example.com"), Some("super-admin"))
    );
    // A return path elsewhere lands on the console.
    let elsewhere = sign_in(&f, "https://evil.example/", |pair| Some(pair.to_owned())).await;
    assert_eq!(header(&elsewhere, "location"), "/console/");
    assert!(
        f.issuer.codes.lock().unwrap().is_empty(),
        "every code was exchanged once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callbacks_that_are_not_the_browsers_flow_are_refused() {
    let f = fixture(issuer().await);
    // No flow cookie (another browser, or a forged callback link).
    let refused = sign_in(&f, "/console/", |_| None).await;
    assert_eq!(refused.status(), 400);
    assert!(header(&refused, "set-cookie").is_empty(), "no session");
    // The error page is neither sniffed nor framed.
    assert_eq!(header(&refused, "x-content-type-options"), "nosniff");
    assert_eq!(header(&refused, "x-frame-options"), "DENY");
    // A flow cookie changed by one character opens nothing.
    let refused = sign_in(&f, "/console/", |pair| {
        let mut bytes = pair.as_bytes().to_vec();
        let last = bytes.len() - 3;
        bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
        Some(String::from_utf8(bytes).unwrap())
    })
    .await;
    assert_eq!(refused.status(), 400);
    // Another state than the browser's.
    let started = f.answer(get("/api/v1/console/oidc/start", None)).await;
    let pair = header(&started, "set-cookie")
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let wrong_state = f
        .answer(get(
            "/api/v1/console/oidc/callback?code=code-0&state=forged",
            Some(&pair),
        ))
        .await;
    assert_eq!(wrong_state.status(), 400);
    // An ID token with another nonce, another audience, an agent's, an unverified e-mail, or
    // for several clients without (or with another) authorized party.
    for behaviour in [
        Behaviour {
            extra: json!({"email_verified": false}),
            ..Behaviour::default()
        },
        Behaviour {
            extra: json!({"aud": [CLIENT_ID, "other-client"]}),
            ..Behaviour::default()
        },
        Behaviour {
            extra: json!({"aud": [CLIENT_ID, "other-client"], "azp": "other-client"}),
            ..Behaviour::default()
        },
        Behaviour {
            wrong_nonce: true,
            ..Behaviour::default()
        },
        Behaviour {
            extra: json!({"aud": "someone-else"}),
            ..Behaviour::default()
        },
        Behaviour {
            extra: json!({"dbconsole_agent": true}),
            ..Behaviour::default()
        },
    ] {
        *f.issuer.behaviour.lock().unwrap() = behaviour;
        let refused = sign_in(&f, "/console/", |pair| Some(pair.to_owned())).await;
        assert_eq!(refused.status(), 400);
        assert!(
            !header(&refused, "set-cookie").contains("dbconsole_session=dbc"),
            "no session"
        );
    }
    assert!(
        f.service
            .storage()
            .list_sessions()
            .await
            .unwrap()
            .is_empty(),
        "no session stored"
    );
}

/// The `name=value` pair of the session cookie an answer sets.
fn session_pair(response: &http::Response<dbconsole_core::ResponseBody>) -> String {
    let cookies = header(response, "set-cookie");
    cookies
        .lines()
        .find(|c| c.starts_with("dbconsole_session=dbc_ses_"))
        .unwrap_or_else(|| panic!("a session cookie: {cookies}"))
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

/// `GET …/me` with a session cookie: its status.
async fn me_status(f: &Fixture, pair: &str) -> u16 {
    let request = http::Request::get("/api/v1/console/me")
        .header("cookie", pair)
        .header("x-dbconsole-request", "1")
        .body(())
        .unwrap();
    f.answer(request).await.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oidc_sign_in_ends_the_browsers_previous_session() {
    let f = fixture(issuer().await);
    let first = sign_in(&f, "/console/", |pair| Some(pair.to_owned())).await;
    assert_eq!(first.status(), 302);
    let old = session_pair(&first);
    assert_eq!(me_status(&f, &old).await, 200, "the first session is live");
    // The same browser signs in again: it brings its session cookie to the callback.
    let second = sign_in(&f, "/console/", |pair| Some(format!("{pair}; {old}"))).await;
    assert_eq!(second.status(), 302);
    let new = session_pair(&second);
    assert_ne!(old, new, "a sign-in always gets a new session");
    assert_eq!(me_status(&f, &new).await, 200, "the new session is live");
    assert_eq!(me_status(&f, &old).await, 401, "the old session ended");
    let sessions = f.service.storage().list_sessions().await.unwrap();
    assert_eq!(sessions.len(), 1, "one session left: {sessions:?}");
    // One `session.create` per sign-in, and the old session's end, in the audit trail.
    let events = f
        .service
        .storage()
        .list_audit(dbconsole_core::storage::AuditQuery {
            resource: None,
            after: None,
            limit: 100,
            filter: dbconsole_core::storage::AuditFilter::default(),
        })
        .await
        .unwrap();
    let actions: Vec<String> = events.iter().map(|e| e.action.to_string()).collect();
    assert_eq!(
        actions.iter().filter(|a| *a == "session.create").count(),
        2,
        "{actions:?}"
    );
    let revoked: Vec<_> = events
        .iter()
        .filter(|e| e.action.to_string() == "session.revoke")
        .collect();
    assert_eq!(revoked.len(), 1, "{actions:?}");
    assert_eq!(revoked[0].changes, vec!["replaced".to_owned()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_oidc_routes_are_routes_of_the_table() {
    let f = fixture(issuer().await);
    // A method a route does not answer: 405 with the methods it does.
    let (parts, ()) = http::Request::post("/api/v1/console/oidc/start")
        .header("host", "console.test")
        .body(())
        .unwrap()
        .into_parts();
    let mut service = f.service.clone();
    let refused = service
        .call(http::Request::from_parts(parts, Full::new(Bytes::new())))
        .await
        .unwrap();
    assert_eq!(refused.status(), 405);
    assert_eq!(header(&refused, "allow"), "GET");
    // In the OpenAPI document, with their operation ids.
    let document = f.answer(get("/openapi.json", None)).await;
    let document: Value =
        serde_json::from_slice(&document.into_body().collect().await.unwrap().to_bytes()).unwrap();
    for (path, id) in [
        ("/api/v1/console/oidc", "getOidc"),
        ("/api/v1/console/oidc/start", "startOidc"),
        ("/api/v1/console/oidc/callback", "oidcCallback"),
    ] {
        assert_eq!(
            document["paths"][path]["get"]["operationId"], id,
            "{path} in the document"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_issuer_leaves_every_other_route_answering() {
    // An issuer on a port nobody listens on.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let f = fixture(Issuer {
        base,
        behaviour: Arc::default(),
        codes: Arc::default(),
    });
    let enabled = f.answer(get("/api/v1/console/oidc", None)).await;
    assert_eq!(
        enabled.status(),
        200,
        "the sign-in page still learns OIDC is on"
    );
    let start = f.answer(get("/api/v1/console/oidc/start", None)).await;
    assert_eq!(start.status(), 503, "start: the issuer can't be reached");
    let callback = f
        .answer(get("/api/v1/console/oidc/callback?code=c&state=s", None))
        .await;
    assert_eq!(
        callback.status(),
        400,
        "no flow of this browser: refused before any call"
    );
    let document = f.answer(get("/openapi.json", None)).await;
    assert_eq!(document.status(), 200, "other routes answer");
    let me = f.answer(get("/api/v1/console/me", None)).await;
    assert_eq!(me.status(), 401, "and ask for a credential as ever");
}

#[tokio::test]
async fn without_oidc_the_sign_in_page_learns_it_is_off() {
    let service = ConsoleService::builder(
        Arc::new(MemoryStorage::new()),
        Arc::new(StaticCredentials::default()),
        Sealer::ephemeral().unwrap(),
    )
    .build();
    let mut service = service;
    let mut call = |uri: &str| {
        let request = http::Request::get(uri)
            .body(Full::new(Bytes::new()))
            .unwrap();
        service.call(request)
    };
    let enabled = call("/api/v1/console/oidc").await.unwrap();
    assert_eq!(enabled.status(), 200);
    let body = enabled.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        json!({"enabled": false, "passkeys": false})
    );
    let start = call("/api/v1/console/oidc/start").await.unwrap();
    assert_eq!(start.status(), 404);
}
