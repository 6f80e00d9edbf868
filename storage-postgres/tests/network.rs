//! The network to PostgreSQL stops carrying anything (a dropped link, not a refused
//! connection): every operation answers `Unavailable` within the configured bound instead of
//! hanging, the readiness check says so, and the store recovers by itself once the link is back.
//! PostgreSQL is reached through a TCP proxy of the test's own that can stop forwarding.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use dbconsole_core::Sealer;
use dbconsole_core::storage::{Page, Storage, StorageError};
use dbconsole_storage_postgres::PostgresStorage;
use dbconsole_storage_postgres::testing::{fresh_options, not_running, test_url};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Forwards bytes between a client and PostgreSQL while `open`; holds them (reading nothing,
/// closing nothing) while not.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    open: Arc<AtomicBool>,
) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        while !open.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let read = match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        while !open.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if to.write_all(&buffer[..read]).await.is_err() {
            return;
        }
    }
}

/// A proxy to the test database's server; returns its address and the switch of the link.
async fn proxy(upstream: SocketAddr) -> (SocketAddr, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let open = Arc::new(AtomicBool::new(true));
    let switch = Arc::clone(&open);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let open = Arc::clone(&open);
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(upstream).await else {
                    return;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                tokio::spawn(pump(client_read, server_write, Arc::clone(&open)));
                pump(server_read, client_write, open).await;
            });
        }
    });
    (addr, switch)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_link_answers_unavailable_within_the_bound_and_recovers() {
    let mut options = fresh_options();
    let config: tokio_postgres::Config = test_url().parse().unwrap();
    let upstream_port = config.get_ports().first().copied().unwrap_or(5432);
    let upstream: SocketAddr = format!("127.0.0.1:{upstream_port}").parse().unwrap();
    let (addr, link) = proxy(upstream).await;
    options.url = options
        .url
        .replace(&format!("127.0.0.1:{upstream_port}"), &addr.to_string());
    assert!(
        options.url.contains(&addr.to_string()),
        "the URL goes through the proxy"
    );
    let bound = Duration::from_millis(1500);
    options.timeout = bound;
    let sealer = Sealer::ephemeral().unwrap();
    let storage = PostgresStorage::connect(options, &sealer)
        .await
        .unwrap_or_else(|error| panic!("{}", not_running(&error)));
    let page = Page {
        after: None,
        limit: 10,
    };
    storage
        .check_ready()
        .await
        .expect("ready while the link is up");
    storage
        .list_databases(page, Default::default())
        .await
        .expect("a read works");

    link.store(false, Ordering::SeqCst);
    for _ in 0..3 {
        let started = Instant::now();
        let result = storage.list_databases(page, Default::default()).await;
        let took = started.elapsed();
        assert!(
            matches!(result, Err(StorageError::Unavailable(_))),
            "expected Unavailable, got {result:?}"
        );
        // A "never hangs" bound, not a speed measurement: the bound plus scheduling slack.
        assert!(took < bound * 3, "took {took:?} with a bound of {bound:?}");
    }
    assert!(matches!(
        storage.check_ready().await,
        Err(StorageError::Unavailable(_))
    ));

    link.store(true, Ordering::SeqCst);
    // The held connections answer again, or are replaced: the store recovers by itself.
    let recovered = async {
        loop {
            if storage.check_ready().await.is_ok()
                && storage
                    .list_databases(page, Default::default())
                    .await
                    .is_ok()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), recovered)
        .await
        .expect("the store recovers once the link is back");
}
