//! The messages of a signed-in door session, both ways, under the rules (docs/door.md).
//!
//! **Client to database.** Each message is read whole. A simple `Query` is judged whole
//! ([`super::judge`]) before any of it is sent; a `Parse` is judged when it arrives. The
//! extended protocol's messages are held until the client's `Sync` or `Flush` (or a `Query`),
//! then, on a database with data protection, the session's role is verified once and the
//! batch goes to the database as it came: statement and portal names, pipelines and result
//! formats are the client's. A refused statement is replaced by one the database refuses
//! with a syntax error naming a marker (`dbconsole_refused_<n>`): the database then does what
//! it does with any error (skips to `Sync`, aborts the transaction it is in), and the door
//! sends its own error in the place of that one, so the order of every answer is kept.
//!
//! **Database to client.** Messages are relayed as they come, and the client's stream is
//! flushed whenever the database has nothing more to read. The rows of each result are counted
//! under its portal, its cursor (`FETCH`) or itself: past the row cap they are dropped, and the
//! result ends with a `WARNING` and a `CommandComplete` counting what was sent. Each statement's
//! end is audited as a console run is (digest, outcome, rows, time; never its text), through
//! the run events' writer, in batches; catalog reads are counted for the session instead.
//!
//! **Time.** The door's own timer cancels a statement running past the credential's timeout
//! (whatever the client set), and says so in the error; a client that goes away cancels what
//! runs; a session ended from the console, by a deactivation or a revoked password is cancelled
//! and closed with a `FATAL`.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf as _, BytesMut};
use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::{mpsc, watch};

use super::Door;
use super::backend::Backend;
use super::frame::{self, Framed, Message, Report};
use super::judge::{self, Counted, Judged, Rules};
use crate::model::{
    AuditAction, AuditEvent, Credential, Database, Origin, Principal, RunFacts, RunOutcome, Secret,
};
use crate::run::protect::Protection;

/// How often a session checks that its person is still active and its password still valid.
const RECHECK: Duration = Duration::from_secs(15);

/// A signed-in session's settings.
pub(super) struct Relay {
    pub(super) door: Door,
    pub(super) db: Database,
    pub(super) credential: Credential,
    pub(super) protection: Option<Arc<Protection>>,
    pub(super) principal: Principal,
    pub(super) origin: Origin,
    pub(super) max_rows: u64,
    pub(super) timeout: Duration,
    pub(super) secrets: Vec<Secret>,
    pub(super) max: usize,
    /// The digest of the door password it signed in with (it ends when that is revoked).
    pub(super) password: Option<[u8; 32]>,
    /// When the credential asked for needs reviews: its id, and whether the backend session
    /// is a credential of the same database without reviews (catalog reads run there).
    pub(super) reviewed: Option<(String, bool)>,
    /// The key it signed in with (it ends when that is revoked).
    pub(super) key_id: Option<String>,
    /// The credential asked for and the reviews it needed at the start (a change ends it).
    pub(super) asked: (String, u32),
    /// The role the backend session logged in as, and whether the server reported it a
    /// superuser at the start: a session that becomes another (`session_authorization`) or a
    /// superuser (`is_superuser`), by whatever statement, is ended.
    pub(super) login: (String, bool),
}

impl Relay {
    /// The username of credential `id` of the session's database.
    pub(super) fn credential_name(&self, id: &str) -> String {
        self.db
            .credentials
            .iter()
            .find(|c| c.id.as_str() == id)
            .map_or_else(|| id.to_owned(), |c| c.username.clone())
    }
}

/// How a session went, for its closing event.
#[derive(Debug, Default)]
pub(super) struct Summary {
    pub(super) statements: u64,
    pub(super) catalog_reads: u64,
    pub(super) ended_by: &'static str,
}

/// What is known of a statement for its audit event.
#[derive(Clone, Debug)]
struct Facts {
    sha256: String,
    length: u64,
    catalog: bool,
    /// What its rows count under, when it is not its portal: a cursor it `FETCH`es from.
    counted: Counted,
    /// The cursor it declares (whose count starts again).
    declares: Option<String>,
}

impl Facts {
    fn of(text: &str, catalog: bool) -> Self {
        Self {
            sha256: hex::encode(Sha256::digest(text.as_bytes())),
            length: text.len() as u64,
            catalog,
            counted: Counted::Own,
            declares: None,
        }
    }
}

/// A statement of a simple query, as judged.
#[derive(Debug)]
struct Part {
    facts: Facts,
    counted: Counted,
    declares: Option<String>,
}

/// A result the database will send, in order.
#[derive(Debug)]
enum Expect {
    /// A simple query's statements (none when it was refused).
    Query { epoch: u64, parts: VecDeque<Part> },
    /// The door's own answer to a simple query (an approved statement's result), sent in the
    /// place of the database's answer to an empty query.
    Synthetic { epoch: u64, messages: Vec<Message> },
    /// The door's own check of the session's role after a statement on a database with data
    /// protection: its answer is read and kept from the client.
    Check { epoch: u64 },
    /// An `Execute` of a portal; `fresh` when the portal was bound since its last one.
    Execute {
        epoch: u64,
        portal: String,
        fresh: bool,
        facts: Option<Facts>,
    },
}

