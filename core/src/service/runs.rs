//! Running a stored query once (`POST …/queries/{id}/run`): refused before the claim when it
//! could not run, claimed by one run of any number racing, bypassed only under every condition
//! of docs/queries.md, "Reviews".

use http::Response;
use serde_json::Value;

use crate::model::{
    AuditAction, AuditEvent, BypassRequest, Database, Origin, Principal, Query, QueryStatus, Role,
    RunRefusal, Timestamp,
};
use crate::run::Format;
use crate::run::statement::{self, Dialect};
use crate::storage::{Edits as _, WriteLog};
use crate::validate::{AskedBypass, ValidationErrors, bypass_of, run_timeout_of};

use std::sync::Arc;

use super::admission::{Admission, target_of};
use super::call::{Answer, Call};
use super::error::ApiError;
use super::launch::{Launcher, Record, Run};
use super::response::ResponseBody;
use crate::storage::Storage;

/// What running a stored query reads: the storage (its claim), admission and the launcher.
#[derive(Clone, Debug)]
pub(crate) struct Runs {
    /// The storage.
    pub(crate) storage: Arc<dyn Storage>,
    /// Who may see and run the query.
    pub(crate) admission: Admission,
    /// Starts the run.
    pub(crate) launcher: Launcher,
}

impl Runs {
    /// `POST …/queries/{id}/run`: its rows, streamed.
    pub(crate) async fn run_query(&self, mut call: Call<'_>) -> Answer {
        let principal = call.principal()?.clone();
        let format = Format::from_accept(call.accept());
        let body = call.optional_json().await?;
        self.run_stored(&principal, call.param("id"), &body, format, call.origin)
            .await
    }

    pub(crate) async fn run_stored(
        &self,
        principal: &Principal,
        id: &str,
        body: &serde_json::Map<String, Value>,
        format: Format,
        origin: &Origin,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let (query, guarded) = self.admission.query_in_reach(principal, id).await?;
        // 404 before 422: an unknown query is unknown whatever the body says.
        let bypass = bypass_of(body)?;
        let shorter_timeout = run_timeout_of(body)?;
        if principal.agent && !crate::model::identity::same(&query.author, &principal.user) {
            return Err(ApiError::Denied(
                "an AI agent runs only the queries its user wrote".to_owned(),
            ));
        }
        // A query's one run is its author's: whoever else may see it does not spend it or read
        // its rows, but a super admin may (the run's event names who ran it).
        if !crate::model::identity::same(&query.author, &principal.user)
            && principal.role != Role::SuperAdmin
        {
            return Err(ApiError::Denied(
                "only the query's author runs it (or a super admin)".to_owned(),
            ));
        }
        match query.status {
            QueryStatus::Ready | QueryStatus::AwaitingReview => {}
            QueryStatus::Rejected => {
                return Err(ApiError::Conflict(RunRefusal::Rejected.to_string()));
            }
            QueryStatus::ChangesRequested => {
                return Err(ApiError::Conflict(RunRefusal::ChangesRequested.to_string()));
            }
            QueryStatus::Running | QueryStatus::Succeeded | QueryStatus::Failed => {
                return Err(ApiError::Conflict(RunRefusal::AlreadyRan.to_string()));
            }
        }
        let (guarded, credential) = target_of(&query, guarded)?;
        let db = &guarded.db;
        // Its approvals cover the statement run where it was written for, nowhere else.
        if query
            .target
            .as_ref()
            .is_some_and(|target| *target != db.target_digest(&credential))
        {
            return Err(ApiError::Conflict(format!(
                "the query's database or credential {} now connects elsewhere (host, port, \
                 database, tunnel, parameters or username changed since the query was made): \
                 it does not run; create a new query",
                credential.id
            )));
        }
        let max_rows = guarded.admit(principal, &credential, query.limit)?;
        // An agent's query is capped as an agent's whoever runs it, by the cap of now.
        let max_rows = if query.by_agent {
            max_rows.min(db.ai_max_rows)
        } else {
            max_rows
        };
        // What could refuse the run comes before the claim, so that a refused run leaves the
        // query as it was (but for its status, which follows a raised requirement: docs/queries.md,
        // "Reviews").
        let runner = self.launcher.runner_for(db.adapter)?;
        let statement = statement::single(&query.query, Dialect::of(db.adapter))
            .map_err(|why| ValidationErrors::single("query", why))?
            .to_owned();
        let bypass = match bypass {
            Some(asked) => Some(may_bypass(principal, &query, db, asked)?),
            None => None,
        };
        // An AI agent's query runs read-only, as a panel does, whoever runs it.
        let read_only = principal.agent || query.by_agent;
        // An agent's query is never exempt, whoever runs it.
        let exempt_caller = (!query.by_agent).then_some(principal);
        let (protection, credential) = match self
            .launcher
            .protection_for_run(&guarded, &*runner, &statement, read_only, exempt_caller)
            .await
        {
            Ok(protected) => protected.run_as(credential),
            // Refused for what it is (a write where runs are read-only, statistics on a
            // protected database): it would be refused every time, so the query says so and
            // ends, rather than staying `ready`. A refusal of the database's (protection it
            // can't enforce yet) leaves the query as it was.
            Err(ApiError::Invalid(errors))
                if crate::run::classify::read_only(&statement, Dialect::of(db.adapter))
                    .is_err()
                    || crate::run::classify::protected(&statement, Dialect::of(db.adapter))
                        .is_err() =>
            {
                let why = errors
                    .get("query")
                    .and_then(|field| match field {
                        crate::validate::FieldErrors::Messages(messages) => {
                            messages.first().cloned()
                        }
                        _ => None,
                    })
                    .unwrap_or_else(|| "its statement may not run here".to_owned());
                self.mark_refused(id, &principal.user, &why).await;
                return Err(ApiError::Invalid(errors));
            }
            Err(error) => return Err(error),
        };
        // The claim: of two runs, one moves the query to running and the other conflicts; a
        // review racing the claim lands either before it (and counts) or after (refused).
        let required = credential.reviews_required;
        let claimed = self
            .storage
            .change_query(query, |stored| {
                let running =
                    stored.claimed(&principal.user, required, bypass.clone(), Timestamp::now())?;
                let log = running
                    .bypass
                    .as_ref()
                    .filter(|_| stored.bypass.is_none())
                    .map(|_| {
                        WriteLog::from(AuditEvent::new(
                            &origin.without_idempotency(),
                            AuditAction::QueryReviewBypass,
                            id,
                            vec!["bypass".to_owned()],
                        ))
                    });
                Ok((running, log))
            })
            .await?;
        let running = match claimed {
            Ok(running) => running,
            Err(refusal) => {
                if let RunRefusal::AwaitingReview { .. } = refusal {
                    self.mark_awaiting(id, required).await;
                }
                return Err(ApiError::Conflict(refusal.to_string()));
            }
        };
        // A saved query's run binds its parameters' values; a typed query runs as written.
        let inputs = running.saved_query.as_ref().map(|_| crate::model::Inputs {
            declared: running
                .params
                .iter()
                .map(|(name, _)| name.clone())
                .collect(),
            values: running
                .params
                .iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect(),
        });
        let record = Record::Query {
            query: Box::new(running),
            origin: origin.clone(),
        };
        self.launcher
            .start_run(Run {
                runner,
                db: guarded.db,
                credential,
                statement,
                inputs,
                max_rows,
                read_only,
                format,
                record,
                protection,
                shorter_timeout,
                row_stamp: None,
            })
            .await
    }

