//! Check-connection for Oracle. No Oracle Client library or server is obtainable on CI, so:
//! the real checker is tested for its answer when the client library is missing (DPI-1047), or,
//! where the library is installed, for the Oracle client's own answer to a closed port; the
//! blocking plumbing (the call runs on the blocking pool, the timeout bounds the answer, slow
//! checks never stall other requests) is tested with a stand-in for the oracle crate's call.

mod check_support;

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use check_support::*;
use dbconsole_core::Checkers;
use dbconsole_core::check::Adapter;
use dbconsole_core::check::oracle::{OracleChecker, OracleLogin};
use dbconsole_storage_memory::MemoryStorage;
use dbconsole_tests::{Api, DATABASES, eventually};
use http::Method;
use serde_json::{Value, json};

fn ora(host: &str, port: u16, password: &str) -> Value {
    database("oracle", host, port, "FREEPDB1", "checker", password)
}

/// Whether the Oracle Client library (`libclntsh.so`) is where ODPI-C looks for it: the
/// directories of `LD_LIBRARY_PATH`, the dynamic linker's cache and default directories,
/// `$ORACLE_HOME/lib`, and the directory of the running program. Decided without asking the
/// checker, so that the test below knows which answer is right before it calls it.
fn oracle_client_installed() -> bool {
    const LIBRARY: &str = "libclntsh.so";
    let mut dirs: Vec<PathBuf> = std::env::var_os("LD_LIBRARY_PATH")
        .map(|paths| std::env::split_paths(&paths).collect())
        .unwrap_or_default();
    dirs.extend(std::env::var_os("ORACLE_HOME").map(|home| PathBuf::from(home).join("lib")));
    dirs.extend(
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(PathBuf::from)),
    );
    dirs.extend(
        [
            "/lib",
            "/usr/lib",
            "/lib64",
            "/usr/lib64",
            "/lib/x86_64-linux-gnu",
            "/usr/lib/x86_64-linux-gnu",
            "/lib/aarch64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
        ]
        .map(PathBuf::from),
    );
    if dirs.iter().any(|dir| dir.join(LIBRARY).exists()) {
        return true;
    }
    ["ldconfig", "/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .iter()
        .find_map(|ldconfig| Command::new(ldconfig).arg("-p").output().ok())
        .is_some_and(|cache| String::from_utf8_lossy(&cache.stdout).contains(LIBRARY))
}

/// The real checker (the oracle crate) against a port nothing listens on. Without the Oracle
/// Client library (as on CI) the answer names the missing library, in ODPI-C's words; with it,
/// the Oracle client itself reports that no listener answered (ORA-12541).
#[tokio::test]
async fn the_real_checker_names_a_missing_client_library_or_the_closed_port() {
    let answer = check_body(&ora("127.0.0.1", CLOSED_PORT, PASSWORD)).await;
    if oracle_client_installed() {
        assert!(answer.contains("ORA-12541"), "{answer}");
        assert!(!answer.contains("DPI-1047"), "{answer}");
    } else {
        let detail = answer
            .strip_prefix(
                "Oracle Client library not found on this server: DPI Error: DPI-1047: Cannot \
                 locate a 64-bit Oracle Client library: ",
            )
            .unwrap_or_else(|| panic!("not the missing-library answer: {answer}"));
        assert!(detail.contains("libclntsh.so"), "{answer}");
        assert!(!answer.contains('\n'), "{answer}");
        assert_no_secret(&answer);
    }
}

/// A gate the stand-in's blocking calls wait at until the test opens it.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
    /// How many calls came to the gate.
    arrived: AtomicUsize,
}

