//! The command line: `dbconsole serve`, `keys`, `backup` and `restore`, their flags each also
//! read from the environment.

use std::fmt::Debug;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};
use dbconsole_core::model::{Retention, Role, Secret};
use dbconsole_core::{CredentialKind, Scope};

use dbconsole_core::{DEFAULT_AUDIT_RETENTION, DEFAULT_BODY_TIMEOUT, DEFAULT_CHECK_TIMEOUT};

use crate::backend::{StorageKind, StorageLocation};

/// The data directory when `--data-dir` and its variable are not given.
const DEFAULT_DATA_DIR: &str = "./data";
/// The variable of `--data-dir` (every command that takes it).
const DATA_DIR_ENV: &str = "DBCONSOLE_DATA_DIR";
/// The service's default retention, as the flags say it (0: no bound).
const DEFAULT_AUDIT_DAYS: u32 = match DEFAULT_AUDIT_RETENTION.max_age_days {
    Some(days) => days,
    None => 0,
};
const DEFAULT_AUDIT_EVENTS: u64 = match DEFAULT_AUDIT_RETENTION.max_events {
    Some(events) => events,
    None => 0,
};
use crate::serve::ServeLimits;

/// The `dbconsole` command line.
#[derive(Debug, Parser)]
#[command(
    name = "dbconsole",
    version,
    about = "The dbconsole control plane server"
)]
pub struct Cli {
    /// The format of the log lines on standard error: `text` for people, `json` for one JSON
    /// object per line (with the request's `request_id` in its span).
    #[arg(
        long,
        global = true,
        env = "DBCONSOLE_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The command line `args` (program name first), completed by the environment (`env` looks
    /// a variable up) and by the TOML file of `serve --config`: a setting of the file is used
    /// only where neither the command line nor the environment gives one.
    pub fn load(
        args: Vec<std::ffi::OsString>,
        env: impl Fn(&str) -> bool,
    ) -> Result<Self, clap::Error> {
        use clap::CommandFactory;
        use clap::parser::ValueSource;

        let cli = Self::try_parse_from(&args)?;
        let Command::Serve(ServeArgs {
            config: Some(path), ..
        }) = &cli.command
        else {
            return Ok(cli);
        };
        let invalid =
            |message: String| Self::command().error(clap::error::ErrorKind::InvalidValue, message);
        let text = std::fs::read_to_string(path)
            .map_err(|error| invalid(format!("cannot read {}: {error}", path.display())))?;
        let table: toml::Table = text
            .parse()
            .map_err(|error| invalid(format!("{} is not valid TOML: {error}", path.display())))?;
        let mut command = Self::command();
        command.build();
        let matches = command.clone().try_get_matches_from(&args)?;
        let serve = command
            .find_subcommand("serve")
            .expect("the serve command")
            .clone();
        let serve_matches = matches.subcommand_matches("serve").expect("serve matched");
        let mut extra = Vec::new();
        for (key, value) in &table {
            let Some(arg) = serve
                .get_arguments()
                .find(|arg| arg.get_long() == Some(key.as_str()) && key != "config")
            else {
                return Err(invalid(format!(
                    "{}: unknown setting `{key}` (settings are the long flags of `dbconsole serve`)",
                    path.display()
                )));
            };
            let value = match value {
                toml::Value::String(text) => text.clone(),
                toml::Value::Integer(number) => number.to_string(),
                toml::Value::Boolean(flag) => flag.to_string(),
                other => {
                    return Err(invalid(format!(
                        "{}: `{key}` must be a string, a number or a boolean, not {}",
                        path.display(),
                        other.type_str()
                    )));
                }
            };
            let id = arg.get_id().as_str();
            // Globals (`log-format`) are propagated into the subcommand's matches.
            let from_command_line =
                serve_matches.value_source(id) == Some(ValueSource::CommandLine);
            let from_env = arg
                .get_env()
                .and_then(|name| name.to_str())
                .is_some_and(&env);
            if !from_command_line && !from_env {
                extra.push(std::ffi::OsString::from(format!("--{key}={value}")));
            }
        }
        let mut args = args;
        args.extend(extra);
        Self::try_parse_from(args)
    }
}

/// The format of the log lines (`--log-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event, for people.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once at start; boxing the serve flags would buy nothing"
)]
pub enum Command {
    /// Serve the HTTP API until SIGINT or SIGTERM.
    Serve(ServeArgs),
    /// Create, list and revoke the stored API keys and access tokens (of the redb or PostgreSQL
    /// storage `serve` uses).
    Keys(KeysArgs),
    /// List and end browser sessions, and make one-time sign-in links (of the redb or
    /// PostgreSQL storage `serve` uses).
    Sessions(SessionsArgs),
    /// Write a consistent copy of the redb data to a new file, while a server runs or not.
    Backup(BackupArgs),
    /// Put a backup in place as the data of an empty data directory.
    Restore(RestoreArgs),
}

