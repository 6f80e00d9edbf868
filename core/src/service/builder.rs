//! [`ConsoleServiceBuilder`]: the settings of a service, each with its default, and the
//! assembly of the built service: one state per route family, each holding only what it reads.

use std::sync::Arc;
use std::time::Duration;

use super::access::Access;
use super::admission::Admission;
use super::agent::Agents;
use super::app::App;
use super::audit::Audit;
use super::body::BodyLimits;
use super::browser::{self, Browser};
use super::cache::ReadCache;
use super::callers::Callers;
use super::check_connection::CheckConnection;
use super::dashboards::Dashboards;
use super::databases::Databases;
use super::document::Document;
use super::downloads::Downloads;
use super::launch::Launcher;
use super::me::Me;
use super::oidc::Oidc;
use super::outbox::{Outbox, OutboxTargets};
use super::panels::Panels;
use super::pipeline::ConsoleService;
use super::protection_status::ProtectionStatus;
use super::provisioning::Provisioner;
use super::queries::{DEFAULT_MAX_ROWS, DEFAULT_STATEMENT_TIMEOUT, Queries};
use super::reviews::Reviews;
use super::routes;
use super::row_tokens::RowTokenOptions;
use super::run_events;
use super::runs::Runs;
use super::schema::Schema;
use crate::auth::Authenticator;
use crate::auth::oidc::OidcLogin;
use crate::check::{Checkers, TunnelDialer};
use crate::model::Retention;
use crate::seal::Sealer;
use crate::storage::Storage;

/// Largest request body accepted (1 MiB); larger is 413.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

/// How long a request body may take to arrive once its head has; slower is 408.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the audit trail keeps events by default: 365 days, and at most a million events.
pub const DEFAULT_AUDIT_RETENTION: Retention = Retention {
    max_age_days: Some(365),
    max_events: Some(1_000_000),
};

/// Check-connection timeout when the credential sets none.
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// What the builder gathers before it builds.
#[derive(Debug)]
struct Settings {
    storage: Arc<dyn Storage>,
    authenticator: Arc<dyn Authenticator>,
    sealer: Sealer,
    base_path: String,
    checkers: Checkers,
    tunnel_dialer: Option<Arc<dyn TunnelDialer>>,
    check_timeout: Duration,
    body_limit: usize,
    body_timeout: Duration,
    metrics: bool,
    read_cache: Option<ReadCache>,
    audit_retention: Retention,
    runners: crate::run::Runners,
    trust_principal: bool,
    max_rows: u32,
    memory: Arc<crate::run::memory::RunMemory>,
    statement_timeout: Duration,
    outbox: OutboxTargets,
    /// How browser sessions behave.
    sessions: browser::SessionOptions,
    /// How panel rows' tokens behave.
    row_tokens: RowTokenOptions,
    /// The most answered runs whose events (written off their way) may not be durable yet.
    run_events_bound: usize,
    /// The client browsers sign in as through the OIDC issuer, when there is one.
    oidc_login: Option<Arc<OidcLogin>>,
    /// How the PostgreSQL wire door behaves.
    door: super::door::DoorOptions,
}

/// Builds a [`ConsoleService`].
#[derive(Debug)]
pub struct ConsoleServiceBuilder {
    settings: Settings,
}

impl ConsoleService {
    /// Starts building a service over this storage, accepting the callers this authenticator
    /// accepts, sealing secrets with this sealer. A durable storage must be given the sealer it
    /// was opened with (its key check proves the key), or the secrets it keeps will not open
    /// after a restart.
    pub fn builder(
        storage: Arc<dyn Storage>,
        authenticator: Arc<dyn Authenticator>,
        sealer: Sealer,
    ) -> ConsoleServiceBuilder {
        ConsoleServiceBuilder {
            settings: Settings {
                storage,
                authenticator,
                sealer,
                base_path: String::new(),
                checkers: Checkers::none(),
                tunnel_dialer: None,
                check_timeout: DEFAULT_CHECK_TIMEOUT,
                body_limit: DEFAULT_BODY_LIMIT,
                body_timeout: DEFAULT_BODY_TIMEOUT,
                metrics: false,
                read_cache: None,
                audit_retention: DEFAULT_AUDIT_RETENTION,
                runners: crate::run::Runners::none(),
                trust_principal: false,
                max_rows: DEFAULT_MAX_ROWS,
                memory: crate::run::memory::RunMemory::new(
                    crate::run::encode::ValueLimits::default(),
                ),
                statement_timeout: DEFAULT_STATEMENT_TIMEOUT,
                outbox: OutboxTargets::default(),
                sessions: browser::SessionOptions::default(),
                row_tokens: RowTokenOptions::default(),
                run_events_bound: run_events::DEFAULT_BOUND,
                oidc_login: None,
                door: super::door::DoorOptions::default(),
            },
        }
    }
}

