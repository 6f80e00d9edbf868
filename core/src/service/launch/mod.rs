//! Starting a run: the job handed to the adapter's runner, spawned so that it ends and records
//! its outcome whether the client stays or not, and answered as soon as the first rows (or the
//! error before them) are known. Also what the runner is given: the database's data protection
//! chain and the connector that opens its secrets only when a connection opens.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::BodyExt as _;
use sha2::{Digest as _, Sha256};
use tokio::sync::{mpsc, oneshot};

use crate::metrics;
use crate::model::{Adapter, Credential, Database, Inputs, RunFacts, RunOutcome};
use crate::run::protect::{Protection, Refused};
use crate::run::statement::Dialect;
use crate::run::{
    CHANNEL_CHUNKS, Collected, Format, PoolKey, QueryRunner, RowSink, RunError, RunJob, classify,
    connector,
};
use crate::validate::ValidationErrors;

use super::admission::Guarded;
use super::error::ApiError;
use super::response::{BodyError, ResponseBody};
use super::run_events::RunEvents;
use crate::check::TunnelDialer;
use crate::run::Runners;
use crate::run::memory::RunMemory;
use crate::seal::Sealer;
use crate::storage::Storage;

mod outcome;

use outcome::Recorded;
pub(crate) use outcome::{Record, record_query, run_error};

/// What a run needs, whoever starts it (a query, a panel, an agent's tool, a catalog read, a
/// role check): the runners, what opens the secrets and the tunnels, the limits, and where its
/// outcome goes.
#[derive(Clone, Debug)]
pub(crate) struct Launcher {
    /// The storage, where a run's outcome is recorded.
    pub(crate) storage: Arc<dyn Storage>,
    /// Opens a credential's secrets when a connection opens.
    pub(crate) sealer: Sealer,
    /// One runner per adapter.
    pub(crate) runners: Runners,
    /// How a database behind a tunnel is reached.
    pub(crate) tunnel_dialer: Option<Arc<dyn TunnelDialer>>,
    /// The connect timeout.
    pub(crate) check_timeout: Duration,
    /// The statement timeout when the credential sets none.
    pub(crate) statement_timeout: Duration,
    /// The budget of all runs' large rows.
    pub(crate) memory: Arc<RunMemory>,
    /// The writer of run events.
    pub(crate) run_events: Arc<RunEvents>,
    /// Whether runs are measured.
    pub(crate) metrics: bool,
}

/// A run, ready to start: everything admission decided.
#[derive(Debug)]
pub(crate) struct Run {
    /// The adapter's runner ([`Launcher::runner_for`]).
    pub(crate) runner: Arc<dyn QueryRunner>,
    /// The database, as admission read it.
    pub(crate) db: Database,
    /// The credential it runs as.
    pub(crate) credential: Credential,
    /// The one statement.
    pub(crate) statement: String,
    /// A panel's inputs, bound as parameters.
    pub(crate) inputs: Option<Inputs>,
    /// The most rows sent.
    pub(crate) max_rows: u32,
    /// Whether it runs in a read-only transaction.
    pub(crate) read_only: bool,
    /// How its rows are encoded.
    pub(crate) format: Format,
    /// Where its outcome is recorded.
    pub(crate) record: Record,
    /// The data protection it is checked against ([`Launcher::protection_for_run`]).
    pub(crate) protection: Option<Arc<Protection>>,
    /// A shorter timeout the caller asked for ([`RunJob::shorter`]).
    pub(crate) shorter_timeout: Option<Duration>,
    /// What stamps each row with its token (a panel run asked for row tokens).
    pub(crate) row_stamp: Option<Arc<dyn crate::run::RowStamp>>,
}

impl Launcher {
    /// What opens `credential`'s target of `db` (its secrets, its tunnel) when a connection
    /// opens: for a run's pool, and for the wire door's own sessions and cancels.
    pub(crate) fn connector_for(
        &self,
        db: &Database,
        credential: &Credential,
    ) -> crate::run::Connector {
        connector(
            &self.sealer,
            db,
            credential,
            self.tunnel_dialer.clone(),
            self.check_timeout,
        )
    }

    /// The runner of `adapter`: 501 when it is not built in.
    pub(crate) fn runner_for(&self, adapter: Adapter) -> Result<Arc<dyn QueryRunner>, ApiError> {
        self.runners
            .get(adapter)
            .cloned()
            .ok_or_else(|| run_error(RunError::NotBuilt(adapter)))
    }

