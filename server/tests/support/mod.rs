//! A small HTTP/1 client over a raw `TcpStream`, enough to drive the server byte for byte
//! (keep-alive, `expect: 100-continue`, a body sent in two parts).

#![allow(
    dead_code,
    reason = "each test binary uses a part of the support module"
)]

pub(crate) mod door;
pub(crate) mod process;

use std::net::SocketAddr;
use std::process::Stdio;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::Command;

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_dbconsole");

/// The variables the binary reads; none leaks in from the test's own environment.
const OUR_VARS: [&str; 38] = [
    "DBCONSOLE_DOOR_LISTEN",
    "DBCONSOLE_RUN_EVENTS_BACKLOG",
    "DBCONSOLE_SECRET_KEY",
    "DBCONSOLE_LISTEN",
    "DBCONSOLE_STORAGE",
    "DBCONSOLE_DATA_DIR",
    "DBCONSOLE_CHECK_TIMEOUT_SECS",
    "DBCONSOLE_API_KEY",
    "DBCONSOLE_ACCESS_TOKEN",
    "DBCONSOLE_DATABASE_URL",
    "DBCONSOLE_DATABASE_SCHEMA",
    "DBCONSOLE_DATABASE_CA_FILE",
    "DBCONSOLE_DATABASE_TIMEOUT_SECS",
    "DBCONSOLE_CACHE_MIB",
    "DBCONSOLE_READ_CACHE_MIB",
    "DBCONSOLE_MAX_CONNECTIONS",
    "DBCONSOLE_BODY_TIMEOUT_SECS",
    "DBCONSOLE_DRAIN_SECS",
    "DBCONSOLE_AUDIT_RETENTION_DAYS",
    "DBCONSOLE_AUDIT_RETENTION_EVENTS",
    "DBCONSOLE_OIDC_ISSUER",
    "DBCONSOLE_OIDC_AUDIENCE",
    "DBCONSOLE_OIDC_JWKS_URL",
    "DBCONSOLE_OIDC_USER_CLAIM",
    "DBCONSOLE_OIDC_GROUPS_CLAIM",
    "DBCONSOLE_OIDC_SUPER_ADMIN_GROUP",
    "DBCONSOLE_OIDC_AGENT_CLAIM",
    "DBCONSOLE_MAX_ROWS",
    "DBCONSOLE_STATEMENT_TIMEOUT_SECS",
    "DBCONSOLE_POOL_SIZE",
    "DBCONSOLE_POOL_WAIT_SECS",
    "DBCONSOLE_WORKFLOW_URL",
    "DBCONSOLE_WORKFLOW_SECRET",
    "DBCONSOLE_SLACK_TOKEN",
    "DBCONSOLE_SLACK_API_URL",
    "DBCONSOLE_DELIVERY_TIMEOUT_SECS",
    "DBCONSOLE_DELIVERY_ATTEMPTS",
    "DBCONSOLE_DELIVERY_BACKOFF_MS",
];

/// The binary with none of [`OUR_VARS`] from the test's environment, logging at `info`, with
/// `env` added (later pairs win) and piped output.
pub(crate) fn dbconsole(env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut command = Command::new(BIN);
    for var in OUR_VARS {
        command.env_remove(var);
    }
    command
        .env("RUST_LOG", "info")
        .envs(env.iter().copied())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// A parsed response.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Response {
    /// The first value of this header (name compared without case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body as JSON.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("body is not JSON ({error}): {}", self.body))
    }
}

/// One client connection.
pub(crate) struct Conn {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl Conn {
    pub(crate) async fn connect(addr: SocketAddr) -> Self {
        let stream = TcpStream::connect(addr)
            .await
            .unwrap_or_else(|error| panic!("connect to {addr}: {error}"));
        Self {
            stream,
            buffer: Vec::new(),
        }
    }

    pub(crate) async fn send(&mut self, bytes: &str) {
        self.stream.write_all(bytes.as_bytes()).await.unwrap();
        self.stream.flush().await.unwrap();
    }

    /// Reads more bytes into the buffer; false at end of stream.
    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        let read = self.stream.read(&mut chunk).await.unwrap_or(0);
        self.buffer.extend_from_slice(&chunk[..read]);
        read > 0
    }

