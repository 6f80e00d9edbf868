//! Browsers signing in through OIDC ([`OidcLogin`]): the authorization code flow with PKCE,
//! `state` and `nonce` against a stand-in issuer served by the test, which implements the
//! authorization and token endpoints and checks the PKCE verifier itself. Then the refusals: a
//! callback whose state or cookie is not the browser's, an ID token with another nonce or
//! audience, an agent's identity; and a return path that would leave the console.

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
use dbconsole_server::oidc::{OidcAuthenticator, OidcOptions};
use dbconsole_server::oidc_login::{OidcClient, OidcLogin};
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
                                        "email": "Carol@Example.com", "groups": ["console-admins"],
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
    login: OidcLogin,
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
    let verifier =
        Arc::new(OidcAuthenticator::new(Arc::new(StaticCredentials::default()), options).unwrap());
    let service = ConsoleService::builder(
        Arc::new(MemoryStorage::new()),
        Arc::clone(&verifier) as Arc<dyn dbconsole_core::Authenticator>,
        Sealer::ephemeral().unwrap(),
    )
    .build();
    let client = OidcClient {
        client_id: CLIENT_ID.to_owned(),
        client_secret: Some(dbconsole_core::Secret::from(CLIENT_SECRET)),
        scopes: "email profile groups".to_owned(),
    };
    let login = OidcLogin::new(verifier, client, Some("http://console.test".to_owned())).unwrap();
    Fixture {
        issuer,
        service,
        login,
    }
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
        .login
        .answer(
            &f.service,
            &get(
                &format!("/api/v1/console/oidc/start?return_to={return_to}"),
                None,
            ),
        )
        .await
        .unwrap();
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
    f.login
        .answer(&f.service, &get(&callback, cookie_of(&pair).as_deref()))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_signs_in_through_the_issuer_with_pkce_state_and_nonce() {
    let f = fixture(issuer().await);
    let enabled = f
        .login
        .answer(&f.service, &get("/api/v1/console/oidc", None))
        .await
        .unwrap();
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
    let started = f
        .login
        .answer(&f.service, &get("/api/v1/console/oidc/start", None))
        .await
        .unwrap();
    let pair = header(&started, "set-cookie")
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let wrong_state = f
        .login
        .answer(
            &f.service,
            &get(
                "/api/v1/console/oidc/callback?code=code-0&state=forged",
                Some(&pair),
            ),
        )
        .await
        .unwrap();
    assert_eq!(wrong_state.status(), 400);
    // An ID token with another nonce, another audience, or an agent's.
    for behaviour in [
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
