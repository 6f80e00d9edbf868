//! `dbconsole`: the reference server of dbconsole, the management of its stored keys, and its
//! backups. Flags, environment and behaviour are described in the crate docs of
//! [`dbconsole_server`]; `dbconsole <command> --help` lists them.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use dbconsole_core::ConsoleService;
use dbconsole_core::auth::StoredCredentials;
use dbconsole_core::outbox::{Wake, Worker};
use dbconsole_core::service::OutboxTargets;
use dbconsole_core::{CredentialKind, Storage, StorageError};
use dbconsole_server::admin::client::{self as keys, AdminError};
use dbconsole_server::admin::print::{PrintError, print_reply};
use dbconsole_server::backend::{OpenError, Opened, OpenedBackend, secret_key_from_env};
use dbconsole_server::backup::{self, BackupError, RestoreError};
use dbconsole_server::cli::{BackupArgs, RestoreArgs};
use dbconsole_server::credentials::{self, ACCESS_TOKEN_VAR, API_KEY_VAR, EnvCredentials};
use dbconsole_server::{Cli, Command, KeysArgs, ServeArgs, ShutdownSignal, StorageKind};
use tokio::net::TcpListener;

/// mimalloc: a request allocates and frees many small strings (decoding a record, rendering
/// JSON), and glibc's allocator showed as a tenth of a GET's time in profiles.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let Cli {
        log_format,
        command,
    } = Cli::load(std::env::args_os().collect(), |name| {
        std::env::var_os(name).is_some()
    })
    .unwrap_or_else(|error| error.exit());
    let log = dbconsole_server::init_tracing(log_format);
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
        .and_then(|runtime| match command {
            Command::Serve(args) => runtime.block_on(serve(args)),
            Command::Keys(args) => runtime.block_on(manage_keys(args)),
            Command::Sessions(args) => runtime.block_on(manage_sessions(args)),
            Command::Backup(args) => runtime.block_on(back_up(args)),
            Command::Restore(args) => restore(&args),
        });
    // What the log holds is written before the last word.
    drop(log);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("dbconsole: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Storage + authenticator + service, then the serving loop until a signal.
async fn serve(args: ServeArgs) -> Result<(), Error> {
    let sessions = args.session_options().map_err(Error::Flags)?;
    let location = args.location();
    let Opened {
        storage,
        keys,
        backend,
    } = args
        .storage
        .open(&location, secret_key_from_env().as_deref())
        .await
        .map_err(|source| Error::OpenStorage(args.storage, source))?;
    let env = EnvCredentials::from_env();
    let mut authenticator: Arc<dyn dbconsole_core::Authenticator> = Arc::new(
        StoredCredentials::new(Arc::clone(&storage), env.static_credentials()),
    );
    let mut login = None;
    if let Some(options) = args.oidc() {
        let issuer = Arc::new(dbconsole_server::oidc::HttpsIssuer::new().map_err(Error::Oidc)?);
        let oidc = Arc::new(dbconsole_server::oidc::OidcAuthenticator::new(
            authenticator,
            options,
            issuer,
        ));
        if let Some(client) = args.oidc_client() {
            login = Some(Arc::new(dbconsole_server::oidc::OidcLogin::new(
                Arc::clone(&oidc),
                client,
                args.public_url.clone(),
            )));
        }
        authenticator = oidc;
    }
    let targets = args.delivery_targets();
    targets.check().map_err(Error::Delivery)?;
    // The door's listener is bound before the service is built: the console shows its address.
    let door_listener = match &args.door_listen {
        Some(listen) => Some(
            TcpListener::bind(listen.as_str())
                .await
                .map_err(|source| Error::Listen(listen.clone(), source))?,
        ),
        None => None,
    };
    let door_address = door_listener
        .as_ref()
        .map(|listener| listener.local_addr().map_err(Error::BoundAddress))
        .transpose()?;
    let wake = Wake::new();
    let service = ConsoleService::builder(Arc::clone(&storage), authenticator, keys.sealer.clone())
        .checkers(dbconsole_core::check::standard_checkers())
        .runners(dbconsole_core::run::standard_runners(args.pool_limits()))
        .max_rows(args.max_rows)
        .value_limits(args.value_limits())
        .statement_timeout(std::time::Duration::from_secs(args.statement_timeout_secs))
        .check_timeout(args.check_timeout())
        .read_cache(args.read_cache_bytes())
        .body_timeout(args.body_timeout())
        .metrics(args.metrics_listen.is_some())
        .audit_retention(args.audit_retention())
        .sessions(sessions)
        .row_tokens(dbconsole_core::service::RowTokenOptions {
            life: std::time::Duration::from_secs(args.row_token_life_secs),
            unverified_rows: args.allow_unverified_rows,
        })
        .run_events_bound(args.run_events_backlog as usize)
        .door(args.door_options(door_address))
        .outbox(OutboxTargets {
            workflows: targets.workflow_url.is_some(),
            slack: targets.slack_token.is_some(),
            wake: Some(wake.clone()),
            console_url: args.public_url.clone(),
        });
    let service = match login {
        Some(login) => service.oidc_login(login),
        None => service,
    }
    .build();
    let transport = dbconsole_server::deliver::HttpTransport::new(targets).map_err(Error::Oidc)?;

    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(dbconsole_server::tls::acceptor(cert, key)?),
        _ => None,
    };
    let door_tls = match door_address {
        Some(bound) => {
            let given = match (
                &args.door_tls_cert,
                &args.door_tls_key,
                &args.tls_cert,
                &args.tls_key,
            ) {
                (Some(cert), Some(key), _, _) | (None, None, Some(cert), Some(key)) => {
                    Some((cert.as_path(), key.as_path()))
                }
                _ => None,
            };
            if given.is_none() {
                std::fs::create_dir_all(&args.data_dir).map_err(|source| Error::DataDir {
                    dir: args.data_dir.clone(),
                    source,
                })?;
            }
            let host = bound.ip().to_string();
            Some(
                dbconsole_server::door::acceptor(given, &args.data_dir, &host)
                    .map_err(Error::DoorTls)?,
            )
        }
        None => None,
    };
    let signal = ShutdownSignal::install().map_err(Error::Signals)?;
    let metrics = match &args.metrics_listen {
        Some(listen) => {
            let handle = dbconsole_server::metrics::install().map_err(Error::Metrics)?;
            let listener = TcpListener::bind(listen.as_str())
                .await
                .map_err(|source| Error::Listen(listen.clone(), source))?;
            let address = listener.local_addr().map_err(Error::BoundAddress)?;
            Some((listener, address, handle))
        }
        None => None,
    };
    let listener = TcpListener::bind(args.listen.as_str())
        .await
        .map_err(|source| Error::Listen(args.listen.clone(), source))?;
    let address = listener.local_addr().map_err(Error::BoundAddress)?;
    #[cfg(unix)]
    let admin = match backend {
        OpenedBackend::Redb(redb) => Some(
            dbconsole_server::admin::socket::AdminSocket::bind(&args.data_dir, redb, keys.clone())
                .map_err(|source| Error::AdminSocket {
                    dir: args.data_dir.clone(),
                    source,
                })?,
        ),
        OpenedBackend::Memory | OpenedBackend::Postgres => None,
    };

    // After everything that can fail before serving: keys created here are printed below.
    let new_store = credentials::is_new_store(&*storage)
        .await
        .map_err(Error::InitialKeys)?;
    let created = credentials::bootstrap(&*storage, &env)
        .await
        .map_err(Error::InitialKeys)?;
    warn_about_missing_credentials(&*storage, &env).await;
    let link = credentials::initial_sign_in_link(&*storage, new_store)
        .await
        .map_err(Error::InitialKeys)?;
    let adopted = dbconsole_core::service::users::adopt_identities(
        &*storage,
        &dbconsole_core::model::Origin::of(dbconsole_core::model::Actor::named(
            credentials::BOOTSTRAP_ACTOR,
        )),
    )
    .await
    .map_err(Error::InitialKeys)?;
    if adopted > 0 {
        tracing::info!(
            adopted,
            "made a user record for each identity stored before users were"
        );
    }
    let public_url = args
        .public_url
        .clone()
        .or_else(|| credentials::loopback_url(address, tls.is_some()));
    if let Some(url) = &public_url {
        storage
            .put_setting(credentials::PUBLIC_URL_SETTING, url)
            .await
            .map_err(Error::InitialKeys)?;
    }
    tracing::info!(
        %address,
        storage = %args.storage,
        created_keys = created.is_some(),
        tls = tls.is_some(),
        "listening"
    );
    if args.allow_unverified_rows {
        tracing::warn!(
            "--allow-unverified-rows: row action triggers may bring row values without a row \
             token, so a caller can start a workflow with values no panel returned"
        );
    }
    let mut stdout = std::io::stdout().lock();
    created
        .as_ref()
        .map_or(Ok(()), |created| created.write(&mut stdout))
        .and_then(|()| match &link {
            Some(token) => {
                let base = public_url.clone().unwrap_or_else(|| {
                    let scheme = if tls.is_some() { "https" } else { "http" };
                    format!("{scheme}://{address}")
                });
                writeln!(
                    stdout,
                    "Sign in to the console as {} (a super admin) within 15 minutes, once:\n  {}",
                    credentials::INITIAL_ADMIN,
                    credentials::sign_in_url(&base, token)
                )
            }
            None => Ok(()),
        })
        .and_then(|()| match (door_address, &door_tls) {
            (Some(door), Some((_, fingerprint))) => {
                writeln!(stdout, "PostgreSQL door on {door} (TLS required)")?;
                match fingerprint {
                    Some(fingerprint) => writeln!(
                        stdout,
                        "  its certificate was made by this server (SHA-256 {fingerprint}): \
                         connect with sslmode=require"
                    ),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        })
        .and_then(|()| writeln!(stdout, "listening on {address}"))
        .and_then(|()| match &metrics {
            Some((_, address, _)) => writeln!(stdout, "metrics on http://{address}/metrics"),
            None => Ok(()),
        })
        .and_then(|()| stdout.flush())
        .map_err(Error::Stdout)?;
    drop(stdout);
    drop(created);
    drop(link);

    if let Some((listener, _, handle)) = metrics {
        tokio::spawn(dbconsole_server::metrics::serve(
            listener,
            handle,
            Arc::clone(&storage),
        ));
    }
    tokio::spawn(prune_audit_hourly(service.clone()));
    // The outbox goes out from every node; a delivery left mid-send by a stop is sent again
    // once its lease ends (docs/workflows.md, "Workflows and notifications").
    let worker = Worker::new(
        Arc::clone(&storage),
        Arc::new(transport),
        args.worker_options(),
        wake,
    );
    tokio::spawn(worker.run(std::future::pending()));
    let (shutdown, force) = signal.stages();
    let door_stop = Arc::new(tokio::sync::Notify::new());
    if let (Some(listener), Some((acceptor, _))) = (door_listener, door_tls) {
        let stop = Arc::clone(&door_stop);
        tokio::spawn(dbconsole_server::door::serve(
            listener,
            service.door(),
            acceptor,
            args.door_threads(),
            async move { stop.notified().await },
        ));
    }
    let door = service.door();
    let events = service.clone();
    dbconsole_server::serve(listener, service, args.limits(), tls, shutdown, force).await;
    door_stop.notify_one();
    door.close_all();
    // The answered runs' audit events, written before the program ends.
    if tokio::time::timeout(RUN_EVENTS_SETTLE, events.settle_run_events())
        .await
        .is_err()
    {
        let left = events.run_events().backlog;
        tracing::error!(
            left,
            "the audit events of answered runs were not all written in time"
        );
    }
    #[cfg(unix)]
    if let Some(admin) = admin {
        admin.shutdown().await;
    }
    Ok(())
}

/// A warning for each kind of route that no credential can open yet.
async fn warn_about_missing_credentials(storage: &dyn Storage, env: &EnvCredentials) {
    let stored = match storage.list_caller_keys().await {
        Ok(keys) => keys,
        Err(error) => {
            tracing::warn!(%error, "cannot list the stored keys");
            return;
        }
    };
    let stored_kind = |kind| stored.iter().any(|key| key.kind == kind);
    if !env.has_api_key() && !stored_kind(CredentialKind::ApiKey) {
        tracing::warn!(
            "no {API_KEY_VAR} is set and no API key is stored: the database routes accept none \
             until one is created with `dbconsole keys create --kind api-key`"
        );
    }
    if !env.has_access_token() && !stored_kind(CredentialKind::AccessToken) {
        tracing::warn!(
            "no {ACCESS_TOKEN_VAR} is set and no access token is stored: the dashboard routes \
             accept none until one is created with `dbconsole keys create --kind access-token`"
        );
    }
}

/// `dbconsole keys …`: the reply on standard output, a failure as the error.
async fn manage_keys(args: KeysArgs) -> Result<(), Error> {
    let reply = keys::run(args, secret_key_from_env().as_deref()).await?;
    Ok(print_reply(&reply, &mut io::stdout().lock())?)
}

/// `dbconsole sessions …`: the reply on standard output (a link as the URL to open), a failure
/// as the error.
async fn manage_sessions(args: dbconsole_server::SessionsArgs) -> Result<(), Error> {
    let (given_url, invitation) = match &args.command {
        dbconsole_server::SessionsCommand::Link { public_url, .. } => (public_url.clone(), false),
        dbconsole_server::SessionsCommand::Invite { public_url, .. } => (public_url.clone(), true),
        _ => (None, false),
    };
    let reply = keys::run_sessions(args, secret_key_from_env().as_deref()).await?;
    let mut stdout = io::stdout().lock();
    if let dbconsole_server::admin::protocol::AdminReply::LinkCreated {
        link,
        token,
        public_url,
    } = &reply
    {
        let Some(base) = given_url.or_else(|| public_url.clone()) else {
            return Err(Error::NoPublicUrl);
        };
        let printed = if invitation {
            writeln!(
                stdout,
                "Hand this invitation to {} ({}); it works once, within 7 days:\n  {}",
                link.user,
                link.role,
                credentials::invitation_url(&base, token)
            )
        } else {
            writeln!(
                stdout,
                "Sign in to the console as {} ({}) by opening, once, within 15 minutes:\n  {}",
                link.user,
                link.role,
                credentials::sign_in_url(&base, token)
            )
        };
        printed
            .and_then(|()| stdout.flush())
            .map_err(Error::Stdout)?;
        return Ok(());
    }
    Ok(print_reply(&reply, &mut stdout)?)
}

/// `dbconsole backup`: what the backup holds on standard output, a failure as the error.
async fn back_up(args: BackupArgs) -> Result<(), Error> {
    let reply = backup::backup(args, secret_key_from_env().as_deref()).await?;
    Ok(print_reply(&reply, &mut io::stdout().lock())?)
}

/// `dbconsole restore`: what was restored on standard output, a failure as the error.
fn restore(args: &RestoreArgs) -> Result<(), Error> {
    let copied = backup::restore(args, secret_key_from_env().as_deref())?;
    let mut stdout = io::stdout().lock();
    writeln!(
        stdout,
        "{}",
        backup::restored_message(&copied, &args.data_dir)
    )
    .and_then(|()| stdout.flush())
    .map_err(Error::Stdout)
}

/// Applies the audit trail's retention, and drops the answers of idempotent writes older than
/// a day, now and then every hour, for as long as the server runs.
async fn prune_audit_hourly(service: ConsoleService) {
    let mut hourly = tokio::time::interval(AUDIT_PRUNE_INTERVAL);
    loop {
        hourly.tick().await;
        match service.prune_audit().await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "pruned the audit trail to its retention"),
            Err(error) => tracing::warn!(%error, "pruning the audit trail failed"),
        }
        match service.prune_sessions().await {
            Ok(0) => {}
            Ok(pruned) => {
                tracing::info!(pruned, "dropped ended browser sessions and sign-in links")
            }
            Err(error) => tracing::warn!(%error, "dropping ended browser sessions failed"),
        }
        match service.prune_answers().await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(
                pruned,
                "dropped the answers of idempotent writes older than a day"
            ),
            Err(error) => {
                tracing::warn!(%error, "dropping old answers of idempotent writes failed")
            }
        }
    }
}

