//! A fault test of `--storage postgres`: one `dbconsole` node on a private PostgreSQL instance
//! that the test starts itself (never the shared one on port 5432), under a steady write load,
//! while that instance is stopped (`pg_ctl stop -m fast`), started again, crashed
//! (`pg_ctl stop -m immediate`) and started again.
//!
//! What must hold: every write the node acknowledged (200 with an id) is stored, and every
//! stored write was answered 200 or "it may have been saved" (or not answered at all): none
//! answered "nothing was saved" is stored (the commit whose answer was lost is found out
//! with `txid_status`); while
//! PostgreSQL is down the node answers 503 (never another error), `/healthz` stays 200 and
//! `/readyz` is 503; the node recovers by itself once PostgreSQL is back; no request hangs
//! (every one is answered well within the storage timeout plus a margin).
//!
//! The test needs the PostgreSQL server binaries (`initdb`, `pg_ctl` under
//! `/usr/lib/postgresql/*/bin`); `sudo bash .ci/db-servers-up.sh` installs them. PostgreSQL
//! refuses to run as root: as root (CI), the instance runs as the `postgres` system user.

mod support;

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dbconsole_tests::eventually;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Child;
use tokio::task::JoinHandle;

use support::request;

const DATABASES: &str = "/api/v1/console/databases";
const KEY: &str = "fault-api-key-3f9a61";
/// Standard base64 of 32 zero bytes.
const SECRET_KEY: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
const UNAVAILABLE: &str = "storage temporarily unavailable, try again";
/// What a write whose commit's outcome could not be found out answers (503).
const MAY_HAVE_BEEN_SAVED: &str = "it may have been saved";

/// The storage timeout of the node (`PostgresOptions::timeout`).
const STORAGE_TIMEOUT: Duration = Duration::from_secs(5);
/// No request may take this long: the storage timeout plus a generous margin. A "never hangs"
/// bound, not a speed measurement.
const LATENCY_BOUND: Duration = Duration::from_secs(15);
/// A request not answered within this is given up on (and fails the latency bound).
const HANG_GUARD: Duration = Duration::from_secs(20);
/// Writers working at once.
const WRITERS: usize = 6;
/// Of them, the ones that retry each create with an `Idempotency-Key` until it is answered 200.
const RETRYING: usize = 2;

// ---------------------------------------------------------------------------------------------
// The private PostgreSQL instance
// ---------------------------------------------------------------------------------------------

/// The directory of the PostgreSQL server binaries (`initdb`, `pg_ctl`): the newest version
/// under `/usr/lib/postgresql`. Panics, saying how to install them, when there is none.
fn postgres_bin_dir() -> PathBuf {
    let root = Path::new("/usr/lib/postgresql");
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            (bin.join("initdb").is_file() && bin.join("pg_ctl").is_file()).then_some((version, bin))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "this test needs the PostgreSQL server binaries (initdb and pg_ctl under \
             /usr/lib/postgresql/*/bin) and found none; install them with \
             `sudo bash .ci/db-servers-up.sh` (it installs the postgresql package)"
        ),
    }
}

/// A free TCP port on 127.0.0.1 (bound, then released).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().unwrap().port()
}

/// A PostgreSQL instance of the test's own, in a temporary directory: initialised and started
/// by [`PrivatePostgres::start_new`], stopped (`-m immediate`) when dropped, also when the test
/// fails.
struct PrivatePostgres {
    bin: PathBuf,
    port: u16,
    /// Run the tools as the `postgres` system user (the test runs as root).
    as_postgres: bool,
    /// Dropped after `drop` has stopped the instance: the data directory goes last.
    dir: tempfile::TempDir,
}