/// Shown after `dbconsole backup --help`.
const BACKUP_AFTER_HELP: &str = "\
The backup is the data as it was at one moment: every write a server acknowledged before the
command started is in it, and no write is in it by halves. While a server runs on DATA_DIR, the
command asks it through DATA_DIR/admin.sock, and the server writes FILE (so FILE is on the
server's machine, written by the server's user); writes go on meanwhile. Without a running
server the command opens the data file itself. FILE must not exist; it is written as
FILE.partial and renamed when complete. Secrets in it stay encrypted: restoring it needs the
secret key the data was written with (DATA_DIR/secret.key, or DBCONSOLE_SECRET_KEY), which the
backup does not hold; keep the key apart from the backups. Only the redb storage is backed up
here; a PostgreSQL store is backed up with PostgreSQL's own tools (pg_dump).";

/// The flags of `dbconsole backup`.
#[derive(Clone, Debug, Args)]
#[command(after_help = BACKUP_AFTER_HELP)]
pub struct BackupArgs {
    /// The file to write; it must not exist.
    #[arg(long, value_name = "FILE")]
    pub to: PathBuf,

    /// Directory of the redb data file (the same as `serve`'s).
    #[arg(long, env = DATA_DIR_ENV, default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
}

/// Shown after `dbconsole restore --help`.
const RESTORE_AFTER_HELP: &str = "\
DATA_DIR must hold no data file (a new directory is created). The backup's secrets are
encrypted under the key its data was written with: give that key as DBCONSOLE_SECRET_KEY, or
copy the original DATA_DIR/secret.key into DATA_DIR first. The file is checked (a dbconsole data
file, in a format this version reads, under that key) before it is put in place; the backup
itself is never changed. Then start `dbconsole serve` on DATA_DIR.";

/// The flags of `dbconsole restore`.
#[derive(Clone, Debug, Args)]
#[command(after_help = RESTORE_AFTER_HELP)]
pub struct RestoreArgs {
    /// The backup to restore, written by `dbconsole backup`.
    #[arg(long, value_name = "FILE")]
    pub from: PathBuf,

    /// The data directory to restore into; it must hold no data file.
    #[arg(long, env = DATA_DIR_ENV, default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
}

/// Shown after `dbconsole serve --help`: what the flags do not say.
const SERVE_AFTER_HELP: &str = "\
Static full-access credentials come from the environment only (never stored):
  DBCONSOLE_API_KEY       API key for the database routes (x-api-key)
  DBCONSOLE_ACCESS_TOKEN  access token for the dashboard routes (Authorization: Bearer)
Stored keys are managed with `dbconsole keys`. When neither variable is set and no key is
stored, one API key and one access token are created, stored (digests only) and printed once
on standard output. With redb, DATA_DIR/admin.sock (mode 0600) serves `dbconsole keys` while
the server runs.
  DBCONSOLE_SECRET_KEY    the seal keys that encrypt secrets at rest: base64 of a 32-byte
                          key, or <id>:<base64> per key; when unset, DATA_DIR/secret.key
                          is used, created once (mode 0600)