impl Expect {
    fn epoch(&self) -> u64 {
        match self {
            Expect::Query { epoch, .. }
            | Expect::Synthetic { epoch, .. }
            | Expect::Check { epoch }
            | Expect::Execute { epoch, .. } => *epoch,
        }
    }
}

/// What both directions share.
#[derive(Debug, Default)]
struct Track {
    expected: VecDeque<Expect>,
    /// Refusals sent as markers, by number.
    refusals: HashMap<u64, Report>,
    /// Since when the database works on what it was sent (until its `ReadyForQuery`).
    busy_since: Option<Instant>,
    /// Whether the door cancelled for the timeout in this busy spell.
    timed_out: bool,
    /// `Sync`s and `Query`s sent, and `ReadyForQuery`s received.
    sent_epochs: u64,
    done_epochs: u64,
}

type Shared = Arc<Mutex<Track>>;

fn lock(track: &Shared) -> std::sync::MutexGuard<'_, Track> {
    track.lock().unwrap_or_else(|p| p.into_inner())
}

/// Relays until either side ends or the session is ended.
pub(super) async fn run<C>(
    relay: Relay,
    client: C,
    backend: Backend,
    ended: watch::Receiver<bool>,
) -> Summary
where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Backend {
        stream,
        cancel,
        _tunnel: tunnel,
        ..
    } = backend;
    let (client_read, client_write) = tokio::io::split(client);
    let (backend_read, backend_write) = tokio::io::split(stream);
    let track: Shared = Arc::default();
    let relay = Arc::new(relay);
    let (interrupt, interrupts) = mpsc::unbounded_channel::<Report>();
    let canceller = {
        let cancel = cancel.clone();
        move || {
            let cancel = cancel.clone();
            tokio::spawn(async move { cancel.cancel(Duration::from_secs(5)).await });
        }
    };
    let down = tokio::spawn(downstream(
        Arc::clone(&relay),
        Arc::clone(&track),
        Framed::new(backend_read, relay.max),
        client_write,
        interrupts,
    ));
    let watchdog = tokio::spawn(watchdog(
        Arc::clone(&track),
        relay.timeout,
        canceller.clone(),
    ));
    // The session's person, password and access, checked again every RECHECK: a change ends
    // it through `ending`, with why in `revoked`.
    let (ending, ended_or_revoked) = watch::channel(false);
    let (revoke, revoked) = watch::channel(None::<String>);
    let mut ended = ended;
    let recheck = {
        let relay = Arc::clone(&relay);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(RECHECK);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        if let Some(why) = still_allowed(&relay).await {
                            revoke.send_replace(Some(why));
                            ending.send_replace(true);
                            return;
                        }
                    }
                    changed = ended.changed() => {
                        if changed.is_err() || *ended.borrow() {
                            ending.send_replace(true);
                            return;
                        }
                    }
                }
            }
        })
    };
    let ended_by = upstream(
        Arc::clone(&relay),
        Arc::clone(&track),
        Framed::new(client_read, relay.max),
        backend_write,
        (ended_or_revoked, revoked),
        interrupt,
        canceller,
    )
    .await;
    recheck.abort();
    // A client that does not read its last answers does not hold the session open.
    let mut down = down;
    let counts = tokio::select! {
        counts = &mut down => counts.unwrap_or_default(),
        () = tokio::time::sleep(Duration::from_secs(10)) => {
            down.abort();
            (0, 0)
        }
    };
    watchdog.abort();
    drop(tunnel);
    Summary {
        statements: counts.0,
        catalog_reads: counts.1,
        ended_by,
    }
}

/// Cancels a statement that runs past `timeout` (a second past it: the database's own
/// `statement_timeout` answers first when the client left it alone).
async fn watchdog(track: Shared, timeout: Duration, cancel: impl Fn()) {
    let bound = timeout + Duration::from_secs(1);
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tick.tick().await;
        let overdue = {
            let mut track = lock(&track);
            match track.busy_since {
                Some(since) if !track.timed_out && since.elapsed() >= bound => {
                    track.timed_out = true;
                    true
                }
                _ => false,
            }
        };
        if overdue {
            cancel();
        }
    }
}

