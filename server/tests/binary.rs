//! The `dbconsole` binary end to end: started as a process on port 0 (its address read from
//! the `listening on` line), driven over TCP, stopped with real signals. Standard output and
//! standard error are collected line by line, so the tests also check what it prints and logs.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use nix::sys::signal::Signal;

use support::process::{Server, command};
use support::{Conn, database_body, request, request_text};

const DATABASES: &str = "/api/v1/console/databases";

/// The request log line for `method path` with this status, in a server's standard error.
fn logged<'a>(stderr: &'a str, method: &str, path: &str, status: u16) -> &'a str {
    let fields = [
        format!("method={method} "),
        format!("path={path} "),
        format!("status={status} "),
    ];
    stderr
        .lines()
        .find(|line| fields.iter().all(|field| line.contains(field.as_str())))
        .unwrap_or_else(|| panic!("no log line for {method} {path} {status} in:\n{stderr}"))
}

const KEY: &str = "test-api-key-5c1d08a7";
const TOKEN: &str = "test-access-token-9e42b6";

fn configured() -> [(&'static str, &'static str); 2] {
    [
        ("DBCONSOLE_API_KEY", KEY),
        ("DBCONSOLE_ACCESS_TOKEN", TOKEN),
    ]
}

#[tokio::test]
async fn healthz_answers_ok_without_credentials() {
    let server = Server::start(&configured()).await;
    let response = request(server.addr, "GET", "/healthz", &[], None).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.body, "ok");
    assert_eq!(
        response.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    let head = request(server.addr, "HEAD", "/healthz", &[], None).await;
    assert_eq!(head.status, 200);
    let post = request(server.addr, "POST", "/healthz", &[], None).await;
    assert_eq!(post.status, 405);
    assert_eq!(post.header("allow"), Some("GET, HEAD"));
    let (_, _, stderr) = server.stop().await;
    logged(&stderr, "GET", "/healthz", 200);
    logged(&stderr, "POST", "/healthz", 405);
}