Logs go to standard error (--log-format text|json); RUST_LOG filters them (default: info).
Every response carries x-request-id (the caller's, when usable, else a new one), and every log
line of the request names it.";

/// The flags of `dbconsole serve`.
#[derive(Clone, Debug, Args)]
#[command(after_help = SERVE_AFTER_HELP)]
pub struct ServeArgs {
    /// A TOML file of settings for `serve`: its keys are the long names of these flags
    /// (`listen = "0.0.0.0:4000"`, `max-connections = 256`, `log-format = "json"`). The command
    /// line and the environment win over it; it wins over the defaults.
    #[arg(long, env = "DBCONSOLE_CONFIG")]
    pub config: Option<PathBuf>,

    /// Address to listen on, HOST:PORT: an IP address or a host name (resolved at start; every
    /// address tried in turn); port 0 picks a free port (the bound address is printed).
    #[arg(long, env = "DBCONSOLE_LISTEN", default_value = "127.0.0.1:4000", value_parser = listen_address)]
    pub listen: String,

    /// Storage backend.
    #[arg(long, env = "DBCONSOLE_STORAGE", value_enum, default_value_t = StorageKind::Redb)]
    pub storage: StorageKind,

    /// Directory of the redb data file and, unless DBCONSOLE_SECRET_KEY is set, of the secret
    /// key file; created when missing (unused by `memory`).
    #[arg(long, env = DATA_DIR_ENV, default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,

    /// Where the PostgreSQL storage is.
    #[command(flatten)]
    pub database: DatabaseArgs,

    /// redb's page cache in MiB: what the server keeps of the data file in memory, whatever its
    /// size (pages beyond it come from the operating system's page cache).
    #[arg(
        long,
        env = "DBCONSOLE_CACHE_MIB",
        default_value_t = 16,
        value_parser = clap::value_parser!(u64).range(1..=65536)
    )]
    pub cache_mib: u64,

    /// The read cache in MiB: rendered answers of `GET` of a database or dashboard by id, kept
    /// until a write through this server changes them; 0 turns it off. Used with `redb` and
    /// `memory`, whose only writer is this server; never with `postgres`, whose nodes write
    /// the same store.
    #[arg(
        long,
        env = "DBCONSOLE_READ_CACHE_MIB",
        default_value_t = 8,
        value_parser = clap::value_parser!(u64).range(0..=65536)
    )]
    pub read_cache_mib: u64,

    /// Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.
    #[arg(long, env = "DBCONSOLE_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key of --tls-cert.
    #[arg(long, env = "DBCONSOLE_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Serve `GET /metrics` (Prometheus text format) on this address, HOST:PORT, apart from the
    /// API: bind it where only the monitoring reaches it. Unset: no metrics are kept.
    #[arg(long, env = "DBCONSOLE_METRICS_LISTEN", value_parser = listen_address)]
    pub metrics_listen: Option<String>,

    /// Connections served at once; more wait in the listen backlog until one ends.
    #[arg(
        long,
        env = "DBCONSOLE_MAX_CONNECTIONS",
        default_value_t = 1024,
        value_parser = clap::value_parser!(u64).range(1..=1_000_000)
    )]
    pub max_connections: u64,

    /// Seconds a request body may take to arrive once its head has; slower is 408 and the
    /// connection is closed.
    #[arg(
        long,
        env = "DBCONSOLE_BODY_TIMEOUT_SECS",
        default_value_t = DEFAULT_BODY_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..=3600)
    )]
    pub body_timeout_secs: u64,

    /// Seconds a shutdown (SIGINT, SIGTERM) waits for the requests in flight before it ends
    /// them; a second signal ends them at once.
    #[arg(
        long,
        env = "DBCONSOLE_DRAIN_SECS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(0..=3600)
    )]
    pub drain_secs: u64,

    /// Check-connection timeout in seconds, for credentials that set none.
    #[arg(
        long,
        env = "DBCONSOLE_CHECK_TIMEOUT_SECS",
        default_value_t = DEFAULT_CHECK_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub check_timeout_secs: u64,

    /// Days the audit trail keeps an event; 0 keeps events whatever their age. Applied at start
    /// and every hour.
    #[arg(
        long,
        env = "DBCONSOLE_AUDIT_RETENTION_DAYS",
        default_value_t = DEFAULT_AUDIT_DAYS,
        value_parser = clap::value_parser!(u32).range(0..=100_000)
    )]
    pub audit_retention_days: u32,

    /// Events the audit trail keeps at most, the newest; 0 bounds nothing.
    #[arg(
        long,
        env = "DBCONSOLE_AUDIT_RETENTION_EVENTS",
        default_value_t = DEFAULT_AUDIT_EVENTS
    )]
    pub audit_retention_events: u64,

    /// The most rows a query or panel run returns; a request's `limit` above it is refused.
    #[arg(
        long,
        env = "DBCONSOLE_MAX_ROWS",
        default_value_t = dbconsole_core::service::DEFAULT_MAX_ROWS,
        value_parser = clap::value_parser!(u32).range(1..)
    )]
    pub max_rows: u32,

    /// The most MiB one value of a result may hold; a result with a bigger one is refused
    /// (422), never copied into the answer.
    #[arg(
        long,
        env = "DBCONSOLE_MAX_VALUE_MIB",
        default_value_t = 32,
        value_parser = clap::value_parser!(u64).range(1..=4096)
    )]
    pub max_value_mib: u64,

    /// The most MiB one row of a result may hold, its values together.
    #[arg(
        long,
        env = "DBCONSOLE_MAX_ROW_MIB",
        default_value_t = 64,
        value_parser = clap::value_parser!(u64).range(1..=4096)
    )]
    pub max_row_mib: u64,

    /// The most MiB the large rows of all runs together may hold at once (each charged three
    /// times its size: the driver's growing buffer and the answer's copy): a run whose next
    /// large row does not fit waits for room. At least three times `--max-row-mib`.
    #[arg(
        long,
        env = "DBCONSOLE_RUN_MEMORY_MIB",
        default_value_t = 2048,
        value_parser = clap::value_parser!(u64).range(1..=1_048_576)
    )]
    pub run_memory_mib: u64,

    /// The statement timeout in seconds of credentials that set none (enforced in the
    /// database and by the server).
    #[arg(
        long,
        env = "DBCONSOLE_STATEMENT_TIMEOUT_SECS",
        default_value_t = dbconsole_core::service::DEFAULT_STATEMENT_TIMEOUT.as_secs(),
        value_parser = clap::value_parser!(u64).range(1..=86_400)
    )]
    pub statement_timeout_secs: u64,

    /// Connections each credential's pool opens at most (one pool for console queries, one for
    /// panels).
    #[arg(
        long,
        env = "DBCONSOLE_POOL_SIZE",
        default_value_t = 4,
        value_parser = clap::value_parser!(u64).range(1..=1_000)
    )]
    pub pool_size: u64,

    /// Seconds a run waits for a free connection of its credential's pool before it is
    /// answered 503.
    #[arg(
        long,
        env = "DBCONSOLE_POOL_WAIT_SECS",
        default_value_t = 5,
        value_parser = clap::value_parser!(u64).range(1..=600)
    )]
    pub pool_wait_secs: u64,

    /// Accept OIDC bearer tokens (JWTs) of this issuer as access tokens, as the user they name
    /// (docs/api.md, "Who may do what"); its discovery document names the key set. Needs
    /// --oidc-audience.
    #[arg(long, env = "DBCONSOLE_OIDC_ISSUER", requires = "oidc_audience")]
    pub oidc_issuer: Option<String>,

    /// The audience (`aud`) an OIDC token must name.
    #[arg(long, env = "DBCONSOLE_OIDC_AUDIENCE", requires = "oidc_issuer")]
    pub oidc_audience: Option<String>,

    /// The issuer's key set URL, instead of the discovery document's `jwks_uri`.
    #[arg(long, env = "DBCONSOLE_OIDC_JWKS_URL", requires = "oidc_issuer")]
    pub oidc_jwks_url: Option<String>,

    /// The token claim that names the user.
    #[arg(long, env = "DBCONSOLE_OIDC_USER_CLAIM", default_value = "email")]
    pub oidc_user_claim: String,

    /// The token claim that lists the user's groups (an array of strings).
    #[arg(long, env = "DBCONSOLE_OIDC_GROUPS_CLAIM", default_value = "groups")]
    pub oidc_groups_claim: String,

    /// Members of this group (in the groups claim) are super admins.
    #[arg(long, env = "DBCONSOLE_OIDC_SUPER_ADMIN_GROUP")]
    pub oidc_super_admin_group: Option<String>,

    /// A token whose claim of this name is `true` is an AI agent's (the AI limits apply).
    #[arg(long, env = "DBCONSOLE_OIDC_AGENT_CLAIM")]
    pub oidc_agent_claim: Option<String>,

    /// The client id registered at the OIDC issuer: with it, browsers sign in to the console
    /// through the issuer (authorization code flow with PKCE); its redirect URI is
    /// `<public URL>/api/v1/console/oidc/callback`. Needs --oidc-issuer.
    #[arg(long, env = "DBCONSOLE_OIDC_CLIENT_ID", requires = "oidc_issuer")]
    pub oidc_client_id: Option<String>,

    /// The client secret, for a confidential client (never logged).
    #[arg(
        long,
        env = "DBCONSOLE_OIDC_CLIENT_SECRET",
        hide_env_values = true,
        requires = "oidc_client_id",
        value_parser = secret_value
    )]
    pub oidc_client_secret: Option<Secret>,

    /// The scopes asked for besides `openid`, space-separated.
    #[arg(long, env = "DBCONSOLE_OIDC_SCOPES", default_value = "email profile")]
    pub oidc_scopes: String,

    /// Where row actions start workflows: an https:// URL (http:// to a loopback host) with
    /// `{workflow_id}` where the action's workflow goes, e.g.
    /// `https://flows.example.com/run/{workflow_id}` (docs/workflows.md, "Workflows and notifications").
    /// Without it, triggers are refused (409). Needs --workflow-secret.
    #[arg(
        long,
        env = "DBCONSOLE_WORKFLOW_URL",
        hide_env_values = true,
        requires = "workflow_secret"
    )]
    pub workflow_url: Option<String>,

    /// Seconds a panel row's token works after its run (docs/workflows.md, "Row tokens"): a
    /// click later than that runs the panel again first.
    #[arg(
        long,
        env = "DBCONSOLE_ROW_TOKEN_LIFE_SECS",
        default_value_t = 900,
        value_parser = clap::value_parser!(u64).range(1..=86_400)
    )]
    pub row_token_life_secs: u64,

    /// The most answered runs (of panels, AI agents' tools, catalog reads, role checks) whose
    /// audit events are not yet durable: what a crash can lose (docs/operations.md, "Run
    /// events"). A run's answer waits for a place while this many are being written.
    #[arg(
        long,
        env = "DBCONSOLE_RUN_EVENTS_BACKLOG",
        default_value_t = 1024,
        value_parser = clap::value_parser!(u32).range(1..=1_000_000)
    )]
    pub run_events_backlog: u32,

    /// Accept a row action's trigger that brings the clicked row's values itself, without the
    /// row token a panel run gave (a row the caller claims): only for clients made before row
    /// tokens. Off by default; logged at start (docs/workflows.md, "Row tokens").
    #[arg(long, env = "DBCONSOLE_ALLOW_UNVERIFIED_ROWS")]
    pub allow_unverified_rows: bool,

    /// The shared secret (at least 16 bytes) workflow requests are signed with: the
    /// `Dbconsole-Signature` header's HMAC-SHA256 (never logged).
    #[arg(
        long,
        env = "DBCONSOLE_WORKFLOW_SECRET",
        hide_env_values = true,
        requires = "workflow_url",
        value_parser = secret_value
    )]
    pub workflow_secret: Option<Secret>,

    /// The Slack bot token review requests are posted with (`chat.postMessage` to the
    /// database's slack_channel; never logged). Without it, no message is sent.
    #[arg(
        long,
        env = "DBCONSOLE_SLACK_TOKEN",
        hide_env_values = true,
        value_parser = secret_value
    )]
    pub slack_token: Option<Secret>,

    /// The Slack Web API's base URL (a Slack-compatible receiver's, for tests).
    #[arg(
        long,
        env = "DBCONSOLE_SLACK_API_URL",
        default_value = "https://slack.com/api"
    )]
    pub slack_api_url: String,

    /// Seconds one delivery attempt (a workflow request, a Slack message) may take.
    #[arg(
        long,
        env = "DBCONSOLE_DELIVERY_TIMEOUT_SECS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=300)
    )]
    pub delivery_timeout_secs: u64,

    /// Attempts of a delivery before it is kept as a dead letter.
    #[arg(
        long,
        env = "DBCONSOLE_DELIVERY_ATTEMPTS",
        default_value_t = 8,
        value_parser = clap::value_parser!(u32).range(1..=100)
    )]
    pub delivery_attempts: u32,

    /// Milliseconds waited after a delivery's first failure; the wait doubles after each next
    /// one (with jitter), up to 5 minutes.
    #[arg(
        long,
        env = "DBCONSOLE_DELIVERY_BACKOFF_MS",
        default_value_t = 1_000,
        value_parser = clap::value_parser!(u64).range(1..=300_000)
    )]
    pub delivery_backoff_ms: u64,

    /// The URL people reach the console at (`https://console.example.com`), when a proxy stands
    /// in front: a browser's state-changing request must come from its origin, its cookie is
    /// `Secure` when it is https, and sign-in links and Slack review requests point at it.
    /// Without it: the request's `Host`, and https only when the server holds the TLS key.
    #[arg(long, env = "DBCONSOLE_PUBLIC_URL", value_parser = public_url)]
    pub public_url: Option<String>,

    /// Seconds a browser session lasts without a request.
    #[arg(
        long,
        env = "DBCONSOLE_SESSION_IDLE_SECS",
        default_value_t = 3600,
        value_parser = clap::value_parser!(u64).range(60..=86_400)
    )]
    pub session_idle_secs: u64,

    /// Seconds a browser session lasts at most, however busy.
    #[arg(
        long,
        env = "DBCONSOLE_SESSION_MAX_AGE_SECS",
        default_value_t = 43_200,
        value_parser = clap::value_parser!(u64).range(60..=2_592_000)
    )]
    pub session_max_age_secs: u64,
}

