//! What operators rely on, on the real binary: request ids in responses and log lines, JSON
//! logs, and no secret in any line of a run's log.

mod support;

use serde_json::{Value, json};

use support::process::Server;
use support::request;

const DATABASES: &str = "/api/v1/console/databases";
const KEY: &str = "ops-api-key-6f1c2e";
const TOKEN: &str = "ops-access-token-93ab70";

fn configured() -> [(&'static str, &'static str); 2] {
    [
        ("DBCONSOLE_API_KEY", KEY),
        ("DBCONSOLE_ACCESS_TOKEN", TOKEN),
    ]
}

/// The JSON log lines of a run.
fn json_lines(stderr: &str) -> Vec<Value> {
    stderr
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: not JSON: {line}")))
        .collect()
}

/// Every response carries `x-request-id`: the caller's when it is usable, else a new one. With
/// `--log-format json` every line is a JSON object, and the request's lines (the request log
/// line, and the service's own lines inside its span) name the id.
#[tokio::test]
async fn request_ids_come_back_and_name_every_log_line_of_their_request() {
    let server = Server::start_with(
        &[
            configured().as_slice(),
            &[("RUST_LOG", "info,dbconsole_core=debug")],
        ]
        .concat(),
        &["--log-format", "json", "serve", "--listen", "127.0.0.1:0"],
    )
    .await;
    let given = request(
        server.addr,
        "GET",
        DATABASES,
        &[("x-api-key", KEY), ("x-request-id", "trace-4711")],
        None,
    )
    .await;
    assert_eq!(given.status, 200);
    assert_eq!(given.header("x-request-id"), Some("trace-4711"));
    let made = request(
        server.addr,
        "GET",
        "/healthz",
        &[("x-request-id", "bad id")],
        None,
    )
    .await;
    let made_id = made.header("x-request-id").expect("an id").to_owned();
    assert_eq!(made_id.len(), 26, "{made_id}");
    let denied = request(server.addr, "GET", DATABASES, &[], None).await;
    assert_eq!(denied.status, 401);
    assert!(denied.header("x-request-id").is_some());

    let (status, _, stderr) = server.stop().await;
    assert!(status.success());
    let lines = json_lines(&stderr);
    let request_lines: Vec<&Value> = lines
        .iter()
        .filter(|line| line["target"] == "dbconsole::request")
        .collect();
    assert!(
        request_lines
            .iter()
            .any(|line| line["fields"]["request_id"] == "trace-4711"
                && line["fields"]["status"] == 200),
        "{stderr}"
    );
    assert!(
        request_lines
            .iter()
            .any(|line| line["fields"]["request_id"] == made_id.as_str())
    );
    // A line the service logs while handling the request sits in the request's span.
    let inner: Vec<&Value> = lines
        .iter()
        .filter(|line| line["span"]["request_id"] == "trace-4711")
        .collect();
    assert!(
        inner.iter().any(|line| line["target"]
            .as_str()
            .is_some_and(|t| t.starts_with("dbconsole_core"))),
        "no service line in the request's span:\n{stderr}"
    );
}

/// The log's own writing thread loses nothing: every request of a burst from several clients
/// at once has its line once the server has stopped, and each client's lines come in the
/// order of its requests.
#[tokio::test]
async fn every_request_of_a_burst_has_its_log_line_in_order() {
    const CONNECTIONS: usize = 8;
    const EACH: usize = 250;
    let server = Server::start_with(
        &[configured().as_slice(), &[("RUST_LOG", "info")]].concat(),
        &["--log-format", "json", "serve", "--listen", "127.0.0.1:0"],
    )
    .await;
    let addr = server.addr;
    let clients = (0..CONNECTIONS).map(|client| {
        tokio::spawn(async move {
            for at in 0..EACH {
                let id = format!("burst-{client}-{at}");
                let answer = request(addr, "GET", "/healthz", &[("x-request-id", &id)], None).await;
                assert_eq!(answer.status, 200);
            }
        })
    });
    for client in clients.collect::<Vec<_>>() {
        client.await.expect("a client");
    }
    let (status, _, stderr) = server.stop().await;
    assert!(status.success());
    let ids: Vec<String> = json_lines(&stderr)
        .iter()
        .filter(|line| line["target"] == "dbconsole::request")
        .filter_map(|line| line["fields"]["request_id"].as_str().map(str::to_owned))
        .filter(|id| id.starts_with("burst-"))
        .collect();
    assert_eq!(ids.len(), CONNECTIONS * EACH, "lines lost or repeated");
    for client in 0..CONNECTIONS {
        let prefix = format!("burst-{client}-");
        let order: Vec<usize> = ids
            .iter()
            .filter_map(|id| id.strip_prefix(&prefix)?.parse().ok())
            .collect();
        assert_eq!(order, (0..EACH).collect::<Vec<_>>(), "client {client}");
    }
}

