//! `dbconsole serve`: its flags, and what the server makes of them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use dbconsole_core::model::{Retention, Secret};
use dbconsole_core::{DEFAULT_AUDIT_RETENTION, DEFAULT_BODY_TIMEOUT, DEFAULT_CHECK_TIMEOUT};

use super::store::{DATA_DIR_ENV, DEFAULT_DATA_DIR, DatabaseArgs};
use super::values::{public_url, secret_value};
use crate::backend::{StorageKind, StorageLocation};
use crate::serve::ServeLimits;

/// The service's default retention, as the flags say it (0: no bound).
const DEFAULT_AUDIT_DAYS: u32 = match DEFAULT_AUDIT_RETENTION.max_age_days {
    Some(days) => days,
    None => 0,
};
const DEFAULT_AUDIT_EVENTS: u64 = match DEFAULT_AUDIT_RETENTION.max_events {
    Some(events) => events,
    None => 0,
};

/// Shown after `dbconsole serve --help`: what the flags do not say.
pub(super) const SERVE_AFTER_HELP: &str = "\
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

    /// Serve the PostgreSQL wire door on this address, HOST:PORT (docs/door.md): psql, DBeaver,
    /// DataGrip and drivers connect to it, over TLS, under the console's rules. Unset: no door.
    #[arg(long, env = "DBCONSOLE_DOOR_LISTEN", value_parser = listen_address)]
    pub door_listen: Option<String>,

    /// The door's PEM certificate chain (leaf first); needs --door-tls-key. Default: --tls-cert,
    /// else one the server makes in the data directory at its first start.
    #[arg(long, env = "DBCONSOLE_DOOR_TLS_CERT", requires = "door_tls_key")]
    pub door_tls_cert: Option<PathBuf>,

    /// The PEM private key of --door-tls-cert.
    #[arg(long, env = "DBCONSOLE_DOOR_TLS_KEY", requires = "door_tls_cert")]
    pub door_tls_key: Option<PathBuf>,

    /// Where people reach the door, HOST:PORT, as the console shows it (a load balancer's
    /// address). Default: the public URL's host with the door's port, else the door's address.
    #[arg(long, env = "DBCONSOLE_DOOR_ADDRESS")]
    pub door_address: Option<String>,

    /// Days a door password may live at most.
    #[arg(
        long,
        env = "DBCONSOLE_DOOR_PASSWORD_MAX_DAYS",
        default_value_t = 90,
        value_parser = clap::value_parser!(u64).range(1..=3650)
    )]
    pub door_password_max_days: u64,

    /// Threads the door's sessions run on (each connection stays on one). Default: one per
    /// core.
    #[arg(
        long,
        env = "DBCONSOLE_DOOR_THREADS",
        value_parser = clap::value_parser!(u64).range(1..=256)
    )]
    pub door_threads: Option<u64>,

    /// Door sessions one person holds open at most, on each node.
    #[arg(
        long,
        env = "DBCONSOLE_DOOR_MAX_SESSIONS_PER_USER",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=1000)
    )]
    pub door_max_sessions_per_user: u64,

    /// Door sessions one credential holds open at most, on each node.
    #[arg(
        long,
        env = "DBCONSOLE_DOOR_MAX_SESSIONS_PER_CREDENTIAL",
        default_value_t = 50,
        value_parser = clap::value_parser!(u64).range(1..=100_000)
    )]
    pub door_max_sessions_per_credential: u64,

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

    /// Live browser sessions one user holds at most: a sign-in beyond it ends the user's
    /// oldest.
    #[arg(
        long,
        env = "DBCONSOLE_SESSION_MAX_PER_USER",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..=1000)
    )]
    pub session_max_per_user: u64,

    /// Counts failed sign-ins by the last address of `X-Forwarded-For` (what the proxy in front
    /// saw) instead of the connection's peer: only behind a proxy that sets it.
    #[arg(long, env = "DBCONSOLE_TRUST_FORWARDED_FOR")]
    pub trust_forwarded_for: bool,
}

impl ServeArgs {
    /// How browser sessions behave: the public URL's origin and scheme (else the `Host`, and
    /// https when the server holds the TLS key), and the idle and maximum times; refused when
    /// the maximum is below the idle time (never raised in silence).
    pub fn session_options(
        &self,
    ) -> Result<dbconsole_core::service::browser::SessionOptions, String> {
        if self.session_max_age_secs < self.session_idle_secs {
            return Err(format!(
                "--session-max-age-secs ({}) is below --session-idle-secs ({}): a session would \
                 end before it could idle; raise the one or lower the other",
                self.session_max_age_secs, self.session_idle_secs
            ));
        }
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
        options.max_age = Duration::from_secs(self.session_max_age_secs);
        options.max_per_user = usize::try_from(self.session_max_per_user).unwrap_or(usize::MAX);
        if options.passkey_origin.is_none() {
            // Without a public URL, a loopback address with a fixed port is reached as
            // localhost (WebAuthn takes no IP address): passkeys work there.
            options.passkey_origin = self
                .listen
                .parse::<SocketAddr>()
                .ok()
                .filter(|address| address.port() != 0)
                .and_then(|address| {
                    crate::credentials::loopback_url(address, self.tls_cert.is_some())
                });
        }
        Ok(options)
    }

    /// The threads the door's sessions run on (`--door-threads`).
    pub fn door_threads(&self) -> usize {
        self.door_threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            |n| usize::try_from(n).unwrap_or(1),
        )
    }

    /// How the door behaves, once its listener is bound at `bound` (`None`: no door).
    pub fn door_options(&self, bound: Option<SocketAddr>) -> dbconsole_core::service::DoorOptions {
        let address = bound.map(|bound| {
            self.door_address.clone().unwrap_or_else(|| {
                let host = self
                    .public_url
                    .as_deref()
                    .and_then(|url| url.split("://").nth(1))
                    .map(|rest| rest.split(['/', ':']).next().unwrap_or_default().to_owned())
                    .filter(|host| !host.is_empty());
                match host {
                    Some(host) => format!("{host}:{}", bound.port()),
                    None if bound.ip().is_loopback() => format!("localhost:{}", bound.port()),
                    None => bound.to_string(),
                }
            })
        });
        dbconsole_core::service::DoorOptions {
            address,
            max_password_lifetime: Duration::from_secs(self.door_password_max_days * 24 * 3600),
            max_per_user: usize::try_from(self.door_max_sessions_per_user).unwrap_or(usize::MAX),
            max_per_credential: usize::try_from(self.door_max_sessions_per_credential)
                .unwrap_or(usize::MAX),
        }
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
    pub fn oidc_client(&self) -> Option<crate::oidc::OidcClient> {
        Some(crate::oidc::OidcClient {
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
            trust_forwarded_for: self.trust_forwarded_for,
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