    /// Runs `run` to its end and answers its result as values: for the service's own
    /// statements (a catalog read, a role check), whose rows it reads itself. An error before
    /// any row is the run's error, as for any run; one after them is the result's `error`.
    pub(crate) async fn run_collected(&self, run: Run) -> Result<Collected, ApiError> {
        let (collect, collected) = oneshot::channel();
        // Kept while the run is read: dropped with this future, the run is cancelled.
        let _body = self.spawn_run(run, Some(collect)).await?;
        collected.await.map_err(|_| {
            tracing::error!("a collected run ended without its result");
            ApiError::Internal
        })
    }

    /// Spawns the run and answers as soon as it knows how: the first rows (200, streamed), or
    /// the error that came before them.
    pub(crate) async fn start_run(&self, run: Run) -> Result<Response<ResponseBody>, ApiError> {
        let format = run.format;
        let body = self.spawn_run(run, None).await?;
        let mut response = Response::new(ResponseBody::collected(body));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(format.content_type()),
        );
        Ok(response)
    }

    /// Spawns the run (its rows kept as values for `collect`, when given, else encoded in its
    /// format) and answers once it is known how it starts: the receiver of its body's chunks,
    /// or the error that came before any row.
    async fn spawn_run(
        &self,
        run: Run,
        collect: Option<oneshot::Sender<Collected>>,
    ) -> Result<mpsc::Receiver<Result<Bytes, BodyError>>, ApiError> {
        let Run {
            runner,
            db,
            credential,
            statement,
            inputs,
            max_rows,
            read_only,
            format,
            record,
            protection,
            shorter_timeout,
            row_stamp,
        } = run;
        // A database behind a tunnel this server can't dial is the server's configuration, not
        // a failure of the database: refused before anything runs.
        if let Some(tunnel) = db.tunnel_id.as_deref()
            && self.tunnel_dialer.is_none()
        {
            return Err(ApiError::Conflict(format!(
                "database {} connects through tunnel \"{tunnel}\", and this server has no tunnel \
                 dialer: it runs nothing on it (docs/api.md, \"Check connection\")",
                db.id
            )));
        }
        // A stored password given for another destination goes nowhere (docs/api.md, "Where a
        // stored password goes"): refused before anything opens.
        if let Some(why) = crate::check::held_back(&db, &credential) {
            return Err(crate::validate::ValidationErrors::single("credential_id", why).into());
        }
        let adapter = db.adapter;
        let timeout = credential
            .timeout
            .map(|secs| Duration::from_secs(u64::from(secs)))
            .unwrap_or(self.statement_timeout);
        let job = RunJob {
            pool: PoolKey {
                database_id: db.id.as_str().to_owned(),
                credential_id: credential.id.as_str().to_owned(),
                read_only,
                protected: protection.is_some(),
                timeout_secs: credential.timeout,
            },
            version: db.updated_at,
            connector: self.connector_for(&db, &credential),
            statement: statement.clone(),
            inputs,
            max_rows: u64::from(max_rows),
            timeout,
            shorter: shorter_timeout,
            connect_timeout: self.check_timeout,
            protection,
            memory: Arc::clone(&self.memory),
        };
        let (chunks, body) = mpsc::channel(CHANNEL_CHUNKS);
        let (started, start) = oneshot::channel();
        let mut sink = match collect {
            Some(collect) => RowSink::collecting(
                chunks,
                started,
                u64::from(max_rows),
                self.memory.limits(),
                collect,
            ),
            None => RowSink::new(
                format,
                chunks,
                started,
                u64::from(max_rows),
                self.memory.limits(),
            ),
        };
        if let Some(stamp) = row_stamp {
            sink.stamp_rows(stamp);
        }
        let storage = Arc::clone(&self.storage);
        let events = Arc::clone(&self.run_events);
        let measured = self.metrics;
        let facts = RunFacts {
            database_id: db.id.as_str().to_owned(),
            credential_id: credential.id.as_str().to_owned(),
            statement_sha256: hex::encode(Sha256::digest(statement.as_bytes())),
            statement_length: statement.len() as u64,
            rows: 0,
            affected_rows: None,
            duration_ms: 0,
            outcome: RunOutcome::Succeeded,
        };
        tokio::spawn(async move {
            let began = Instant::now();
            let outcome = runner.run(job, &mut sink).await;
            let took = began.elapsed();
            let duration_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
            let (rows, truncated) = (sink.rows(), sink.truncated());
            let run_outcome = match &outcome {
                Ok(()) => RunOutcome::Succeeded,
                Err(RunError::Cancelled) => RunOutcome::Cancelled,
                Err(RunError::TimedOut(_)) => RunOutcome::TimedOut,
                Err(_) => RunOutcome::Failed,
            };
            if measured {
                let kind = record.kind();
                metrics::record_run(adapter.as_str(), kind, run_outcome.as_str(), rows, took);
            }
            let facts = RunFacts {
                rows,
                affected_rows: sink.affected(),
                duration_ms,
                outcome: run_outcome,
                ..facts
            };
            let error = outcome.as_ref().err().map(ToString::to_string);
            // A query's history holds its outcome before the client reads the end of its
            // result; any other run's event is written after, off its way, by the run events'
            // writer (a slot taken first bounds the answered runs whose events aren't durable).
            match record.event(facts) {
                Recorded::Event(event) => {
                    let slot = events.slot().await;
                    sink.finish(&outcome, duration_ms).await;
                    events.write(&storage, slot, event.into());
                }
                Recorded::Nothing => sink.finish(&outcome, duration_ms).await,
                Recorded::Query {
                    query,
                    origin,
                    facts,
                } => {
                    let written =
                        record_query(&*storage, query, &origin, facts, truncated, error).await;
                    if let Err(error) = written {
                        tracing::error!(%error, "the outcome of a run could not be recorded");
                    }
                    sink.finish(&outcome, duration_ms).await;
                }
            }
        });
        match start.await {
            Ok(Ok(())) => Ok(body),
            Ok(Err(error)) => Err(run_error(error)),
            Err(_) => {
                tracing::error!("a run ended without an answer");
                Err(ApiError::Internal)
            }
        }
    }

    /// The data protection a run of `statement` on `guarded` is checked against (`None`: it has
    /// no policies), once the statement is admitted: 422 when `runner` can't protect its results,
    /// and 422 when the run is read-only (`read_only`, or a database with policies) and the
    /// statement is not read to be a query ([`crate::run::classify`]).
    ///
    /// A caller (`principal`; none for an agent or the service's own runs) whom every policy
    /// that applies exempts runs unprotected as the document's provisioning credential
    /// (docs/data-protection.md, "Exemptions"): [`Protected::exempt`].
    pub(crate) async fn protection_for_run(
        &self,
        guarded: &Guarded,
        runner: &dyn QueryRunner,
        statement: &str,
        read_only: bool,
        principal: Option<&crate::model::Principal>,
    ) -> Result<Protected, ApiError> {
        let adapter = guarded.db.adapter;
        let protected = self.protected_as(guarded, principal).await?;
        if protected.exempt.is_some() {
            if read_only {
                classify::read_only(statement, Dialect::of(adapter)).map_err(|why| {
                    ValidationErrors::single(
                        "query",
                        format!("panels and AI agents run read-only: {why}"),
                    )
                })?;
            }
            return Ok(protected);
        }
        let protection = protected.protection;
        if let Some(protection) = &protection
            && !runner.protects()
        {
            return Err(run_error(RunError::Protected(Refused::undecided(
                protection,
                format!(
                    "data protection on {} is not enforced by the database yet (PostgreSQL's and \
                     MySQL's are): no query runs on a database with policies",
                    adapter.as_str()
                ),
            ))));
        }
        if read_only || protection.is_some() {
            let who = if protection.is_some() {
                "a database with data protection runs read-only"
            } else {
                "panels and AI agents run read-only"
            };
            classify::read_only(statement, Dialect::of(adapter))
                .map_err(|why| ValidationErrors::single("query", format!("{who}: {why}")))?;
        }
        if protection.is_some() {
            classify::protected(statement, Dialect::of(adapter)).map_err(|why| {
                ValidationErrors::single(
                    "query",
                    format!("a database with data protection answers no statistics: {why}"),
                )
            })?;
        }
        Ok(Protected {
            protection,
            exempt: None,
        })
    }

    /// How whatever `principal` runs on `guarded` is protected, whatever the statement: the
    /// database's data protection, or for a caller every policy exempts, none, as the
    /// document's provisioning credential ([`Protected::exempt`]).
    pub(crate) async fn protected_as(
        &self,
        guarded: &Guarded,
        principal: Option<&crate::model::Principal>,
    ) -> Result<Protected, ApiError> {
        let protection = self.protection_of(guarded).await?;
        let exempt_as = protection
            .as_ref()
            .zip(principal)
            .filter(|(protection, principal)| protection.exempts(principal))
            .and(guarded.access.as_ref())
            .and_then(|access| access.data_protection.provisioning.as_ref())
            .map(|provisioning| provisioning.credential.clone());
        Ok(match exempt_as {
            Some(credential) => Protected {
                protection: None,
                exempt: Some(credential),
            },
            None => Protected {
                protection,
                exempt: None,
            },
        })
    }

    /// Checks that `credential`'s role of `db` can't read what `protection` protects, on one of
    /// its pooled sessions (as every protected run does first, and with what it keeps): the
    /// wire door's check before each statement it lets through (docs/door.md). Nothing is
    /// recorded.
    #[cfg(feature = "postgres")]
    pub(crate) async fn verify_role(
        &self,
        db: &Database,
        credential: &Credential,
        protection: Arc<Protection>,
    ) -> Result<(), ApiError> {
        let run = Run {
            runner: self.runner_for(db.adapter)?,
            db: db.clone(),
            credential: credential.clone(),
            statement: "SELECT 1".to_owned(),
            inputs: None,
            max_rows: 1,
            read_only: true,
            format: Format::Json,
            record: Record::Silent,
            protection: Some(protection),
            shorter_timeout: None,
            row_stamp: None,
        };
        self.run_collected(run).await.map(|_| ())
    }

    /// The columns `guarded`'s data protection protects: its own policies (as read with it) and
    /// those of every database it inherits from, the whole chain (docs/data-protection.md, "Data protection");
    /// `None` when there are none.
    pub(crate) async fn protection_of(
        &self,
        guarded: &Guarded,
    ) -> Result<Option<Arc<Protection>>, ApiError> {
        let mut chain = Vec::new();
        let mut next = guarded.access.as_ref().map(|access| {
            chain.push((
                guarded.db.id.as_str().to_owned(),
                access.data_protection.clone(),
            ));
            access.data_protection.inherits_from.clone()
        });
        while let Some(id) = next.take().flatten() {
            if chain.iter().any(|(seen, _)| *seen == id) {
                break;
            }
            if let Some(access) = self.storage.access_control(&id).await? {
                next = Some(access.data_protection.inherits_from.clone());
                chain.push((id, access.data_protection));
            }
        }
        let protection = Protection::of_chain(
            chain
                .iter()
                .map(|(id, protection)| (id.as_str(), protection)),
        );
        Ok((!protection.is_empty()).then(|| Arc::new(protection)))
    }
}

