//! Statements on a credential that needs reviews (docs/door.md, "Reviews"): the first time a
//! person sends one, it is stored as a query waiting for review, and refused with its page as
//! the hint; once approved, the author's next statement with the same text, byte for byte,
//! runs it once, by the same claim as `POST …/queries/{id}/run` (its outcome and rows counted
//! on the query, in History). Its result comes back as text columns.

use bytes::BufMut as _;
use serde_json::{Map, Value, json};

use super::frame::{self, Message, Report};
use super::relay::Relay;
use crate::model::{Query, QueryStatus};
use crate::run::Format;
use crate::storage::{Page, QueryFilter};

/// The type of every column of an approved statement's result: `text`.
const TEXT: i32 = 25;

/// What became of a reviewed statement.
pub(super) enum Reviewed {
    /// It ran: its result, as the messages of a simple query's answer (before `ReadyForQuery`).
    Ran(Vec<Message>),
    /// It did not: why, and what to do.
    Refused(Report),
}

/// The refusal of `report`, or of an internal failure.
fn refused(why: impl Into<String>) -> Reviewed {
    Reviewed::Refused(Report::error("42501", why))
}

/// The author's queries of this credential with exactly `text`, oldest first.
async fn same_text(
    relay: &Relay,
    credential_id: &str,
    text: &str,
) -> Result<Vec<Query>, crate::storage::StorageError> {
    let mut found = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = relay
            .door
            .storage
            .list_queries(
                Page {
                    after: after.as_deref(),
                    limit: 500,
                },
                QueryFilter {
                    database_id: Some(relay.db.id.as_str()),
                    author: Some(&relay.principal.user),
                    status: None,
                },
            )
            .await?;
        let Some(last) = page.last() else { break };
        after = Some(last.id.as_str().to_owned());
        let full = page.len() == 500;
        found.extend(
            page.into_iter()
                .filter(|q| q.credential_id == credential_id && q.query == text),
        );
        if !full {
            break;
        }
    }
    found.sort_by_key(|q| q.inserted_at);
    Ok(found)
}

/// Where a query's page is, for a hint.
async fn page_of(relay: &Relay, id: &str) -> String {
    match relay
        .door
        .storage
        .setting(crate::service::users::PUBLIC_URL_SETTING)
        .await
    {
        Ok(Some(url)) => format!(
            "reviewers approve it at {}/console/queries/{id}; then send the same text again",
            url.trim_end_matches('/')
        ),
        _ => format!(
            "reviewers approve query {id} in the console (Reviews); then send the same text again"
        ),
    }
}

/// Runs the approved query of `text` once, or stores it for review.
pub(super) async fn statement(relay: &Relay, credential_id: &str, text: &str) -> Reviewed {
    let required = relay
        .db
        .credentials
        .iter()
        .find(|c| c.id.as_str() == credential_id)
        .map_or(1, |c| c.reviews_required);
    let same = match same_text(relay, credential_id, text).await {
        Ok(same) => same,
        Err(error) => {
            tracing::warn!(%error, "the door could not read a person's queries");
            return refused("the door could not read your queries: try again");
        }
    };
    let first = |status: QueryStatus| same.iter().find(|q| q.status == status);
    if let Some(query) = first(QueryStatus::Ready) {
        return run(relay, query, text).await;
    }
    if let Some(query) = first(QueryStatus::AwaitingReview) {
        return Reviewed::Refused(
            Report::error(
                "42501",
                format!(
                    "this statement waits for review as query {} ({} of {required} approvals)",
                    query.id,
                    query.approvals()
                ),
            )
            .hint(page_of(relay, query.id.as_str()).await),
        );
    }
    if let Some(query) = first(QueryStatus::ChangesRequested) {
        return Reviewed::Refused(
            Report::error(
                "42501",
                format!(
                    "a reviewer asked for changes to query {}: change it on its page, then send \
                     its new text",
                    query.id
                ),
            )
            .hint(page_of(relay, query.id.as_str()).await),
        );
    }
    let mut body = Map::new();
    body.insert("database_id".to_owned(), json!(relay.db.id.as_str()));
    body.insert("credential_id".to_owned(), json!(credential_id));
    body.insert("query".to_owned(), json!(text));
    // It came without a title or a reason: made ones say where from; its author edits them
    // on the query's page.
    body.insert("title".to_owned(), json!(crate::model::title_of(text)));
    body.insert(
        "description".to_owned(),
        json!("Sent through the PostgreSQL door: its author may say why here."),
    );
    match relay
        .door
        .queries
        .store_query(&relay.principal, body, &relay.origin)
        .await
    {
        Ok(query) => Reviewed::Refused(
            Report::error(
                "42501",
                format!(
                    "credential {} needs {required} approval(s): the statement was stored as \
                     query {} and waits for review",
                    relay.credential_name(credential_id),
                    query.id
                ),
            )
            .hint(page_of(relay, query.id.as_str()).await),
        ),
        Err(error) => refused(format!(
            "the statement could not be stored for review: {}",
            super::session::said(error)
        )),
    }
}

