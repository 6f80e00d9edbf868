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
    start_with(dbconsole_server::ServeLimits::default()).await
}

/// [`start`] within these limits.
async fn start_with(
    limits: dbconsole_server::ServeLimits,
) -> (SocketAddr, oneshot::Sender<()>, JoinHandle<()>) {
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
        limits,
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

/// Sockets that open and never finish a request head take no slot of `max_connections`: with
/// 2,000 of them held open from 127.0.0.2, `/healthz`, `/readyz` and an authenticated caller
/// from 127.0.0.1 are still answered, each within a few seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_unfinished_heads_does_not_crowd_out_callers() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    use tokio::io::AsyncWriteExt as _;
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard).unwrap();
    assert!(
        hard >= 4_500,
        "the test needs 4,500 open files (2,000 sockets on each side): the hard limit is {hard}"
    );
    let (addr, stop, task) = start().await;
    // The flood opens its sockets in the background (past the listen backlog, a connect waits)
    // and holds them until the end; the callers start once a thousand are open.
    let opened = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (release, released) = oneshot::channel::<()>();
    let flood = tokio::spawn({
        let opened = Arc::clone(&opened);
        async move {
            let mut held = Vec::new();
            for _ in 0..2_000 {
                let socket = tokio::net::TcpSocket::new_v4().unwrap();
                socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
                let Ok(Ok(mut stream)) =
                    tokio::time::timeout(Duration::from_millis(200), socket.connect(addr)).await
                else {
                    continue;
                };
                let _ = stream
                    .write_all(b"GET /healthz HTTP/1.1\r\nHost: flood\r\n")
                    .await;
                held.push(stream);
                opened.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            let _ = released.await;
            drop(held);
        }
    });
    dbconsole_tests::eventually(
        Duration::from_secs(30),
        "a thousand flood sockets open",
        || {
            let opened = Arc::clone(&opened);
            async move { (opened.load(std::sync::atomic::Ordering::SeqCst) >= 1_000).then_some(()) }
        },
    )
    .await;
    // Answered while the flood holds its sockets (until after the last round): a generous
    // bound, so that a busy machine never fails it; how fast is a figure for the benches.
    let within = Duration::from_secs(30);
    for round in 0..11 {
        let health = tokio::time::timeout(within, request(addr, "GET", "/healthz", &[], None))
            .await
            .unwrap_or_else(|_| panic!("round {round}: /healthz was not answered"));
        assert_eq!(health.status, 200);
        let ready = tokio::time::timeout(within, request(addr, "GET", "/readyz", &[], None))
            .await
            .unwrap_or_else(|_| panic!("round {round}: /readyz was not answered"));
        assert_eq!(ready.status, 200);
        let listed = tokio::time::timeout(
            within,
            request(
                addr,
                "GET",
                "/api/v1/console/databases",
                &[("x-api-key", KEY)],
                None,
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("round {round}: the authenticated caller was not answered"));
        assert_eq!(listed.status, 200, "{}", listed.body);
    }
    let _ = release.send(());
    flood.await.unwrap();
    stop.send(()).unwrap();
    task.await.unwrap();
}

/// How long after `started` the server closes `stream` (reads whatever it answers first),
/// `None` when it is still open `at_most` after.
async fn closed_within(
    stream: &mut tokio::net::TcpStream,
    started: std::time::Instant,
    at_most: Duration,
) -> Option<Duration> {
    use tokio::io::AsyncReadExt as _;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        match tokio::time::timeout_at(
            tokio::time::Instant::from_std(started + at_most),
            stream.read(&mut buffer),
        )
        .await
        {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => {}
        }
    }
}

/// A client that never finishes its request head, or leaves its keep-alive connection idle, is
/// closed, and not before a head timeout (how long after is printed: between one and two head
/// timeouts on an idle machine, a figure for the benches); a request whose body arrives slowly,
/// over five of them, is answered all the same (it is being answered, not waiting for a head).
#[tokio::test]
async fn a_stalled_connection_is_closed_and_a_slow_answer_is_not() {
    use tokio::io::AsyncWriteExt as _;
    let head_timeout = Duration::from_millis(300);
    let (addr, stop, task) = start_with(dbconsole_server::ServeLimits {
        head_timeout,
        ..Default::default()
    })
    .await;
    let stalls: [(&str, &[u8]); 2] = [
        ("half a head", b"GET /healthz HTTP/1.1\r\nHost: slow\r\n"),
        (
            "idle after an answer",
            b"GET /healthz HTTP/1.1\r\nHost: idle\r\n\r\n",
        ),
    ];
    for (what, sent) in stalls {
        // Timed from before the connection is made: the server's head timeout starts after.
        let started = std::time::Instant::now();
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(sent).await.unwrap();
        let elapsed = closed_within(&mut stream, started, Duration::from_secs(30))
            .await
            .unwrap_or_else(|| panic!("{what}: still open after 30 s"));
        assert!(
            elapsed >= head_timeout - Duration::from_millis(50),
            "{what}: closed after {elapsed:?}, before the head timeout of {head_timeout:?}"
        );
        println!("{what}: closed after {elapsed:?} (head timeout {head_timeout:?})");
    }

    let body = database_body("pw");
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    slow.write_all(
        format!(
            "POST /api/v1/console/databases HTTP/1.1\r\nHost: slow\r\nx-api-key: {KEY}\r\n\
             content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let chunks: Vec<&[u8]> = body.as_bytes().chunks(body.len().div_ceil(10)).collect();
    for chunk in chunks {
        tokio::time::sleep(head_timeout / 2).await;
        slow.write_all(chunk).await.unwrap();
    }
    let mut answer = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut slow, &mut answer)
        .await
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    stop.send(()).unwrap();
    task.await.unwrap();
}
