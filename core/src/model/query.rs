//! Queries as the console keeps them: a statement someone asked to run on a database as one of
//! its credentials, with the outcome of its one run (docs/queries.md, "Running queries").

use super::{QueryId, RunFacts, RunOutcome, Timestamp};

/// Where a query is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueryStatus {
    /// Stored; may run.
    Ready,
    /// Stored; the credential needs reviews before it may run.
    AwaitingReview,
    /// A reviewer asked its author for changes: it runs only once the author has changed it
    /// and it has its approvals again (docs/queries.md, "Reviews").
    ChangesRequested,
    /// A reviewer rejected it: it never runs (docs/queries.md, "Reviews").
    Rejected,
    /// Running now (or its node stopped while it ran: the outcome was never recorded).
    Running,
    /// Ran, and every row it sent was sent.
    Succeeded,
    /// Ran, and failed (`run.error` says why).
    Failed,
}

wire_enum!(QueryStatus, [
    Ready => "ready",
    AwaitingReview => "awaiting_review",
    ChangesRequested => "changes_requested",
    Rejected => "rejected",
    Running => "running",
    Succeeded => "succeeded",
    Failed => "failed",
]);

/// The most characters of a query's title.
pub const TITLE_MAX: usize = 200;

/// A title made from `statement`, for a query that came without one (through the wire door, or
/// stored before queries had titles): its start, spaces collapsed, at most 80 characters.
pub fn title_of(statement: &str) -> String {
    const LENGTH: usize = 80;
    let words = statement.split_whitespace().collect::<Vec<_>>().join(" ");
    if words.is_empty() {
        return "Untitled query".to_owned();
    }
    if words.chars().count() <= LENGTH {
        return words;
    }
    let mut cut: String = words.chars().take(LENGTH - 1).collect();
    cut.push('…');
    cut
}

/// A query: one statement for one database and credential, run at most once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// Assigned at creation (`qry_…`), ordered by creation time.
    pub id: QueryId,
    /// The database it runs on.
    pub database_id: String,
    /// The credential it runs as (an id of the database's credentials).
    pub credential_id: String,
    /// The statement, as given (its author may change it before it runs).
    pub query: String,
    /// What it is for, in a line: given by its author, or made from its statement when it came
    /// another way (the wire door); its author may change it.
    pub title: String,
    /// Why it should run, for its reviewers (may be empty where no review is needed).
    pub description: String,
    /// The most rows it returns.
    pub limit: u32,
    /// Who created it (the principal's user).
    pub author: String,
    /// Whether an AI agent created it: it then runs read-only and capped, whoever runs it.
    pub by_agent: bool,
    /// What it runs on, fixed at creation ([`Database::target_digest`]): a query whose
    /// database or credential now reaches something else does not run. `None` for a query
    /// stored before it was kept.
    ///
    /// [`Database::target_digest`]: super::Database::target_digest
    pub target: Option<String>,
    /// Where it is in its life.
    pub status: QueryStatus,
    /// Its reviews, in the order they came, of every revision; one per reviewer and revision.
    pub reviews: Vec<Review>,
    /// Its revision: 0 as created, one more at each change of its statement. Only the reviews
    /// of the current revision count.
    pub revision: u32,
    /// What its author and reviewers said about it, in the order it came.
    pub comments: Vec<Comment>,
    /// The saved query it is a run of (`sq_…`), when it is one.
    pub saved_query: Option<String>,
    /// The values of its statement's `${name}` parameters, by name in the statement's order:
    /// bound as parameters when it runs, never pasted into its text. Empty for a typed query,
    /// whose text runs as it is.
    pub params: Vec<(String, String)>,
    /// The super admin's override of missing approvals, when it ran with one.
    pub bypass: Option<Bypass>,
    /// Its run, once started.
    pub run: Option<QueryRun>,
    /// Creation time.
    pub inserted_at: Timestamp,
    /// Time of the last change; strictly increases.
    pub updated_at: Timestamp,
}