    /// The next response (a `100 Continue` counts as one). `head`: the request was `HEAD`, so
    /// the response has no body whatever its `content-length`.
    pub(crate) async fn read_response(&mut self, head: bool) -> Response {
        let end = loop {
            if let Some(at) = find(&self.buffer, b"\r\n\r\n") {
                break at;
            }
            assert!(
                self.fill().await,
                "connection closed before a response head; got {:?}",
                String::from_utf8_lossy(&self.buffer)
            );
        };
        let head_text = String::from_utf8(self.buffer[..end].to_vec()).unwrap();
        self.buffer.drain(..end + 4);
        let mut lines = head_text.split("\r\n");
        let status_line = lines.next().unwrap();
        let status: u16 = status_line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .map(|line| {
                let (name, value) = line.split_once(':').expect("header line");
                (name.trim().to_owned(), value.trim().to_owned())
            })
            .collect();
        let mut response = Response {
            status,
            headers,
            body: String::new(),
        };
        let chunked = response
            .header("transfer-encoding")
            .is_some_and(|coding| coding.eq_ignore_ascii_case("chunked"));
        let body = if head || status < 200 {
            Vec::new()
        } else if chunked {
            self.read_chunks().await
        } else {
            let length = response
                .header("content-length")
                .map_or(0, |length| length.parse().unwrap());
            self.read_exactly(length).await
        };
        response.body = String::from_utf8(body).unwrap();
        response
    }

    /// The next `length` bytes.
    async fn read_exactly(&mut self, length: usize) -> Vec<u8> {
        while self.buffer.len() < length {
            assert!(self.fill().await, "connection closed inside a body");
        }
        self.buffer.drain(..length).collect()
    }

    /// A chunked body, through its last (empty) chunk: a streamed answer read to its end, so
    /// the server never sees its client go away.
    async fn read_chunks(&mut self) -> Vec<u8> {
        let mut body = Vec::new();
        loop {
            let line = loop {
                if let Some(at) = find(&self.buffer, b"\r\n") {
                    break at;
                }
                assert!(self.fill().await, "connection closed inside a chunk size");
            };
            let size_text = String::from_utf8(self.buffer.drain(..line + 2).collect()).unwrap();
            let size = usize::from_str_radix(size_text.trim().split(';').next().unwrap(), 16)
                .unwrap_or_else(|_| panic!("bad chunk size {size_text:?}"));
            let chunk = self.read_exactly(size + 2).await;
            if size == 0 {
                return body;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }

    /// Whether the server closed the connection (the next read is the end of the stream).
    pub(crate) async fn is_closed_by_server(&mut self) -> bool {
        !self.fill().await && self.buffer.is_empty()
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The text of a request with a `content-length` for `body`; `close` adds `connection: close`.
pub(crate) fn request_text(
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
    close: bool,
) -> String {
    let mut text = format!("{method} {path} HTTP/1.1\r\nhost: localhost\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if close {
        text.push_str("connection: close\r\n");
    }
    if let Some(body) = body {
        text.push_str(&format!(
            "content-type: application/json\r\ncontent-length: {}\r\n",
            body.len()
        ));
    }
    text.push_str("\r\n");
    text.push_str(body.unwrap_or(""));
    text
}

/// One request on a fresh connection (closed after the response).
pub(crate) async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Response {
    let mut conn = Conn::connect(addr).await;
    conn.send(&request_text(method, path, headers, body, true))
        .await;
    conn.read_response(method == "HEAD").await
}

/// A minimal valid create-database body; its password is `password`.
pub(crate) fn database_body(password: &str) -> String {
    serde_json::json!({
        "name": "Orders",
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "credentials": [{"username": "reader", "password": password}]
    })
    .to_string()
}

/// `dbconsole keys --data-dir DIR create …`: the secret it printed.
pub(crate) async fn create_key(dir: &std::path::Path, args: &[&str]) -> String {
    let dir = dir.to_str().unwrap();
    let mut all = vec!["keys", "--data-dir", dir, "create"];
    all.extend_from_slice(args);
    let output = tokio::time::timeout(process::HANG_GUARD, dbconsole(&[], &all).output())
        .await
        .expect("`dbconsole keys create` finished")
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .find_map(|line| line.strip_prefix("secret:"))
        .unwrap_or_else(|| panic!("no secret in {stdout}"))
        .trim()
        .to_owned()
}

/// A direct session on the test PostgreSQL's `checkdb` (`.ci/db-servers-up.sh`), to look at
/// the server from outside dbconsole; a missing server fails the test, saying how to start it.
pub(crate) async fn postgres_admin() -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(
        "host=127.0.0.1 port=5432 user=checker password=checkpw dbname=checkdb",
        tokio_postgres::NoTls,
    )
    .await
    .unwrap_or_else(|error| {
        panic!(
            "PostgreSQL is not running on 127.0.0.1:5432 ({error}): start the test database \
             servers with `sudo bash .ci/db-servers-up.sh`"
        )
    });
    tokio::spawn(connection);
    client
}
