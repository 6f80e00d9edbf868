//! Queries as stored: versions 1 to 5 (reviews and bypass from 2, the target digest from 3,
//! the title, description, revisions and comments from 4, the saved query it runs and its
//! parameters' values from 5).

use super::*;
#[allow(clippy::wildcard_imports)]
use crate::model::identity;

/// A query as stored (version 1): enums by their wire names.
#[derive(Serialize, Deserialize)]
pub(super) struct QueryV1 {
    pub(super) id: String,
    pub(super) database_id: String,
    pub(super) credential_id: String,
    pub(super) query: String,
    pub(super) limit: u32,
    pub(super) author: String,
    pub(super) status: String,
    pub(super) run: Option<QueryRunV1>,
    pub(super) inserted_at: i64,
    pub(super) updated_at: i64,
}

#[derive(Serialize, Deserialize)]
pub(super) struct QueryRunV1 {
    pub(super) run_by: String,
    pub(super) started_at: i64,
    pub(super) finished_at: Option<i64>,
    pub(super) row_count: u64,
    pub(super) truncated: bool,
    pub(super) duration_ms: u64,
    pub(super) error: Option<String>,
}

impl Keyed for QueryV1 {
    fn stored_key(&self) -> &str {
        &self.id
    }
}

/// Version 2 of a query: version 1 with its reviews and bypass.
pub(super) const QUERY_V2: u8 = 2;

/// A query as stored (version 2).
#[derive(Serialize, Deserialize)]
pub(super) struct QueryV2 {
    pub(super) query: QueryV1,
    pub(super) by_agent: bool,
    pub(super) reviews: Vec<ReviewV1>,
    pub(super) bypass: Option<BypassV1>,
}

/// Version 3 of a query: version 2 with the digest of what it runs on.
pub(super) const QUERY_V3: u8 = 3;

/// A query as stored (version 3).
#[derive(Serialize, Deserialize)]
pub(super) struct QueryV3 {
    pub(super) v2: QueryV2,
    pub(super) target: Option<String>,
}

/// Version 4 of a query: version 3 with its title, description, revision and comments, and
/// the revision of each of its reviews (in their order).
pub(super) const QUERY_V4: u8 = 4;

/// A query as stored (version 4).
#[derive(Serialize, Deserialize)]
pub(super) struct QueryV4 {
    pub(super) v3: QueryV3,
    pub(super) title: String,
    pub(super) description: String,
    pub(super) revision: u32,
    pub(super) review_revisions: Vec<u32>,
    pub(super) comments: Vec<CommentV1>,
}

/// Version 5 of a query: version 4 with the saved query it is a run of, its parameters' values
/// and the rows its run's write changed.
pub(super) const QUERY_V5: u8 = 5;

/// A query as stored (version 5).
#[derive(Serialize, Deserialize)]
pub(super) struct QueryV5 {
    pub(super) v4: QueryV4,
    pub(super) saved_query: Option<String>,
    pub(super) params: Vec<(String, String)>,
    /// The rows its run's write changed, when the database said.
    pub(super) affected_rows: Option<u64>,
}

#[derive(Serialize, Deserialize)]
pub(super) struct CommentV1 {
    pub(super) author: String,
    pub(super) text: String,
    pub(super) at: i64,
}

#[derive(Serialize, Deserialize)]
pub(super) struct ReviewV1 {
    pub(super) reviewer: String,
    pub(super) decision: String,
    pub(super) comment: Option<String>,
    pub(super) at: i64,
}

#[derive(Serialize, Deserialize)]
pub(super) struct BypassV1 {
    pub(super) by: String,
    pub(super) at: i64,
    pub(super) reason: String,
    pub(super) approvals: u32,
    pub(super) required: u32,
}

/// Encodes a query (version 5).
pub fn encode_query(query: &Query) -> Result<Vec<u8>, RecordError> {
    let Query {
        id,
        database_id,
        credential_id,
        query,
        title,
        description,
        limit,
        author,
        by_agent,
        target,
        status,
        reviews,
        revision,
        comments,
        saved_query,
        params,
        bypass,
        run,
        inserted_at,
        updated_at,
    } = query;
    let stored = QueryV1 {
        id: id.as_str().to_owned(),
        database_id: database_id.clone(),
        credential_id: credential_id.clone(),
        query: query.clone(),
        limit: *limit,
        author: author.clone(),
        status: status.as_str().to_owned(),
        run: run.as_ref().map(|run| QueryRunV1 {
            run_by: run.run_by.clone(),
            started_at: run.started_at.as_micros(),
            finished_at: run.finished_at.map(Timestamp::as_micros),
            row_count: run.row_count,
            truncated: run.truncated,
            duration_ms: run.duration_ms,
            error: run.error.clone(),
        }),
        inserted_at: inserted_at.as_micros(),
        updated_at: updated_at.as_micros(),
    };
    let stored = QueryV2 {
        query: stored,
        by_agent: *by_agent,
        reviews: reviews
            .iter()
            .map(|review| ReviewV1 {
                reviewer: review.reviewer.clone(),
                decision: review.decision.as_str().to_owned(),
                comment: review.comment.clone(),
                at: review.at.as_micros(),
            })
            .collect(),
        bypass: bypass.as_ref().map(|bypass| BypassV1 {
            by: bypass.by.clone(),
            at: bypass.at.as_micros(),
            reason: bypass.reason.clone(),
            approvals: bypass.approvals,
            required: bypass.required,
        }),
    };
    let v4 = QueryV4 {
        v3: QueryV3 {
            v2: stored,
            target: target.clone(),
        },
        title: title.clone(),
        description: description.clone(),
        revision: *revision,
        review_revisions: reviews.iter().map(|review| review.revision).collect(),
        comments: comments
            .iter()
            .map(|comment| CommentV1 {
                author: comment.author.clone(),
                text: comment.text.clone(),
                at: comment.at.as_micros(),
            })
            .collect(),
    };
    framed(
        QUERY_V5,
        &QueryV5 {
            v4,
            saved_query: saved_query.clone(),
            params: params.clone(),
            affected_rows: run.as_ref().and_then(|run| run.affected_rows),
        },
    )
}

