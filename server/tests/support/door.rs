//! A server with its PostgreSQL door for the door's tests (`door.rs`, `door_clients.rs`): a redb
//! store in a temporary directory, an admin key, query keys and browser sessions for people,
//! databases on the CI's PostgreSQL (127.0.0.1:5432), psql and tokio-postgres through the door.

use std::process::Output;
use std::time::Duration;

use rustls_pki_types::pem::PemObject as _;
use serde_json::{Value, json};

use super::process::Server;
use super::{Response, dbconsole, request};

pub(crate) const ADMIN_KEY: &str = "door-admin-key-7f3a9c";
const BROWSER: [(&str, &str); 3] = [
    ("x-dbconsole-request", "1"),
    ("origin", "http://localhost"),
    ("content-type", "application/json"),
];

/// A server with its door, on a redb store in a temporary directory (or the storage its
/// environment names).
pub(crate) struct Door {
    pub(crate) server: Server,
    /// `host:port` of the door.
    pub(crate) door: String,
    pub(crate) dir: tempfile::TempDir,
    /// The storage's environment, for the commands run beside it.
    storage: Vec<(String, String)>,
}

impl Door {
    pub(crate) async fn start(extra: &[&str]) -> Self {
        Self::start_on(&[("DBCONSOLE_STORAGE", "redb")], extra).await
    }