#[tokio::test]
async fn the_configured_api_key_creates_and_retrieves_a_database() {
    let server = Server::start(&configured()).await;
    let created = request(
        server.addr,
        "POST",
        DATABASES,
        &[("x-api-key", KEY)],
        Some(&database_body("pw-reader-1")),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let created = created.json();
    let id = created["id"].as_str().unwrap();
    assert!(id.starts_with("db_"), "{id}");

    let path = format!("{DATABASES}/{id}");
    let fetched = request(server.addr, "GET", &path, &[("x-api-key", KEY)], None).await;
    assert_eq!(fetched.status, 200, "{}", fetched.body);
    assert_eq!(fetched.json(), created);
    assert!(!fetched.body.contains("pw-reader-1"));

    // The access token is for the dashboard routes only.
    let token = format!("Bearer {TOKEN}");
    let dashboard = request(
        server.addr,
        "POST",
        "/v1/dashboards",
        &[("authorization", &token)],
        Some(r#"{"name":"Ops","restricted_access":false}"#),
    )
    .await;
    assert_eq!(dashboard.status, 200, "{}", dashboard.body);
    let wrong_kind = request(server.addr, "GET", &path, &[("x-api-key", TOKEN)], None).await;
    assert_eq!(wrong_kind.status, 401);
}

#[tokio::test]
async fn a_missing_or_wrong_api_key_is_401() {
    let server = Server::start(&configured()).await;
    let body = database_body("pw-reader-1");
    let missing = request(server.addr, "POST", DATABASES, &[], Some(&body)).await;
    assert_eq!(missing.status, 401);
    assert_eq!(
        missing.json(),
        serde_json::json!({"errors": {
            "detail": "Unauthorized",
            "hint": "this route takes an API key in the x-api-key header",
        }})
    );
    let wrong = request(
        server.addr,
        "POST",
        DATABASES,
        &[("x-api-key", "not-the-key")],
        Some(&body),
    )
    .await;
    assert_eq!(wrong.status, 401);
    let dashboards = request(server.addr, "GET", "/v1/dashboards", &[], None).await;
    assert_eq!(dashboards.status, 401);
    assert_eq!(dashboards.header("www-authenticate"), Some("Bearer"));
}

#[tokio::test]
async fn created_credentials_are_printed_once_and_work() {
    // On the memory backend the keys created at start live as long as the process; `keys.rs`
    // checks that on redb they are stored and survive a restart.
    let server = Server::start(&[]).await;
    let key = server.printed("api-key").await;
    let token = server.printed("access-token").await;
    assert!(key.starts_with("dbc_ak_") && key.len() == 50, "{key}");
    assert!(token.starts_with("dbc_at_") && token.len() == 50, "{token}");

    let created = request(
        server.addr,
        "POST",
        DATABASES,
        &[("x-api-key", &key)],
        Some(&database_body("pw-reader-1")),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let bearer = format!("Bearer {token}");
    let dashboards = request(
        server.addr,
        "GET",
        "/v1/dashboards",
        &[("authorization", &bearer)],
        None,
    )
    .await;
    assert_eq!(dashboards.status, 200, "{}", dashboards.body);

    let (status, stdout, stderr) = server.stop().await;
    assert!(status.success(), "{status:?}\n{stderr}");
    assert_eq!(stdout.matches(&key).count(), 1, "{stdout}");
    assert_eq!(stdout.matches(&token).count(), 1, "{stdout}");
    assert!(stdout.contains("shown this once"), "{stdout}");
    assert!(
        !stderr.contains(&key) && !stderr.contains(&token),
        "{stderr}"
    );
}

#[tokio::test]
async fn another_servers_credentials_are_not_accepted() {
    // Created keys are random: one store's key opens nothing on another store.
    let first = Server::start(&[]).await;
    let second = Server::start(&[]).await;
    let key = first.printed("api-key").await;
    assert_ne!(key, second.printed("api-key").await);
    let response = request(second.addr, "GET", DATABASES, &[("x-api-key", &key)], None).await;
    assert_eq!(response.status, 401);
}

#[tokio::test]
async fn the_request_log_line_has_method_path_status_and_no_secret() {
    let server = Server::start(&configured()).await;
    let password = "pw-never-logged-73e1";
    let created = request(
        server.addr,
        "POST",
        DATABASES,
        &[("x-api-key", KEY)],
        Some(&database_body(password)),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);

    let query_secret = "query-secret-0b7f";
    let listed = request(
        server.addr,
        "GET",
        &format!("{DATABASES}?limit=5&token={query_secret}"),
        &[("x-api-key", KEY)],
        None,
    )
    .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let denied = request(
        server.addr,
        "GET",
        DATABASES,
        &[("x-api-key", password)],
        None,
    )
    .await;
    assert_eq!(denied.status, 401);

    let (status, stdout, stderr) = server.stop().await;
    assert!(status.success(), "{status:?}\n{stderr}");
    let line = logged(&stderr, "POST", DATABASES, 200);
    assert!(line.contains("duration_ms="), "{line}");
    // The query string is not part of the logged path.
    logged(&stderr, "GET", DATABASES, 200);
    logged(&stderr, "GET", DATABASES, 401);
    for secret in [KEY, TOKEN, password, query_secret] {
        assert!(!stderr.contains(secret), "{secret} logged:\n{stderr}");
        assert!(!stdout.contains(secret), "{secret} printed:\n{stdout}");
    }
    assert!(!stdout.contains("shown this once"), "{stdout}");
    assert!(stderr.contains("storage=memory"), "{stderr}");
}

#[tokio::test]
async fn sigterm_exits_zero() {
    let server = Server::start(&configured()).await;
    let (status, _, stderr) = server.stop().await;
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("signal=\"SIGTERM\""), "{stderr}");
    assert!(stderr.contains("shutdown complete"), "{stderr}");
}

#[tokio::test]
async fn sigint_exits_zero() {
    let mut server = Server::start(&configured()).await;
    server.signal(Signal::SIGINT);
    assert_eq!(server.exit_status().await.code(), Some(0));
    let stderr = server.stderr.all().await;
    assert!(stderr.contains("signal=\"SIGINT\""), "{stderr}");
}

#[tokio::test]
async fn sigterm_lets_the_request_in_flight_finish() {
    let mut server = Server::start(&configured()).await;
    let body = database_body("pw-reader-1");
    let (first, rest) = body.split_at(body.len() / 2);

    // The request head, then wait for `100 Continue`: the server has started the request and
    // is reading its body.
    let mut conn = Conn::connect(server.addr).await;
    let head = request_text(
        "POST",
        DATABASES,
        &[("x-api-key", KEY), ("expect", "100-continue")],
        Some(&body),
        false,
    );
    let head = head.strip_suffix(body.as_str()).unwrap();
    conn.send(head).await;
    assert_eq!(conn.read_response(false).await.status, 100);
    conn.send(first).await;

    server.signal(Signal::SIGTERM);
    server
        .stderr
        .line("the shutdown log line", |line| {
            line.contains("no longer accepting")
        })
        .await;
    assert!(
        tokio::net::TcpStream::connect(server.addr).await.is_err(),
        "a new connection was accepted after shutdown began"
    );

    conn.send(rest).await;
    let response = conn.read_response(false).await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert_eq!(response.json()["name"], "Orders");
    assert!(conn.is_closed_by_server().await);
    assert_eq!(server.exit_status().await.code(), Some(0));
}

#[tokio::test]
async fn the_listen_address_can_come_from_the_environment() {
    let server = Server::start_with(
        &[
            ("DBCONSOLE_LISTEN", "127.0.0.1:0"),
            ("DBCONSOLE_STORAGE", "memory"),
            ("DBCONSOLE_DATA_DIR", "/nonexistent/dbconsole-test"),
            ("DBCONSOLE_CHECK_TIMEOUT_SECS", "3"),
            ("DBCONSOLE_API_KEY", KEY),
        ],
        &["serve"],
    )
    .await;
    assert!(server.addr.ip().is_loopback());
    assert_ne!(server.addr.port(), 0);
    let response = request(server.addr, "GET", DATABASES, &[("x-api-key", KEY)], None).await;
    assert_eq!(response.status, 200, "{}", response.body);
}

#[tokio::test]
async fn an_address_in_use_fails_with_a_one_line_message() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let output = command(&[], &["serve", "--listen", &addr])
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    let message = stderr
        .lines()
        .find(|line| line.starts_with("dbconsole: "))
        .unwrap_or_else(|| panic!("no error line in {stderr}"));
    assert!(
        message.contains(&format!("cannot listen on {addr}")),
        "{message}"
    );
    // Nothing is printed on standard output: no credentials for a server that never ran.
    assert_eq!(String::from_utf8(output.stdout).unwrap(), "");
}

#[tokio::test]
async fn bad_flags_and_variables_exit_non_zero() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str]);
    let cases: [Case<'_>; 6] = [
        (&[], &["serve", "--storage", "cassandra"]),
        // A maximum age below the idle time is refused, never raised in silence.
        (
            &[("DBCONSOLE_STORAGE", "memory")],
            &[
                "serve",
                "--session-idle-secs",
                "7200",
                "--session-max-age-secs",
                "600",
            ],
        ),
        (&[], &["serve", "--listen", "not-an-address"]),
        (&[], &["serve", "--check-timeout-secs", "0"]),
        (&[("DBCONSOLE_STORAGE", "cassandra")], &["serve"]),
        (&[], &["frobnicate"]),
    ];
    for (env, args) in cases {
        let output = command(env, args).output().await.unwrap();
        assert!(!output.status.success(), "{env:?} {args:?} was accepted");
        assert!(!output.stderr.is_empty(), "{env:?} {args:?}: no message");
        assert!(
            output.stdout.is_empty(),
            "{env:?} {args:?}: printed something"
        );
    }
}

