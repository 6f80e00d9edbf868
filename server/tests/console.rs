//! The web console as the real binary serves it (docs/console.md): its pages and headers, the
//! SPA fallback, a real 404 for a missing asset beside the API's JSON 404, and sessions on redb
//! through the admin socket: the first start's sign-in link, `dbconsole sessions link`, `list`
//! and `revoke`.

mod support;

use support::process::Server;
use support::{dbconsole, request};

const BROWSER: [(&str, &str); 2] = [("x-dbconsole-request", "1"), ("origin", "http://localhost")];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_assets_and_headers() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start_with(
        &[("DBCONSOLE_STORAGE", "redb")],
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().unwrap(),
        ],
    )
    .await;
    let root = request(server.addr, "GET", "/", &[], None).await;
    assert_eq!(
        (root.status, root.header("location")),
        (302, Some("/console/"))
    );
    for path in ["/console/", "/console/queries/qry_1", "/console/history"] {
        let page = request(server.addr, "GET", path, &[], None).await;
        assert_eq!(page.status, 200, "{path}");
        assert_eq!(
            page.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        let csp = page.header("content-security-policy").expect("a CSP");
        for directive in [
            "script-src 'self';",
            "object-src 'none'",
            "base-uri 'none'",
            "frame-ancestors 'none'",
            "connect-src 'self'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
        assert!(!csp.contains("unsafe"), "{csp}");
        assert_eq!(page.header("referrer-policy"), Some("same-origin"));
        assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(page.header("cache-control"), Some("no-cache"));
        assert!(page.body.contains("<html"), "{path}: {}", page.body);
    }
    let missing = request(
        server.addr,
        "GET",
        "/console/assets/missing-0000.js",
        &[],
        None,
    )
    .await;
    assert_eq!(missing.status, 404);
    assert!(
        !missing.body.contains("<html"),
        "a missing asset is no page"
    );
    let favicon = request(server.addr, "GET", "/console/logo.svg", &[], None).await;
    assert_eq!(favicon.status, 404, "a missing file is no page either");
    let api = request(server.addr, "GET", "/nowhere", &[], None).await;
    assert_eq!(api.status, 404);
    assert_eq!(
        api.header("content-type"),
        Some("application/json"),
        "the API's JSON 404 elsewhere"
    );
    let post = request(server.addr, "POST", "/console/", &[], Some("{}")).await;
    assert_eq!(post.status, 405);
    // Every answer, the server's own and the OIDC routes' included, is never sniffed into
    // another type nor framed by another site.
    for path in [
        "/healthz",
        "/readyz",
        "/nowhere",
        "/api/v1/console/oidc",
        "/api/v1/console/oidc/callback?state=x&code=y",
        "/mcp",
    ] {
        let answer = request(server.addr, "GET", path, &[], None).await;
        assert_eq!(
            answer.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(answer.header("x-frame-options"), Some("DENY"), "{path}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_links_and_the_sessions_command_on_redb() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data_flag = data.to_str().unwrap().to_owned();
    let server = Server::start_with(
        &[("DBCONSOLE_STORAGE", "redb")],
        &["serve", "--listen", "127.0.0.1:0", "--data-dir", &data_flag],
    )
    .await;
    let first = server
        .stdout
        .line("the first start's sign-in link", |line| {
            line.contains("#sign-in=")
        })
        .await;
    let token_of = |text: &str| {
        text.split("#sign-in=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no link in {text}"))
            .to_owned()
    };
    let exchange = |token: String| async move {
        let body = serde_json::json!({ "token": token }).to_string();
        request(
            server.addr,
            "POST",
            "/api/v1/console/sign-in/link",
            &BROWSER,
            Some(&body),
        )
        .await
    };
    let admin = exchange(token_of(&first)).await;
    assert_eq!(admin.status, 200, "{}", admin.body);
    assert_eq!(admin.json()["role"], "super-admin");

    let sessions = |args: Vec<&'static str>| {
        let mut all = vec![
            "sessions".to_owned(),
            "--data-dir".to_owned(),
            data_flag.clone(),
        ];
        all.extend(args.into_iter().map(str::to_owned));
        async move {
            let all: Vec<&str> = all.iter().map(String::as_str).collect();
            let output = dbconsole(&[("DBCONSOLE_STORAGE", "redb")], &all)
                .output()
                .await
                .unwrap();
            assert!(
                output.status.success(),
                "{all:?}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8(output.stdout).unwrap()
        }
    };
    let printed = sessions(vec![
        "link",
        "--user",
        "bo@example.com",
        "--public-url",
        "https://console.example.com",
    ])
    .await;
    assert!(
        printed.contains("https://console.example.com/console/#sign-in=dbc_sil_"),
        "{printed}"
    );
    // Without --public-url, the links start with the address the running server recorded in
    // the store at its start: localhost and its port (WebAuthn takes no IP address).
    let recorded = format!("http://localhost:{}/console/#", server.addr.port());
    assert!(
        first.contains(&format!("{recorded}sign-in=dbc_sil_")),
        "{first}"
    );
    let linked = sessions(vec!["link", "--user", "cy@example.com"]).await;
    assert!(
        linked.contains(&format!("{recorded}sign-in=dbc_sil_")),
        "{linked}"
    );
    let invited = sessions(vec![
        "invite",
        "--user",
        "di@example.com",
        "--groups",
        "ops",
    ])
    .await;
    assert!(
        invited.contains(&format!("{recorded}invite=dbc_inv_")),
        "{invited}"
    );
    assert!(invited.contains("within 7 days"), "{invited}");
    let bo = exchange(token_of(&printed)).await;
    assert_eq!(bo.status, 200, "{}", bo.body);
    assert_eq!(bo.json()["user"], "bo@example.com");
    let cookie = bo
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .unwrap()
        .to_owned();
    let me = || {
        let cookie = cookie.clone();
        async move {
            let headers = [("x-dbconsole-request", "1"), ("cookie", cookie.as_str())];
            request(server.addr, "GET", "/api/v1/console/me", &headers, None)
                .await
                .status
        }
    };
    assert_eq!(me().await, 200);
    let listed = sessions(vec!["list"]).await;
    assert!(
        listed.contains("bo@example.com") && listed.contains("admin"),
        "{listed}"
    );
    assert!(!listed.contains("dbc_"), "no secret listed: {listed}");
    let ended = sessions(vec!["revoke", "--user", "BO@example.com"]).await;
    assert!(ended.contains("ended browser"), "{ended}");
    assert_eq!(me().await, 401, "the revoked session has ended");
    let (_, out, err) = server.stop().await;
    assert!(
        !err.contains("dbc_ses_") && !out.contains("dbc_ses_"),
        "no session secret in a log"
    );
}

/// Failed sign-ins are throttled per address and audited: ten wrong keys (or used links) from
/// one address are each 401 and a `session.refused` event naming how and from where; the next
/// failures from it are 429 with `Retry-After` and no event; a valid key from it still signs
/// in (a guesser behind a shared proxy locks nobody out); the events name no key. Behind
/// `--trust-forwarded-for`, the address is the last of `X-Forwarded-For` (with a port too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_sign_ins_are_throttled_per_address_and_audited() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start_with(
        &[
            ("DBCONSOLE_STORAGE", "redb"),
            ("DBCONSOLE_API_KEY", "throttle-test-static-key"),
        ],
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().unwrap(),
            "--trust-forwarded-for",
        ],
    )
    .await;
    let data_flag = data.to_str().unwrap().to_owned();
    let created = support::create_key(
        std::path::Path::new(&data_flag),
        &[
            "--kind",
            "api-key",
            "--scope",
            "query",
            "--name",
            "ann",
            "--user",
            "ann@example.com",
        ],
    )
    .await;
    let sign_in = |key: String, from: &'static str| {
        let body = serde_json::json!({ "key": key }).to_string();
        async move {
            let mut headers = BROWSER.to_vec();
            headers.push(("x-forwarded-for", from));
            request(
                server.addr,
                "POST",
                "/api/v1/console/sign-in",
                &headers,
                Some(&body),
            )
            .await
        }
    };
    for n in 0..10 {
        let wrong = sign_in(format!("dbc_ak_wrong-guess-{n}"), "203.0.113.7").await;
        assert_eq!(wrong.status, 401, "guess {n}: {}", wrong.body);
    }
    let throttled = sign_in("dbc_ak_wrong-guess-11".to_owned(), "203.0.113.7:5678").await;
    assert_eq!(throttled.status, 429, "{}", throttled.body);
    let wait: u64 = throttled
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("a Retry-After");
    assert!((1..=60).contains(&wait), "{wait}");
    let valid = sign_in(created.clone(), "203.0.113.7").await;
    assert_eq!(
        valid.status, 200,
        "a valid key still signs in: {}",
        valid.body
    );
    let other = sign_in(
        "dbc_ak_wrong-elsewhere".to_owned(),
        "198.51.100.2, 203.0.113.9",
    )
    .await;
    assert_eq!(
        other.status, 401,
        "another address is not throttled: {}",
        other.body
    );
    let audit = request(
        server.addr,
        "GET",
        "/api/v1/console/audit?limit=100",
        &[("x-api-key", "throttle-test-static-key")],
        None,
    )
    .await;
    assert_eq!(audit.status, 200, "{}", audit.body);
    let events = audit.json();
    let refused: Vec<&serde_json::Value> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == "session.refused")
        .collect();
    assert_eq!(
        refused.len(),
        11,
        "ten from the throttled address, one from another: {}",
        audit.body
    );
    let from = |address: &str| {
        refused
            .iter()
            .filter(|e| {
                e["changes"]
                    .to_string()
                    .contains(&format!("from {address}\""))
            })
            .count()
    };
    assert_eq!(
        (from("203.0.113.7"), from("203.0.113.9")),
        (10, 1),
        "{}",
        audit.body
    );
    assert!(!audit.body.contains("wrong-guess"), "no key is audited");
    // A wrong one-time link is refused, audited and throttled the same way.
    let link = |token: String| {
        let body = serde_json::json!({ "token": token }).to_string();
        async move {
            let mut headers = BROWSER.to_vec();
            headers.push(("x-forwarded-for", "192.0.2.44"));
            request(
                server.addr,
                "POST",
                "/api/v1/console/sign-in/link",
                &headers,
                Some(&body),
            )
            .await
        }
    };
    for n in 0..10 {
        let wrong = link(format!("dbc_sil_wrong-link-{n}")).await;
        assert_eq!(wrong.status, 401, "link guess {n}: {}", wrong.body);
    }
    let throttled = link("dbc_sil_wrong-link-11".to_owned()).await;
    assert_eq!(throttled.status, 429, "{}", throttled.body);
    let audit = request(
        server.addr,
        "GET",
        "/api/v1/console/audit?limit=200",
        &[("x-api-key", "throttle-test-static-key")],
        None,
    )
    .await;
    let links = audit.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["action"] == "session.refused"
                && e["changes"].to_string().contains("\"link\"")
                && e["changes"].to_string().contains("from 192.0.2.44")
        })
        .count();
    assert_eq!(links, 10, "each refused link audited within the limit");
    assert!(!audit.body.contains("wrong-link"), "no token is audited");
    server.stop().await;
}
