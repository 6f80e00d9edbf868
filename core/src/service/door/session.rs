//! A door connection from its first byte to its relay: TLS first (negotiated with
//! `SSLRequest`, or direct), the startup message, the sign-in (a door password or a query key
//! of the user named), which database and credential it runs as (the startup `database`:
//! `<id or name>[:<username>]`), the backend session, and the audit of its opening and closing.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf as _, BytesMut};
use tokio::io::AsyncWriteExt as _;
use tokio::net::TcpStream;

use super::Door;
use super::backend::{self, Stream};
use super::frame::{self, Report};
use super::live::{DoorSessionView, Full};
use super::relay::{self, Relay};
use crate::model::identity::normalized;
use crate::model::{
    Actor, Adapter, AuditAction, AuditEvent, Credential, CredentialKind, Origin, Principal, Scope,
    SessionKind, Timestamp, key_digest,
};
use crate::run::protect::Protection;
use crate::service::admission::Guarded;
use crate::service::error::ApiError;

/// How long a client has to finish its startup and sign-in.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The startup parameters passed on to the database (the rest are the door's or ignored).
const PASSED_ON: &[&str] = &[
    "client_encoding",
    "datestyle",
    "timezone",
    "extra_float_digits",
    "intervalstyle",
];

/// Client encodings whose multibyte characters may end in the byte of a quote or a backslash:
/// under them the database would read a statement's text otherwise than the door does.
const UNSAFE_ENCODINGS: &[&str] = &[
    "sjis",
    "shiftjis",
    "mskanji",
    "win932",
    "cp932",
    "shiftjis2004",
    "big5",
    "win950",
    "cp950",
    "gbk",
    "win936",
    "cp936",
    "gb18030",
    "uhc",
    "win949",
    "cp949",
    "johab",
];

/// Whether `encoding` (as a client or the server names it) is one of [`UNSAFE_ENCODINGS`].
pub(super) fn unsafe_encoding(encoding: &str) -> bool {
    let name: String = encoding
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    UNSAFE_ENCODINGS.contains(&name.as_str())
}

/// Who signed in, as what.
struct SignedIn {
    principal: Principal,
    actor: Actor,
    /// The digest of the door password it signed in with, and its id.
    password: Option<([u8; 32], String)>,
    /// The stored key it signed in with.
    key_id: Option<String>,
}

/// Serves a connection to its end.
pub(super) async fn serve(
    door: &Door,
    tcp: TcpStream,
    peer: SocketAddr,
    tls: tokio_rustls::TlsAcceptor,
) {
    let _ = tcp.set_nodelay(true);
    let started = tokio::time::timeout(STARTUP_TIMEOUT, start(door, tcp, peer, tls)).await;
    let Ok(Some((stream, parameters))) = started else {
        return;
    };
    let mut stream = stream;
    let signed = tokio::time::timeout(
        STARTUP_TIMEOUT,
        sign_in(door, &mut stream, peer, &parameters),
    )
    .await;
    let signed = match signed {
        Ok(Ok(signed)) => signed,
        Ok(Err(report)) => {
            refuse(&mut stream, &report).await;
            return;
        }
        Err(_) => {
            refuse(
                &mut stream,
                &Report::fatal("08P01", "the sign-in took too long"),
            )
            .await;
            return;
        }
    };
    if let Err(report) = open(door, stream, peer, &parameters, signed).await {
        tracing::debug!(code = report.code, "a door session did not open");
    }
}

/// Sends `report` and closes.
async fn refuse(stream: &mut Box<dyn Stream>, report: &Report) {
    let mut out = BytesMut::new();
    report.message().write_to(&mut out);
    let _ = stream.write_all(&out).await;
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
}