/// The client's messages to the database: judged, held to their `Sync`, verified, sent.
/// Answers what ended the session.
#[allow(
    clippy::too_many_lines,
    reason = "one message loop, read top to bottom"
)]
async fn upstream<R, W>(
    relay: Arc<Relay>,
    track: Shared,
    mut client: Framed<R>,
    mut backend: W,
    (mut ended, revoked): (watch::Receiver<bool>, watch::Receiver<Option<String>>),
    interrupt: mpsc::UnboundedSender<Report>,
    cancel: impl Fn(),
) -> &'static str
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let rules = Rules {
        protected: relay.protection.is_some(),
    };
    // Prepared statements and portals by name: what their executions are audited as.
    let mut statements: HashMap<String, Facts> = HashMap::new();
    let mut portals: HashMap<String, (Option<Facts>, bool)> = HashMap::new();
    let mut batch = BytesMut::new();
    let mut pending: Vec<Expect> = Vec::new();
    let mut executes = false;
    let mut marker = 0u64;
    let busy = |track: &Shared| lock(track).busy_since.is_some();
    // What the held messages may hold at most before their Sync.
    let held_bound = relay.max.saturating_mul(4);
    loop {
        if batch.len() > held_bound {
            let _ = interrupt.send(Report::fatal(
                "54000",
                "the extended-protocol messages held for one Sync are over the door's bound",
            ));
            terminate(&mut backend).await;
            return "a protocol error";
        }
        let message = tokio::select! {
            read = client.next() => read,
            _ = ended.changed() => {
                if busy(&track) {
                    cancel();
                }
                let revoked = revoked.borrow().clone();
                let (why, by) = match revoked {
                    Some(why) => (why, "a revocation"),
                    None => (
                        "this door session was ended (from the console, or its person was \
                         deactivated)"
                            .to_owned(),
                        "the console",
                    ),
                };
                let _ = interrupt.send(Report::fatal("57P01", why));
                terminate(&mut backend).await;
                return by;
            }
        };
        let message = match message {
            Ok(Some(message)) => message,
            Ok(None) | Err(_) => {
                // The client went away: what it left running is cancelled.
                if busy(&track) {
                    cancel();
                }
                let mut out = BytesMut::new();
                postgres_protocol::message::frontend::terminate(&mut out);
                let _ = backend.write_all(&out).await;
                let _ = backend.flush().await;
                return "the client";
            }
        };
        let mut refuse = |report: Report, out: &mut BytesMut, simple: bool| {
            marker += 1;
            lock(&track).refusals.insert(marker, report);
            let text = format!("dbconsole_refused_{marker}");
            if simple {
                let _ = postgres_protocol::message::frontend::query(&text, out);
            } else {
                let _ = postgres_protocol::message::frontend::parse(
                    "dbconsole_refused",
                    &text,
                    std::iter::empty(),
                    out,
                );
            }
        };
        match message.tag {
            b'Q' | b'F' if !batch.is_empty() || !pending.is_empty() => {
                let _ = interrupt.send(Report::fatal(
                    "08P01",
                    "a simple query or function call inside an unfinished extended-protocol \
                     pipeline: send Sync first",
                ));
                terminate(&mut backend).await;
                return "a protocol error";
            }
            b'Q' => {
                let mut body = message.body.clone();
                let Ok(text) = frame::cstr(&mut body) else {
                    let _ = interrupt.send(Report::fatal("08P01", "a malformed Query"));
                    return "a protocol error";
                };
                let judged = match judge::judge(&text, rules) {
                    Ok(judged) => match verified(&relay).await {
                        Ok(()) => Ok(judged),
                        Err(report) => Err(report),
                    },
                    Err(report) => Err(report),
                };
                let epoch = {
                    let mut track = lock(&track);
                    track.sent_epochs += 1;
                    track.busy_since.get_or_insert_with(Instant::now);
                    track.sent_epochs - 1
                };
                let reviewed = match (&judged, &relay.reviewed) {
                    (Ok(judged), Some((credential, catalog_runs)))
                        if !(judged.is_empty()
                            || *catalog_runs && judged.iter().all(|j| j.catalog)) =>
                    {
                        Some(if judged.len() > 1 {
                            super::reviewed::Reviewed::Refused(Report::error(
                                "42501",
                                "on a credential that needs reviews, send one statement at a time",
                            ))
                        } else {
                            super::reviewed::statement(&relay, credential, &text).await
                        })
                    }
                    _ => None,
                };
                let expect = match (reviewed, judged) {
                    (Some(super::reviewed::Reviewed::Ran(messages)), _) => {
                        let _ = postgres_protocol::message::frontend::query("", &mut batch);
                        Expect::Synthetic { epoch, messages }
                    }
                    (Some(super::reviewed::Reviewed::Refused(report)), _) | (None, Err(report)) => {
                        refuse(report, &mut batch, true);
                        Expect::Query {
                            epoch,
                            parts: VecDeque::new(),
                        }
                    }
                    (None, Ok(judged)) => {
                        message.write_to(&mut batch);
                        Expect::Query {
                            epoch,
                            parts: parts_of(&text, judged),
                        }
                    }
                };
                pending.push(expect);
                check_role(&relay, &track, &mut batch, &mut pending);
                if !send(&track, &mut backend, &mut batch, &mut pending).await {
                    return "the database";
                }
                executes = false;
            }
            b'P' => {
                let mut body = message.body.clone();
                let (Ok(name), Ok(text)) = (frame::cstr(&mut body), frame::cstr(&mut body)) else {
                    let _ = interrupt.send(Report::fatal("08P01", "a malformed Parse"));
                    return "a protocol error";
                };
                let judged = judge::judge(&text, rules).and_then(|judged| match &relay.reviewed {
                    Some((_, true)) if !judged.is_empty() && judged.iter().all(|j| j.catalog) => {
                        Ok(judged)
                    }
                    Some(_) => Err(Report::error(
                        "42501",
                        "on a credential that needs reviews, only catalog reads go through the \
                         extended protocol",
                    )
                    .hint(
                        "send the statement as a simple query (psql does) to have it reviewed, and \
                         again once approved to run it",
                    )),
                    None => Ok(judged),
                });
                match judged {
                    Ok(judged) => {
                        let catalog = judged.iter().all(|j| j.catalog) && !judged.is_empty();
                        let mut facts = Facts::of(&text, catalog);
                        if let Some(first) = judged.into_iter().next() {
                            facts.counted = first.counted;
                            facts.declares = first.declares;
                        }
                        // A name still prepared is refused by the database (the old statement
                        // stays); which one stands is not known here, so a catalog read is
                        // counted only when both are.
                        if let Some(old) = statements.get(&name).filter(|_| !name.is_empty()) {
                            facts.catalog &= old.catalog;
                        }
                        statements.insert(name, facts);
                        message.write_to(&mut batch);
                    }
                    Err(report) => refuse(report, &mut batch, false),
                }
            }
            b'B' => {
                let mut body = message.body.clone();
                let (Ok(portal), Ok(statement)) = (frame::cstr(&mut body), frame::cstr(&mut body))
                else {
                    let _ = interrupt.send(Report::fatal("08P01", "a malformed Bind"));
                    return "a protocol error";
                };
                // A statement the door did not see prepared (SQL's PREPARE) is audited as an
                // unknown one.
                let facts = statements
                    .get(&statement)
                    .cloned()
                    .unwrap_or_else(|| Facts::of("", false));
                portals.insert(portal, (Some(facts), true));
                message.write_to(&mut batch);
            }
            b'E' => {
                let mut body = message.body.clone();
                let Ok(portal) = frame::cstr(&mut body) else {
                    let _ = interrupt.send(Report::fatal("08P01", "a malformed Execute"));
                    return "a protocol error";
                };
                let (facts, fresh) = match portals.get_mut(&portal) {
                    Some((facts, fresh)) => (facts.clone(), std::mem::replace(fresh, false)),
                    None => (None, false),
                };
                let epoch = lock(&track).sent_epochs;
                pending.push(Expect::Execute {
                    epoch,
                    portal,
                    fresh,
                    facts,
                });
                executes = true;
                message.write_to(&mut batch);
            }
            b'C' => {
                let mut body = message.body.clone();
                let kind = body.first().copied();
                body.advance(1.min(body.len()));
                if let Ok(name) = frame::cstr(&mut body) {
                    match kind {
                        Some(b'P') => {
                            portals.remove(&name);
                        }
                        Some(b'S') => {
                            statements.remove(&name);
                        }
                        _ => {}
                    }
                }
                message.write_to(&mut batch);
            }
            b'D' => message.write_to(&mut batch),
            b'S' | b'H' => {
                if executes && let Err(report) = verified(&relay).await {
                    // Nothing of the batch runs: it is replaced by the refusal.
                    batch.clear();
                    pending.retain(|e| matches!(e, Expect::Query { .. }));
                    refuse(report, &mut batch, false);
                }
                message.write_to(&mut batch);
                if message.tag == b'S' {
                    let mut track = lock(&track);
                    track.sent_epochs += 1;
                    track.busy_since.get_or_insert_with(Instant::now);
                } else if executes {
                    lock(&track).busy_since.get_or_insert_with(Instant::now);
                }
                if message.tag == b'S' {
                    check_role(&relay, &track, &mut batch, &mut pending);
                }
                if !send(&track, &mut backend, &mut batch, &mut pending).await {
                    return "the database";
                }
                executes = false;
            }
            b'F' => {
                let report = Report::error(
                    "0A000",
                    "the function call message does not go through the door",
                )
                .hint("call the function in a SELECT");
                let epoch = {
                    let mut track = lock(&track);
                    track.sent_epochs += 1;
                    track.sent_epochs - 1
                };
                refuse(report, &mut batch, true);
                pending.push(Expect::Query {
                    epoch,
                    parts: VecDeque::new(),
                });
                if !send(&track, &mut backend, &mut batch, &mut pending).await {
                    return "the database";
                }
            }
            // Outside a copy (the door starts none), the database ignores these too.
            b'd' | b'c' | b'f' => {}
            b'X' => {
                message.write_to(&mut batch);
                let _ = backend.write_all(&batch).await;
                let _ = backend.flush().await;
                return "the client";
            }
            other => {
                let _ = interrupt.send(Report::fatal(
                    "08P01",
                    format!("unexpected message type {}", char::from(other)),
                ));
                return "a protocol error";
            }
        }
    }
}