/// A base path is empty or starts with `/`, does not end with one, and has no empty segment.
#[derive(Debug, thiserror::Error)]
#[error("a base path must start with '/' and not end with '/', like /console (got {0:?})")]
pub struct InvalidBasePath(String);

impl ConsoleServiceBuilder {
    /// The connection checkers, one per adapter (default: none, and check-connection answers
    /// that the adapter's checker is not built in).
    pub fn checkers(mut self, checkers: Checkers) -> Self {
        self.settings.checkers = checkers;
        self
    }

    /// How check-connection reaches databases that have a `tunnel_id` (default: none, and such a
    /// check answers that the tunnel is not available).
    pub fn tunnel_dialer(mut self, dialer: Arc<dyn TunnelDialer>) -> Self {
        self.settings.tunnel_dialer = Some(dialer);
        self
    }

    /// The check-connection timeout for credentials that set none (default 10 s).
    pub fn check_timeout(mut self, timeout: Duration) -> Self {
        self.settings.check_timeout = timeout;
        self
    }

    /// Routes on the path below `base` (default: none, the full path). With
    /// `.base_path("/console")` the service answers `/console/api/v1/console/databases` and
    /// 404 for any path outside `/console/`: for servers that hand a mounted service the full
    /// path. (axum's `nest_service` strips the prefix itself, so it needs no base.)
    pub fn base_path(mut self, base: &str) -> Result<Self, InvalidBasePath> {
        let valid = base.is_empty()
            || (base.starts_with('/') && !base.ends_with('/') && !base.contains("//"));
        if !valid {
            return Err(InvalidBasePath(base.to_owned()));
        }
        self.settings.base_path = base.to_owned();
        Ok(self)
    }