/// The server is built with every adapter's checker: a real PostgreSQL answers `ok`, a closed
/// SQL Server port answers the driver's refusal, and Oracle says its client library is missing.
#[tokio::test]
async fn check_connection_uses_the_drivers_built_into_the_server() {
    let server = Server::start(&configured()).await;
    let check = async |adapter: &str, port: u16, password: &str| {
        let body = serde_json::json!({
            "name": adapter, "adapter": adapter, "hostname": "127.0.0.1", "port": port,
            "database": "checkdb",
            "credentials": [{"username": "checker", "password": password, "timeout": 5}]
        })
        .to_string();
        let created = request(
            server.addr,
            "POST",
            DATABASES,
            &[("x-api-key", KEY)],
            Some(&body),
        )
        .await;
        assert_eq!(created.status, 200, "{}", created.body);
        let id = created.json()["id"].as_str().unwrap().to_owned();
        let path = format!("{DATABASES}/{id}/check-connection/checker");
        let answer = request(server.addr, "GET", &path, &[("x-api-key", KEY)], None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        assert_eq!(
            answer.header("content-type"),
            Some("text/plain; charset=utf-8")
        );
        answer.body
    };
    let postgres = check("postgres", 5432, "checkpw").await;
    assert_eq!(
        postgres, "ok",
        "PostgreSQL on 127.0.0.1:5432 (user checker, database checkdb) did not answer ok; start \
         the test database servers with `sudo bash .ci/db-servers-up.sh`"
    );
    let wrong = check("postgres", 5432, "wrong-password-7f3a").await;
    assert!(wrong.contains("password authentication failed"), "{wrong}");
    assert!(!wrong.contains("wrong-password-7f3a"), "{wrong}");
    let sqlserver = check("sqlserver", 1, "pw").await;
    assert!(sqlserver.contains("Connection refused"), "{sqlserver}");
    let oracle = check("oracle", 1521, "pw").await;
    assert!(oracle.contains("Oracle Client library"), "{oracle}");
    server.stop().await;
}

/// The head of a `POST /databases` that announces 100 bytes of body, and the first 8 of them:
/// an upload that stalls.
async fn stalled_upload(addr: SocketAddr) -> Conn {
    let mut conn = Conn::connect(addr).await;
    conn.send(&format!(
        "POST {DATABASES} HTTP/1.1\r\nhost: test\r\nx-api-key: {KEY}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"name\":"
    ))
    .await;
    conn
}

/// A client that stops in the middle of its body gets 408 once the body timeout has passed,
/// and its connection is closed; the server goes on serving others.
#[tokio::test]
async fn a_stalled_upload_gets_408_and_its_connection_closed() {
    let server = Server::start_with(
        &configured(),
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--body-timeout-secs",
            "1",
        ],
    )
    .await;
    let started = std::time::Instant::now();
    let mut conn = stalled_upload(server.addr).await;
    let response = tokio::time::timeout(Duration::from_secs(10), conn.read_response(false))
        .await
        .expect("no answer to a stalled upload");
    assert!(started.elapsed() >= Duration::from_millis(900));
    assert_eq!(response.status, 408, "{}", response.body);
    assert_eq!(
        response.json(),
        serde_json::json!({"errors": {"detail": "the request body did not arrive within 1 s"}})
    );
    assert_eq!(response.header("connection"), Some("close"));
    assert!(conn.is_closed_by_server().await);
    let listed = request(server.addr, "GET", DATABASES, &[("x-api-key", KEY)], None).await;
    assert_eq!(listed.json()["data"], serde_json::json!([]));
    let (status, _, _) = server.stop().await;
    assert_eq!(status.code(), Some(0));
}