/// How a run is protected ([`Launcher::protection_for_run`]).
#[derive(Debug)]
pub(crate) struct Protected {
    /// The data protection it is checked against (`None`: no policies, or an exempt caller).
    pub(crate) protection: Option<Arc<Protection>>,
    /// The credential an exempt caller runs as instead of the one asked for: the document's
    /// provisioning credential, which reads every value.
    pub(crate) exempt: Option<Credential>,
}

impl Protected {
    /// The protection of a run asked for as `asked`, and the credential it runs as: `asked`,
    /// or for an exempt caller the provisioning login with `asked`'s timeout and reviews (an
    /// exempt caller's query waits for its approvals as anyone's does).
    pub(crate) fn run_as(self, asked: Credential) -> (Option<Arc<Protection>>, Credential) {
        match self.exempt {
            None => (self.protection, asked),
            Some(login) => (
                None,
                Credential {
                    timeout: asked.timeout,
                    reviews_required: asked.reviews_required,
                    ai_allowed: asked.ai_allowed,
                    ..login
                },
            ),
        }
    }
}

/// A run's whole JSON answer. An error after the first rows is in its `error` member.
pub(crate) async fn collected(response: http::Response<ResponseBody>) -> Result<Bytes, ApiError> {
    let status = response.status();
    let bytes: Bytes = response
        .into_body()
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .map_err(|error| ApiError::BadGateway(format!("the result was cut off: {error}")))?;
    if status != StatusCode::OK {
        tracing::error!(%status, "a run answered without an error and without 200");
        return Err(ApiError::Internal);
    }
    Ok(bytes)
}