/// The title of a query stored before queries had one: its statement's start.
fn untitled(statement: &str) -> String {
    crate::model::title_of(statement)
}

/// Decodes the query stored under `key` (version 1 has no reviews, version 2 no target,
/// version 3 no title: its statement's start is its title, its revision 0; version 4 is no
/// saved query's run).
pub fn decode_query(key: &str, bytes: &[u8]) -> Result<Query, RecordError> {
    let v3 = |v3: QueryV3| QueryV4 {
        title: untitled(&v3.v2.query.query),
        description: String::new(),
        revision: 0,
        review_revisions: Vec::new(),
        comments: Vec::new(),
        v3,
    };
    let v4 = |v4: QueryV4| QueryV5 {
        v4,
        saved_query: None,
        params: Vec::new(),
        affected_rows: None,
    };
    let QueryV5 {
        v4:
            QueryV4 {
                v3:
                    QueryV3 {
                        v2:
                            QueryV2 {
                                query: stored,
                                by_agent,
                                reviews,
                                bypass,
                            },
                        target,
                    },
                title,
                description,
                revision,
                review_revisions,
                comments,
            },
        saved_query,
        params,
        affected_rows,
    } = match unframed(bytes)? {
        (RECORD_V1, body) => v4(v3(QueryV3 {
            v2: QueryV2 {
                query: postcard::from_bytes(body)?,
                by_agent: false,
                reviews: Vec::new(),
                bypass: None,
            },
            target: None,
        })),
        (QUERY_V2, body) => v4(v3(QueryV3 {
            v2: postcard::from_bytes(body)?,
            target: None,
        })),
        (QUERY_V3, body) => v4(v3(postcard::from_bytes(body)?)),
        (QUERY_V4, body) => v4(postcard::from_bytes(body)?),
        (QUERY_V5, body) => postcard::from_bytes(body)?,
        (version, _) => return Err(RecordError::UnknownVersion(version)),
    };
    if stored.id != key {
        return Err(key_mismatch(key, stored.id));
    }
    let reviews = reviews
        .into_iter()
        .enumerate()
        .map(|(i, review)| {
            Ok(Review {
                decision: parse::<Decision>(&review.decision, "review decision")?,
                reviewer: identity::normalized(&review.reviewer),
                comment: review.comment,
                at: Timestamp::from_micros(review.at),
                revision: review_revisions.get(i).copied().unwrap_or(0),
            })
        })
        .collect::<Result<Vec<_>, RecordError>>()?;
    Ok(Query {
        saved_query,
        params,
        by_agent,
        target,
        reviews,
        title,
        description,
        revision,
        comments: comments
            .into_iter()
            .map(|comment| Comment {
                author: identity::normalized(&comment.author),
                text: comment.text,
                at: Timestamp::from_micros(comment.at),
            })
            .collect(),
        bypass: bypass.map(|bypass| Bypass {
            by: identity::normalized(&bypass.by),
            at: Timestamp::from_micros(bypass.at),
            reason: bypass.reason,
            approvals: bypass.approvals,
            required: bypass.required,
        }),
        status: parse::<QueryStatus>(&stored.status, "query status")?,
        id: QueryId::from_stored(stored.id),
        database_id: stored.database_id,
        credential_id: stored.credential_id,
        query: stored.query,
        limit: stored.limit,
        // Names stored before identities had one normal form read in it (docs/api.md, "Who may
        // do what").
        author: identity::normalized(&stored.author),
        run: stored.run.map(|run| QueryRun {
            run_by: identity::normalized(&run.run_by),
            started_at: Timestamp::from_micros(run.started_at),
            finished_at: run.finished_at.map(Timestamp::from_micros),
            row_count: run.row_count,
            affected_rows,
            truncated: run.truncated,
            duration_ms: run.duration_ms,
            error: run.error,
        }),
        inserted_at: Timestamp::from_micros(stored.inserted_at),
        updated_at: Timestamp::from_micros(stored.updated_at),
    })
}