impl PrivatePostgres {
    fn start_new() -> Self {
        let bin = postgres_bin_dir();
        let as_postgres = nix::unistd::geteuid().is_root();
        // Under /tmp, which the `postgres` user can reach (a root's TMPDIR may not be).
        let dir = tempfile::Builder::new()
            .prefix("dbconsole-pgfault-")
            .tempdir_in(if as_postgres {
                PathBuf::from("/tmp")
            } else {
                std::env::temp_dir()
            })
            .expect("create a temporary directory");
        if as_postgres {
            let user = nix::unistd::User::from_name("postgres")
                .expect("look up the postgres user")
                .unwrap_or_else(|| {
                    panic!(
                        "running as root, this test runs PostgreSQL as the `postgres` system \
                         user, and there is none; install the postgresql package with \
                         `sudo bash .ci/db-servers-up.sh`"
                    )
                });
            std::os::unix::fs::chown(dir.path(), Some(user.uid.as_raw()), Some(user.gid.as_raw()))
                .expect("chown the temporary directory to postgres");
        }
        let postgres = Self {
            bin,
            port: free_port(),
            as_postgres,
            dir,
        };
        let data = postgres.data();
        postgres
            .run(
                "initdb",
                &[
                    "-D",
                    &data,
                    "-U",
                    "dbconsole",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ],
            )
            .unwrap_or_else(|error| panic!("{error}"));
        postgres.start();
        postgres
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    fn log_file(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    fn url(&self) -> String {
        format!("postgres://dbconsole@127.0.0.1:{}/postgres", self.port)
    }

    /// One of the PostgreSQL tools, as the `postgres` user when the test runs as root.
    fn command(&self, program: &str) -> StdCommand {
        let path = self.bin.join(program);
        let mut command = if self.as_postgres {
            let mut command = StdCommand::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            StdCommand::new(path)
        };
        command
            .current_dir(self.dir.path())
            .env_remove("PGDATA")
            .env_remove("PGPORT")
            .env_remove("PGHOST")
            .stdin(Stdio::null());
        command
    }

    /// Runs a tool to its end; its output, or an error with the output and the server log.
    fn run(&self, program: &str, args: &[&str]) -> Result<String, String> {
        let output = self
            .command(program)
            .args(args)
            .output()
            .map_err(|error| format!("cannot run {program}: {error}"))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        if output.status.success() {
            Ok(text)
        } else {
            Err(format!(
                "{program} {args:?} failed ({}):\n{text}\nserver log:\n{}",
                output.status,
                std::fs::read_to_string(self.log_file()).unwrap_or_default()
            ))
        }
    }

    /// `pg_ctl start -w`: returns once the instance accepts connections.
    fn start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1",
            self.port,
            self.dir.path().display()
        );
        let data = self.data();
        let log = self.log_file().display().to_string();
        self.run(
            "pg_ctl",
            &[
                "-D", &data, "-l", &log, "-o", &options, "-w", "-t", "60", "start",
            ],
        )
        .unwrap_or_else(|error| panic!("{error}"));
    }

    /// `pg_ctl stop -m <mode> -w`: `fast` (clean shutdown, sessions ended) or `immediate` (a
    /// crash: recovery at the next start).
    fn stop(&self, mode: &str) -> Result<String, String> {
        let data = self.data();
        self.run(
            "pg_ctl",
            &["-D", &data, "-m", mode, "-w", "-t", "60", "stop"],
        )
    }
}