/// Ends the client's connection with `report` (a `FATAL`). What was read for it and not yet
/// written is dropped: the session is over.
async fn put_out<W: AsyncWrite + Unpin>(client: &mut W, report: &Report) {
    let mut out = BytesMut::new();
    report.message().write_to(&mut out);
    let _ = client.write_all(&out).await;
    let _ = client.flush().await;
    let _ = client.shutdown().await;
}

/// Ends the backend session (`Terminate`).
async fn terminate<W: AsyncWrite + Unpin>(backend: &mut W) {
    let mut out = BytesMut::new();
    postgres_protocol::message::frontend::terminate(&mut out);
    let _ = backend.write_all(&out).await;
    let _ = backend.flush().await;
}

/// The statements of a simple query, with what the judge found.
fn parts_of(text: &str, judged: Vec<Judged>) -> VecDeque<Part> {
    let texts = crate::run::statement::statements(text, crate::run::statement::Dialect::Postgres)
        .unwrap_or_default();
    judged
        .into_iter()
        .enumerate()
        .map(|(i, judged)| Part {
            facts: Facts::of(texts.get(i).copied().unwrap_or(text), judged.catalog),
            counted: judged.counted,
            declares: judged.declares,
        })
        .collect()
}

/// The query that reads the session's role after each statement on a database with data
/// protection.
const ROLE_CHECK: &str = "SELECT current_user, session_user";

