//! A query of the history as the query routes answer it: [`QueryView`], with its reviews, its
//! bypass and its run.

use schemars::JsonSchema;
use serde::Serialize;

use super::fields::{decision, query_status, timestamp, timestamp_or_null};

/// A query: `{"id", "database_id", "credential_id", "query", "title", "description", "limit",
/// "author", "status", "revision", "reviews", "comments", "saved_query_id", "params", "run",
/// "inserted_at", "updated_at"}`; `run` is null until it starts.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Query", deny_unknown_fields)]
pub(crate) struct QueryView<'a> {
    /// `qry_…`: ordered by creation; pass as `after` to page on (newest first).
    id: &'a str,
    database_id: &'a str,
    credential_id: &'a str,
    query: &'a str,
    /// What it is for, in a line (made from its statement when it came without one).
    title: &'a str,
    /// Why it should run ("" when none was given).
    description: &'a str,
    #[schemars(range(min = 1))]
    limit: u32,
    author: &'a str,
    /// Whether an AI agent wrote it: it then runs read-only and capped, whoever runs it.
    by_agent: bool,
    #[schemars(schema_with = "query_status")]
    status: &'static str,
    /// Its revision: 0 as created, one more at each change of its statement by its author.
    revision: u32,
    /// How many reviewers approved its current revision.
    approvals: u32,
    /// Every review, of every revision, in the order they came.
    reviews: Vec<ReviewView<'a>>,
    /// Its thread: what its author and reviewers said, in the order it came.
    comments: Vec<CommentView<'a>>,
    /// The saved query it is a run of (`sq_…`), or null.
    saved_query_id: Option<&'a str>,
    /// The values of its statement's `${name}` parameters, in the statement's order: bound
    /// as parameters when it runs (empty for a typed query, which runs as written).
    params: Vec<ParamView<'a>>,
    /// A super admin ran their own query without the approvals it lacked.
    bypass: Option<BypassView<'a>>,
    run: Option<QueryRunView<'a>>,
    #[schemars(schema_with = "timestamp")]
    inserted_at: String,
    #[schemars(schema_with = "timestamp")]
    updated_at: String,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Review", deny_unknown_fields)]
struct ReviewView<'a> {
    reviewer: &'a str,
    #[schemars(schema_with = "decision")]
    decision: &'static str,
    comment: Option<&'a str>,
    #[schemars(schema_with = "timestamp")]
    reviewed_at: String,
    /// The revision of the query it was given on (only those of the current one count).
    revision: u32,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Param", deny_unknown_fields)]
struct ParamView<'a> {
    name: &'a str,
    value: &'a str,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Comment", deny_unknown_fields)]
struct CommentView<'a> {
    author: &'a str,
    text: &'a str,
    #[schemars(schema_with = "timestamp")]
    at: String,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "Bypass", deny_unknown_fields)]
struct BypassView<'a> {
    by: &'a str,
    #[schemars(schema_with = "timestamp")]
    at: String,
    reason: &'a str,
    approvals: u32,
    required: u32,
}

#[derive(Serialize, JsonSchema)]
#[schemars(rename = "QueryRun", deny_unknown_fields)]
struct QueryRunView<'a> {
    run_by: &'a str,
    #[schemars(schema_with = "timestamp")]
    started_at: String,
    #[schemars(schema_with = "timestamp_or_null")]
    finished_at: Option<String>,
    row_count: u64,
    /// The rows its write changed, as the database counted them (null for a read, or when the
    /// database did not say).
    affected_rows: Option<u64>,
    truncated: bool,
    duration_ms: u64,
    error: Option<&'a str>,
}

impl<'a> From<&'a crate::model::Query> for QueryView<'a> {
    fn from(query: &'a crate::model::Query) -> Self {
        Self {
            id: query.id.as_str(),
            database_id: &query.database_id,
            credential_id: &query.credential_id,
            query: &query.query,
            title: &query.title,
            description: &query.description,
            limit: query.limit,
            author: &query.author,
            by_agent: query.by_agent,
            status: query.status.as_str(),
            revision: query.revision,
            approvals: query.approvals(),
            reviews: query
                .reviews
                .iter()
                .map(|review| ReviewView {
                    reviewer: &review.reviewer,
                    decision: review.decision.as_str(),
                    comment: review.comment.as_deref(),
                    reviewed_at: review.at.to_string(),
                    revision: review.revision,
                })
                .collect(),
            comments: query
                .comments
                .iter()
                .map(|comment| CommentView {
                    author: &comment.author,
                    text: &comment.text,
                    at: comment.at.to_string(),
                })
                .collect(),
            saved_query_id: query.saved_query.as_deref(),
            params: query
                .params
                .iter()
                .map(|(name, value)| ParamView { name, value })
                .collect(),
            bypass: query.bypass.as_ref().map(|bypass| BypassView {
                by: &bypass.by,
                at: bypass.at.to_string(),
                reason: &bypass.reason,
                approvals: bypass.approvals,
                required: bypass.required,
            }),
            run: query.run.as_ref().map(|run| QueryRunView {
                run_by: &run.run_by,
                started_at: run.started_at.to_string(),
                finished_at: run.finished_at.map(|at| at.to_string()),
                row_count: run.row_count,
                affected_rows: run.affected_rows,
                truncated: run.truncated,
                duration_ms: run.duration_ms,
                error: run.error.as_deref(),
            }),
            inserted_at: query.inserted_at.to_string(),
            updated_at: query.updated_at.to_string(),
        }
    }
}

/// A saved query: `{"id", "name", "description", "query", "params", "database_id",
/// "credential_id", "tags", "sharing", "groups", "author", "mine", "created_at",
/// "updated_at"}`.
#[derive(Serialize, JsonSchema)]
#[schemars(rename = "SavedQuery", deny_unknown_fields)]
pub(crate) struct SavedQueryView<'a> {
    /// `sq_…`: its page is `#/saved/{id}` in the console.
    id: &'a str,
    name: &'a str,
    description: &'a str,
    query: &'a str,
    /// The names of its statement's `${name}` parameters, each once, in order: a run gives a
    /// value for each.
    params: Vec<String>,
    database_id: &'a str,
    credential_id: &'a str,
    tags: &'a [String],
    /// Who sees it: `author` (its author alone), `groups` (the members of `groups` who may
    /// query its database) or `database` (everyone who may query its database). A super admin
    /// sees every one.
    #[schemars(schema_with = "super::fields::sharing")]
    sharing: &'static str,
    /// The groups of a `groups` sharing (empty otherwise).
    groups: &'a [String],
    author: &'a str,
    /// Whether the caller is its author (who changes it).
    mine: bool,
    #[schemars(schema_with = "timestamp")]
    created_at: String,
    #[schemars(schema_with = "timestamp")]
    updated_at: String,
}

impl<'a> SavedQueryView<'a> {
    /// `saved` as `principal` sees it, with its statement's parameters `params`.
    pub(crate) fn new(
        saved: &'a crate::model::SavedQuery,
        principal: &crate::model::Principal,
        params: Vec<String>,
    ) -> Self {
        Self {
            id: saved.id.as_str(),
            name: &saved.name,
            description: &saved.description,
            query: &saved.query,
            params,
            database_id: &saved.database_id,
            credential_id: &saved.credential_id,
            tags: &saved.tags,
            sharing: saved.sharing.as_str(),
            groups: match &saved.sharing {
                crate::model::Sharing::Groups(groups) => groups,
                _ => &[],
            },
            author: &saved.author,
            mine: saved.is_authors(principal),
            created_at: saved.created_at.to_string(),
            updated_at: saved.updated_at.to_string(),
        }
    }
}