/// TLS and the startup message: the stream and the startup parameters, or `None` when the
/// connection ended (a cancel request, a refusal, a broken client).
async fn start(
    door: &Door,
    mut tcp: TcpStream,
    peer: SocketAddr,
    tls: tokio_rustls::TlsAcceptor,
) -> Option<(Box<dyn Stream>, Vec<(String, String)>)> {
    let mut first = [0u8; 1];
    // A TLS handshake's first byte: a client that starts with TLS (`sslnegotiation=direct`).
    if tcp.peek(&mut first).await.ok()? == 1 && first[0] == 0x16 {
        let stream = tls.accept(tcp).await.ok()?;
        let mut stream: Box<dyn Stream> = Box::new(stream);
        return startup(door, &mut stream, peer, true)
            .await
            .map(|p| (stream, p));
    }
    loop {
        let (code, body) = frame::read_startup(&mut tcp).await.ok()?;
        match code {
            frame::SSL_REQUEST => {
                tcp.write_all(b"S").await.ok()?;
                let stream = tls.accept(tcp).await.ok()?;
                let mut stream: Box<dyn Stream> = Box::new(stream);
                return startup(door, &mut stream, peer, true)
                    .await
                    .map(|p| (stream, p));
            }
            frame::GSSENC_REQUEST => {
                // Refused: the client goes on with TLS or plain text.
                tcp.write_all(b"N").await.ok()?;
            }
            frame::CANCEL_REQUEST => {
                cancel(door, body);
                return None;
            }
            _ => {
                let mut stream: Box<dyn Stream> = Box::new(tcp);
                let report = if code >> 16 == 3 {
                    Report::fatal(
                        "28000",
                        "the dbconsole door accepts connections over TLS only",
                    )
                    .hint(
                        "connect with sslmode=require (or verify-full with the door's certificate)",
                    )
                } else {
                    Report::fatal("0A000", "the door speaks protocol 3.0 only")
                };
                refuse(&mut stream, &report).await;
                return None;
            }
        }
    }
}

/// The startup message over TLS (or a cancel request): its parameters.
async fn startup(
    door: &Door,
    stream: &mut Box<dyn Stream>,
    _peer: SocketAddr,
    _secure: bool,
) -> Option<Vec<(String, String)>> {
    let (code, body) = frame::read_startup(stream).await.ok()?;
    if code == frame::CANCEL_REQUEST {
        cancel(door, body);
        return None;
    }
    if code >> 16 != 3 {
        refuse(
            stream,
            &Report::fatal("0A000", "the door speaks protocol 3.0 only"),
        )
        .await;
        return None;
    }
    let Ok(parameters) = frame::startup_parameters(body) else {
        refuse(
            stream,
            &Report::fatal("08P01", "the startup message is malformed"),
        )
        .await;
        return None;
    };
    let unknown: Vec<&str> = parameters
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| k.starts_with("_pq_."))
        .collect();
    if code & 0xffff != 0 || !unknown.is_empty() {
        // Protocol 3.0 and none of the extensions asked for.
        let mut out = BytesMut::new();
        frame::message(b'v', |out| {
            use bytes::BufMut as _;
            out.put_i32(frame::PROTOCOL_3 & 0xffff);
            out.put_i32(i32::try_from(unknown.len()).unwrap_or(0));
            for option in &unknown {
                out.put_slice(option.as_bytes());
                out.put_u8(0);
            }
        })
        .write_to(&mut out);
        stream.write_all(&out).await.ok()?;
    }
    Some(parameters)
}

/// A cancel request: the process id and key the door gave its client, mapped to the backend's.
fn cancel(door: &Door, mut body: bytes::Bytes) {
    if body.len() < 8 {
        return;
    }
    let key = (body.get_i32(), body.get_i32());
    if let Some(cancel) = door.live.canceller(key) {
        tokio::spawn(async move { cancel().await });
    } else {
        // Another node's session, perhaps: it published where its key cancels.
        let door = door.clone();
        tokio::spawn(async move { super::cancel::elsewhere(&door, key).await });
    }
}