/// The one run of a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryRun {
    /// Who ran it (the principal's user).
    pub run_by: String,
    /// When it started.
    pub started_at: Timestamp,
    /// When it ended; `None` while it runs.
    pub finished_at: Option<Timestamp>,
    /// How many rows were sent.
    pub row_count: u64,
    /// How many rows a write changed, when the database said.
    pub affected_rows: Option<u64>,
    /// Whether more rows existed than were sent (the row cap).
    pub truncated: bool,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// Why it failed (scrubbed of secrets), when it did.
    pub error: Option<String>,
}

/// What a reviewer decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Counts toward the credential's `reviews_required`.
    Approve,
    /// Stops the query for good.
    Reject,
    /// Asks its author to change it: it does not run until they have, and its approvals are
    /// counted again from its next revision.
    RequestChanges,
}

wire_enum!(Decision, [
    Approve => "approve",
    Reject => "reject",
    RequestChanges => "request_changes",
]);

/// One reviewer's decision on a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Review {
    /// Who reviewed (the principal's user).
    pub reviewer: String,
    /// What they decided.
    pub decision: Decision,
    /// What they said, if anything.
    pub comment: Option<String>,
    /// When.
    pub at: Timestamp,
    /// The revision of the query it was given on.
    pub revision: u32,
}

/// One comment on a query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comment {
    /// Who wrote it (the principal's user).
    pub author: String,
    /// What they wrote.
    pub text: String,
    /// When.
    pub at: Timestamp,
}

/// What an author changes of their query: each field given replaces what it holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QueryEdit {
    /// A new title.
    pub title: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// A new statement: a new revision, whose approvals are counted again.
    pub query: Option<String>,
}

/// Why an edit or a comment is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditRefusal {
    /// Only its author changes a query.
    NotAuthor,
    /// It was rejected, runs or ran: it stays as it is.
    Closed(QueryStatus),
}

impl std::fmt::Display for EditRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotAuthor => f.write_str("only its author changes a query"),
            Self::Closed(QueryStatus::Rejected) => {
                f.write_str("the query was rejected: create a new query to try again")
            }
            Self::Closed(status) => write!(
                f,
                "the query is {}: only a query that has not run can be changed",
                status.as_str()
            ),
        }
    }
}

/// A super admin's run of their own query without the approvals its credential requires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bypass {
    /// Who overrode (the query's author, a super admin).
    pub by: String,
    /// When.
    pub at: Timestamp,
    /// Why, as they wrote it.
    pub reason: String,
    /// Approvals the query had.
    pub approvals: u32,
    /// Approvals the credential required at that moment.
    pub required: u32,
}

/// Why a review is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReviewRefusal {
    /// The reviewer wrote the query.
    OwnQuery,
    /// The reviewer already reviewed it: one reviewer counts once.
    AlreadyReviewed,
    /// The query is past reviewing (rejected, running or ran).
    Closed(QueryStatus),
    /// Changes were asked for: the author changes it before anyone approves it.
    ChangesRequested,
}

impl std::fmt::Display for ReviewRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::OwnQuery => f.write_str("an author never reviews their own query"),
            Self::AlreadyReviewed => f.write_str(
                "you already reviewed this revision of the query: one reviewer counts once",
            ),
            Self::Closed(QueryStatus::Rejected) => {
                f.write_str("the query was rejected: create a new query to try again")
            }
            Self::Closed(status) => write!(
                f,
                "the query is {}: only a query that has not run can be reviewed",
                status.as_str()
            ),
            Self::ChangesRequested => f.write_str(
                "changes were requested on this revision of the query: its author changes it \
                 first",
            ),
        }
    }
}

/// Why a run is refused when it comes to claim the query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunRefusal {
    /// It has fewer approvals than its credential requires now, and no bypass.
    AwaitingReview {
        /// Approvals it has.
        approvals: u32,
        /// Approvals its credential requires now.
        required: u32,
    },
    /// A reviewer rejected it.
    Rejected,
    /// A reviewer asked its author for changes.
    ChangesRequested,
    /// It ran, or runs now: a query runs once.
    AlreadyRan,
}

