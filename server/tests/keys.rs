//! `dbconsole keys` and the stored keys end to end, on the real binary and the redb storage in
//! temporary data directories: the commands with no server (they open the data file) and with a
//! running server (they go through its admin socket), scopes, revocation, and the keys a first
//! start creates.

mod support;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::process::Child;
use tokio::task::JoinHandle;

use support::{database_body, dbconsole, request};

/// Only keeps a broken binary from hanging the test run; no test measures time.
const HANG_GUARD: Duration = Duration::from_secs(60);

const DATABASES: &str = "/api/v1/console/databases";
const SETUP: &str = "/api/v1/console/databases/setup";
const DASHBOARDS: &str = "/v1/dashboards";
const DATA_FILE: &str = "dbconsole.redb";
const SOCKET: &str = "admin.sock";

/// What a finished command printed.
struct Output {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Output {
    /// The value of the `label:` line of `keys create`.
    fn field(&self, label: &str) -> String {
        let prefix = format!("{label}:");
        self.stdout
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {label} in:\n{}", self.stdout))
            .trim()
            .to_owned()
    }
}

/// `dbconsole keys --data-dir DIR ARGS…` with `env`, to the end.
async fn keys_with(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let dir = dir.to_str().unwrap();
    let mut all = vec!["keys", "--data-dir", dir];
    all.extend_from_slice(args);
    let output = tokio::time::timeout(HANG_GUARD, dbconsole(env, &all).output())
        .await
        .expect("`dbconsole keys` did not finish within the hang guard")
        .unwrap();
    Output {
        status: output.status,
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// `dbconsole keys …`, which must succeed.
async fn keys(dir: &Path, args: &[&str]) -> Output {
    let output = keys_with(dir, &[], args).await;
    assert!(
        output.status.success(),
        "keys {args:?} failed: {}\n{}",
        output.stderr,
        output.stdout
    );
    output
}

/// A created key: its id and secret.
struct Created {
    id: String,
    secret: String,
}

async fn create(dir: &Path, kind: &str, scope: &str, name: &str) -> Created {
    let output = keys(
        dir,
        &["create", "--kind", kind, "--scope", scope, "--name", name],
    )
    .await;
    let created = Created {
        id: output.field("id"),
        secret: output.field("secret"),
    };
    assert!(created.id.starts_with("key_"), "{}", output.stdout);
    assert_eq!(output.stdout.matches(&created.secret).count(), 1);
    created
}

/// The rows of `keys list` (the header left out), split into columns.
async fn list(dir: &Path) -> Vec<Vec<String>> {
    let output = keys(dir, &["list"]).await;
    if output.stdout.trim() == "no stored keys" {
        return Vec::new();
    }
    let mut lines = output.stdout.lines();
    assert!(
        lines.next().unwrap().starts_with("ID "),
        "{}",
        output.stdout
    );
    lines
        .map(|line| line.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// Reads a pipe to its end in the background.
fn drain(mut pipe: impl AsyncRead + Unpin + Send + 'static) -> JoinHandle<String> {
    tokio::spawn(async move {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text).await;
        text
    })
}

/// A running `dbconsole serve` on a data directory.
struct Server {
    child: Child,
    addr: SocketAddr,
    /// What it printed before `listening on`.
    banner: String,
    stdout: JoinHandle<String>,
    stderr: JoinHandle<String>,
}

impl Server {
    async fn start(dir: &Path, env: &[(&str, &str)]) -> Self {
        let dir = dir.to_str().unwrap();
        let args = ["serve", "--listen", "127.0.0.1:0", "--data-dir", dir];
        let mut child = dbconsole(env, &args).spawn().expect("spawn dbconsole");
        let stderr = drain(child.stderr.take().unwrap());
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut banner = String::new();
        let addr = tokio::time::timeout(HANG_GUARD, async {
            loop {
                let mut line = String::new();
                if stdout.read_line(&mut line).await.unwrap() == 0 {
                    return None;
                }
                if let Some(addr) = line.trim_end().strip_prefix("listening on ") {
                    return Some(addr.parse().unwrap());
                }
                banner.push_str(&line);
            }
        })
        .await
        .expect("no `listening on` within the hang guard");
        let Some(addr) = addr else {
            let stderr = stderr.await.unwrap();
            panic!("the server exited before listening:\n{banner}\n{stderr}");
        };
        Self {
            child,
            addr,
            banner,
            stdout: drain(stdout),
            stderr,
        }
    }

    /// The secret of the key of this kind that the server created at start (the last word of
    /// its banner line `  <kind> <id>  <secret>`).
    fn printed(&self, kind: &str) -> String {
        let prefix = format!("  {kind} ");
        self.banner
            .lines()
            .find(|line| line.starts_with(&prefix))
            .and_then(|line| line.split_whitespace().last())
            .unwrap_or_else(|| panic!("no {kind} in the banner:\n{}", self.banner))
            .to_owned()
    }

    fn signal(&self, signal: Signal) {
        let pid = self.child.id().expect("still running");
        kill(Pid::from_raw(pid as i32), signal).unwrap();
    }

    /// SIGTERM, then the exit status and the rest of standard output and standard error.
    async fn stop(mut self) -> (ExitStatus, String, String) {
        self.signal(Signal::SIGTERM);
        self.finish().await
    }

    /// SIGKILL: what a crash leaves behind.
    async fn kill(mut self) {
        self.signal(Signal::SIGKILL);
        self.finish().await;
    }

    async fn finish(&mut self) -> (ExitStatus, String, String) {
        let status = tokio::time::timeout(HANG_GUARD, self.child.wait())
            .await
            .expect("the server did not exit within the hang guard")
            .unwrap();
        let stdout = (&mut self.stdout).await.unwrap();
        let stderr = (&mut self.stderr).await.unwrap();
        (status, stdout, stderr)
    }

    async fn get(&self, path: &str, headers: &[(&str, &str)]) -> u16 {
        request(self.addr, "GET", path, headers, None).await.status
    }
}

/// A setup body for the database with this `api_id`.
fn setup_body(api_id: &str) -> String {
    serde_json::json!({
        "id": api_id,
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "billing",
        "username": "deployer",
        "password": "pw-setup-1",
    })
    .to_string()
}

fn data_file_contains(dir: &Path, needle: &str) -> bool {
    let bytes = std::fs::read(dir.join(DATA_FILE)).unwrap();
    bytes
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[tokio::test]
async fn without_a_server_keys_are_created_listed_and_revoked_in_the_data_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");

    // `list` and `revoke` need data; they do not create any.
    let missing = keys_with(&data, &[], &["list"]).await;
    assert!(!missing.status.success());
    assert!(
        missing.stderr.contains("no dbconsole data"),
        "{}",
        missing.stderr
    );
    assert!(!data.exists());

    // `create` makes the store when missing.
    let ci = create(&data, "api-key", "setup", "ci pipeline").await;
    assert!(ci.secret.starts_with("dbc_ak_"), "{}", ci.secret);
    let grafana = create(&data, "access-token", "full", "grafana").await;
    assert!(grafana.secret.starts_with("dbc_at_"), "{}", grafana.secret);
    assert!(!data.join(SOCKET).exists());

    let output = keys(&data, &["list"]).await;
    for secret in [&ci.secret, &grafana.secret] {
        assert!(
            !output.stdout.contains(secret.as_str()),
            "{}",
            output.stdout
        );
        // Only a digest is stored: the secret, or its random part, is nowhere in the file.
        assert!(!data_file_contains(&data, secret));
        assert!(!data_file_contains(&data, &secret[7..]));
    }
    let rows = list(&data).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    let row = |id: &str| rows.iter().find(|row| row[0] == id).unwrap().clone();
    let ci_row = row(&ci.id);
    assert_eq!(&ci_row[1..5], ["api-key", "setup", "ci", "pipeline"]);
    assert_eq!(ci_row.last().unwrap(), "never");
    assert_eq!(&row(&grafana.id)[1..4], ["access-token", "full", "grafana"]);

    let revoked = keys(&data, &["revoke", &ci.id]).await;
    assert!(
        revoked.stdout.starts_with("revoked api-key "),
        "{}",
        revoked.stdout
    );
    assert!(revoked.stdout.contains(&ci.id), "{}", revoked.stdout);
    let rows = list(&data).await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][0], grafana.id);

    let again = keys_with(&data, &[], &["revoke", &ci.id]).await;
    assert!(!again.status.success());
    assert!(
        again.stderr.contains("no key has the id"),
        "{}",
        again.stderr
    );
    assert!(again.stderr.contains(&ci.id), "{}", again.stderr);
    assert_eq!(again.stdout, "");

    let bad = keys_with(
        &data,
        &[],
        &[
            "create", "--kind", "api-key", "--scope", "full", "--name", "  ",
        ],
    )
    .await;
    assert!(!bad.status.success());
    assert!(bad.stderr.contains("must not be empty"), "{}", bad.stderr);
    assert_eq!(list(&data).await.len(), 1);
}

#[tokio::test]
async fn a_key_created_while_the_server_runs_works_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let socket = dir.path().join(SOCKET);
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let api_key = create(dir.path(), "api-key", "full", "from the cli").await;
    let token = create(dir.path(), "access-token", "full", "dashboards").await;
    let key_header = [("x-api-key", api_key.secret.as_str())];
    let created = request(
        server.addr,
        "POST",
        DATABASES,
        &key_header,
        Some(&database_body("pw-1")),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let auth = bearer(&token.secret);
    assert_eq!(
        server.get(DASHBOARDS, &[("authorization", &auth)]).await,
        200
    );
    // Each only as its kind.
    assert_eq!(
        server
            .get(DASHBOARDS, &[("authorization", &bearer(&api_key.secret))])
            .await,
        401
    );
    assert_eq!(
        server.get(DATABASES, &[("x-api-key", &token.secret)]).await,
        401
    );

    // The listing comes from the server's store: the two created at start, these two, and
    // the use just recorded.
    let rows = list(dir.path()).await;
    assert_eq!(rows.len(), 4, "{rows:?}");
    let row = rows.iter().find(|row| row[0] == api_key.id).unwrap();
    assert_ne!(row.last().unwrap(), "never", "{row:?}");

    let (status, stdout, stderr) = server.stop().await;
    assert!(status.success(), "{stderr}");
    assert!(!socket.exists(), "the admin socket outlived the server");
    assert!(stderr.contains("op=\"create\""), "{stderr}");
    assert!(stderr.contains(&api_key.id), "{stderr}");
    for secret in [&api_key.secret, &token.secret] {
        assert!(!stderr.contains(secret.as_str()) && !stdout.contains(secret.as_str()));
    }
}

#[tokio::test]
async fn a_setup_key_may_only_set_up_and_remove() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let setup = create(dir.path(), "api-key", "setup", "terraform").await;
    let header = [("x-api-key", setup.secret.as_str())];

    let put = request(
        server.addr,
        "PUT",
        SETUP,
        &header,
        Some(&setup_body("ext-1")),
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    let id = put.json()["id"].as_str().unwrap().to_owned();

    let forbidden = serde_json::json!({"errors": {"detail": "Forbidden"}});
    let listed = request(server.addr, "GET", DATABASES, &header, None).await;
    assert_eq!(listed.status, 403, "{}", listed.body);
    assert_eq!(listed.json(), forbidden);
    let by_id = format!("{DATABASES}/{id}");
    assert_eq!(server.get(&by_id, &header).await, 403);
    let posted = request(
        server.addr,
        "POST",
        DATABASES,
        &header,
        Some(&database_body("pw-2")),
    )
    .await;
    assert_eq!(posted.status, 403, "{}", posted.body);
    let deleted = request(server.addr, "DELETE", &by_id, &header, None).await;
    assert_eq!(deleted.status, 403, "{}", deleted.body);

    let remove = format!("{DATABASES}/remove/ext-1");
    let removed = request(server.addr, "DELETE", &remove, &header, None).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    server.stop().await;
}

#[tokio::test]
async fn a_key_revoked_on_the_command_line_is_refused_from_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let key = create(dir.path(), "api-key", "full", "short-lived").await;
    let token = create(dir.path(), "access-token", "full", "short-lived").await;
    let header = [("x-api-key", key.secret.as_str())];
    let auth = bearer(&token.secret);
    assert_eq!(server.get(DATABASES, &header).await, 200);
    assert_eq!(
        server.get(DASHBOARDS, &[("authorization", &auth)]).await,
        200
    );

    keys(dir.path(), &["revoke", &key.id]).await;
    assert_eq!(server.get(DATABASES, &header).await, 401);
    keys(dir.path(), &["revoke", &token.id]).await;
    assert_eq!(
        server.get(DASHBOARDS, &[("authorization", &auth)]).await,
        401
    );

    // The keys made at start are untouched.
    let admin_key = server.printed("api-key");
    assert_eq!(
        server.get(DATABASES, &[("x-api-key", &admin_key)]).await,
        200
    );
    let unknown = keys_with(dir.path(), &[], &["revoke", &key.id]).await;
    assert!(!unknown.status.success());
    assert!(
        unknown.stderr.contains("no key has the id"),
        "{}",
        unknown.stderr
    );
    server.stop().await;
}

#[tokio::test]
async fn the_first_start_creates_two_keys_and_a_restart_none() {
    let dir = tempfile::tempdir().unwrap();
    let first = Server::start(dir.path(), &[]).await;
    assert!(first.banner.contains("shown this once"), "{}", first.banner);
    let key = first.printed("api-key");
    let token = first.printed("access-token");
    assert!(key.starts_with("dbc_ak_") && token.starts_with("dbc_at_"));
    assert_eq!(first.get(DATABASES, &[("x-api-key", &key)]).await, 200);
    let (status, stdout, stderr) = first.stop().await;
    assert!(status.success(), "{stderr}");
    // Printed once: in the banner, nowhere after it, never in the log.
    assert!(
        !stdout.contains(&key) && !stdout.contains(&token),
        "{stdout}"
    );
    assert!(
        !stderr.contains(&key) && !stderr.contains(&token),
        "{stderr}"
    );

    // The data file, opened by the command itself now, holds exactly those two, hashed.
    let rows = list(dir.path()).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    let mut kinds: Vec<&str> = rows.iter().map(|row| row[1].as_str()).collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["access-token", "api-key"]);
    assert!(rows.iter().all(|row| row[2] == "full"), "{rows:?}");
    assert!(!data_file_contains(dir.path(), &key));
    assert!(!data_file_contains(dir.path(), &token));