fn parameter<'p>(parameters: &'p [(String, String)], name: &str) -> Option<&'p str> {
    parameters
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Asks for the password and checks it: a door password of the user named, or a query key
/// bound to them. A failure is throttled and audited, as a browser sign-in's is.
async fn sign_in(
    door: &Door,
    stream: &mut Box<dyn Stream>,
    peer: SocketAddr,
    parameters: &[(String, String)],
) -> Result<SignedIn, Report> {
    if let Some(replication) = parameter(parameters, "replication")
        && !matches!(
            replication.to_ascii_lowercase().as_str(),
            "false" | "off" | "no" | "0"
        )
    {
        return Err(Report::fatal(
            "0A000",
            "replication connections do not go through the door",
        ));
    }
    if let Some(encoding) = parameter(parameters, "client_encoding")
        && unsafe_encoding(encoding)
    {
        return Err(Report::fatal(
            "22023",
            format!(
                "the door does not take the client encoding {encoding}: its characters can hide \
                 a quote from the door's reading (use UTF8)"
            ),
        ));
    }
    if parameter(parameters, "options").is_some_and(|o| !o.trim().is_empty()) {
        return Err(Report::fatal(
            "0A000",
            "the door takes no startup options: SET what you need once connected",
        ));
    }
    let user = normalized(parameter(parameters, "user").unwrap_or_default());
    if user.is_empty() {
        return Err(Report::fatal("28000", "the startup message names no user"));
    }
    let mut out = BytesMut::new();
    frame::authentication(3).write_to(&mut out);
    stream
        .write_all(&out)
        .await
        .map_err(|_| Report::fatal("08006", "the client went away"))?;
    stream
        .flush()
        .await
        .map_err(|_| Report::fatal("08006", "the client went away"))?;
    let message = frame::read_message(stream, 4096)
        .await
        .ok()
        .flatten()
        .filter(|m| m.tag == b'p')
        .ok_or_else(|| Report::fatal("08P01", "expected a password message"))?;
    let mut body = message.body;
    let password = zeroize::Zeroizing::new(
        frame::cstr(&mut body).map_err(|_| Report::fatal("08P01", "a malformed password"))?,
    );
    match check_password(door, &user, &password).await {
        Ok(Some(signed)) => Ok(signed),
        Ok(None) => Err(failed(door, peer, &user).await),
        Err(error) => {
            tracing::warn!(?error, "a door sign-in could not be checked");
            Err(Report::fatal(
                "58000",
                "the door could not check the password: try again",
            ))
        }
    }
}

/// A failed sign-in: counted against the address and the user, audited within the limit.
async fn failed(door: &Door, peer: SocketAddr, user: &str) -> Report {
    let wrong = Report::fatal(
        "28P01",
        format!("password authentication failed for user \"{user}\""),
    )
    .hint("use a door password minted in the console (Account, Door passwords) or a query key of yours");
    let throttled = door
        .throttle
        .failed(Some(peer.ip()))
        .and_then(|()| door.throttle.failed_for(user));
    if let Err(wait) = throttled {
        return Report::fatal(
            "28P01",
            format!("too many failed sign-ins: wait {wait} s before trying again"),
        );
    }
    let event = AuditEvent::new(
        &Origin::of(Actor::named("door")),
        AuditAction::SessionRefused,
        "sign-in",
        vec![
            "door password".to_owned(),
            format!("from {}", peer.ip()),
            format!("user {user}"),
        ],
    );
    if let Err(error) = door.storage.append_log(event.into()).await {
        tracing::warn!(%error, "could not audit a refused door sign-in");
    }
    wrong
}

/// Who `password` signs in as `user`: `None` when it doesn't.
async fn check_password(
    door: &Door,
    user: &str,
    password: &str,
) -> Result<Option<SignedIn>, ApiError> {
    let signed = if password.starts_with("dbc_dpw_") {
        let Some(found) = door
            .storage
            .session_by_digest(&key_digest(password.as_bytes()))
            .await?
        else {
            return Ok(None);
        };
        if found.kind != SessionKind::DoorPassword
            || found.expires_at <= Timestamp::now()
            || normalized(&found.principal.user) != user
        {
            return Ok(None);
        }
        let principal =
            match crate::service::users::served(&*door.storage, found.principal, true).await {
                Ok(principal) => principal,
                Err(ApiError::Unauthorized { .. }) => return Ok(None),
                Err(error) => return Err(error),
            };
        SignedIn {
            actor: Actor::named(format!("{user} (door password {})", found.id.as_str())),
            principal,
            password: Some((found.digest, found.id.as_str().to_owned())),
            key_id: None,
        }
    } else {
        let Some(caller) = door
            .callers
            .authenticate(CredentialKind::ApiKey, password)
            .await?
        else {
            return Ok(None);
        };
        let Some(principal) = caller.principal else {
            return Ok(None);
        };
        if caller.scope != Scope::Query || principal.agent || normalized(&principal.user) != user {
            return Ok(None);
        }
        let principal = match crate::service::users::served(&*door.storage, principal, false).await
        {
            Ok(principal) => principal,
            Err(ApiError::Unauthorized { .. }) => return Ok(None),
            Err(error) => return Err(error),
        };
        SignedIn {
            key_id: caller.actor.id.clone(),
            actor: caller.actor,
            principal,
            password: None,
        }
    };
    Ok(Some(signed))
}

