//! The serving loop in process: [`dbconsole_server::serve`] over the in-memory backend, with a
//! shutdown future the test controls instead of a signal.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use dbconsole_core::{ConsoleService, Secret, StaticCredentials};
use dbconsole_storage_memory::MemoryStorage;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use support::{Conn, database_body, request, request_text};

const KEY: &str = "loop-test-key";

/// The loop on a free port; send on the returned channel to shut it down.
async fn start() -> (SocketAddr, oneshot::Sender<()>, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let auth = StaticCredentials::new(Some(&Secret::from(KEY)), None);
    let service = ConsoleService::builder(
        Arc::new(MemoryStorage::new()),
        Arc::new(auth),
        dbconsole_core::Sealer::ephemeral().unwrap(),
    )
    .build();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(dbconsole_server::serve(
        listener,
        service,
        dbconsole_server::ServeLimits::default(),
        None,
        async {
            let _ = stopped.await;
        },
        std::future::pending(),
    ));
    (addr, stop, task)
}

#[tokio::test]
async fn requests_reach_the_service_and_healthz_does_not_need_it() {
    let (addr, stop, task) = start().await;
    let health = request(addr, "GET", "/healthz", &[], None).await;
    assert_eq!((health.status, health.body.as_str()), (200, "ok"));
    let unknown = request(addr, "GET", "/healthz/more", &[], None).await;
    assert_eq!(unknown.status, 404);
    let created = request(
        addr,
        "POST",
        "/api/v1/console/databases",
        &[("x-api-key", KEY)],
        Some(&database_body("pw")),
    )
    .await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(created.json()["name"], "Orders");
    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn keep_alive_connections_serve_several_requests() {
    let (addr, stop, task) = start().await;
    let mut conn = Conn::connect(addr).await;
    for _ in 0..3 {
        conn.send(&request_text("GET", "/healthz", &[], None, false))
            .await;
        assert_eq!(conn.read_response(false).await.body, "ok");
    }
    stop.send(()).unwrap();
    task.await.unwrap();
}

#[tokio::test]
async fn shutdown_closes_idle_connections_and_returns() {
    let (addr, stop, task) = start().await;
    let mut idle = Conn::connect(addr).await;
    idle.send(&request_text("GET", "/healthz", &[], None, false))
        .await;
    assert_eq!(idle.read_response(false).await.status, 200);

    stop.send(()).unwrap();
    // The loop returns although a keep-alive connection was open: it was idle, so it is closed.
    // (The timeout only keeps a broken loop from hanging the test run.)
    tokio::time::timeout(Duration::from_secs(60), task)
        .await
        .expect("the loop did not return")
        .unwrap();
    assert!(idle.is_closed_by_server().await);
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