/// A public URL: http(s), with a host, no query; kept without a trailing slash.
fn public_url(value: &str) -> Result<String, String> {
    match dbconsole_core::service::browser::SessionOptions::for_public_url(value) {
        Some(_) if !value.contains('?') && !value.contains('#') => {
            Ok(value.trim_end_matches('/').to_owned())
        }
        _ => Err("expected an http(s) URL such as https://console.example.com".to_owned()),
    }
}

/// The PostgreSQL storage's flags, shared by `serve` and `keys`.
#[derive(Clone, Debug, Args)]
pub struct DatabaseArgs {
    /// PostgreSQL URL for `--storage postgres`, e.g.
    /// postgres://dbconsole:PASSWORD@db.internal:5432/dbconsole?sslmode=require (never logged).
    #[arg(
        long,
        env = "DBCONSOLE_DATABASE_URL",
        hide_env_values = true,
        global = true
    )]
    #[arg(value_parser = secret_value)]
    pub database_url: Option<Secret>,

    /// PostgreSQL schema the tables live in (created when missing).
    #[arg(
        long,
        env = "DBCONSOLE_DATABASE_SCHEMA",
        default_value = "dbconsole",
        global = true
    )]
    pub database_schema: String,

    /// CA bundle (PEM) the PostgreSQL server certificate must chain to; with it, TLS is required
    /// and the host name verified.
    #[arg(long, env = "DBCONSOLE_DATABASE_CA_FILE", global = true)]
    pub database_ca_file: Option<PathBuf>,

    /// Bound in seconds on each PostgreSQL operation, waiting for a connection included; a
    /// request that reaches it answers 503.
    #[arg(
        long,
        env = "DBCONSOLE_DATABASE_TIMEOUT_SECS",
        default_value_t = 5,
        value_parser = clap::value_parser!(u64).range(1..),
        global = true
    )]
    pub database_timeout_secs: u64,
}