/// On a database with data protection, asks for the session's role right behind what the
/// client sent (in the same write: no round trip of its own): a statement that changed it by
/// any way (a function's `SET ROLE`) ends the session before the next one runs.
fn check_role(relay: &Relay, track: &Shared, batch: &mut BytesMut, pending: &mut Vec<Expect>) {
    if relay.protection.is_none() {
        return;
    }
    let epoch = {
        let mut track = lock(track);
        track.sent_epochs += 1;
        track.sent_epochs - 1
    };
    let _ = postgres_protocol::message::frontend::query(ROLE_CHECK, batch);
    pending.push(Expect::Check { epoch });
}

/// What the role check's row says, when the role is not the login's.
fn role_check_failed(relay: &Relay, message: &Message) -> Option<String> {
    role_check_failed_for(&relay.login.0, message)
}

/// [`role_check_failed`] for the login `login`.
fn role_check_failed_for(login: &str, message: &Message) -> Option<String> {
    let mut body = message.body.clone();
    if body.len() < 2 {
        return Some("the role check's answer is malformed".to_owned());
    }
    let count = body.get_i16();
    let mut values = Vec::new();
    for _ in 0..count {
        if body.len() < 4 {
            return Some("the role check's answer is malformed".to_owned());
        }
        let length = body.get_i32();
        let Ok(length) = usize::try_from(length) else {
            values.push(String::new());
            continue;
        };
        if body.len() < length {
            return Some("the role check's answer is malformed".to_owned());
        }
        values.push(String::from_utf8_lossy(&body.split_to(length)).into_owned());
    }
    (values.len() != 2 || values.iter().any(|v| v != login)).then(|| {
        format!(
            "this door session's role became {} instead of its credential's: it is ended",
            values.first().map_or("unknown", String::as_str)
        )
    })
}

/// Sends the held messages: their results are expected first.
async fn send<W: AsyncWrite + Unpin>(
    track: &Shared,
    backend: &mut W,
    batch: &mut BytesMut,
    pending: &mut Vec<Expect>,
) -> bool {
    lock(track).expected.extend(pending.drain(..));
    let sent = backend.write_all(batch).await.is_ok() && backend.flush().await.is_ok();
    batch.clear();
    sent
}

/// On a database with data protection, the session's role verified again (at once when
/// nothing changed since): before each statement the door lets through.
async fn verified(relay: &Relay) -> Result<(), Report> {
    match &relay.protection {
        Some(protection) => {
            super::session::verify(&relay.door, &relay.db, &relay.credential, protection).await
        }
        None => Ok(()),
    }
}

/// Why the session may no longer go on: its person deactivated, its password revoked or
/// expired, or its access taken away.
async fn still_allowed(relay: &Relay) -> Option<String> {
    let storage = &*relay.door.storage;
    // The person as they are now: deactivated ends it; a password session follows the
    // record's groups and role, a key's keeps its own.
    let principal = match crate::service::users::served(
        storage,
        relay.principal.clone(),
        relay.password.is_some(),
    )
    .await
    {
        Ok(principal) => principal,
        Err(crate::service::error::ApiError::Unauthorized { .. }) => {
            return Some("your user has been deactivated".to_owned());
        }
        Err(error) => {
            tracing::warn!(?error, "a door session could not check its user");
            return None;
        }
    };
    if let Some(digest) = &relay.password {
        match storage.session_by_digest(digest).await {
            Ok(Some(session)) if session.expires_at > crate::model::Timestamp::now() => {}
            Ok(_) => {
                return Some("the door password of this session was revoked or expired".to_owned());
            }
            Err(error) => {
                tracing::warn!(%error, "a door session could not check its password");
                return None;
            }
        }
    }
    if let Some(id) = &relay.key_id {
        match storage.caller_key(id).await {
            Ok(Some(key)) if key.scope == crate::model::Scope::Query => {}
            Ok(_) => return Some("the key of this session was revoked".to_owned()),
            Err(error) => {
                tracing::warn!(%error, "a door session could not check its key");
                return None;
            }
        }
    }
    let db = match storage.database(relay.db.id.as_str()).await {
        Ok(Some(db)) => db,
        Ok(None) => return Some(format!("database {} was deleted", relay.db.id)),
        Err(error) => {
            tracing::warn!(%error, "a door session could not read its database");
            return None;
        }
    };
    let (asked, reviews) = &relay.asked;
    match db.credentials.iter().find(|c| c.id.as_str() == asked) {
        None => return Some("the credential of this session was removed".to_owned()),
        Some(c) if c.reviews_required != *reviews => {
            return Some(
                "the reviews the credential of this session needs changed: connect again"
                    .to_owned(),
            );
        }
        Some(_) => {}
    }
    let guarded = match relay.door.admission.guarded(db).await {
        Ok(guarded) => guarded,
        Err(_) => return None,
    };
    if !guarded.admits(&principal) {
        return Some(format!("you may no longer query database {}", relay.db.id));
    }
    match relay
        .door
        .launcher
        .protected_as(&guarded, Some(&principal))
        .await
    {
        Ok(now) if now.protection.is_some() != relay.protection.is_some() => {
            Some("the data protection of this database changed: connect again".to_owned())
        }
        _ => None,
    }
}