    /// A server on the storage `storage` names (its `DBCONSOLE_…` variables).
    pub(crate) async fn start_on(storage: &[(&str, &str)], extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let data = data.to_str().unwrap().to_owned();
        let mut args = vec![
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            &data,
            "--door-listen",
            "127.0.0.1:0",
        ];
        args.extend_from_slice(extra);
        let mut env = storage.to_vec();
        env.push(("DBCONSOLE_API_KEY", ADMIN_KEY));
        let server = Server::start_with(&env, &args).await;
        let line = server
            .stdout
            .line("the door's line", |line| {
                line.starts_with("PostgreSQL door on ")
            })
            .await;
        let door = line["PostgreSQL door on ".len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned();
        Self {
            server,
            door,
            dir,
            storage: storage
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    fn storage_env(&self) -> Vec<(&str, &str)> {
        self.storage
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    pub(crate) fn data(&self) -> String {
        self.dir.path().join("data").to_str().unwrap().to_owned()
    }

    /// A call with the admin key.
    pub(crate) async fn admin(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string());
        let response = request(
            self.server.addr,
            method,
            path,
            &[
                ("x-api-key", ADMIN_KEY),
                ("content-type", "application/json"),
            ],
            body.as_deref(),
        )
        .await;
        assert!(
            response.status < 300,
            "{method} {path}: {} {}",
            response.status,
            response.body
        );
        if response.body.is_empty() {
            Value::Null
        } else {
            response.json()
        }
    }

    /// A database on the CI's PostgreSQL, as `checker`; answers its id.
    pub(crate) async fn database(&self, name: &str, extra: Value) -> String {
        let mut body = json!({
            "name": name,
            "adapter": "postgres",
            "hostname": "127.0.0.1",
            "port": 5432,
            "database": "checkdb",
            "credentials": [{"username": "checker", "password": "checkpw"}],
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let db = self
            .admin("POST", "/api/v1/console/databases", Some(body))
            .await;
        db["id"].as_str().unwrap().to_owned()
    }

    /// A query key bound to `user`, made with `dbconsole keys create`.
    pub(crate) async fn key(&self, user: &str) -> String {
        let data = self.data();
        let output = dbconsole(
            &self.storage_env(),
            &[
                "keys",
                "create",
                "--data-dir",
                &data,
                "--kind",
                "api-key",
                "--scope",
                "query",
                "--name",
                user,
                "--user",
                user,
            ],
        )
        .output()
        .await
        .unwrap();
        let text = String::from_utf8(output.stdout).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("secret: "))
            .unwrap_or_else(|| {
                panic!(
                    "no secret: {text} {}",
                    String::from_utf8_lossy(&output.stderr)
                )
            })
            .trim()
            .to_owned()
    }

    /// A browser session's cookie for `user`, through a sign-in link.
    pub(crate) async fn signed_in(&self, user: &str) -> String {
        let data = self.data();
        let output = dbconsole(
            &self.storage_env(),
            &["sessions", "link", "--data-dir", &data, "--user", user],
        )
        .output()
        .await
        .unwrap();
        let text = String::from_utf8(output.stdout).unwrap();
        let token = text
            .split("#sign-in=")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no link: {text}"))
            .to_owned();
        let body = json!({ "token": token }).to_string();
        let response = request(
            self.server.addr,
            "POST",
            "/api/v1/console/sign-in/link",
            &BROWSER,
            Some(&body),
        )
        .await;
        assert_eq!(response.status, 200, "{}", response.body);
        response
            .header("set-cookie")
            .and_then(|c| c.split(';').next())
            .unwrap()
            .to_owned()
    }

    /// A call as the browser holding `cookie`.
    pub(crate) async fn browser(
        &self,
        cookie: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Response {
        let mut headers = BROWSER.to_vec();
        headers.push(("cookie", cookie));
        let body = body.map(|b| b.to_string());
        request(self.server.addr, method, path, &headers, body.as_deref()).await
    }

    pub(crate) fn conninfo(&self, user: &str, dbname: &str, sslmode: &str) -> String {
        let (host, port) = self.door.rsplit_once(':').unwrap();
        format!(
            "host={host} port={port} user={user} dbname={dbname} sslmode={sslmode} \
             connect_timeout=10"
        )
    }

    /// psql through the door.
    pub(crate) async fn psql(
        &self,
        user: &str,
        password: &str,
        dbname: &str,
        args: &[&str],
    ) -> Psql {
        psql(&self.conninfo(user, dbname, "require"), password, args).await
    }

    /// psql through the door running `select pg_sleep(60)` marked with `tag`, in the
    /// background.
    pub(crate) fn sleep(&self, user: &str, password: &str, dbname: &str, tag: &str) -> Sleeping {
        let marker = format!("select pg_sleep(60) -- {tag} {}", std::process::id());
        let child = tokio::process::Command::new("psql")
            .arg(self.conninfo(user, dbname, "require"))
            .args(["-X", "-c", &marker])
            .env("PGPASSWORD", password)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("psql (Debian's postgresql-client) must be installed: bash .ci/tools-up.sh");
        Sleeping { child, marker }
    }
}

/// A `pg_sleep(60)` through the door ([`Door::sleep`]).
pub(crate) struct Sleeping {
    pub(crate) child: tokio::process::Child,
    pub(crate) marker: String,
}

impl Sleeping {
    /// How many statements with its marker the database runs now.
    pub(crate) async fn active(&self) -> String {
        let count = format!(
            "select count(*) from pg_stat_activity where state = 'active' and query = '{}'",
            self.marker.replace('\'', "''")
        );
        direct(&["-Atc", &count]).await.out.trim().to_owned()
    }

    /// Waits (30 s at most) until the database runs `count` (0 or 1) of it.
    pub(crate) async fn until(&self, count: &str) {
        let wait = async {
            while self.active().await != count {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(30), wait)
            .await
            .unwrap_or_else(|_| panic!("{}: never {count} running", self.marker));
    }

    /// Waits for psql to end: how it ended and what it said on stderr.
    pub(crate) async fn finish(&mut self) -> (std::process::ExitStatus, String) {
        use tokio::io::AsyncReadExt as _;
        let mut stderr = self.child.stderr.take().expect("its stderr is piped");
        let mut err = String::new();
        let (status, _) = tokio::join!(self.child.wait(), stderr.read_to_string(&mut err));
        (status.expect("psql ran"), err)
    }

    /// Its pid, to signal.
    pub(crate) fn pid(&self) -> nix::unistd::Pid {
        nix::unistd::Pid::from_raw(
            i32::try_from(self.child.id().expect("psql is running")).expect("a pid"),
        )
    }
}

/// What psql printed.
#[derive(Debug)]
pub(crate) struct Psql {
    pub(crate) ok: bool,
    pub(crate) out: String,
    pub(crate) err: String,
}

pub(crate) async fn psql(conninfo: &str, password: &str, args: &[&str]) -> Psql {
    let output: Output = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new("psql")
            .arg(conninfo)
            .args(["-X", "-v", "ON_ERROR_STOP=1"])
            .args(args)
            .env("PGPASSWORD", password)
            .env_remove("PGSERVICE")
            .output(),
    )
    .await
    .expect("psql hung")
    .expect("psql (Debian's postgresql-client) must be installed: bash .ci/tools-up.sh");
    Psql {
        ok: output.status.success(),
        out: String::from_utf8_lossy(&output.stdout).into_owned(),
        err: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// psql connected directly to the CI's PostgreSQL as `checker`.
pub(crate) async fn direct(args: &[&str]) -> Psql {
    psql(
        "host=127.0.0.1 port=5432 user=checker dbname=checkdb sslmode=disable",
        "checkpw",
        args,
    )
    .await
}

/// tokio-postgres through the door, verifying its certificate (the one the server made, whose
/// names include localhost): the extended protocol with binary results.
pub(crate) async fn driver(
    door: &Door,
    user: &str,
    password: &str,
    dbname: &str,
) -> tokio_postgres::Client {
    let pem = std::fs::read(door.dir.path().join("data/door-cert.pem")).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pki_types::CertificateDer::pem_slice_iter(&pem) {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let port: u16 = door.door.rsplit_once(':').unwrap().1.parse().unwrap();
    let mut config = tokio_postgres::Config::new();
    config
        .host("localhost")
        .port(port)
        .user(user)
        .password(password)
        .dbname(dbname)
        .ssl_mode(tokio_postgres::config::SslMode::Require);
    let (client, connection) = config
        .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
        .await
        .expect("connect through the door with a verified certificate");
    tokio::spawn(connection);
    client
}