impl std::fmt::Display for RunRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::AwaitingReview {
                approvals,
                required,
            } => write!(
                f,
                "the query awaits its reviews: it has {approvals} of the {required} approval(s) \
                 its credential requires"
            ),
            Self::Rejected => {
                f.write_str("the query was rejected by a reviewer: create a new query to try again")
            }
            Self::ChangesRequested => f.write_str(
                "a reviewer asked for changes: its author changes the query, then it is \
                 reviewed again",
            ),
            Self::AlreadyRan => f.write_str(
                "the query already ran: a query runs once; create a new one to run it again",
            ),
        }
    }
}

/// A bypass as asked for: who and why (the service has checked that they may).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BypassRequest {
    /// Who asks (the query's author, a super admin).
    pub by: String,
    /// Why.
    pub reason: String,
}

impl Query {
    /// The reviews of its current revision.
    pub fn current_reviews(&self) -> impl Iterator<Item = &Review> {
        self.reviews
            .iter()
            .filter(move |review| review.revision == self.revision)
    }

    /// How many reviewers approved its current revision.
    pub fn approvals(&self) -> u32 {
        let approvals = self
            .current_reviews()
            .filter(|review| review.decision == Decision::Approve)
            .count();
        u32::try_from(approvals).unwrap_or(u32::MAX)
    }

    /// Whether `user` reviewed its current revision.
    pub fn reviewed_by(&self, user: &str) -> bool {
        self.current_reviews()
            .any(|review| super::identity::same(&review.reviewer, user))
    }

    /// The query with `review` added, given the approvals its credential requires now
    /// (docs/queries.md, "Reviews"): an approval makes it ready once the approvals of its
    /// revision reach `required`; a rejection stops it for good; a request for changes holds it
    /// until its author changes it.
    pub fn reviewed(&self, mut review: Review, required: u32) -> Result<Query, ReviewRefusal> {
        match self.status {
            QueryStatus::Ready | QueryStatus::AwaitingReview => {}
            QueryStatus::ChangesRequested if review.decision == Decision::Reject => {}
            QueryStatus::ChangesRequested => return Err(ReviewRefusal::ChangesRequested),
            status => return Err(ReviewRefusal::Closed(status)),
        }
        if super::identity::same(&review.reviewer, &self.author) {
            return Err(ReviewRefusal::OwnQuery);
        }
        if self.reviewed_by(&review.reviewer) {
            return Err(ReviewRefusal::AlreadyReviewed);
        }
        review.revision = self.revision;
        let mut next = self.clone();
        next.updated_at = review.at.not_before_next(self.updated_at);
        next.reviews.push(review);
        next.status = match next.reviews.last().map(|r| r.decision) {
            Some(Decision::Reject) => QueryStatus::Rejected,
            Some(Decision::RequestChanges) => QueryStatus::ChangesRequested,
            _ if next.approvals() >= required => QueryStatus::Ready,
            _ => QueryStatus::AwaitingReview,
        };
        Ok(next)
    }