/// What the downstream direction knows of the result it is reading.
#[derive(Debug, Default)]
struct Reading {
    /// Rows sent of this result.
    sent: u64,
    /// Whether rows were dropped at the cap.
    capped: bool,
    /// When the statement it belongs to started (the previous one's end, or its sending).
    since: Option<Instant>,
}

/// The database's messages to the client: relayed, rows counted and capped, statements
/// audited, refusals put in place. Answers the statements and catalog reads it saw.
#[allow(
    clippy::too_many_lines,
    reason = "one message loop, read top to bottom"
)]
async fn downstream<R, W>(
    relay: Arc<Relay>,
    track: Shared,
    mut backend: Framed<R>,
    mut client: W,
    mut interrupts: mpsc::UnboundedReceiver<Report>,
) -> (u64, u64)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    // Rows sent per cursor and per portal.
    let mut cursors: HashMap<String, u64> = HashMap::new();
    let mut portals: HashMap<String, u64> = HashMap::new();
    let mut reading = Reading::default();
    let mut statements = 0u64;
    let mut catalog_reads = 0u64;
    let mut out = BytesMut::with_capacity(64 * 1024);
    loop {
        let message = tokio::select! {
            biased;
            Some(report) = interrupts.recv() => {
                put_out(&mut client, &report).await;
                return (statements, catalog_reads);
            }
            read = backend.next() => read,
        };
        let message = match message {
            Ok(Some(message)) => message,
            Ok(None) | Err(_) => {
                let _ = client.flush().await;
                let _ = client.shutdown().await;
                return (statements, catalog_reads);
            }
        };
        let checking = {
            let track = lock(&track);
            matches!(track.expected.front(), Some(Expect::Check { epoch }) if *epoch == track.done_epochs)
        };
        if checking {
            match message.tag {
                b'D' => {
                    if let Some(why) = role_check_failed(&relay, &message) {
                        put_out(&mut client, &Report::fatal("42501", why)).await;
                        return (statements, catalog_reads);
                    }
                }
                b'Z' => {
                    let mut track = lock(&track);
                    track.expected.pop_front();
                    track.done_epochs += 1;
                    track.busy_since = (track.sent_epochs > track.done_epochs).then(Instant::now);
                }
                // Its row description, its tag, and its error in an aborted transaction (where
                // nothing can change the role until the rollback) are the door's own.
                b'T' | b'C' | b'E' => {}
                _ => message.write_to(&mut out),
            }
            if !backend.buffered() {
                if client.write_all(&out).await.is_err() || client.flush().await.is_err() {
                    return (statements, catalog_reads);
                }
                out.clear();
            }
            continue;
        }
        match message.tag {
            b'D' => {
                let over = {
                    let mut track = lock(&track);
                    let done = track.done_epochs;
                    match track.expected.front_mut().filter(|e| e.epoch() == done) {
                        Some(Expect::Query { parts, .. }) => {
                            match parts.front().map(|p| &p.counted) {
                                Some(Counted::Cursor(name)) => over_cap(
                                    cursors.entry(name.clone()).or_insert(0),
                                    relay.max_rows,
                                ),
                                _ => reading.sent >= relay.max_rows,
                            }
                        }
                        Some(Expect::Execute {
                            portal,
                            fresh,
                            facts,
                            ..
                        }) => match facts.as_ref().map(|f| &f.counted) {
                            // A FETCH through a portal counts under its cursor.
                            Some(Counted::Cursor(name)) => {
                                over_cap(cursors.entry(name.clone()).or_insert(0), relay.max_rows)
                            }
                            _ => {
                                let count = portals.entry(portal.clone()).or_insert(0);
                                if std::mem::take(fresh) {
                                    *count = 0;
                                }
                                over_cap(count, relay.max_rows)
                            }
                        },
                        Some(Expect::Synthetic { .. } | Expect::Check { .. }) | None => {
                            reading.sent >= relay.max_rows
                        }
                    }
                };
                if over {
                    reading.capped = true;
                } else {
                    reading.sent += 1;
                    message.write_to(&mut out);
                }
            }
            b'I' if {
                let track = lock(&track);
                matches!(track.expected.front(), Some(Expect::Synthetic { epoch, .. }) if *epoch == track.done_epochs)
            } =>
            {
                if let Some(Expect::Synthetic { messages, .. }) = lock(&track).expected.pop_front()
                {
                    for message in messages {
                        message.write_to(&mut out);
                    }
                }
                reading = Reading::default();
            }
            b'C' | b's' | b'I' => {
                if reading.capped {
                    Report {
                        severity: "WARNING",
                        code: "01000",
                        message: format!(
                            "the row cap of {} rows was reached: the rest of the result was \
                             not sent",
                            relay.max_rows
                        ),
                        hint: None,
                    }
                    .message()
                    .write_to(&mut out);
                    let verb = if message.tag == b'C' {
                        let mut body = message.body.clone();
                        frame::cstr(&mut body)
                            .ok()
                            .and_then(|tag| tag.split(' ').next().map(str::to_owned))
                            .unwrap_or_else(|| "SELECT".to_owned())
                    } else {
                        "SELECT".to_owned()
                    };
                    let tag = if verb == "INSERT" {
                        format!("INSERT 0 {}", reading.sent)
                    } else {
                        format!("{verb} {}", reading.sent)
                    };
                    frame::command_complete(&tag).write_to(&mut out);
                } else {
                    message.write_to(&mut out);
                }
                let facts = finished(&track, &mut cursors, false);
                if let Some(facts) = facts {
                    record(
                        &relay,
                        &mut statements,
                        &mut catalog_reads,
                        facts,
                        &reading,
                        RunOutcome::Succeeded,
                    )
                    .await;
                }
                reading = Reading {
                    since: Some(Instant::now()),
                    ..Reading::default()
                };
            }
            b'E' => {
                let replaced = replaced(&relay, &track, &message);
                match &replaced {
                    Some(report) => report.message().write_to(&mut out),
                    None => message.write_to(&mut out),
                }
                let timed_out = lock(&track).timed_out;
                let facts = finished(&track, &mut cursors, true);
                if let Some(facts) = facts {
                    let outcome = if timed_out {
                        RunOutcome::TimedOut
                    } else {
                        RunOutcome::Failed
                    };
                    record(
                        &relay,
                        &mut statements,
                        &mut catalog_reads,
                        facts,
                        &reading,
                        outcome,
                    )
                    .await;
                }
                reading = Reading {
                    since: Some(Instant::now()),
                    ..Reading::default()
                };
            }
            b'Z' => {
                {
                    let mut track = lock(&track);
                    let done = track.done_epochs;
                    track.expected.retain(|e| e.epoch() > done);
                    track.done_epochs += 1;
                    track.timed_out = false;
                    track.busy_since = (track.sent_epochs > track.done_epochs).then(Instant::now);
                    if track.sent_epochs == track.done_epochs {
                        // Nothing in flight: a refusal not answered by now never will be (a
                        // pipeline that failed before it).
                        track.refusals.clear();
                    }
                }
                message.write_to(&mut out);
                reading = Reading::default();
            }
            b'S' => {
                if let Some(why) = role_changed(&relay, &message) {
                    put_out(&mut client, &Report::fatal("42501", why)).await;
                    return (statements, catalog_reads);
                }
                message.write_to(&mut out);
            }
            _ => message.write_to(&mut out),
        }
        // Flushed whenever the database has nothing more ready: a burst of rows goes in large
        // writes, the end of a result at once.
        if !backend.buffered() || out.len() >= 64 * 1024 {
            if client.write_all(&out).await.is_err() {
                return (statements, catalog_reads);
            }
            out.clear();
            if !backend.buffered() && client.flush().await.is_err() {
                return (statements, catalog_reads);
            }
        }
    }
}

