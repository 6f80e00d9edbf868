//! A write whose `COMMIT` reached PostgreSQL but whose answer was lost with the connection is
//! answered with the truth: the store asks PostgreSQL for the transaction's status
//! (`txid_status`) on another connection. Committed: the write succeeded. Rolled back: nothing
//! was saved (`Unavailable`). Unknowable (PostgreSQL unreachable for the whole bound):
//! `Indeterminate`, "it may have been saved", never "nothing was saved".
//!
//! PostgreSQL is reached through a TCP proxy of the test's own (without TLS, so that it can see
//! the `COMMIT`), which cuts the connection at the moment the test arms.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Duration;

use dbconsole_core::Sealer;
use dbconsole_core::model::{AuditEvent, Database, Timestamp};
use dbconsole_core::storage::testing::origin;
use dbconsole_core::storage::{AuditQuery, Edits as _, Storage, StorageError};
use dbconsole_storage_postgres::PostgresStorage;
use dbconsole_storage_postgres::testing::{fresh_options, not_running, test_url};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy does with the next `COMMIT` it sees.
const PASS: u8 = 0;
/// Forward it, then cut the client off before the answer comes back (PostgreSQL commits).
const CUT_AFTER: u8 = 1;
/// Cut both sides instead of forwarding it (PostgreSQL rolls back).
const CUT_BEFORE: u8 = 2;

/// The proxy's switches: what to do at the next `COMMIT`, and whether new connections are
/// refused (the link down).
#[derive(Clone, Default)]
struct Switches {
    at_commit: Arc<AtomicU8>,
    refuse: Arc<AtomicBool>,
}

/// The simple-query message `COMMIT` as tokio-postgres sends it.
fn is_commit(bytes: &[u8]) -> bool {
    bytes.windows(7).any(|window| window == b"COMMIT\0")
}

async fn connection(client: TcpStream, upstream: SocketAddr, switches: Switches) {
    let Ok(server) = TcpStream::connect(upstream).await else {
        return;
    };
    let (mut client_read, client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    // PostgreSQL's answers go to the client until the cut; then the client's side closes at
    // once, and PostgreSQL's answers are read (not relayed) until the one to the COMMIT: it has
    // committed (or rolled back), and the task ends.
    let (cut, mut cut_rx) = tokio::sync::oneshot::channel::<()>();
    let mut cut = Some(cut);
    let answers = tokio::spawn(async move {
        let mut client_write = Some(client_write);
        let mut buffer = vec![0u8; 16 * 1024];
        loop {
            tokio::select! {
                _ = &mut cut_rx, if client_write.is_some() => client_write = None,
                read = server_read.read(&mut buffer) => {
                    let read = match read {
                        Ok(0) | Err(_) => return,
                        Ok(read) => &buffer[..read],
                    };
                    match &mut client_write {
                        Some(client) => {
                            if client.write_all(read).await.is_err() {
                                return;
                            }
                        }
                        None => {
                            if [&b"COMMIT\0"[..], b"ROLLBACK\0"]
                                .iter()
                                .any(|tag| read.windows(tag.len()).any(|w| w == *tag))
                            {
                                return;
                            }
                        }
                    }
                }
            }
        }
    });
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        let read = match client_read.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let chunk = &buffer[..read];
        if is_commit(chunk) {
            match switches.at_commit.swap(PASS, Ordering::SeqCst) {
                CUT_AFTER => {
                    if let Some(cut) = cut.take() {
                        let _ = cut.send(());
                    }
                    let _ = server_write.write_all(chunk).await;
                    // PostgreSQL's side stays open until it has answered the COMMIT; the
                    // client's side is closed, the answer never relayed.
                    let _ = tokio::time::timeout(Duration::from_secs(30), answers).await;
                    return;
                }
                CUT_BEFORE => {
                    answers.abort();
                    return;
                }
                _ => {}
            }
        }
        if server_write.write_all(chunk).await.is_err() {
            break;
        }
    }
    answers.abort();
}

async fn proxy(upstream: SocketAddr, switches: Switches) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            if switches.refuse.load(Ordering::SeqCst) {
                drop(client);
                continue;
            }
            tokio::spawn(connection(client, upstream, switches.clone()));
        }
    });
    addr
}