/// Nothing a client sent as a secret, nor the server's own key, appears in any log line, at
/// the debug level, in either format.
#[tokio::test]
async fn no_secret_in_any_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let secret_key = "b3BzLXRlc3Qta2V5LTAxMjM0NTY3ODlhYmNkZWYwMTI=";
    let password = "pw-in-no-log-5e21";
    let setup_password = "setup-pw-in-no-log-77c0";
    let unsaved_password = "unsaved-pw-in-no-log-3a9d";
    let ca_pem =
        "-----BEGIN CERTIFICATE-----\nMIIBno-log-ca-cert-body\n-----END CERTIFICATE-----\n";
    let ca = base64_of(ca_pem);
    for format in ["text", "json"] {
        let data_dir = dir.path().join(format);
        let env = [
            configured().as_slice(),
            &[
                ("RUST_LOG", "debug"),
                ("DBCONSOLE_STORAGE", "redb"),
                ("DBCONSOLE_SECRET_KEY", secret_key),
            ],
        ]
        .concat();
        let server = Server::start_with(
            &env,
            &[
                "--log-format",
                format,
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--data-dir",
                data_dir.to_str().unwrap(),
            ],
        )
        .await;
        let api = [("x-api-key", KEY)];
        let body = json!({
            "name": "Orders", "adapter": "postgres", "hostname": "127.0.0.1", "port": 1,
            "database": "orders", "ssl": true, "ssl_ca_cert": ca,
            "credentials": [{"username": "reader", "password": password, "timeout": 2}],
        });
        let created = request(
            server.addr,
            "POST",
            DATABASES,
            &api,
            Some(&body.to_string()),
        )
        .await;
        assert_eq!(created.status, 200, "{}", created.body);
        let id = created.json()["id"].as_str().unwrap().to_owned();
        let check = format!("{DATABASES}/{id}/check-connection/reader");
        let checked = request(server.addr, "GET", &check, &api, None).await;
        assert_eq!(checked.status, 200);
        // Checks before saving: a new database in the body, and the stored one with a change.
        let unsaved = json!({
            "name": "Unsaved", "adapter": "postgres", "hostname": "127.0.0.1", "port": 1,
            "database": "orders", "ssl": true, "ssl_ca_cert": ca, "username": "reader",
            "credentials": [{"username": "reader", "password": unsaved_password, "timeout": 2}],
        });
        for (path, body) in [
            (format!("{DATABASES}/check-connection"), unsaved),
            (
                format!("{DATABASES}/{id}/check-connection"),
                json!({"username": "reader", "credentials": [{"username": "reader", "password": unsaved_password}]}),
            ),
        ] {
            let checked = request(server.addr, "POST", &path, &api, Some(&body.to_string())).await;
            assert_eq!(checked.status, 200, "{}", checked.body);
            assert!(!checked.body.contains(unsaved_password), "{}", checked.body);
        }
        let patch = json!({"credentials": [{"username": "other", "password": password}]});
        accepted(server.addr, "PATCH", &format!("{DATABASES}/{id}"), &patch).await;
        let setup = json!({
            "id": "ext-1", "adapter": "mysql", "hostname": "db.internal", "database": "app",
            "username": "svc", "password": setup_password, "ssl_ca_cert": ca,
        });
        accepted(server.addr, "PUT", &format!("{DATABASES}/setup"), &setup).await;
        for wrong in [password, setup_password] {
            let denied =
                request(server.addr, "GET", DATABASES, &[("x-api-key", wrong)], None).await;
            assert_eq!(denied.status, 401);
        }
        let dashboards = request(
            server.addr,
            "GET",
            "/v1/dashboards",
            &[("authorization", &format!("Bearer {TOKEN}"))],
            None,
        )
        .await;
        assert_eq!(dashboards.status, 200);

        let (status, _, stderr) = server.stop().await;
        assert!(status.success(), "{stderr}");
        assert!(
            stderr.lines().count() > 10,
            "too little logged to prove anything:\n{stderr}"
        );
        for secret in [
            KEY,
            TOKEN,
            secret_key,
            password,
            setup_password,
            unsaved_password,
            ca.as_str(),
            "MIIBno-log",
        ] {
            assert!(
                !stderr.contains(secret),
                "{format}: {secret} logged:\n{stderr}"
            );
        }
    }
}

/// Sends `body` with the API key, expects 200, and returns the answer's JSON.
async fn accepted(addr: std::net::SocketAddr, method: &str, path: &str, body: &Value) -> Value {
    let response = request(
        addr,
        method,
        path,
        &[("x-api-key", KEY)],
        Some(&body.to_string()),
    )
    .await;
    assert_eq!(response.status, 200, "{method} {path}: {}", response.body);
    response.json()
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// The value of the sample of `name` whose labels include all of `labels`, from a Prometheus
/// text exposition; `None` when there is none.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter(|line| {
            line.starts_with(&format!("{name}{{")) || line.starts_with(&format!("{name} "))
        })
        .find(|line| {
            labels
                .iter()
                .all(|(key, value)| line.contains(&format!("{key}=\"{value}\"")))
        })
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|value| value.parse().ok())
}