/// A flag's value kept as a [`Secret`]: redacted in `Debug`, wiped on drop.
fn secret_value(value: &str) -> Result<Secret, std::convert::Infallible> {
    Ok(Secret::from(value))
}

impl DatabaseArgs {
    /// The storage's location with this data directory.
    pub fn location(&self, data_dir: &std::path::Path) -> StorageLocation {
        StorageLocation {
            data_dir: data_dir.to_owned(),
            database_url: self.database_url.clone(),
            database_schema: self.database_schema.clone(),
            database_ca_file: self.database_ca_file.clone(),
            database_timeout: Duration::from_secs(self.database_timeout_secs),
            redb_cache_bytes: None,
        }
    }
}

impl ServeArgs {
    /// How browser sessions behave: the public URL's origin and scheme (else the `Host`, and
    /// https when the server holds the TLS key), and the idle and maximum times.
    pub fn session_options(&self) -> dbconsole_core::service::browser::SessionOptions {
        use dbconsole_core::service::browser::SessionOptions;
        let mut options = self
            .public_url
            .as_deref()
            .and_then(SessionOptions::for_public_url)
            .unwrap_or_else(|| SessionOptions {
                secure: self.tls_cert.is_some(),
                ..SessionOptions::default()
            });
        options.idle = Duration::from_secs(self.session_idle_secs);
        options.max_age =
            Duration::from_secs(self.session_max_age_secs.max(self.session_idle_secs));
        options
    }