    let second = Server::start(dir.path(), &[]).await;
    assert_eq!(second.banner, "", "a restart printed keys");
    assert_eq!(second.get(DATABASES, &[("x-api-key", &key)]).await, 200);
    assert_eq!(
        second
            .get(DASHBOARDS, &[("authorization", &bearer(&token))])
            .await,
        200
    );
    assert_eq!(list(dir.path()).await.len(), 2);
    second.stop().await;
}

#[tokio::test]
async fn configured_credentials_mean_no_keys_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("DBCONSOLE_API_KEY", "static-key-4f1e")];
    let server = Server::start(dir.path(), &env).await;
    // No key is made; the console's first sign-in link is printed all the same (no user yet).
    assert!(
        server
            .banner
            .starts_with("Sign in to the console as admin (a super admin) within 15 minutes"),
        "{}",
        server.banner
    );
    assert!(!server.banner.contains("dbc_ak_") && !server.banner.contains("dbc_at_"));
    assert_eq!(
        server
            .get(DATABASES, &[("x-api-key", "static-key-4f1e")])
            .await,
        200
    );
    let output = keys(dir.path(), &["list"]).await;
    assert_eq!(output.stdout, "no stored keys\n");
    let (_, _, stderr) = server.stop().await;
    assert!(stderr.contains("no access token is stored"), "{stderr}");
    // S25: the link is the new store's, once. Its session ended (the link revoked unused,
    // as after a sign-out or an idle hour), a restart prints none: its output is the service's
    // log, and the way in is `dbconsole sessions link` on the host.
    let data = dir.path().to_str().unwrap();
    let revoked = dbconsole(
        &[],
        &["sessions", "--data-dir", data, "revoke", "--user", "admin"],
    )
    .output()
    .await
    .unwrap();
    assert!(
        revoked.status.success(),
        "{}",
        String::from_utf8_lossy(&revoked.stderr)
    );
    let again = Server::start(dir.path(), &env).await;
    assert!(
        !again.banner.contains("sign-in"),
        "a restart printed a link: {}",
        again.banner
    );
    let (_, stdout, _) = again.stop().await;
    assert!(!stdout.contains("#sign-in="), "{stdout}");
}

