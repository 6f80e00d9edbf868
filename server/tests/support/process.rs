//! The `dbconsole` binary as a child process: started on port 0 (its address read from the
//! `listening on` line), its standard output and standard error collected line by line, stopped
//! with real signals.

use std::net::SocketAddr;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Notify;

/// Only keeps a broken server from hanging the test run; no test measures time.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(60);

#[derive(Default)]
pub(crate) struct Collected {
    pub(crate) lines: Vec<String>,
    pub(crate) closed: bool,
}

/// The lines a child writes to one pipe, collected as they come.
#[derive(Clone, Default)]
pub(crate) struct Lines {
    shared: Arc<(Mutex<Collected>, Notify)>,
}

impl Lines {
    pub(crate) fn collect(pipe: impl AsyncRead + Unpin + Send + 'static) -> Self {
        let lines = Self::default();
        let shared = Arc::clone(&lines.shared);
        tokio::spawn(async move {
            let mut reader = BufReader::new(pipe).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                shared.0.lock().unwrap().lines.push(line);
                shared.1.notify_waiters();
            }
            shared.0.lock().unwrap().closed = true;
            shared.1.notify_waiters();
        });
        lines
    }

    /// Waits until `done` returns something for the collected output.
    pub(crate) async fn wait<T>(&self, what: &str, done: impl Fn(&Collected) -> Option<T>) -> T {
        let wait = async {
            loop {
                let notified = self.shared.1.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                {
                    let collected = self.shared.0.lock().unwrap();
                    if let Some(found) = done(&collected) {
                        return found;
                    }
                    assert!(
                        !collected.closed,
                        "output ended without {what}; got:\n{}",
                        collected.lines.join("\n")
                    );
                }
                notified.await;
            }
        };
        tokio::time::timeout(HANG_GUARD, wait)
            .await
            .unwrap_or_else(|_| panic!("no {what} within the hang guard"))
    }

    /// The first line that `matches`, waiting for it; panics when the pipe closes without one.
    pub(crate) async fn line(&self, what: &str, matches: impl Fn(&str) -> bool) -> String {
        self.wait(what, |collected| {
            collected.lines.iter().find(|line| matches(line)).cloned()
        })
        .await
    }

    /// All the output, once the pipe is closed (the process has exited).
    pub(crate) async fn all(&self) -> String {
        self.wait("the end of the output", |collected| {
            collected.closed.then(|| collected.lines.join("\n"))
        })
        .await
    }
}

/// The binary with none of our variables from the test's environment, logging at `info`, on
/// the memory backend unless `env` says otherwise (the redb default has tests of its own in
/// `crash.rs`).
pub(crate) fn command(env: &[(&str, &str)], args: &[&str]) -> Command {
    let mut with_memory = vec![("DBCONSOLE_STORAGE", "memory")];
    with_memory.extend_from_slice(env);
    super::dbconsole(&with_memory, args)
}

/// A running server.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
    pub(crate) stdout: Lines,
    pub(crate) stderr: Lines,
}

impl Server {
    /// `dbconsole serve --listen 127.0.0.1:0` with these environment variables.
    pub(crate) async fn start(env: &[(&str, &str)]) -> Self {
        Self::start_with(env, &["serve", "--listen", "127.0.0.1:0"]).await
    }

    pub(crate) async fn start_with(env: &[(&str, &str)], args: &[&str]) -> Self {
        let mut child = command(env, args).spawn().expect("spawn dbconsole");
        let stdout = Lines::collect(child.stdout.take().unwrap());
        let stderr = Lines::collect(child.stderr.take().unwrap());
        let listening = stdout
            .line("the `listening on` line", |line| {
                line.starts_with("listening on ")
            })
            .await;
        let addr = listening["listening on ".len()..].parse().unwrap();
        Self {
            child,
            addr,
            stdout,
            stderr,
        }
    }

    /// The secret of the key of this kind (`api-key`, `access-token`) that the server created
    /// at start, from its banner: the last word of the line `  <kind> <id>  <secret>`.
    pub(crate) async fn printed(&self, kind: &str) -> String {
        let prefix = format!("  {kind} ");
        let line = self
            .stdout
            .line(&prefix, |line| line.starts_with(&prefix))
            .await;
        line.split_whitespace().last().unwrap().to_owned()
    }

    pub(crate) fn signal(&self, signal: Signal) {
        let pid = self.child.id().expect("still running");
        kill(Pid::from_raw(pid as i32), signal).unwrap();
    }

    pub(crate) async fn exit_status(&mut self) -> ExitStatus {
        tokio::time::timeout(HANG_GUARD, self.child.wait())
            .await
            .expect("the server did not exit within the hang guard")
            .unwrap()
    }

    /// SIGTERM, then the exit status, standard output and standard error in full.
    pub(crate) async fn stop(mut self) -> (ExitStatus, String, String) {
        self.signal(Signal::SIGTERM);
        let status = self.exit_status().await;
        (status, self.stdout.all().await, self.stderr.all().await)
    }
}