    /// Ends query `id`, refused by `by`'s run for `why`, unless it moved on meanwhile.
    async fn mark_refused(&self, id: &str, by: &str, why: &str) {
        let marked = self
            .storage
            .update_query(id, |stored| {
                match stored.refused(by, why, Timestamp::now()) {
                    Some(refused) => Ok((refused, None)),
                    None => Err(()),
                }
            })
            .await;
        if let Err(error) = marked {
            tracing::warn!(%error, "a query's refused run could not be recorded");
        }
    }

    /// Moves a `ready` query whose credential now requires more approvals than it has back to
    /// `awaiting_review` (docs/queries.md, "Reviews").
    pub(crate) async fn mark_awaiting(&self, id: &str, required: u32) {
        let marked = self
            .storage
            .update_query(id, |stored| {
                match stored.awaiting_again(required, Timestamp::now()) {
                    Some(waiting) => Ok((waiting, None)),
                    None => Err(()),
                }
            })
            .await;
        if let Err(error) = marked {
            tracing::warn!(%error, "a query's status could not follow its raised requirement");
        }
    }
}

/// The bypass `principal` asked for on `query`, if every condition of docs/queries.md, "Reviews" holds;
/// 403 naming the first that does not.
fn may_bypass(
    principal: &Principal,
    query: &Query,
    db: &Database,
    asked: AskedBypass,
) -> Result<BypassRequest, ApiError> {
    let refused = |why: &str| Err(ApiError::Denied(format!("review bypass refused: {why}")));
    if principal.agent {
        return refused("an AI agent never bypasses reviews");
    }
    if principal.role != Role::SuperAdmin {
        return refused("only a super admin may bypass reviews");
    }
    if !crate::model::identity::same(&query.author, &principal.user) {
        return refused("a super admin may bypass reviews only on a query they wrote");
    }
    if !db.review_bypass_allowed {
        return refused(&format!(
            "database {} does not allow it (its review_bypass_allowed is false)",
            db.id
        ));
    }
    if !asked.acknowledge {
        return refused("the override must be acknowledged (bypass_review.acknowledge: true)");
    }
    if asked.reason.trim().is_empty() {
        return refused("a reason is required (bypass_review.reason)");
    }
    Ok(BypassRequest {
        by: principal.user.clone(),
        reason: asked.reason.trim().to_owned(),
    })
}