/// A store in a fresh schema, reached through the proxy without TLS, with a 2 s bound.
async fn store(switches: &Switches) -> PostgresStorage {
    let mut options = fresh_options();
    let config: tokio_postgres::Config = test_url().parse().unwrap();
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let upstream: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let addr = proxy(upstream, switches.clone()).await;
    options.url = options
        .url
        .replace(&format!("127.0.0.1:{port}"), &addr.to_string());
    assert!(options.url.contains(&addr.to_string()), "through the proxy");
    options
        .url
        .push(if options.url.contains('?') { '&' } else { '?' });
    options.url.push_str("sslmode=disable");
    options.timeout = Duration::from_secs(2);
    PostgresStorage::connect(options, &Sealer::ephemeral().unwrap())
        .await
        .unwrap_or_else(|error| panic!("{}", not_running(&error)))
}

fn sample_database(name: &str, _api_id: Option<&str>) -> Database {
    let body = serde_json::json!({
        "name": name, "adapter": "postgres", "hostname": "db.internal", "database": "app",
        "credentials": [{"username": "reader", "password": "pw-lost-commit"}],
    });
    let body = body.as_object().unwrap().clone();
    let sealer = Sealer::ephemeral().unwrap();
    dbconsole_core::validate::database_from_body(
        None,
        &body.clone().into(),
        Timestamp::now(),
        &sealer,
    )
    .unwrap()
}

async fn events_of(storage: &PostgresStorage, id: &str) -> Vec<AuditEvent> {
    let query = AuditQuery {
        resource: Some(id),
        after: None,
        limit: 10,
        ..Default::default()
    };
    storage.list_audit(query).await.unwrap()
}

async fn stored(storage: &PostgresStorage, database: &Database) -> bool {
    storage
        .database(database.id.as_str())
        .await
        .unwrap()
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_answer_was_lost_is_found_committed() {
    let switches = Switches::default();
    let storage = store(&switches).await;
    let database = sample_database("Lost answer", None);
    switches.at_commit.store(CUT_AFTER, Ordering::SeqCst);
    let answered = storage.insert_database(database.clone(), origin()).await;
    assert!(
        answered.is_ok(),
        "the COMMIT reached PostgreSQL: the write must be answered as done, got {answered:?}"
    );
    assert_eq!(
        switches.at_commit.load(Ordering::SeqCst),
        PASS,
        "the cut happened"
    );
    assert!(stored(&storage, &database).await);
    assert_eq!(events_of(&storage, database.id.as_str()).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_never_arrived_is_answered_nothing_saved() {
    let switches = Switches::default();
    let storage = store(&switches).await;
    let database = sample_database("Never committed", None);
    switches.at_commit.store(CUT_BEFORE, Ordering::SeqCst);
    let answered = storage.insert_database(database.clone(), origin()).await;
    assert!(
        matches!(answered, Err(StorageError::Unavailable(_))),
        "rolled back: nothing was saved, try again; got {answered:?}"
    );
    assert!(!stored(&storage, &database).await);
    assert!(events_of(&storage, database.id.as_str()).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_whose_outcome_cannot_be_asked_may_have_been_saved() {
    let switches = Switches::default();
    let storage = store(&switches).await;
    let database = sample_database("Unknowable", None);
    storage
        .insert_database(database.clone(), origin())
        .await
        .unwrap();
    // The update's COMMIT arrives, its answer is lost, and the link stays down past the bound.
    switches.at_commit.store(CUT_AFTER, Ordering::SeqCst);
    switches.refuse.store(true, Ordering::SeqCst);
    let answered = storage
        .update_database(
            database.id.as_str(),
            |stored: &Database| {
                let mut next = stored.clone();
                next.name = "Renamed".to_owned();
                Ok(next)
            },
            origin(),
        )
        .await;
    assert!(
        matches!(answered, Err(StorageError::Indeterminate(_))),
        "the outcome can't be found out: it may have been saved; got {answered:?}"
    );
    switches.refuse.store(false, Ordering::SeqCst);
    // It was saved: the answer did not say otherwise.
    let renamed = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match storage.database(database.id.as_str()).await {
                Ok(found) => break found.unwrap(),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await
    .expect("the store reads again once the link is back");
    assert_eq!(renamed.name, "Renamed");
}