    /// Where deliveries go.
    pub fn delivery_targets(&self) -> crate::deliver::DeliveryTargets {
        crate::deliver::DeliveryTargets {
            workflow_url: self.workflow_url.clone(),
            workflow_secret: self.workflow_secret.clone(),
            slack_token: self.slack_token.clone(),
            slack_api_url: self.slack_api_url.clone(),
        }
    }

    /// How the outbox worker works.
    pub fn worker_options(&self) -> dbconsole_core::outbox::WorkerOptions {
        let base = Duration::from_millis(self.delivery_backoff_ms);
        dbconsole_core::outbox::WorkerOptions {
            policy: dbconsole_core::model::RetryPolicy {
                max_attempts: self.delivery_attempts,
                base,
                cap: base.max(Duration::from_secs(300)),
            },
            timeout: Duration::from_secs(self.delivery_timeout_secs),
            ..Default::default()
        }
    }

    /// The query runners' pool limits.
    pub fn pool_limits(&self) -> dbconsole_core::run::PoolLimits {
        dbconsole_core::run::PoolLimits {
            size: usize::try_from(self.pool_size).unwrap_or(4),
            wait: Duration::from_secs(self.pool_wait_secs),
        }
    }

    /// The client browsers sign in as, when a client id is given.
    pub fn oidc_client(&self) -> Option<crate::oidc_login::OidcClient> {
        Some(crate::oidc_login::OidcClient {
            client_id: self.oidc_client_id.clone()?,
            client_secret: self.oidc_client_secret.clone(),
            scopes: self.oidc_scopes.clone(),
        })
    }

    /// The OIDC settings, when an issuer is given.
    pub fn oidc(&self) -> Option<crate::oidc::OidcOptions> {
        Some(crate::oidc::OidcOptions {
            issuer: self.oidc_issuer.clone()?,
            audience: self.oidc_audience.clone()?,
            jwks_url: self.oidc_jwks_url.clone(),
            user_claim: self.oidc_user_claim.clone(),
            groups_claim: self.oidc_groups_claim.clone(),
            super_admin_group: self.oidc_super_admin_group.clone(),
            agent_claim: self.oidc_agent_claim.clone(),
            min_refresh: crate::oidc::OidcOptions::REFRESH_AT_MOST_EVERY,
        })
    }

    /// Where the storage is, with the page cache of `--cache-mib`.
    pub fn location(&self) -> StorageLocation {
        StorageLocation {
            redb_cache_bytes: usize::try_from(self.cache_mib * 1024 * 1024).ok(),
            ..self.database.location(&self.data_dir)
        }
    }