    /// The query as its author `by` changed it at `now`, given the approvals its credential
    /// requires now: a new statement, or any change once changes were requested, starts a new
    /// revision whose approvals are counted from none.
    pub fn edited(
        &self,
        by: &str,
        edit: QueryEdit,
        required: u32,
        now: Timestamp,
    ) -> Result<Query, EditRefusal> {
        if !super::identity::same(by, &self.author) {
            return Err(EditRefusal::NotAuthor);
        }
        if !matches!(
            self.status,
            QueryStatus::Ready | QueryStatus::AwaitingReview | QueryStatus::ChangesRequested
        ) {
            return Err(EditRefusal::Closed(self.status));
        }
        let mut next = self.clone();
        let new_statement = edit.query.as_ref().is_some_and(|q| *q != self.query);
        let anything = new_statement
            || edit.title.as_ref().is_some_and(|t| *t != self.title)
            || edit
                .description
                .as_ref()
                .is_some_and(|d| *d != self.description);
        if let Some(title) = edit.title {
            next.title = title;
        }
        if let Some(description) = edit.description {
            next.description = description;
        }
        if let Some(query) = edit.query {
            next.query = query;
        }
        if new_statement || (anything && self.status == QueryStatus::ChangesRequested) {
            next.revision = self.revision.saturating_add(1);
            next.status = if required > 0 {
                QueryStatus::AwaitingReview
            } else {
                QueryStatus::Ready
            };
        }
        if anything {
            next.updated_at = now.not_before_next(self.updated_at);
        }
        Ok(next)
    }

    /// The query with `comment` added to its thread.
    pub fn commented(&self, comment: Comment) -> Query {
        let mut next = self.clone();
        next.updated_at = comment.at.not_before_next(self.updated_at);
        next.comments.push(comment);
        next
    }

    /// The query claimed for its one run by `run_by` at `now`, given the approvals its
    /// credential requires now; with `bypass` when it lacks them (recorded on the query).
    pub fn claimed(
        &self,
        run_by: &str,
        required: u32,
        bypass: Option<BypassRequest>,
        now: Timestamp,
    ) -> Result<Query, RunRefusal> {
        match self.status {
            QueryStatus::Ready | QueryStatus::AwaitingReview => {}
            QueryStatus::Rejected => return Err(RunRefusal::Rejected),
            QueryStatus::ChangesRequested => return Err(RunRefusal::ChangesRequested),
            QueryStatus::Running | QueryStatus::Succeeded | QueryStatus::Failed => {
                return Err(RunRefusal::AlreadyRan);
            }
        }
        let approvals = self.approvals();
        let mut next = self.clone();
        if approvals < required {
            let Some(bypass) = bypass else {
                return Err(RunRefusal::AwaitingReview {
                    approvals,
                    required,
                });
            };
            next.bypass = Some(Bypass {
                by: bypass.by,
                at: now,
                reason: bypass.reason,
                approvals,
                required,
            });
        }
        next.status = QueryStatus::Running;
        next.updated_at = now.not_before_next(self.updated_at);
        next.run = Some(QueryRun {
            run_by: run_by.to_owned(),
            started_at: now,
            finished_at: None,
            row_count: 0,
            affected_rows: None,
            truncated: false,
            duration_ms: 0,
            error: None,
        });
        Ok(next)
    }

    /// The query once its run ended at `now` as `facts` say: `succeeded` or `failed`, its run's
    /// end, row count, truncation and error written.
    pub fn finished(
        &self,
        facts: &RunFacts,
        truncated: bool,
        error: Option<String>,
        now: Timestamp,
    ) -> Query {
        let mut done = self.clone();
        done.updated_at = now.not_before_next(self.updated_at);
        done.status = if facts.outcome == RunOutcome::Succeeded {
            QueryStatus::Succeeded
        } else {
            QueryStatus::Failed
        };
        if let Some(run) = &mut done.run {
            run.finished_at = Some(now);
            run.row_count = facts.rows;
            run.affected_rows = facts.affected_rows;
            run.truncated = truncated;
            run.duration_ms = facts.duration_ms;
            run.error = error;
        }
        done
    }

    /// The query refused for good before it ran, by `by` at `now`, for `why` (a read-only run of
    /// a statement that writes: it would be refused again): `failed`, its run's error saying
    /// why, no row sent. `None` when it is not waiting to run.
    pub fn refused(&self, by: &str, why: &str, now: Timestamp) -> Option<Query> {
        if !matches!(
            self.status,
            QueryStatus::Ready | QueryStatus::AwaitingReview
        ) {
            return None;
        }
        let mut done = self.clone();
        done.status = QueryStatus::Failed;
        done.updated_at = now.not_before_next(self.updated_at);
        done.run = Some(QueryRun {
            run_by: by.to_owned(),
            started_at: now,
            finished_at: Some(now),
            row_count: 0,
            affected_rows: None,
            truncated: false,
            duration_ms: 0,
            error: Some(format!("refused before it ran: {why}")),
        });
        Some(done)
    }