#[tokio::test]
async fn through_the_socket_the_command_needs_no_secret_key() {
    let dir = tempfile::tempdir().unwrap();
    let secret_key = [(
        "DBCONSOLE_SECRET_KEY",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
    )];
    let server = Server::start(dir.path(), &secret_key).await;
    // The command has no DBCONSOLE_SECRET_KEY, and the data directory has no key file: the
    // server does the work.
    let key = create(dir.path(), "api-key", "full", "ops").await;
    assert_eq!(
        server.get(DATABASES, &[("x-api-key", &key.secret)]).await,
        200
    );
    assert!(!dir.path().join("secret.key").exists());
    server.stop().await;

    // Without the server, the command opens the file and needs the key like `serve` does.
    let refused = keys_with(dir.path(), &[], &["list"]).await;
    assert!(!refused.status.success());
    assert!(
        refused.stderr.contains("DBCONSOLE_SECRET_KEY"),
        "{}",
        refused.stderr
    );
    assert!(!dir.path().join("secret.key").exists());
    let listed = keys_with(dir.path(), &secret_key, &["list"]).await;
    assert!(listed.status.success(), "{}", listed.stderr);
    assert!(listed.stdout.contains(&key.id), "{}", listed.stdout);
}

#[tokio::test]
async fn a_socket_left_by_a_killed_server_is_not_in_the_way() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join(SOCKET);
    let server = Server::start(dir.path(), &[]).await;
    let key = server.printed("api-key");
    server.kill().await;
    assert!(socket.exists(), "SIGKILL leaves the socket");

    // Nothing answers there: the command opens the file itself.
    let made = create(dir.path(), "api-key", "full", "after the crash").await;
    assert_eq!(list(dir.path()).await.len(), 3);

    // The next start replaces the stale socket and serves both keys.
    let server = Server::start(dir.path(), &[]).await;
    assert_eq!(server.banner, "");
    for secret in [&key, &made.secret] {
        assert_eq!(server.get(DATABASES, &[("x-api-key", secret)]).await, 200);
    }
    keys(dir.path(), &["revoke", &made.id]).await;
    assert_eq!(
        server.get(DATABASES, &[("x-api-key", &made.secret)]).await,
        401
    );
    server.stop().await;
    assert!(!socket.exists());
}