    /// The read cache's budget in bytes: `--read-cache-mib`, or 0 on a store other writers
    /// share.
    pub fn read_cache_bytes(&self) -> usize {
        match self.storage {
            StorageKind::Redb | StorageKind::Memory => {
                usize::try_from(self.read_cache_mib * 1024 * 1024).unwrap_or(usize::MAX)
            }
            StorageKind::Postgres => 0,
        }
    }

    /// The serving loop's bounds: `--max-connections` and `--drain-secs`.
    pub fn limits(&self) -> ServeLimits {
        ServeLimits {
            max_connections: usize::try_from(self.max_connections).unwrap_or(usize::MAX),
            drain: Duration::from_secs(self.drain_secs),
            ..ServeLimits::default()
        }
    }

    /// `--max-value-mib`, `--max-row-mib` and `--run-memory-mib`, in bytes.
    pub fn value_limits(&self) -> dbconsole_core::run::encode::ValueLimits {
        let bytes = |mib: u64| usize::try_from(mib * 1024 * 1024).unwrap_or(usize::MAX);
        dbconsole_core::run::encode::ValueLimits {
            max_value: bytes(self.max_value_mib),
            max_row: bytes(self.max_row_mib),
            max_in_flight: bytes(self.run_memory_mib),
        }
    }

    /// `--body-timeout-secs` as a duration.
    pub fn body_timeout(&self) -> Duration {
        Duration::from_secs(self.body_timeout_secs)
    }

    /// `--check-timeout-secs` as a duration.
    pub fn check_timeout(&self) -> Duration {
        Duration::from_secs(self.check_timeout_secs)
    }

    /// `--audit-retention-days` and `--audit-retention-events` (0: no bound).
    pub fn audit_retention(&self) -> Retention {
        Retention {
            max_age_days: (self.audit_retention_days > 0).then_some(self.audit_retention_days),
            max_events: (self.audit_retention_events > 0).then_some(self.audit_retention_events),
        }
    }
}

/// `--listen`: a socket address, or `host:port` with a host name (resolved when binding).
fn listen_address(value: &str) -> Result<String, String> {
    let well_formed = value.parse::<SocketAddr>().is_ok()
        || value.rsplit_once(':').is_some_and(|(host, port)| {
            port.parse::<u16>().is_ok()
                && !host.is_empty()
                && host.len() <= 253
                && host
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
        });
    if well_formed {
        Ok(value.to_owned())
    } else {
        Err("expected HOST:PORT, like 127.0.0.1:4000, [::1]:4000 or localhost:4000".into())
    }
}

/// Shown after `dbconsole keys --help`.
const KEYS_AFTER_HELP: &str = "\
Keys live in the storage `serve` uses (the same --storage, --data-dir and --database-url), as
SHA-256 digests only: a secret is printed once, by `keys create`, and cannot be shown again.
With --storage postgres the commands work on the shared database, and every node honours a
new or revoked key from its next request. With redb (the default) they work on the data file of
DATA_DIR. The commands work whether or not a server is running on DATA_DIR: when one is,
they ask it through DATA_DIR/admin.sock, and a revoke takes effect from its next request.
Without a running server they open the data file themselves, with the same secret key as
`serve`:
  DBCONSOLE_SECRET_KEY    the seal keys that encrypt secrets at rest (base64 of a 32-byte
                          key, or <id>:<base64> per key); when unset, DATA_DIR/secret.key
                          is used
With --storage memory the commands fail: a memory store lives inside its server process, which
no other process can reach.
API keys (x-api-key) are for the database routes, access tokens (Authorization: Bearer) for the
dashboard routes. Scope `setup` allows only PUT /api/v1/console/databases/setup and
DELETE /api/v1/console/databases/remove/{api_id}; anything else answers 403.";

/// The flags of `dbconsole keys`.
#[derive(Clone, Debug, Args)]
#[command(after_help = KEYS_AFTER_HELP)]
pub struct KeysArgs {
    /// Storage backend (the same as `serve`'s): `redb` or `postgres`; `memory` cannot be
    /// reached from another process.
    #[arg(
        long,
        env = "DBCONSOLE_STORAGE",
        value_enum,
        default_value_t = StorageKind::Redb,
        global = true
    )]
    pub storage: StorageKind,

    /// Directory of the redb data file (the same as `serve`'s).
    #[arg(
        long,
        env = DATA_DIR_ENV,
        default_value = DEFAULT_DATA_DIR,
        global = true
    )]
    pub data_dir: PathBuf,

    /// Where the PostgreSQL storage is (the same as `serve`'s).
    #[command(flatten)]
    pub database: DatabaseArgs,

    /// What to do with the keys.
    #[command(subcommand)]
    pub command: KeysCommand,
}