/// `--metrics-listen` serves `/metrics` apart from the API: request counts by route template,
/// method and status, latency histograms, check-connection outcomes by adapter, and the stored
/// record counts, all moving with the traffic.
#[tokio::test]
async fn metrics_move_with_the_traffic() {
    let server = Server::start_with(
        &configured(),
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    )
    .await;
    let line = server
        .stdout
        .line("the metrics line", |line| line.starts_with("metrics on "))
        .await;
    let metrics_addr: std::net::SocketAddr = line
        .trim_start_matches("metrics on http://")
        .trim_end_matches("/metrics")
        .parse()
        .unwrap();
    let scrape = || async move {
        let response = request(metrics_addr, "GET", "/metrics", &[], None).await;
        assert_eq!(response.status, 200);
        assert!(
            response
                .header("content-type")
                .unwrap()
                .starts_with("text/plain")
        );
        response.body
    };
    let before = scrape().await;
    assert_eq!(
        sample(&before, "dbconsole_records", &[("kind", "databases")]),
        Some(0.0)
    );

    let api = [("x-api-key", KEY)];
    let body = json!({
        "name": "Orders", "adapter": "postgres", "hostname": "127.0.0.1", "port": 1,
        "database": "orders", "credentials": [{"username": "reader", "timeout": 2}],
    });
    for _ in 0..3 {
        let created = request(
            server.addr,
            "POST",
            DATABASES,
            &api,
            Some(&body.to_string()),
        )
        .await;
        assert_eq!(created.status, 200);
    }
    let id = request(server.addr, "GET", DATABASES, &api, None)
        .await
        .json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let checked = request(
        server.addr,
        "GET",
        &format!("{DATABASES}/{id}/check-connection/reader"),
        &api,
        None,
    )
    .await;
    assert_eq!(checked.status, 200);
    assert_eq!(
        request(server.addr, "GET", DATABASES, &[], None)
            .await
            .status,
        401
    );
    assert_eq!(
        request(server.addr, "GET", "/healthz", &[], None)
            .await
            .status,
        200
    );

    let after = scrape().await;
    let requests = |route: &str, method: &str, status: &str| {
        sample(
            &after,
            "dbconsole_http_requests_total",
            &[("route", route), ("method", method), ("status", status)],
        )
    };
    assert_eq!(requests("/databases", "POST", "200"), Some(3.0), "{after}");
    assert_eq!(requests("/databases", "GET", "200"), Some(1.0), "{after}");
    assert_eq!(requests("/databases", "GET", "401"), Some(1.0), "{after}");
    assert_eq!(requests("/healthz", "GET", "200"), Some(1.0), "{after}");
    assert_eq!(
        requests("/databases/{id}/check-connection/{username}", "GET", "200"),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &after,
            "dbconsole_check_connections_total",
            &[("adapter", "postgres"), ("outcome", "error")]
        ),
        Some(1.0),
        "{after}"
    );
    assert_eq!(
        sample(
            &after,
            "dbconsole_http_request_duration_seconds_count",
            &[("route", "/databases"), ("method", "POST")]
        ),
        Some(3.0),
        "{after}"
    );
    assert!(
        after.contains("dbconsole_http_request_duration_seconds_bucket{"),
        "{after}"
    );
    assert!(
        after.contains("dbconsole_check_connection_duration_seconds_bucket{"),
        "{after}"
    );
    assert_eq!(
        sample(&after, "dbconsole_records", &[("kind", "databases")]),
        Some(3.0)
    );
    // Not on the API's listener.
    assert_eq!(
        request(server.addr, "GET", "/metrics", &[], None)
            .await
            .status,
        404
    );
    server.stop().await;
}

/// With `--tls-cert` and `--tls-key` the listener speaks HTTPS: a client that trusts the
/// certificate gets its answers; plain HTTP gets none. An unreadable key stops the start with a
/// message.
#[tokio::test]
async fn the_listener_serves_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl makes a test certificate");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let serve_tls = [
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    let server = Server::start_with(&configured(), &serve_tls).await;
    let port = server.addr.port();
    let curl = |url: String, extra: &[&str]| {
        let mut command = std::process::Command::new("curl");
        command
            .args(["-s", "--max-time", "5", "--cacert"])
            .arg(&cert)
            .args(["--resolve", &format!("localhost:{port}:127.0.0.1")])
            .args(extra)
            .arg(url);
        command.output().expect("curl runs")
    };
    let health = curl(format!("https://localhost:{port}/healthz"), &[]);
    assert_eq!(String::from_utf8_lossy(&health.stdout), "ok");
    let listed = curl(
        format!("https://localhost:{port}{DATABASES}"),
        &["-H", &format!("x-api-key: {KEY}")],
    );
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed["data"], json!([]));
    let plain = curl(format!("http://localhost:{port}/healthz"), &[]);
    assert_ne!(String::from_utf8_lossy(&plain.stdout), "ok");
    server.stop().await;

    std::fs::write(&key, "not a key").unwrap();
    let output = support::process::command(&configured(), &serve_tls)
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot read the private key"), "{stderr}");
}
