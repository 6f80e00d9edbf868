//! What the end-to-end benches (`benches/load.rs`, `benches/scale.rs`) share: the release server
//! started as a process, a minimal HTTP/1.1 load generator over loopback, and the server's
//! resident memory.
//!
//! The load generator is one task per keep-alive connection: write the request, read the head,
//! read `content-length` bytes. Its cost is the same whatever server it loads, so ratios of two
//! servers measured with it compare the servers.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

/// What one load phase measured.
#[derive(Clone, Debug)]
pub struct Phase {
    /// Answers per second.
    pub per_second: f64,
    /// Median latency.
    pub p50: Duration,
    /// 99th percentile latency.
    pub p99: Duration,
}

/// Reads one response: the status, and the body (by `content-length`, or chunked: a streamed
/// run's answer).
pub async fn read_response(reader: &mut BufReader<TcpStream>) -> std::io::Result<(u16, Vec<u8>)> {
    read_response_with_head(reader, false)
        .await
        .map(|(status, _, body)| (status, body))
}

/// [`read_response`], with the head's header lines (`name: value`, as sent) when `keep_head`.
pub async fn read_response_with_head(
    reader: &mut BufReader<TcpStream>,
    keep_head: bool,
) -> std::io::Result<(u16, Vec<(String, String)>, Vec<u8>)> {
    let mut head = Vec::new();
    let mut line = String::new();
    reader.read_line(&mut line).await?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let mut length = 0usize;
    let mut chunked = false;
    loop {
        line.clear();
        reader.read_line(&mut line).await?;
        if line == "\r\n" || line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if keep_head {
                head.push((name.to_owned(), value.trim().to_owned()));
            }
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.trim().eq_ignore_ascii_case("chunked");
            }
        }
    }
    if !chunked {
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await?;
        return Ok((status, head, body));
    }
    let mut body = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).await?;
        let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16)
            .map_err(|_| std::io::Error::other("a chunk size that is not hex"))?;
        let mut chunk = vec![0; size + 2];
        reader.read_exact(&mut chunk).await?;
        if size == 0 {
            return Ok((status, head, body));
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

/// `connections` keep-alive connections sending the requests of `requests` in turn for
/// `period`; every answer must have status `expect`.
///
/// # Panics
///
/// When a connection fails or an answer has another status.
pub async fn load(
    addr: SocketAddr,
    connections: usize,
    requests: Arc<Vec<Vec<u8>>>,
    expect: u16,
    period: Duration,
) -> Phase {
    let stop = Arc::new(AtomicBool::new(false));
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (stop, next, requests) = (Arc::clone(&stop), Arc::clone(&next), Arc::clone(&requests));
        tasks.push(tokio::spawn(async move {
            let stream = TcpStream::connect(addr).await.expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let mut reader = BufReader::new(stream);
            let mut latencies = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let request = &requests[next.fetch_add(1, Ordering::Relaxed) % requests.len()];
                let started = Instant::now();
                reader.get_mut().write_all(request).await.expect("send");
                let (status, body) = read_response(&mut reader).await.expect("answer");
                assert_eq!(status, expect, "{}", String::from_utf8_lossy(&body));
                latencies.push(started.elapsed());
            }
            latencies
        }));
    }
    tokio::time::sleep(period).await;
    stop.store(true, Ordering::Relaxed);
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("a connection panicked"));
    }
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Phase {
        per_second: latencies.len() as f64 / period.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

/// The bytes of one request with an `x-api-key`, and a JSON body when given.
pub fn request_bytes(method: &str, path: &str, api_key: &str, body: Option<&[u8]>) -> Vec<u8> {
    let mut text =
        format!("{method} {path} HTTP/1.1\r\nhost: localhost\r\nx-api-key: {api_key}\r\n");
    if let Some(body) = body {
        text.push_str(&format!(
            "content-type: application/json\r\ncontent-length: {}\r\n",
            body.len()
        ));
    }
    text.push_str("\r\n");
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(body.unwrap_or_default());
    bytes
}

/// The CPU time process `pid` has used so far (user and system, all its threads), zero when
/// unknown.
pub fn cpu_time(pid: u32) -> Duration {
    // `/proc/<pid>/stat`: after the command's closing parenthesis, fields 14 and 15 (utime,
    // stime) are the 12th and 13th, in clock ticks (100 a second on Linux).
    let ticks = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, rest) = stat.rsplit_once(')')?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            let user: u64 = fields.get(11)?.parse().ok()?;
            let system: u64 = fields.get(12)?.parse().ok()?;
            Some(user + system)
        })
        .unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// [`load`], and the CPU time process `pid` (the server measured) spent per answer meanwhile.
pub async fn load_costed(
    pid: u32,
    addr: SocketAddr,
    connections: usize,
    requests: Arc<Vec<Vec<u8>>>,
    expect: u16,
    period: Duration,
) -> (Phase, Duration) {
    let before = cpu_time(pid);
    let phase = load(addr, connections, requests, expect, period).await;
    let spent = cpu_time(pid).saturating_sub(before);
    let answers = (phase.per_second * period.as_secs_f64()).max(1.0);
    (phase, spent.div_f64(answers))
}

/// The resident memory of process `pid` in KiB (`VmRSS`), 0 when unknown.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// A query-scope API key bound to `bench@example.com` in the store at `data`, made with
/// `binary keys create` before the server starts: its secret.
///
/// # Panics
///
/// When the command fails or prints no secret.
pub fn user_key(binary: &Path, data: &Path) -> String {
    let created = std::process::Command::new(binary)
        .args(["keys", "create", "--kind", "api-key", "--scope", "query"])
        .args([
            "--user",
            "bench@example.com",
            "--name",
            "bench",
            "--data-dir",
        ])
        .arg(data)
        .output()
        .expect("dbconsole keys create");
    assert!(created.status.success(), "{created:?}");
    String::from_utf8(created.stdout)
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("secret:").map(|s| s.trim().to_owned()))
        .expect("the key's secret")
}

/// The release `dbconsole` binary of this workspace.
///
/// # Panics
///
/// When it is not built, naming `script`, which builds it first.
pub fn release_server(script: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    let binary = target.join("release").join("dbconsole");
    assert!(
        binary.exists(),
        "{} is missing: run `bash {script}`, which builds it first",
        binary.display()
    );
    binary
}

/// `binary serve` on redb in `data_dir`, on a free loopback port, with `env`; its address from
/// its `listening on` line. The process is killed when the `Child` is dropped.
///
/// # Panics
///
/// When it does not start or exits before listening.
pub async fn start_server(
    binary: &Path,
    data_dir: &Path,
    env: &[(&str, &str)],
) -> (Child, SocketAddr) {
    let mut child = Command::new(binary)
        .args(["serve", "--listen", "127.0.0.1:0", "--storage", "redb"])
        .arg("--data-dir")
        .arg(data_dir)
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {}: {error}", binary.display()));
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let addr = loop {
        let line = lines
            .next_line()
            .await
            .expect("the server's output")
            .expect("the server exited before listening");
        if let Some(addr) = line.strip_prefix("listening on ") {
            break addr.parse().expect("an address");
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, addr)
}