/// The flags of `dbconsole sessions`.
#[derive(Clone, Debug, Args)]
pub struct SessionsArgs {
    /// Storage backend (the same as `serve`'s): `redb` or `postgres`.
    #[arg(
        long,
        env = "DBCONSOLE_STORAGE",
        value_enum,
        default_value_t = StorageKind::Redb,
        global = true
    )]
    pub storage: StorageKind,

    /// Directory of the redb data file (the same as `serve`'s).
    #[arg(
        long,
        env = DATA_DIR_ENV,
        default_value = DEFAULT_DATA_DIR,
        global = true
    )]
    pub data_dir: PathBuf,

    /// Where the PostgreSQL storage is (the same as `serve`'s).
    #[command(flatten)]
    pub database: DatabaseArgs,

    /// What to do with the sessions.
    #[command(subcommand)]
    pub command: SessionsCommand,
}

/// The subcommands of `dbconsole sessions`.
#[derive(Clone, Debug, Subcommand)]
pub enum SessionsCommand {
    /// List the browser sessions and unused sign-in links (never a secret: none is stored).
    List,
    /// End a session or link at once, on every node: by id, or every one of a user.
    Revoke {
        /// The session's id (`ses_…`), as `sessions list` shows it.
        id: Option<String>,
        /// Every session and link of this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Make a one-time sign-in link for a user (15 minutes, single use) and print it, once.
    Link {
        /// The user it signs in (e-mail or login).
        #[arg(long)]
        user: String,
        /// The user's groups, comma-separated.
        #[arg(long, value_delimiter = ',')]
        groups: Vec<String>,
        /// `member` (default) or `super-admin`.
        #[arg(long, value_parser = wire_names(Role::ALL, Role::as_str))]
        role: Option<Role>,
        /// The console's public URL, which the printed link starts with.
        #[arg(long, env = "DBCONSOLE_PUBLIC_URL", default_value = "http://127.0.0.1:4000", value_parser = public_url)]
        public_url: String,
    },
}

/// The subcommands of `dbconsole keys`.
#[derive(Clone, Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key and print its secret, once.
    Create(CreateKeyArgs),
    /// List the stored keys (never a secret).
    List,
    /// Revoke (delete) a key: requests with it fail with 401 from then on.
    Revoke {
        /// The key's id (`key_…`), as `keys list` shows it.
        id: String,
    },
    /// Rotate the seal key that encrypts stored secrets, while the server keeps serving: make
    /// a new key current (on redb, made here when none waits in the key file; on PostgreSQL,
    /// the one `add-seal-key` added and every node has), seal every stored secret again, and
    /// retire the old key. Run it again to finish a rotation that was cut off.
    #[command(name = "rotate-seal")]
    RotateSeal {
        /// Databases sealed again per page.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
        batch: usize,
    },
    /// Show the store's seal keys: the current one, and those stored secrets may still need.
    #[command(name = "seal-status")]
    SealStatus,
    /// Add a new random seal key to the data directory's key file, for `rotate-seal` to make
    /// current (on PostgreSQL, copy the file to every node and restart them first).
    #[command(name = "add-seal-key")]
    AddSealKey,
}

/// The flags of `dbconsole keys create`.
#[derive(Clone, Debug, Args)]
pub struct CreateKeyArgs {
    /// An API key (database routes, `x-api-key`) or an access token (dashboard routes,
    /// `Authorization: Bearer`).
    #[arg(long, value_parser = wire_names(CredentialKind::ALL, CredentialKind::as_str))]
    pub kind: CredentialKind,

    /// What the key allows: everything; only setup and remove by api_id; only running
    /// queries as its user (`query`), or as an AI agent for its user (`ai-agent`).
    #[arg(long, value_parser = wire_names(Scope::ALL, Scope::as_str))]
    pub scope: Scope,

    /// What the key is for (shown by `keys list`); at most 100 characters.
    #[arg(long)]
    pub name: String,

    /// The user the key acts for (e-mail or login): only a key bound to a user runs queries,
    /// and restricted databases grant access to users and groups.
    #[arg(long)]
    pub user: Option<String>,

    /// The user's groups, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub groups: Vec<String>,

    /// The user's role: `member` (default) queries what permissions allow; `super-admin`
    /// queries every database.
    #[arg(long, value_parser = wire_names(Role::ALL, Role::as_str))]
    pub role: Option<Role>,
}

/// Parses the name of one of `all` (the names are listed in `--help` and in errors) with the
/// type's `FromStr`: for core's wire enums, with their `ALL` and `as_str`.
fn wire_names<T, const N: usize>(
    all: [T; N],
    name: fn(T) -> &'static str,
) -> impl TypedValueParser<Value = T>
where
    T: FromStr<Err: Debug> + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(all.map(name)).map(|name| {
        name.parse()
            .expect("a possible value is one of the type's names")
    })
}

#[cfg(test)]
mod tests;