impl Drop for PrivatePostgres {
    fn drop(&mut self) {
        // Synchronous, so that it also runs while a failed test unwinds. An instance already
        // stopped makes pg_ctl fail; that is fine.
        let data = self.data();
        let _ = self
            .command("pg_ctl")
            .args(["-D", &data, "-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

// ---------------------------------------------------------------------------------------------
// The node
// ---------------------------------------------------------------------------------------------

/// The last lines a child printed on one pipe.
type Tail = Arc<Mutex<VecDeque<String>>>;

const TAIL_LINES: usize = 300;

/// Keeps the last [`TAIL_LINES`] lines of `pipe` in `tail`; the reader ends at the pipe's end.
fn collect_tail(pipe: impl AsyncRead + Unpin + Send + 'static, tail: Tail) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut lines = BufReader::new(pipe).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let mut tail = tail.lock().unwrap();
            if tail.len() == TAIL_LINES {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    })
}

/// One `dbconsole serve --storage postgres` process (killed when dropped).
struct Node {
    _child: Child,
    addr: SocketAddr,
    log: Tail,
}

impl Node {
    async fn start(postgres: &PrivatePostgres) -> Self {
        let data_dir = postgres.dir.path().join("node");
        std::fs::create_dir_all(&data_dir).unwrap();
        let url = postgres.url();
        let data_dir = data_dir.display().to_string();
        let mut child = support::dbconsole(
            &[
                ("DBCONSOLE_SECRET_KEY", SECRET_KEY),
                ("DBCONSOLE_API_KEY", KEY),
            ],
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--storage",
                "postgres",
                "--database-url",
                &url,
                "--database-schema",
                "dbconsole",
                "--data-dir",
                &data_dir,
            ],
        )
        .spawn()
        .expect("spawn dbconsole");
        let log: Tail = Arc::default();
        let log_read = collect_tail(child.stderr.take().unwrap(), Arc::clone(&log));
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let waited = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = stdout.next_line().await {
                if let Some(addr) = line.strip_prefix("listening on ") {
                    return Some(addr.parse::<SocketAddr>().unwrap());
                }
            }
            None
        })
        .await;
        let addr = match waited {
            Ok(Some(addr)) => addr,
            failed => {
                // The whole log: the process ended (or is ended now), and its log is read to
                // its end.
                let _ = child.start_kill();
                let _ = tokio::time::timeout(HANG_GUARD, log_read).await;
                panic!(
                    "dbconsole did not print `listening on` ({}); its log:\n{}",
                    if failed.is_err() {
                        "not within 30 s"
                    } else {
                        "its output ended"
                    },
                    log.lock()
                        .unwrap()
                        .iter()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
        };
        // Keep the pipe drained.
        let stdout_tail: Tail = Arc::default();
        collect_tail(stdout.into_inner().into_inner(), stdout_tail);
        Self {
            _child: child,
            addr,
            log,
        }
    }
}

/// When the test fails: the node's last log lines and the PostgreSQL log, before the instance
/// is stopped (declare it after the [`PrivatePostgres`]).
struct PrintOnFailure {
    log: Tail,
    postgres_log: PathBuf,
}

impl Drop for PrintOnFailure {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log.lock().unwrap_or_else(|poison| poison.into_inner());
            eprintln!(
                "--- dbconsole log (last {} lines) ---\n{}",
                log.len(),
                log.iter().cloned().collect::<Vec<_>>().join("\n")
            );
            let postgres_log = std::fs::read_to_string(&self.postgres_log).unwrap_or_default();
            let lines: Vec<&str> = postgres_log.lines().collect();
            eprintln!(
                "--- PostgreSQL log (last lines) ---\n{}",
                lines[lines.len().saturating_sub(60)..].join("\n")
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The load
// ---------------------------------------------------------------------------------------------

/// One create request of a writer.
#[derive(Debug)]
struct Outcome {
    started: Instant,
    finished: Instant,
    /// 0: no answer within [`HANG_GUARD`].
    status: u16,
    /// The name sent; with the id answered when the write was acknowledged.
    name: String,
    id: Option<String>,
    body: String,
}

impl Outcome {
    fn latency(&self) -> Duration {
        self.finished - self.started
    }

    fn acknowledged(&self) -> bool {
        self.status == 200
    }

    fn unavailable(&self) -> bool {
        self.status == 503
    }

    /// Answered "it may have been saved": the one answer allowed to leave a record behind
    /// besides 200.
    fn maybe_saved(&self) -> bool {
        self.status == 503 && self.body.contains(MAY_HAVE_BEEN_SAVED)
    }
}

type Outcomes = Arc<Mutex<Vec<Outcome>>>;

fn create_body(name: &str) -> String {
    serde_json::json!({
        "name": name,
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "credentials": [{"username": "reader", "password": "pw-fault"}]
    })
    .to_string()
}

/// Creates databases, one request at a time, until `stop`; every outcome goes to `outcomes`.
/// A writer that retries (the last [`RETRYING`] of them) sends each create with an
/// `Idempotency-Key` (its name) and sends it again, the same, until it is answered 200; the
/// others send each create once, without a key.
async fn writer(writer: usize, addr: SocketAddr, stop: Arc<AtomicBool>, outcomes: Outcomes) {
    let retrying = writer >= WRITERS - RETRYING;
    let mut sequence = 0u64;
    let mut pending: Option<String> = None;
    while !stop.load(Ordering::Relaxed) {
        let name = match pending.take() {
            Some(name) => name,
            None => {
                sequence += 1;
                if retrying {
                    format!("fault-r{writer}-{sequence}")
                } else {
                    format!("fault-w{writer}-{sequence}")
                }
            }
        };
        let body = create_body(&name);
        let mut headers = vec![("x-api-key", KEY)];
        if retrying {
            headers.push(("idempotency-key", name.as_str()));
        }
        let started = Instant::now();
        let answered = tokio::time::timeout(
            HANG_GUARD,
            request(addr, "POST", DATABASES, &headers, Some(&body)),
        )
        .await;
        let finished = Instant::now();
        let outcome = match answered {
            Ok(response) => {
                let id = (response.status == 200).then(|| {
                    response.json()["id"]
                        .as_str()
                        .unwrap_or_else(|| panic!("200 without an id: {}", response.body))
                        .to_owned()
                });
                Outcome {
                    started,
                    finished,
                    status: response.status,
                    name,
                    id,
                    body: response.body,
                }
            }
            Err(_) => Outcome {
                started,
                finished,
                status: 0,
                name,
                id: None,
                body: String::from("no answer within the hang guard"),
            },
        };
        let back_off = outcome.unavailable();
        if retrying && !outcome.acknowledged() {
            pending = Some(outcome.name.clone());
        }
        outcomes.lock().unwrap().push(outcome);
        if back_off {
            // What a client does on 503; also keeps the loop from spinning.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// The load: [`WRITERS`] writers and what they saw.
struct Load {
    stop: Arc<AtomicBool>,
    outcomes: Outcomes,
    writers: Vec<JoinHandle<()>>,
}

impl Load {
    fn start(addr: SocketAddr) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let outcomes: Outcomes = Arc::default();
        let writers = (0..WRITERS)
            .map(|n| tokio::spawn(writer(n, addr, Arc::clone(&stop), Arc::clone(&outcomes))))
            .collect();
        Self {
            stop,
            outcomes,
            writers,
        }
    }

    /// Panics when a writer ended before being told to (it panicked: see its message above).
    fn check_alive(&self) {
        assert!(
            self.writers.iter().all(|writer| !writer.is_finished()),
            "a writer stopped early (it panicked, see above)"
        );
    }

    /// Writes acknowledged whose request started at or after `since`.
    fn acknowledged_since(&self, since: Instant) -> usize {
        self.outcomes
            .lock()
            .unwrap()
            .iter()
            .filter(|outcome| outcome.acknowledged() && outcome.started >= since)
            .count()
    }

    /// Keeps the load going for `duration`, checking the writers meanwhile.
    async fn run_for(&self, duration: Duration) {
        let until = Instant::now() + duration;
        while Instant::now() < until {
            self.check_alive();
            tokio::time::sleep(Duration::from_millis(50).min(until - Instant::now())).await;
        }
    }

    /// Waits (at most `bound`) until `count` writes started at or after `since` were
    /// acknowledged.
    async fn wait_for_acknowledged(
        &self,
        since: Instant,
        count: usize,
        bound: Duration,
        what: &str,
    ) {
        eventually(
            bound,
            &format!("{what}: {count} writes acknowledged"),
            || async {
                self.check_alive();
                (self.acknowledged_since(since) >= count).then_some(())
            },
        )
        .await;
    }

    /// Stops the writers; everything they saw.
    async fn finish(mut self) -> Vec<Outcome> {
        self.stop.store(true, Ordering::Relaxed);
        for writer in std::mem::take(&mut self.writers) {
            tokio::time::timeout(HANG_GUARD + Duration::from_secs(5), writer)
                .await
                .expect("a writer did not stop")
                .expect("a writer panicked");
        }
        std::mem::take(&mut *self.outcomes.lock().unwrap())
    }
}

impl Drop for Load {
    /// A test that fails stops its writers at once (they would fail on the node going away).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for writer in &self.writers {
            writer.abort();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Outages
// ---------------------------------------------------------------------------------------------

/// The moments of one outage.
#[derive(Debug)]
struct Outage {
    mode: &'static str,
    /// `pg_ctl stop` issued.
    stopping: Instant,
    /// `pg_ctl stop` returned: PostgreSQL is down.
    down: Instant,
    /// `pg_ctl start` issued.
    starting: Instant,
    /// `pg_ctl start` returned: PostgreSQL accepts connections.
    up: Instant,
    /// `/readyz` answered 200 again.
    ready: Instant,
}

/// A probe with the latency bound.
/// The names of every database the test's writers made that is stored, read page by page
/// through the API.
async fn stored_names(addr: SocketAddr) -> HashMap<String, usize> {
    let mut names = HashMap::new();
    let mut after: Option<String> = None;
    loop {
        let mut path = format!("{DATABASES}?limit=500&name_prefix=fault-");
        if let Some(after) = &after {
            path.push_str(&format!("&after={after}"));
        }
        let response = tokio::time::timeout(
            HANG_GUARD,
            request(addr, "GET", &path, &[("x-api-key", KEY)], None),
        )
        .await
        .unwrap_or_else(|_| panic!("GET {path} was not answered"));
        assert_eq!(response.status, 200, "{path}: {}", response.body);
        let page = response.json();
        for database in page["data"].as_array().expect("a page") {
            *names
                .entry(database["name"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
        match page["next"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return names,
        }
    }
}

async fn probe(addr: SocketAddr, path: &str) -> support::Response {
    let started = Instant::now();
    let response = tokio::time::timeout(HANG_GUARD, request(addr, "GET", path, &[], None))
        .await
        .unwrap_or_else(|_| panic!("GET {path} was not answered within {HANG_GUARD:?}"));
    let latency = started.elapsed();
    assert!(
        latency < LATENCY_BOUND,
        "GET {path} took {latency:?} (bound {LATENCY_BOUND:?})"
    );
    response
}

/// Stops PostgreSQL with `mode` under the load, keeps it down for `down_for` (probing
/// `/healthz` and `/readyz` meanwhile), starts it again and waits until the node is ready and
/// acknowledges writes again.
async fn outage(
    postgres: &PrivatePostgres,
    node: &Node,
    load: &Load,
    mode: &'static str,
    down_for: Duration,
) -> Outage {
    let stopping = Instant::now();
    tokio::task::block_in_place(|| postgres.stop(mode))
        .unwrap_or_else(|error| panic!("stopping PostgreSQL ({mode}): {error}"));
    let down = Instant::now();

    let mut probes = 0;
    while down.elapsed() < down_for {
        load.run_for(Duration::from_millis(700)).await;
        let health = probe(node.addr, "/healthz").await;
        assert_eq!(
            (health.status, health.body.as_str()),
            (200, "ok"),
            "/healthz while PostgreSQL is down ({mode})"
        );
        let ready = probe(node.addr, "/readyz").await;
        assert_eq!(
            (ready.status, ready.body.as_str()),
            (503, "not ready: storage unavailable"),
            "/readyz while PostgreSQL is down ({mode})"
        );
        probes += 1;
    }
    assert!(probes > 0);

    let starting = Instant::now();
    tokio::task::block_in_place(|| postgres.start());
    let up = Instant::now();

    // The node must recover by itself.
    let ready = eventually(
        Duration::from_secs(30),
        &format!("/readyz answers 200 after PostgreSQL came back ({mode})"),
        || async {
            load.check_alive();
            let response = probe(node.addr, "/readyz").await;
            if response.status != 200 {
                return None;
            }
            assert_eq!(response.body, "ready");
            Some(Instant::now())
        },
    )
    .await;
    load.wait_for_acknowledged(
        up,
        20,
        Duration::from_secs(15),
        &format!("after the restart ({mode})"),
    )
    .await;
    Outage {
        mode,
        stopping,
        down,
        starting,
        up,
        ready,
    }
}

// ---------------------------------------------------------------------------------------------
// The test
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_postgres_stops_and_crashes_and_the_node_recovers() {
    let test_started = Instant::now();
    let postgres = tokio::task::block_in_place(PrivatePostgres::start_new);
    let node = Node::start(&postgres).await;
    let _print_on_failure = PrintOnFailure {
        log: Arc::clone(&node.log),
        postgres_log: postgres.log_file(),
    };
    let ready = probe(node.addr, "/readyz").await;
    assert_eq!((ready.status, ready.body.as_str()), (200, "ready"));

    let load = Load::start(node.addr);
    load.run_for(Duration::from_millis(1500)).await;
    let before = load.acknowledged_since(test_started);
    assert!(before > 0, "no write acknowledged before the outage");

    // A clean stop: sessions are ended, the listening socket closes.
    let fast = outage(&postgres, &node, &load, "fast", Duration::from_secs(3)).await;
    load.run_for(Duration::from_millis(1000)).await;
    // A crash: no shutdown checkpoint, recovery at the next start.
    let immediate = outage(&postgres, &node, &load, "immediate", Duration::from_secs(2)).await;
    load.run_for(Duration::from_millis(500)).await;
    let outcomes = load.finish().await;
    let outages = [fast, immediate];

    // Only 200 and 503 (nothing saved, or it may have been saved) are answered, and nothing
    // hangs.
    let unexpected: Vec<&Outcome> = outcomes
        .iter()
        .filter(|outcome| {
            !(outcome.acknowledged()
                || outcome.unavailable() && outcome.body.contains(UNAVAILABLE)
                || outcome.maybe_saved())
        })
        .collect();
    assert!(
        unexpected.is_empty(),
        "{} answers other than 200 or 503 `{UNAVAILABLE}` or `{MAY_HAVE_BEEN_SAVED}`, the \
         first ones: {:#?}",
        unexpected.len(),
        &unexpected[..unexpected.len().min(5)]
    );
    let slowest = outcomes
        .iter()
        .max_by_key(|outcome| outcome.latency())
        .expect("some requests");
    assert!(
        slowest.latency() < LATENCY_BOUND,
        "a request took {:?} (bound {LATENCY_BOUND:?}: the storage timeout {STORAGE_TIMEOUT:?} \
         plus a margin): {slowest:?}",
        slowest.latency()
    );

    // Acknowledged before the first outage, 503 while down, acknowledged after each recovery.
    let acknowledged: Vec<&Outcome> = outcomes.iter().filter(|o| o.acknowledged()).collect();
    let before = acknowledged
        .iter()
        .filter(|outcome| outcome.finished < outages[0].stopping)
        .count();
    assert!(before > 0, "no write acknowledged before the first outage");
    let mut per_outage = Vec::new();
    for (n, outage) in outages.iter().enumerate() {
        // Until the next outage began (or the load stopped).
        let next = outages.get(n + 1).map(|next| next.stopping);
        let unavailable_while_down = outcomes
            .iter()
            .filter(|outcome| {
                outcome.unavailable()
                    && outcome.started >= outage.down
                    && outcome.finished <= outage.starting
            })
            .count();
        assert!(
            unavailable_while_down > 0,
            "no 503 answered while PostgreSQL was down ({})",
            outage.mode
        );
        let acknowledged_while_down = acknowledged
            .iter()
            .filter(|outcome| outcome.started >= outage.down && outcome.finished <= outage.starting)
            .count();
        assert_eq!(
            acknowledged_while_down, 0,
            "writes acknowledged while PostgreSQL was down ({})",
            outage.mode
        );
        let after = acknowledged
            .iter()
            .filter(|outcome| {
                outcome.started >= outage.up && next.is_none_or(|next| outcome.finished < next)
            })
            .count();
        assert!(
            after > 0,
            "no write acknowledged after the recovery ({})",
            outage.mode
        );
        per_outage.push((unavailable_while_down, after));
    }

    // Every acknowledged write is stored, under the name it was sent with.
    let ids: HashSet<&str> = acknowledged
        .iter()
        .map(|outcome| outcome.id.as_deref().unwrap())
        .collect();
    assert_eq!(ids.len(), acknowledged.len(), "an id was answered twice");
    let verify_started = Instant::now();
    let chunks: Vec<Vec<(String, String)>> = acknowledged
        .chunks(acknowledged.len().div_ceil(8).max(1))
        .map(|chunk| {
            chunk
                .iter()
                .map(|outcome| (outcome.id.clone().unwrap(), outcome.name.clone()))
                .collect()
        })
        .collect();
    // Every answer each name got, for the message of a failure.
    let mut history: HashMap<String, Vec<String>> = HashMap::new();
    for outcome in &outcomes {
        history
            .entry(outcome.name.clone())
            .or_default()
            .push(format!(
                "{:?}..{:?}: {} {}",
                outcome.started - test_started,
                outcome.finished - test_started,
                outcome.status,
                outcome.body.chars().take(160).collect::<String>()
            ));
    }
    let history = Arc::new(history);
    let checkers: Vec<JoinHandle<()>> = chunks
        .into_iter()
        .map(|chunk| {
            let addr = node.addr;
            let history = Arc::clone(&history);
            tokio::spawn(async move {
                for (id, name) in chunk {
                    let path = format!("{DATABASES}/{id}");
                    let response = tokio::time::timeout(
                        HANG_GUARD,
                        request(addr, "GET", &path, &[("x-api-key", KEY)], None),
                    )
                    .await
                    .unwrap_or_else(|_| panic!("GET {path} was not answered"));
                    assert_eq!(
                        response.status,
                        200,
                        "acknowledged write {id} ({name}) is missing: {}; its answers: {:#?}",
                        response.body,
                        history.get(&name)
                    );
                    let stored = response.json();
                    assert_eq!(stored["id"], id.as_str(), "{}", response.body);
                    assert_eq!(stored["name"], name.as_str(), "{}", response.body);
                }
            })
        })
        .collect();
    for checker in checkers {
        checker.await.expect("an acknowledged write is missing");
    }

    // And nothing else is stored: every stored record was answered 200, or "it may have been
    // saved", or not answered at all. A record answered "nothing was saved, try again" that is
    // stored anyway is the lie a retrying client turns into a duplicate.
    let stored = stored_names(node.addr).await;
    let answered_saved_or_unknown: HashSet<&str> = outcomes
        .iter()
        .filter(|o| o.acknowledged() || o.maybe_saved() || o.status == 0)
        .map(|o| o.name.as_str())
        .collect();
    let lies: Vec<&String> = stored
        .keys()
        .filter(|name| !answered_saved_or_unknown.contains(name.as_str()))
        .collect();
    assert!(
        lies.is_empty(),
        "{} stored records were answered \"nothing was saved\": {lies:?}",
        lies.len()
    );
    let maybe = outcomes.iter().filter(|o| o.maybe_saved()).count();
    let maybe_stored = outcomes
        .iter()
        .filter(|o| o.maybe_saved() && stored.contains_key(&o.name))
        .count();

    // The retrying writers: exactly one record per key, whatever the faults did to its
    // attempts; every key answered 200 is stored, with the id every one of its 200s named.
    let twice: Vec<(&String, &usize)> = stored.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "names stored more than once: {twice:?}");
    let mut ids_by_key: HashMap<&str, HashSet<&str>> = HashMap::new();
    for outcome in outcomes.iter().filter(|o| o.name.starts_with("fault-r")) {
        if let Some(id) = &outcome.id {
            ids_by_key.entry(&outcome.name).or_default().insert(id);
        }
    }
    for (key, ids) in &ids_by_key {
        assert_eq!(
            ids.len(),
            1,
            "key {key} was answered with several ids: {ids:?}"
        );
        assert_eq!(
            stored.get(*key),
            Some(&1),
            "key {key} answered 200 is not stored once"
        );
    }
    let retried_keys = ids_by_key.len();
    let retries = outcomes
        .iter()
        .filter(|o| o.name.starts_with("fault-r") && !o.acknowledged())
        .count();

    let unavailable = outcomes.iter().filter(|o| o.unavailable()).count();
    println!(
        "postgres fault: {} stored in all; {maybe} answered \"may have been saved\" ({maybe_stored} \
         of them stored); {retried_keys} keys of the retrying writers answered 200, each stored \
         once, after {retries} answers that were not 200",
        stored.len()
    );
    println!(
        "postgres fault: {} requests, {} acknowledged (all {} found again in {:?}), {} answered \
         503; before the first outage {before} acknowledged",
        outcomes.len(),
        acknowledged.len(),
        ids.len(),
        verify_started.elapsed(),
        unavailable,
    );
    for (outage, (unavailable_while_down, after)) in outages.iter().zip(&per_outage) {
        println!(
            "  stop -m {}: stop took {:?}, down {:?}, {unavailable_while_down} answered 503 \
             while down; start took {:?}, ready {:?} after it, {after} acknowledged after",
            outage.mode,
            outage.down - outage.stopping,
            outage.starting - outage.down,
            outage.up - outage.starting,
            outage.ready - outage.up,
        );
    }
    let mut latencies: Vec<Duration> = outcomes.iter().map(Outcome::latency).collect();
    latencies.sort();
    println!(
        "  latency: max {:?}, p99 {:?}, median {:?}; test took {:?}",
        latencies[latencies.len() - 1],
        latencies[latencies.len() * 99 / 100],
        latencies[latencies.len() / 2],
        test_started.elapsed()
    );
}