/// Runs `query`, approved, once; its result as messages.
async fn run(relay: &Relay, query: &Query, text: &str) -> Reviewed {
    let response = match relay
        .door
        .runs
        .run_stored(
            &relay.principal,
            query.id.as_str(),
            &Map::new(),
            Format::Json,
            &relay.origin,
        )
        .await
    {
        Ok(response) => response,
        Err(error) => return refused(super::session::said(error)),
    };
    let bytes = match crate::service::launch::collected(response).await {
        Ok(bytes) => bytes,
        Err(error) => return refused(super::session::said(error)),
    };
    let Ok(result) = serde_json::from_slice::<Value>(&bytes) else {
        return refused("the approved statement's result could not be read");
    };
    Reviewed::Ran(messages(&result, text, relay.max_rows))
}

/// A run's JSON result as a simple query's messages: the columns as `text`, each value's text,
/// the command's tag (`SELECT n`, else the statement's first word).
fn messages(result: &Value, text: &str, max_rows: u64) -> Vec<Message> {
    let mut out = Vec::new();
    let columns = result["columns"].as_array().cloned().unwrap_or_default();
    let rows = result["rows"].as_array().cloned().unwrap_or_default();
    if !columns.is_empty() {
        out.push(frame::message(b'T', |body| {
            body.put_i16(i16::try_from(columns.len()).unwrap_or(i16::MAX));
            for column in &columns {
                let name = column["name"]
                    .as_str()
                    .unwrap_or("?column?")
                    .replace('\0', "");
                body.put_slice(name.as_bytes());
                body.put_u8(0);
                body.put_i32(0);
                body.put_i16(0);
                body.put_i32(TEXT);
                body.put_i16(-1);
                body.put_i32(-1);
                body.put_i16(0);
            }
        }));
        for row in &rows {
            let values = row.as_array().cloned().unwrap_or_default();
            out.push(frame::message(b'D', |body| {
                body.put_i16(i16::try_from(values.len()).unwrap_or(i16::MAX));
                for value in &values {
                    let text = match value {
                        Value::Null => {
                            body.put_i32(-1);
                            continue;
                        }
                        Value::String(s) => s.clone(),
                        Value::Bool(true) => "t".to_owned(),
                        Value::Bool(false) => "f".to_owned(),
                        other => other.to_string(),
                    };
                    body.put_i32(i32::try_from(text.len()).unwrap_or(i32::MAX));
                    body.put_slice(text.as_bytes());
                }
            }));
        }
    }
    if result["truncated"] == Value::Bool(true) {
        out.push(
            Report {
                severity: "WARNING",
                code: "01000",
                message: format!(
                    "the row cap of {max_rows} rows was reached: the rest of the result was not sent"
                ),
                hint: None,
            }
            .message(),
        );
    }
    if let Some(error) = result["error"].as_str() {
        out.push(Report::error("XX000", error).message());
        return out;
    }
    let tag = if columns.is_empty() {
        let code =
            crate::run::statement::for_parsing(text, crate::run::statement::Dialect::Postgres)
                .unwrap_or_default();
        code.split_whitespace()
            .next()
            .unwrap_or("OK")
            .to_uppercase()
    } else {
        format!("SELECT {}", rows.len())
    };
    out.push(frame::command_complete(&tag));
    out
}