/// A shutdown waits for the requests in flight at most `--drain-secs`, then ends them. Each
/// step waits for what the server says, not for time.
#[tokio::test]
async fn the_shutdown_drain_is_bounded() {
    let [api_key, token] = configured();
    let env = [api_key, token, ("RUST_LOG", "info,dbconsole_core=debug")];
    let mut server = Server::start_with(
        &env,
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--body-timeout-secs",
            "600",
            "--drain-secs",
            "1",
        ],
    )
    .await;
    let _stalled = stalled_upload(server.addr).await;
    // The request has reached the service (its head is read, it is authorized) before the
    // signal.
    server
        .stderr
        .line("the stalled request in the service", |line| {
            line.contains("authorized")
        })
        .await;
    server.signal(Signal::SIGTERM);
    // It ends although the upload never will: the drain gave up on it.
    assert_eq!(server.exit_status().await.code(), Some(0));
    let stderr = server.stderr.all().await;
    assert!(
        stderr.contains("requests still in flight after the drain time"),
        "{stderr}"
    );
}

/// A second SIGINT or SIGTERM during the drain stops the server at once.
#[tokio::test]
async fn a_second_signal_stops_at_once() {
    for second in [Signal::SIGINT, Signal::SIGTERM] {
        let mut server = Server::start_with(
            &configured(),
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--body-timeout-secs",
                "600",
                "--drain-secs",
                "600",
            ],
        )
        .await;
        let _stalled = stalled_upload(server.addr).await;
        server.signal(Signal::SIGTERM);
        server
            .stderr
            .line("the shutdown log line", |line| {
                line.contains("no longer accepting")
            })
            .await;
        // At once: long before the drain of 600 s would have ended.
        server.signal(second);
        let status = tokio::time::timeout(Duration::from_secs(30), server.exit_status())
            .await
            .unwrap_or_else(|_| panic!("{second:?}: still running 30 s after the second signal"));
        assert_eq!(status.code(), Some(0));
        let stderr = server.stderr.all().await;
        assert!(stderr.contains("second signal"), "{stderr}");
    }
}

/// Beyond `--max-connections`, a new connection waits (in the listen backlog) until one ends.
#[tokio::test]
async fn connections_beyond_the_cap_wait_for_a_free_slot() {
    let server = Server::start_with(
        &configured(),
        &["serve", "--listen", "127.0.0.1:0", "--max-connections", "1"],
    )
    .await;
    let list = request_text("GET", DATABASES, &[("x-api-key", KEY)], None, false);
    let mut first = Conn::connect(server.addr).await;
    first.send(&list).await;
    assert_eq!(first.read_response(false).await.status, 200);
    let mut second = Conn::connect(server.addr).await;
    second.send(&list).await;
    let waited =
        tokio::time::timeout(Duration::from_millis(500), second.read_response(false)).await;
    assert!(
        waited.is_err(),
        "the second connection was served beside the first"
    );
    drop(first);
    let response = tokio::time::timeout(Duration::from_secs(10), second.read_response(false))
        .await
        .expect("the second connection was not served after the first closed");
    assert_eq!(response.status, 200);
    server.stop().await;
}

/// `--listen` takes a host name, resolved when binding.
#[tokio::test]
async fn the_listen_address_may_be_a_host_name() {
    let server = Server::start_with(&configured(), &["serve", "--listen", "localhost:0"]).await;
    assert!(server.addr.ip().is_loopback());
    let response = request(server.addr, "GET", "/healthz", &[], None).await;
    assert_eq!(response.status, 200);
    server.stop().await;
}