#[tokio::test]
async fn the_memory_storage_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    for (env, args) in [
        (&[("DBCONSOLE_STORAGE", "memory")][..], &["list"][..]),
        (&[], &["--storage", "memory", "list"]),
        (
            &[("DBCONSOLE_STORAGE", "memory")],
            &[
                "create", "--kind", "api-key", "--scope", "full", "--name", "x",
            ],
        ),
    ] {
        let refused = keys_with(&data_dir, env, args).await;
        assert!(!refused.status.success(), "{env:?} {args:?}");
        assert_eq!(refused.stdout, "");
        assert!(
            refused.stderr.starts_with("dbconsole: the memory storage")
                && refused.stderr.contains("--storage redb"),
            "{}",
            refused.stderr
        );
    }
    assert!(!data_dir.exists(), "a memory command created the data dir");
}

#[tokio::test]
async fn keys_bound_to_a_user_say_so_and_query_scopes_need_one() {
    let dir = tempfile::tempdir().unwrap();
    let output = keys(
        dir.path(),
        &[
            "create",
            "--kind",
            "api-key",
            "--scope",
            "query",
            "--name",
            "alice",
            "--user",
            "alice@example.com",
            "--groups",
            "data-team,ops",
            "--role",
            "super-admin",
        ],
    )
    .await;
    assert_eq!(
        output.field("user"),
        "alice@example.com (role super-admin; groups: data-team, ops)"
    );
    for (args, says) in [
        (
            &[
                "create", "--kind", "api-key", "--scope", "query", "--name", "x",
            ][..],
            "--user",
        ),
        (
            &[
                "create", "--kind", "api-key", "--scope", "ai-agent", "--name", "x",
            ][..],
            "--user",
        ),
        (
            &[
                "create", "--kind", "api-key", "--scope", "setup", "--name", "x", "--user", "a",
            ][..],
            "setup key",
        ),
        (
            &[
                "create", "--kind", "api-key", "--scope", "full", "--name", "x", "--groups", "g",
            ][..],
            "--user",
        ),
    ] {
        let refused = keys_with(dir.path(), &[], args).await;
        assert!(!refused.status.success(), "{args:?} must fail");
        assert!(
            refused.stderr.contains(says),
            "{args:?}: {}",
            refused.stderr
        );
    }
}