/// Why a `ParameterStatus` the server sent ends the session: it reports another session user
/// than the credential's login, or a superuser where the login was none.
fn role_changed(relay: &Relay, message: &Message) -> Option<String> {
    let mut body = message.body.clone();
    let name = frame::cstr(&mut body).ok()?;
    let value = frame::cstr(&mut body).ok()?;
    let (login, superuser) = &relay.login;
    match name.as_str() {
        "session_authorization" if value != *login => Some(format!(
            "this door session became another user ({value}) than its credential's: it is ended"
        )),
        "is_superuser" if value == "on" && !superuser => Some(
            "this door session became a superuser, which its credential is not: it is ended"
                .to_owned(),
        ),
        "standard_conforming_strings" if value != "on" => Some(
            "this door session turned standard strings off: it is ended (the door reads \
             statements with them on)"
                .to_owned(),
        ),
        "client_encoding" if super::session::unsafe_encoding(&value) => Some(format!(
            "this door session's client encoding became {value}: it is ended (its characters \
             can hide a quote from the door's reading)"
        )),
        _ => None,
    }
}

/// Counts a row under `count`: whether it is past the cap (then it is not counted).
fn over_cap(count: &mut u64, max: u64) -> bool {
    if *count >= max {
        true
    } else {
        *count += 1;
        false
    }
}