/// The database a startup `database` names for `principal`, and the credential: an id, or a
/// name exactly one database they may query has; `:username` picks a credential (else the
/// default one).
async fn place(
    door: &Door,
    principal: &Principal,
    asked: &str,
) -> Result<(Guarded, Credential), Report> {
    let internal = |error: ApiError| {
        tracing::warn!(?error, "a door session's database could not be read");
        Report::fatal("58000", "the door could not read its databases: try again")
    };
    let (name, username) = match asked.rsplit_once(':') {
        Some((name, username)) if !username.is_empty() => (name, Some(username)),
        _ => (asked, None),
    };
    if name.is_empty() {
        return Err(Report::fatal(
            "3D000",
            "name a database: its id or its name, then `:username` for a credential",
        ));
    }
    let mut found = Vec::new();
    if let Some(db) = door
        .storage
        .database(name)
        .await
        .map_err(|e| internal(e.into()))?
    {
        // Nothing of a database is told to one who may not query it.
        if door
            .admission
            .may_query(principal, &db)
            .await
            .map_err(internal)?
        {
            found.push(db);
        }
    } else {
        let mut after: Option<String> = None;
        loop {
            let page = door
                .admission
                .databases_after(after.as_deref())
                .await
                .map_err(internal)?;
            let Some(last) = page.last() else { break };
            after = Some(last.id.as_str().to_owned());
            for db in page {
                if db.name == name
                    && door
                        .admission
                        .may_query(principal, &db)
                        .await
                        .map_err(internal)?
                {
                    found.push(db);
                }
            }
        }
    }
    let db = match found.len() {
        0 => {
            return Err(Report::fatal(
                "3D000",
                format!("no database \"{name}\" that you may query"),
            ));
        }
        1 => found.remove(0),
        _ => {
            let ids: Vec<&str> = found.iter().map(|d| d.id.as_str()).collect();
            return Err(Report::fatal(
                "3D000",
                format!(
                    "several databases are named \"{name}\": connect to one by its id ({})",
                    ids.join(", ")
                ),
            ));
        }
    };
    if db.adapter != Adapter::Postgres {
        return Err(Report::fatal(
            "0A000",
            format!(
                "database {} is {}: the door speaks PostgreSQL only (use the console)",
                db.id,
                db.adapter.as_str()
            ),
        ));
    }
    let credential = match username {
        Some(username) => db.credentials.iter().find(|c| c.username == username),
        None => db
            .credentials
            .iter()
            .find(|c| c.default_credential)
            .or(db.credentials.first()),
    }
    .cloned()
    .ok_or_else(|| {
        let names: Vec<&str> = db.credentials.iter().map(|c| c.username.as_str()).collect();
        Report::fatal(
            "3D000",
            format!(
                "database {} has no credential {}: it has {}",
                db.id,
                username.unwrap_or("(none)"),
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ),
        )
    })?;
    let guarded = door.admission.guarded(db).await.map_err(internal)?;
    guarded
        .admit(principal, &credential, door.max_rows)
        .map_err(|error| match error {
            ApiError::Denied(why) => Report::fatal("42501", why),
            other => internal(other),
        })?;
    Ok((guarded, credential))
}