impl Gate {
    /// Waits until the gate opens: `Ok`; or gives up after a minute, so that a checker that
    /// wrongly blocks the test's only thread fails the test instead of hanging it.
    fn wait(&self) -> Result<(), String> {
        let open = self.open.lock().unwrap();
        self.arrived.fetch_add(1, Ordering::SeqCst);
        let (open, _) = self
            .opened
            .wait_timeout_while(open, Duration::from_secs(60), |open| !*open)
            .unwrap();
        if *open {
            Ok(())
        } else {
            Err("the gate never opened".to_owned())
        }
    }

    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

/// The service with an Oracle checker whose blocking call is `connect`.
fn api_with(connect: impl Fn(&OracleLogin) -> Result<(), String> + Send + Sync + 'static) -> Api {
    let checkers = Checkers::none().with(
        Adapter::Oracle,
        Arc::new(OracleChecker::with_connect(connect)),
    );
    Api::with_checkers(Arc::new(MemoryStorage::new()), checkers)
}

#[tokio::test]
async fn the_blocking_call_gets_the_login() {
    let seen = Arc::new(Mutex::new(None));
    let api = {
        let seen = Arc::clone(&seen);
        api_with(move |login| {
            *seen.lock().unwrap() = Some(login.clone());
            Ok(())
        })
    };
    let id = create(&api, &ora("db.example.com", 1522, PASSWORD)).await;
    assert_eq!(check(&api, &id, "checker").await, "ok");
    let login = seen.lock().unwrap().take().expect("called");
    assert_eq!(login.username, "checker");
    assert_eq!(login.password.expose_str(), Some(PASSWORD));
    assert_eq!(
        login.connect_descriptor,
        "(DESCRIPTION=(CONNECT_TIMEOUT=10)(TRANSPORT_CONNECT_TIMEOUT=10)(RETRY_COUNT=0)\
         (ADDRESS=(PROTOCOL=TCP)(HOST=db.example.com)(PORT=1522))\
         (CONNECT_DATA=(SERVICE_NAME=FREEPDB1)))"
    );
}

#[tokio::test]
async fn a_ca_certificate_is_a_wallet_for_the_call_only() {
    use base64::Engine as _;
    const CA: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    let seen = Arc::new(Mutex::new(None));
    let api = {
        let seen = Arc::clone(&seen);
        api_with(move |login| {
            let dir = login
                .connect_descriptor
                .split("(MY_WALLET_DIRECTORY=")
                .nth(1)
                .and_then(|rest| rest.split(')').next())
                .map(PathBuf::from)
                .ok_or_else(|| format!("no wallet in {}", login.connect_descriptor))?;
            let wallet = std::fs::read_to_string(dir.join("ewallet.pem"))
                .map_err(|error| format!("no ewallet.pem: {error}"))?;
            *seen.lock().unwrap() = Some((dir, wallet));
            Ok(())
        })
    };
    let mut body = ora("db.example.com", 2484, PASSWORD);
    body["ssl"] = json!(true);
    body["ssl_ca_cert"] = json!(base64::engine::general_purpose::STANDARD.encode(CA));
    let id = create(&api, &body).await;
    assert_eq!(check(&api, &id, "checker").await, "ok");
    let (dir, wallet) = seen.lock().unwrap().take().expect("called");
    assert_eq!(wallet, format!("{CA}\n"));
    assert!(
        !dir.exists(),
        "the wallet outlived the call: {}",
        dir.display()
    );
}

#[tokio::test]
async fn driver_messages_are_scrubbed() {
    let api = api_with(|login| {
        Err(format!(
            "OCI Error: ORA-01017: invalid username/password ({})",
            login.password.expose_str().unwrap_or_default()
        ))
    });
    let id = create(&api, &ora("db.example.com", 1521, WRONG_PASSWORD)).await;
    let answer = check(&api, &id, "checker").await;
    assert_eq!(
        answer,
        "OCI Error: ORA-01017: invalid username/password ([REDACTED])"
    );
}

#[tokio::test]
async fn a_call_that_never_returns_times_out() {
    let gate = Arc::new(Gate::default());
    let api = {
        let gate = Arc::clone(&gate);
        api_with(move |_| gate.wait())
    };
    let id = create(
        &api,
        &with_timeout(ora("db.example.com", 1521, PASSWORD), 1),
    )
    .await;
    assert_timed_out(&check(&api, &id, "checker").await, 1);
    gate.open();
}

// The default `#[tokio::test]` runtime has a single thread: were the blocking call made on it,
// nothing else could run until the calls returned.
#[tokio::test]
async fn slow_checks_do_not_stall_other_requests() {
    let gate = Arc::new(Gate::default());
    let api = {
        let gate = Arc::clone(&gate);
        api_with(move |_| gate.wait())
    };
    let id = create(
        &api,
        &with_timeout(ora("db.example.com", 1521, PASSWORD), 60),
    )
    .await;
    let checks: Vec<_> = (0..8)
        .map(|_| {
            let api = api.clone();
            let id = id.clone();
            tokio::spawn(async move { check(&api, &id, "checker").await })
        })
        .collect();
    // Every check is in its blocking call.
    eventually(
        Duration::from_secs(10),
        "every check waits at the gate",
        || async { (gate.arrived.load(Ordering::SeqCst) == 8).then_some(()) },
    )
    .await;
    let read = api
        .db(Method::GET, &format!("{DATABASES}/{id}"), None)
        .await
        .expect(200);
    assert_eq!(read.json()["id"], id.as_str());
    assert!(
        checks.iter().all(|check| !check.is_finished()),
        "a check finished before its blocking call was released"
    );
    gate.open();
    for check in checks {
        assert_eq!(check.await.expect("check task"), "ok");
    }
}