    /// The largest request body accepted (default 1 MiB).
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.settings.body_limit = bytes;
        self
    }

    /// Keeps the rendered answers of `GET` by id of databases and dashboards, up to `bytes`
    /// (default 0: none), so that a repeated read skips the storage. Only for a service that is
    /// the **only writer** of its storage (a redb file, the memory store), which invalidates
    /// what each of its writes touched before answering it; never for nodes sharing a store.
    /// docs/operations.md, *The read cache*.
    pub fn read_cache(mut self, bytes: usize) -> Self {
        self.settings.read_cache = ReadCache::new(bytes);
        self
    }

    /// How long a request body may take to arrive (default 30 s): a client that stalls in the
    /// middle of its upload gets 408 and its connection closed, instead of holding the request
    /// (and a graceful shutdown) open.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.settings.body_timeout = timeout;
        self
    }

    /// Records the service's measurements through the `metrics` facade (module [`crate::metrics`]):
    /// turn it on when the program installs a recorder (default off: nothing is measured).
    pub fn metrics(mut self, on: bool) -> Self {
        self.settings.metrics = on;
        self
    }

    /// The most answered runs (of panels, agents' tools, catalog reads, role checks) whose
    /// audit events may not be durable yet (default [`run_events::DEFAULT_BOUND`], at least 1):
    /// what a crash can lose. A run waits before its answer ends while the backlog is full.
    pub fn run_events_bound(mut self, bound: usize) -> Self {
        self.settings.run_events_bound = bound;
        self
    }

    /// How long the audit trail keeps events (default [`DEFAULT_AUDIT_RETENTION`]: 365 days
    /// and at most a million events); [`ConsoleService::prune_audit`] applies it.
    pub fn audit_retention(mut self, retention: Retention) -> Self {
        self.settings.audit_retention = retention;
        self
    }

    /// The query runners, one per adapter (default: none, and a run answers 501 that the
    /// adapter's runner is not built in); [`crate::run::standard_runners`] has every one compiled
    /// in.
    pub fn runners(mut self, runners: crate::run::Runners) -> Self {
        self.settings.runners = runners;
        self
    }

    /// Trusts the [`crate::model::Principal`] the embedding program puts into a request's
    /// extensions (default off: extensions are ignored). Turn it on only behind middleware that
    /// authenticates every request and sets (or removes) the principal itself: a request that
    /// carries one is then the principal's, with no key or token (docs/api.md, "Who may do what").
    pub fn trust_principal(mut self, on: bool) -> Self {
        self.settings.trust_principal = on;
        self
    }

    /// The most rows a run may return (default [`DEFAULT_MAX_ROWS`]): a request's
    /// `limit` above it is refused.
    pub fn max_rows(mut self, rows: u32) -> Self {
        self.settings.max_rows = rows.max(1);
        self
    }

    /// The most bytes of one value and of one row of a result, and of all runs' large rows
    /// together (default [`crate::run::encode::ValueLimits::default`]): a result with a bigger
    /// value or row is refused, never copied into the answer; a run whose next large row does
    /// not fit in the budget waits for room (docs/queries.md, "Limits and cancel"). A row's
    /// bound is at least its value's, and the budget at least what one row of the most bytes is
    /// charged ([`crate::run::memory::CHARGE`] times its size).
    pub fn value_limits(mut self, limits: crate::run::encode::ValueLimits) -> Self {
        let max_value = limits.max_value.max(1);
        let max_row = limits.max_row.max(max_value);
        self.settings.memory =
            crate::run::memory::RunMemory::new(crate::run::encode::ValueLimits {
                max_value,
                max_row,
                max_in_flight: limits.max_in_flight.max(
                    max_row
                        .saturating_add(crate::run::memory::FRAMING)
                        .saturating_mul(crate::run::memory::CHARGE),
                ),
            });
        self
    }

    /// What the service puts in the outbox (docs/workflows.md, "Workflows and notifications"): row
    /// action triggers when `workflows` (refused with 409 otherwise), review requests to Slack
    /// when `slack`; `wake` is the worker to wake at once. Off by default.
    pub fn outbox(mut self, targets: OutboxTargets) -> Self {
        self.settings.outbox = targets;
        self
    }

    /// The statement timeout of credentials that set none (default 30 s).
    pub fn statement_timeout(mut self, timeout: Duration) -> Self {
        self.settings.statement_timeout = timeout;
        self
    }

    /// How browser sessions behave (default [`browser::SessionOptions::default`]: plain-HTTP
    /// cookies, the request's `Host` as the origin, 1 h idle, 12 h at most).
    pub fn sessions(mut self, options: browser::SessionOptions) -> Self {
        self.settings.sessions = options;
        self
    }

    /// How panel rows' tokens behave: their life, and whether a trigger may bring a row
    /// without one (docs/workflows.md, "Row tokens").
    pub fn row_tokens(mut self, options: RowTokenOptions) -> Self {
        self.settings.row_tokens = options;
        self
    }

    /// Lets browsers sign in through the OIDC issuer as `login`'s client (default: off, and
    /// `GET …/oidc` answers `{"enabled": false}`): docs/console.md, "Signing in".
    pub fn oidc_login(mut self, login: Arc<OidcLogin>) -> Self {
        self.settings.oidc_login = Some(login);
        self
    }

    /// How the PostgreSQL wire door behaves (docs/door.md): where people connect, the longest
    /// door password, the caps. The server serves the door's connections with
    /// [`ConsoleService::door`].
    pub fn door(mut self, options: super::door::DoorOptions) -> Self {
        self.settings.door = options;
        self
    }

    /// The service.
    pub fn build(self) -> ConsoleService {
        let Settings {
            storage,
            authenticator,
            sealer,
            base_path,
            checkers,
            tunnel_dialer,
            check_timeout,
            body_limit,
            body_timeout,
            metrics,
            read_cache,
            audit_retention,
            runners,
            trust_principal,
            max_rows,
            memory,
            statement_timeout,
            outbox,
            sessions,
            row_tokens,
            run_events_bound,
            oidc_login,
            door,
        } = self.settings;
        // The run events' writer records metrics when the service does.
        let run_events = Arc::new(run_events::RunEvents::new(run_events_bound, metrics));
        let read_cache = read_cache.map(Arc::new);
        let callers = Callers { authenticator };
        let admission = Admission::new(Arc::clone(&storage));
        let launcher = Launcher {
            storage: Arc::clone(&storage),
            sealer: sealer.clone(),
            runners: runners.clone(),
            tunnel_dialer: tunnel_dialer.clone(),
            check_timeout,
            statement_timeout,
            memory,
            run_events: Arc::clone(&run_events),
            metrics,
        };
        let queries = Queries {
            storage: Arc::clone(&storage),
            admission: admission.clone(),
            outbox: outbox.clone(),
            max_rows,
        };
        let runs = Runs {
            storage: Arc::clone(&storage),
            admission: admission.clone(),
            launcher: launcher.clone(),
        };
        let panels = Panels {
            admission: admission.clone(),
            launcher: launcher.clone(),
            sealer: sealer.clone(),
            row_tokens: row_tokens.clone(),
            max_rows,
        };
        let schema = Schema {
            storage: Arc::clone(&storage),
            admission: admission.clone(),
            launcher: launcher.clone(),
            schemas: Arc::default(),
        };
        let browser = Browser {
            storage: Arc::clone(&storage),
            sessions,
            session_touched: Arc::default(),
            throttle: Arc::default(),
        };
        let provisioner = Provisioner {
            storage: Arc::clone(&storage),
            admission: admission.clone(),
            launcher: launcher.clone(),
            sealer: sealer.clone(),
            tunnel_dialer: tunnel_dialer.clone(),
            timeout: check_timeout,
        };
        let door_live = Arc::new(super::door::live::Live::default());
        let app = App {
            databases: Databases {
                storage: Arc::clone(&storage),
                sealer: sealer.clone(),
                read_cache: read_cache.clone(),
            },
            provisioning: provisioner.clone(),
            check_connection: CheckConnection {
                storage: Arc::clone(&storage),
                sealer: sealer.clone(),
                checkers,
                tunnel_dialer,
                check_timeout,
                metrics,
            },
            access: Access {
                storage: Arc::clone(&storage),
                sealer: sealer.clone(),
            },
            protection_status: ProtectionStatus {
                admission: admission.clone(),
                launcher: launcher.clone(),
                provisioner: provisioner.clone(),
            },
            oidc: Oidc {
                login: oidc_login,
                sealer: sealer.clone(),
                browser: browser.clone(),
            },
            passkeys: super::passkeys::Passkeys {
                storage: Arc::clone(&storage),
                sealer: sealer.clone(),
                browser: browser.clone(),
                webauthn: browser
                    .sessions
                    .passkey_origin
                    .as_deref()
                    .and_then(super::passkeys::relying_party)
                    .map(Arc::new),
            },
            users: super::users::Users {
                storage: Arc::clone(&storage),
                browser: browser.clone(),
                door: Arc::clone(&door_live),
            },
            door: super::door::Door {
                storage: Arc::clone(&storage),
                admission: admission.clone(),
                launcher: launcher.clone(),
                callers: callers.clone(),
                throttle: Arc::clone(&browser.throttle),
                options: Arc::new(door),
                live: door_live,
                max_rows,
                queries: queries.clone(),
                runs: runs.clone(),
            },
            browser,
            me: Me {
                admission: admission.clone(),
                storage: Arc::clone(&storage),
            },
            reviews: Reviews {
                storage: Arc::clone(&storage),
                admission: admission.clone(),
            },
            downloads: Downloads {
                sealer: sealer.clone(),
                admission: admission.clone(),
                runs: runs.clone(),
                panels: panels.clone(),
            },
            audit: Audit {
                storage: Arc::clone(&storage),
            },
            outbox: Outbox {
                storage: Arc::clone(&storage),
                sealer: sealer.clone(),
                outbox,
                row_tokens,
                admission: admission.clone(),
            },
            dashboards: Dashboards {
                storage: Arc::clone(&storage),
                read_cache: read_cache.clone(),
                admission: admission.clone(),
            },
            document: Document::new(base_path.clone(), routes::openapi_document),
            agents: Agents {
                storage: Arc::clone(&storage),
                admission: admission.clone(),
                launcher,
                queries: queries.clone(),
                runs: runs.clone(),
                schema: schema.clone(),
                max_rows,
            },
            schema,
            saved_queries: super::saved_queries::SavedQueries {
                storage: Arc::clone(&storage),
                admission,
                queries: queries.clone(),
            },
            queries,
            runs,
            panels,
            base_path,
            trust_principal,
            metrics,
            limits: BodyLimits {
                limit: body_limit,
                timeout: body_timeout,
            },
            callers,
            storage,
            sealer,
            read_cache,
            runners,
            audit_retention,
            run_events,
        };
        ConsoleService::of(app)
    }
}