/// Opens the session: its database and credential, its backend, its registration, then the
/// relay until it ends.
async fn open(
    door: &Door,
    mut stream: Box<dyn Stream>,
    peer: SocketAddr,
    parameters: &[(String, String)],
    signed: SignedIn,
) -> Result<(), Report> {
    let SignedIn {
        principal,
        actor,
        password,
        key_id,
    } = signed;
    let password_id = password.as_ref().map(|(_, id)| id.clone());
    let password = password.map(|(digest, _)| digest);
    let asked = parameter(parameters, "database").unwrap_or_default();
    let (guarded, asked_credential) = match place(door, &principal, asked).await {
        Ok(placed) => placed,
        Err(report) => {
            refuse(&mut stream, &report).await;
            return Err(report);
        }
    };
    let protected = match door.launcher.protected_as(&guarded, Some(&principal)).await {
        Ok(protected) => protected,
        Err(error) => {
            tracing::warn!(?error, "a door session's protection could not be read");
            let report = Report::fatal("58000", "the door could not read the database's rules");
            refuse(&mut stream, &report).await;
            return Err(report);
        }
    };
    // On a credential that needs reviews, the session itself runs as one of the database's
    // credentials without reviews, when there is one, for catalog reads (as the console's
    // schema does); every other statement is reviewed (`reviewed.rs`).
    let needs_reviews = asked_credential.reviews_required > 0;
    let catalog_credential = needs_reviews
        .then(|| {
            guarded
                .db
                .credentials
                .iter()
                .find(|c| c.reviews_required == 0)
                .cloned()
        })
        .flatten();
    let reviewed = needs_reviews.then(|| {
        (
            asked_credential.id.as_str().to_owned(),
            catalog_credential.is_some(),
        )
    });
    let (protection, credential) = protected.run_as(
        catalog_credential
            .clone()
            .unwrap_or_else(|| asked_credential.clone()),
    );
    let db = guarded.db.clone();
    let fail = |why: String| Report::fatal("08006", why);
    if let Some(why) = crate::check::held_back(&db, &credential) {
        let report = fail(why);
        refuse(&mut stream, &report).await;
        return Err(report);
    }
    let client_name = parameter(parameters, "application_name")
        .filter(|n| !n.is_empty())
        .unwrap_or("a client");
    let application_name: String = format!("{} via {client_name}", principal.user)
        .chars()
        .filter(|c| !c.is_control())
        .take(63)
        .collect();
    let timeout = credential
        .timeout
        .map(|secs| Duration::from_secs(u64::from(secs)))
        .unwrap_or(door.launcher.statement_timeout);
    // The caps, before a backend session is opened for nothing (checked again, atomically,
    // at the registration).
    if let Err(full) = door.live.has_room(
        &principal.user,
        credential.id.as_str(),
        (door.options.max_per_user, door.options.max_per_credential),
    ) {
        let report = full_report(&full, &asked_credential.username);
        refuse(&mut stream, &report).await;
        return Err(report);
    }
    let connector = door.launcher.connector_for(&db, &credential);
    let opened = match connector().await {
        Ok(opened) => opened,
        Err(why) => {
            let report = fail(format!("cannot connect to database {}: {why}", db.id));
            refuse(&mut stream, &report).await;
            return Err(report);
        }
    };
    let mut target = opened.target;
    target
        .connection_parameters
        .push(crate::model::ConnectionParameter {
            name: "statement_timeout".to_owned(),
            value: timeout.as_millis().to_string(),
        });
    // The door reads statements with standard strings, as the session must then.
    target
        .connection_parameters
        .push(crate::model::ConnectionParameter {
            name: "standard_conforming_strings".to_owned(),
            value: "on".to_owned(),
        });
    if protection.is_some() {
        crate::run::postgres::protected_search_path(&mut target);
    }
    let mut startup: Vec<(String, String)> = vec![
        ("application_name".to_owned(), application_name.clone()),
        (
            "options".to_owned(),
            crate::check::postgres::startup_options(&target.connection_parameters),
        ),
    ];
    startup.extend(
        parameters
            .iter()
            .filter(|(k, _)| PASSED_ON.contains(&k.to_ascii_lowercase().as_str()))
            .cloned(),
    );
    let secrets: Vec<crate::model::Secret> = target.secrets().cloned().collect();
    let max = door.launcher.memory.max_message();
    let backend = match backend::open(
        &target,
        opened.tunnel,
        &startup,
        door.launcher.check_timeout,
        max,
    )
    .await
    {
        Ok(backend) => backend,
        Err(why) => {
            let why = crate::check::scrub_message(&why, secrets.iter());
            let report = fail(format!("cannot connect to database {}: {why}", db.id));
            refuse(&mut stream, &report).await;
            return Err(report);
        }
    };
    if let Some((name, value)) = backend.parameters.iter().find(|(k, v)| {
        (k == "standard_conforming_strings" && v != "on")
            || (k == "client_encoding" && unsafe_encoding(v))
    }) {
        let report = Report::fatal(
            "22023",
            format!(
                "the database session started with {name} = {value}, which the door does not read"
            ),
        );
        refuse(&mut stream, &report).await;
        return Err(report);
    }
    let login = (
        target.username.clone(),
        backend
            .parameters
            .iter()
            .any(|(k, v)| k == "is_superuser" && v == "on"),
    );
    drop(target);
    if let Some(protection) = &protection
        && let Err(report) = verify(door, &db, &credential, protection).await
    {
        let report = Report {
            severity: "FATAL",
            ..report
        };
        refuse(&mut stream, &report).await;
        return Err(report);
    }
    let key = (rand::random::<i32>() & 0x7fff_ffff, rand::random::<i32>());
    let cancel_target = backend.cancel.clone();
    let view = DoorSessionView {
        id: format!("door_{}", ulid::Ulid::new().to_string().to_lowercase()),
        user: principal.user.clone(),
        database_id: db.id.as_str().to_owned(),
        credential_id: credential.id.as_str().to_owned(),
        username: asked_credential.username.clone(),
        client_address: peer.ip().to_string(),
        application_name: client_name
            .chars()
            .filter(|c| !c.is_control())
            .take(63)
            .collect(),
        opened_at: Timestamp::now().to_string(),
        password_id: password_id.clone(),
    };
    let registered = door.live.register(
        view.clone(),
        key,
        Arc::new(move || {
            let target = cancel_target.clone();
            Box::pin(async move { target.cancel(Duration::from_secs(5)).await })
        }),
        (door.options.max_per_user, door.options.max_per_credential),
    );
    let registered = match registered {
        Ok(registered) => registered,
        Err(full) => {
            let report = full_report(&full, &asked_credential.username);
            refuse(&mut stream, &report).await;
            return Err(report);
        }
    };
    super::cancel::publish(
        door,
        key,
        db.id.as_str(),
        credential.id.as_str(),
        &backend.cancel,
    )
    .await;
    let origin = Origin::of(actor);
    audit(
        door,
        &origin,
        AuditAction::DoorSessionOpen,
        &view,
        vec![format!("credentials[{}]", credential.id.as_str())],
    )
    .await;
    // The client is signed in: what the server reported, the door's cancel key, ready.
    let mut out = BytesMut::new();
    frame::authentication(0).write_to(&mut out);
    for (name, value) in &backend.parameters {
        frame::parameter_status(name, value).write_to(&mut out);
    }
    frame::backend_key_data(key.0, key.1).write_to(&mut out);
    frame::ready_for_query(b'I').write_to(&mut out);
    if stream.write_all(&out).await.is_err() || stream.flush().await.is_err() {
        super::cancel::withdraw(door, key).await;
        return Ok(());
    }
    let relay = Relay {
        door: door.clone(),
        db,
        credential: credential.clone(),
        protection,
        principal,
        origin: origin.clone(),
        max_rows: u64::from(door.max_rows),
        timeout,
        secrets,
        max,
        password,
        reviewed,
        login,
        key_id,
        asked: (
            asked_credential.id.as_str().to_owned(),
            asked_credential.reviews_required,
        ),
    };
    let summary = relay::run(relay, stream, backend, registered.ended.clone()).await;
    drop(registered);
    super::cancel::withdraw(door, key).await;
    audit(
        door,
        &origin,
        AuditAction::DoorSessionClose,
        &view,
        vec![
            format!("statements {}", summary.statements),
            format!("catalog reads {}", summary.catalog_reads),
            format!("ended by {}", summary.ended_by),
        ],
    )
    .await;
    Ok(())
}