    /// A `ready` query whose credential now requires more approvals than it has, back to
    /// `awaiting_review` at `now` (docs/queries.md, "Reviews"); `None` when it is not such a query.
    pub fn awaiting_again(&self, required: u32, now: Timestamp) -> Option<Query> {
        if self.status != QueryStatus::Ready || self.approvals() >= required {
            return None;
        }
        let mut waiting = self.clone();
        waiting.status = QueryStatus::AwaitingReview;
        waiting.updated_at = now.not_before_next(self.updated_at);
        Some(waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(required: u32) -> Query {
        let now = Timestamp::now();
        Query {
            id: super::super::QueryId::generate(),
            database_id: "db_1".to_owned(),
            credential_id: "crd_1".to_owned(),
            query: "SELECT 1".to_owned(),
            title: "one".to_owned(),
            description: String::new(),
            limit: 10,
            author: "ann".to_owned(),
            by_agent: false,
            target: None,
            status: if required > 0 {
                QueryStatus::AwaitingReview
            } else {
                QueryStatus::Ready
            },
            reviews: Vec::new(),
            revision: 0,
            comments: Vec::new(),
            saved_query: None,
            params: Vec::new(),
            bypass: None,
            run: None,
            inserted_at: now,
            updated_at: now,
        }
    }

    fn review(reviewer: &str, decision: Decision) -> Review {
        Review {
            reviewer: reviewer.to_owned(),
            decision,
            comment: None,
            at: Timestamp::now(),
            revision: 99,
        }
    }

    fn new_text(text: &str) -> QueryEdit {
        QueryEdit {
            query: Some(text.to_owned()),
            ..QueryEdit::default()
        }
    }

    #[test]
    fn a_request_for_changes_holds_the_query_until_its_author_changes_it() {
        let now = Timestamp::now();
        let q = query(2)
            .reviewed(review("bo", Decision::Approve), 2)
            .unwrap()
            .reviewed(review("cy", Decision::RequestChanges), 2)
            .unwrap();
        assert_eq!(q.status, QueryStatus::ChangesRequested);
        assert_eq!(
            q.reviews[0].revision, 0,
            "a review is of the revision it saw"
        );
        assert_eq!(
            q.reviewed(review("di", Decision::Approve), 2),
            Err(ReviewRefusal::ChangesRequested)
        );
        assert_eq!(
            q.claimed("ann", 2, None, now),
            Err(RunRefusal::ChangesRequested)
        );
        // Only its author changes it.
        assert_eq!(
            q.edited("bo", new_text("SELECT 2"), 2, now),
            Err(EditRefusal::NotAuthor)
        );
        // A change starts a new revision: the approvals are counted again, from none.
        let changed = q.edited("ann", new_text("SELECT 2"), 2, now).unwrap();
        assert_eq!(
            (changed.status, changed.revision, changed.approvals()),
            (QueryStatus::AwaitingReview, 1, 0)
        );
        assert_eq!(
            changed.reviews.len(),
            2,
            "the earlier reviews stay in its thread"
        );
        let changed = changed
            .reviewed(review("bo", Decision::Approve), 2)
            .unwrap()
            .reviewed(review("cy", Decision::Approve), 2)
            .unwrap();
        assert_eq!(changed.status, QueryStatus::Ready);
        // A reject stays final, even of a query whose changes were requested.
        let rejected = q.reviewed(review("di", Decision::Reject), 2).unwrap();
        assert_eq!(rejected.status, QueryStatus::Rejected);
        assert_eq!(
            rejected.edited("ann", new_text("SELECT 3"), 2, now),
            Err(EditRefusal::Closed(QueryStatus::Rejected))
        );
    }

    #[test]
    fn a_new_statement_resets_approvals_and_a_new_title_does_not() {
        let now = Timestamp::now();
        let ready = query(1)
            .reviewed(review("bo", Decision::Approve), 1)
            .unwrap();
        assert_eq!(ready.status, QueryStatus::Ready);
        let retitled = ready
            .edited(
                "ann",
                QueryEdit {
                    title: Some("the count".to_owned()),
                    description: Some("for the report".to_owned()),
                    query: Some("SELECT 1".to_owned()),
                },
                1,
                now,
            )
            .unwrap();
        assert_eq!(
            (retitled.status, retitled.revision, retitled.title.as_str()),
            (QueryStatus::Ready, 0, "the count")
        );
        assert!(retitled.updated_at > ready.updated_at);
        let rewritten = retitled
            .edited("ann", new_text("SELECT 2"), 1, now)
            .unwrap();
        assert_eq!(
            (rewritten.status, rewritten.revision, rewritten.approvals()),
            (QueryStatus::AwaitingReview, 1, 0)
        );
        let ran = query(0).claimed("ann", 0, None, now).unwrap();
        assert_eq!(
            ran.edited("ann", new_text("SELECT 2"), 0, now),
            Err(EditRefusal::Closed(QueryStatus::Running))
        );
    }

    #[test]
    fn a_title_is_made_from_the_statements_start() {
        assert_eq!(
            title_of("  UPDATE  orders\n SET x = 1 "),
            "UPDATE orders SET x = 1"
        );
        assert_eq!(title_of(" \n"), "Untitled query");
        let long = title_of(&"é".repeat(100));
        assert_eq!(long.chars().count(), 80);
        assert!(long.ends_with('…'));
    }

    #[test]
    fn comments_join_the_thread_in_order() {
        let at = Timestamp::now();
        let q = query(1)
            .commented(Comment {
                author: "bo".to_owned(),
                text: "why now?".to_owned(),
                at,
            })
            .commented(Comment {
                author: "ann".to_owned(),
                text: "the audit".to_owned(),
                at,
            });
        let said: Vec<_> = q.comments.iter().map(|c| c.text.as_str()).collect();
        assert_eq!(said, ["why now?", "the audit"]);
        assert!(q.updated_at > q.inserted_at);
    }

    #[test]
    fn approvals_make_a_query_ready_once_they_reach_the_requirement() {
        let q = query(2);
        let q = q.reviewed(review("bo", Decision::Approve), 2).unwrap();
        assert_eq!(q.status, QueryStatus::AwaitingReview);
        assert_eq!(
            q.reviewed(review("bo", Decision::Approve), 2),
            Err(ReviewRefusal::AlreadyReviewed)
        );
        assert_eq!(
            q.reviewed(review("ann", Decision::Approve), 2),
            Err(ReviewRefusal::OwnQuery)
        );
        let q = q.reviewed(review("cy", Decision::Approve), 2).unwrap();
        assert_eq!((q.status, q.approvals()), (QueryStatus::Ready, 2));
        assert!(q.updated_at > q.inserted_at);
    }

    #[test]
    fn a_rejection_stops_the_query_whatever_the_approvals() {
        let q = query(1)
            .reviewed(review("bo", Decision::Approve), 1)
            .unwrap()
            .reviewed(review("cy", Decision::Reject), 1)
            .unwrap();
        assert_eq!(q.status, QueryStatus::Rejected);
        assert_eq!(
            q.reviewed(review("di", Decision::Approve), 1),
            Err(ReviewRefusal::Closed(QueryStatus::Rejected))
        );
        assert_eq!(
            q.claimed("ann", 1, None, Timestamp::now()),
            Err(RunRefusal::Rejected)
        );
        let bypass = BypassRequest {
            by: "ann".to_owned(),
            reason: "outage".to_owned(),
        };
        assert_eq!(
            q.claimed("ann", 1, Some(bypass), Timestamp::now()),
            Err(RunRefusal::Rejected),
            "a bypass overrides missing approvals, never a rejection"
        );
    }

    #[test]
    fn a_claim_counts_the_approvals_against_the_requirement_of_now() {
        let q = query(1)
            .reviewed(review("bo", Decision::Approve), 1)
            .unwrap();
        assert_eq!(q.status, QueryStatus::Ready);
        assert_eq!(
            q.claimed("ann", 2, None, Timestamp::now()),
            Err(RunRefusal::AwaitingReview {
                approvals: 1,
                required: 2
            }),
            "raising reviews_required after approval makes the query wait again"
        );
        let claimed = q.claimed("ann", 1, None, Timestamp::now()).unwrap();
        assert_eq!(claimed.status, QueryStatus::Running);
        assert_eq!(claimed.bypass, None);
        assert_eq!(
            claimed.claimed("ann", 1, None, Timestamp::now()),
            Err(RunRefusal::AlreadyRan)
        );
        // Lowered after creation: an awaiting query with enough approvals runs.
        assert!(query(3).claimed("ann", 0, None, Timestamp::now()).is_ok());
    }

    #[test]
    fn a_bypass_is_recorded_only_when_approvals_lack() {
        let bypass = || {
            Some(BypassRequest {
                by: "ann".to_owned(),
                reason: "incident 42".to_owned(),
            })
        };
        let claimed = query(2)
            .reviewed(review("bo", Decision::Approve), 2)
            .unwrap()
            .claimed("ann", 2, bypass(), Timestamp::now())
            .unwrap();
        let recorded = claimed.bypass.expect("the bypass is stored on the query");
        assert_eq!(
            (recorded.by.as_str(), recorded.reason.as_str()),
            ("ann", "incident 42")
        );
        assert_eq!((recorded.approvals, recorded.required), (1, 2));
        let plain = query(0)
            .claimed("ann", 0, bypass(), Timestamp::now())
            .unwrap();
        assert_eq!(plain.bypass, None, "nothing was overridden");
    }

    #[test]
    fn a_finished_run_records_its_end_and_status() {
        let now = Timestamp::now();
        let running = query(0).claimed("ann", 0, None, now).unwrap();
        let facts = |outcome| RunFacts {
            database_id: "db_1".to_owned(),
            credential_id: "crd_1".to_owned(),
            statement_sha256: String::new(),
            statement_length: 8,
            rows: 3,
            affected_rows: None,
            duration_ms: 12,
            outcome,
        };
        let done = running.finished(&facts(RunOutcome::Succeeded), true, None, now);
        assert_eq!(done.status, QueryStatus::Succeeded);
        assert!(done.updated_at > running.updated_at);
        let run = done.run.unwrap();
        assert_eq!(
            (run.row_count, run.truncated, run.duration_ms),
            (3, true, 12)
        );
        assert_eq!(run.finished_at, Some(now));
        let failed = running.finished(
            &facts(RunOutcome::TimedOut),
            false,
            Some("timed out".to_owned()),
            now,
        );
        assert_eq!(failed.status, QueryStatus::Failed);
        assert_eq!(failed.run.unwrap().error.as_deref(), Some("timed out"));
    }

    #[test]
    fn a_ready_query_awaits_again_only_when_the_requirement_rose_past_its_approvals() {
        let now = Timestamp::now();
        let ready = query(1)
            .reviewed(review("bo", Decision::Approve), 1)
            .unwrap();
        assert!(ready.awaiting_again(1, now).is_none());
        let waiting = ready.awaiting_again(2, now).unwrap();
        assert_eq!(waiting.status, QueryStatus::AwaitingReview);
        assert!(waiting.updated_at > ready.updated_at);
        assert!(
            waiting.awaiting_again(3, now).is_none(),
            "only a ready query"
        );
    }
}