/// How long a stopping server waits for the audit events of the runs it answered.
const RUN_EVENTS_SETTLE: std::time::Duration = std::time::Duration::from_secs(10);

/// How often the audit trail's retention is applied.
const AUDIT_PRUNE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(3600);

/// Why `dbconsole` exits with a failure: printed as one line on standard error.
#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("cannot start the async runtime: {0}")]
    Runtime(io::Error),
    #[error("{0}")]
    Flags(String),
    #[error(
        "no public URL is known: give --public-url (the running server records its own at start; \
         none has started on this store with one)"
    )]
    NoPublicUrl,
    #[error("cannot open the {0} storage: {1}")]
    OpenStorage(StorageKind, OpenError),
    #[error("cannot install signal handlers: {0}")]
    Signals(io::Error),
    #[error("cannot listen on {0}: {1}")]
    Listen(String, io::Error),
    #[error("the door's TLS: {0}")]
    DoorTls(dbconsole_server::door::DoorTlsError),
    #[error("cannot create the data directory {}: {source}", dir.display())]
    DataDir {
        dir: std::path::PathBuf,
        source: io::Error,
    },
    #[error(transparent)]
    Tls(#[from] dbconsole_server::tls::TlsError),
    #[error("cannot install the metrics recorder: {0}")]
    Metrics(metrics_exporter_prometheus::BuildError),
    #[error("cannot read the bound address: {0}")]
    BoundAddress(io::Error),
    #[error("cannot read the system's root certificates (OIDC, deliveries): {0}")]
    Oidc(io::Error),
    #[error("cannot deliver workflows or Slack messages: {0}")]
    Delivery(dbconsole_server::deliver::TargetError),
    #[error("cannot create the admin socket in {}: {source}", dir.display())]
    AdminSocket { dir: PathBuf, source: io::Error },
    #[error("cannot create the initial keys: {0}")]
    InitialKeys(StorageError),
    #[error("cannot write to standard output: {0}")]
    Stdout(io::Error),
    #[error(transparent)]
    Keys(#[from] AdminError),
    #[error(transparent)]
    Print(#[from] PrintError),
    #[error(transparent)]
    Backup(#[from] BackupError),
    #[error(transparent)]
    Restore(#[from] RestoreError),
}
