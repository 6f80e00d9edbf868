//! Check-connection for Oracle. No Oracle Client library or server is obtainable on CI, so:
//! the real checker is tested for its answer when the client library is missing (DPI-1047); the
//! blocking plumbing (the call runs on the blocking pool, the timeout bounds the answer, slow
//! checks never stall other requests) is tested with a stand-in for the oracle crate's call.

mod check_support;

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use check_support::*;
use dbconsole_core::Checkers;
use dbconsole_core::check::Adapter;
use dbconsole_core::check::oracle::{OracleChecker, OracleLogin};
use dbconsole_storage_memory::MemoryStorage;
use dbconsole_tests::{Api, DATABASES};
use http::Method;
use serde_json::Value;

fn ora(host: &str, port: u16, password: &str) -> Value {
    database("oracle", host, port, "FREEPDB1", "checker", password)
}

#[tokio::test]
async fn missing_client_library_is_named() {
    let answer = check_body(&ora("127.0.0.1", CLOSED_PORT, PASSWORD)).await;
    if answer.contains("DPI-1047") {
        assert!(
            answer.starts_with(
                "Oracle Client library not found on this server: DPI Error: DPI-1047: Cannot \
                 locate a 64-bit Oracle Client library: "
            ),
            "{answer}"
        );
    } else {
        // An Oracle Client is installed here: then nothing listens on the closed port.
        assert!(answer.contains("ORA-"), "{answer}");
    }
}

/// A gate the stand-in's blocking calls wait at until the test opens it.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    /// Waits until the gate opens: `Ok`; or gives up after a minute, so that a checker that
    /// wrongly blocks the test's only thread fails the test instead of hanging it.
    fn wait(&self) -> Result<(), String> {
        let open = self.open.lock().unwrap();
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
    // Let every check start its blocking call.
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
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