/// The refusal of a session over a cap.
fn full_report(full: &Full, username: &str) -> Report {
    match full {
        Full::Person(max) => Report::fatal(
            "53300",
            format!("you have {max} door sessions open, the most there may be"),
        ),
        Full::Credential(max) => Report::fatal(
            "53300",
            format!("credential {username} has {max} door sessions open, the most there may be"),
        ),
    }
    .hint("end one in the console (Your client, Open door sessions) or close another client")
}

/// Checks the session's role against the database's data protection (on a pooled session of
/// the same credential: privileges are the role's): the refusal as an error report.
pub(super) async fn verify(
    door: &Door,
    db: &crate::model::Database,
    credential: &Credential,
    protection: &Arc<Protection>,
) -> Result<(), Report> {
    door.launcher
        .verify_role(db, credential, Arc::clone(protection))
        .await
        .map_err(|error| {
            let message = said(error);
            Report::error(
                "42501",
                format!("data protection refuses this session's role: {message}"),
            )
            .hint("an administrator of the database fixes it (Data protection, in the console)")
        })
}

async fn audit(
    door: &Door,
    origin: &Origin,
    action: AuditAction,
    view: &DoorSessionView,
    mut changes: Vec<String>,
) {
    changes.extend([
        format!("session {}", view.id),
        format!("from {}", view.client_address),
        format!("application {}", view.application_name),
    ]);
    let event = AuditEvent::new(origin, action, &view.database_id, changes);
    if let Err(error) = door.storage.append_log(event.into()).await {
        tracing::warn!(%error, "could not audit a door session");
    }
}

/// What an error of the service says, for a door client.
pub(super) fn said(error: ApiError) -> String {
    match error {
        ApiError::Invalid(errors) => errors.to_string(),
        ApiError::BadGateway(why)
        | ApiError::GatewayTimeout(why)
        | ApiError::Busy(why)
        | ApiError::NotImplemented(why)
        | ApiError::Denied(why)
        | ApiError::Conflict(why) => why,
        _ => "the door could not check it: try again".to_owned(),
    }
}