/// The end of the front result: what its statement is audited as. An error also ends the rest
/// of its query, or its pipeline's executions (the database skips them to the `Sync`).
fn finished(track: &Shared, cursors: &mut HashMap<String, u64>, error: bool) -> Option<Facts> {
    let mut track = lock(track);
    // An answer belongs to the oldest pipeline not yet ended: what is expected of a later one
    // is not its.
    let done = track.done_epochs;
    match track.expected.front_mut().filter(|e| e.epoch() == done)? {
        Expect::Query { parts, .. } => {
            let part = parts.pop_front()?;
            if let Some(cursor) = &part.declares {
                cursors.remove(cursor);
            }
            if error {
                parts.clear();
            }
            Some(part.facts)
        }
        Expect::Synthetic { .. } | Expect::Check { .. } => {
            track.expected.pop_front();
            None
        }
        Expect::Execute { .. } => {
            let Some(Expect::Execute { epoch, facts, .. }) = track.expected.pop_front() else {
                return None;
            };
            if error {
                track
                    .expected
                    .retain(|e| e.epoch() != epoch || matches!(e, Expect::Query { .. }));
            }
            if let Some(cursor) = facts.as_ref().and_then(|f| f.declares.as_ref()) {
                cursors.remove(cursor);
            }
            facts
        }
    }
}

/// The door's own error in place of the database's: a refusal's marker, or the cancel of the
/// door's timer.
fn replaced(relay: &Relay, track: &Shared, message: &Message) -> Option<Report> {
    let fields = frame::fields(&message.body);
    let said = |code: u8| {
        fields
            .iter()
            .find(|(c, _)| *c == code)
            .map(|(_, v)| v.as_str())
    };
    let text = said(b'M').unwrap_or_default();
    let mut track = lock(track);
    if let Some(at) = text.find("dbconsole_refused_") {
        let number: String = text[at + "dbconsole_refused_".len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if let Some(report) = number
            .parse::<u64>()
            .ok()
            .and_then(|n| track.refusals.remove(&n))
        {
            return Some(report);
        }
    }
    if track.timed_out && said(b'C') == Some("57014") {
        return Some(Report::error(
            "57014",
            format!(
                "the statement ran past its timeout of {} s and was cancelled",
                relay.timeout.as_secs_f64()
            ),
        ));
    }
    drop(track);
    // A database's message may echo what it was sent: never a secret.
    if relay.secrets.iter().any(|s| {
        !s.expose().is_empty()
            && message
                .body
                .windows(s.expose().len())
                .any(|w| w == s.expose())
    }) {
        let scrubbed = crate::check::scrub_message(text, relay.secrets.iter());
        return Some(Report::error("XX000", scrubbed));
    }
    None
}

/// Audits a statement's end as a console run is (a catalog read is counted instead).
async fn record(
    relay: &Relay,
    statements: &mut u64,
    catalog_reads: &mut u64,
    facts: Facts,
    reading: &Reading,
    outcome: RunOutcome,
) {
    if facts.catalog {
        *catalog_reads += 1;
        return;
    }
    *statements += 1;
    let took = reading.since.map_or(Duration::ZERO, |s| s.elapsed());
    let mut event = AuditEvent::new(
        &relay.origin,
        AuditAction::DoorStatement,
        relay.db.id.as_str(),
        vec![format!("credentials[{}]", relay.credential.id.as_str())],
    );
    event.run = Some(RunFacts {
        database_id: relay.db.id.as_str().to_owned(),
        credential_id: relay.credential.id.as_str().to_owned(),
        statement_sha256: facts.sha256,
        statement_length: facts.length,
        rows: reading.sent,
        affected_rows: None,
        duration_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
        outcome,
    });
    let events = &relay.door.launcher.run_events;
    let slot = events.slot().await;
    events.write(&relay.door.storage, slot, event.into());
}

#[cfg(test)]
mod tests {
    use bytes::BufMut as _;

    use super::*;

    fn row(values: &[Option<&str>]) -> Message {
        frame::message(b'D', |out| {
            out.put_i16(i16::try_from(values.len()).unwrap());
            for value in values {
                match value {
                    Some(v) => {
                        out.put_i32(i32::try_from(v.len()).unwrap());
                        out.put_slice(v.as_bytes());
                    }
                    None => out.put_i32(-1),
                }
            }
        })
    }

    #[test]
    fn the_role_check_ends_a_session_whose_role_is_not_its_login() {
        let login = "dp_reader".to_owned();
        let same = role_check_failed_for(&login, &row(&[Some("dp_reader"), Some("dp_reader")]));
        assert_eq!(same, None);
        let became = role_check_failed_for(&login, &row(&[Some("admin"), Some("dp_reader")]));
        assert!(became.unwrap().contains("became admin"));
        let session = role_check_failed_for(&login, &row(&[Some("dp_reader"), Some("postgres")]));
        assert!(session.is_some());
        assert!(role_check_failed_for(&login, &row(&[None, None])).is_some());
        assert!(role_check_failed_for(&login, &row(&[Some("dp_reader")])).is_some());
        let cut = Message {
            tag: b'D',
            body: bytes::Bytes::from_static(&[0, 2, 0, 0, 0, 9, b'd']),
        };
        assert!(role_check_failed_for(&login, &cut).is_some());
    }
}
