//! What the service measures, through the [`metrics`] facade: nothing is recorded until the
//! embedding program installs a recorder (the reference server installs a Prometheus one and
//! serves it at `/metrics`; docs/operations.md, *Operating dbconsole*).
//!
//! | name | kind | labels |
//! |---|---|---|
//! | `dbconsole_http_requests_total` | counter | `route` (template), `method`, `status` |
//! | `dbconsole_http_request_duration_seconds` | histogram | `route`, `method` |
//! | `dbconsole_check_connections_total` | counter | `adapter`, `outcome` (`ok`, `error`, `timeout`) |
//! | `dbconsole_check_connection_duration_seconds` | histogram | `adapter` |
//! | `dbconsole_storage_errors_total` | counter | `kind` (`unavailable`, `full`, `backend`) |
//! | `dbconsole_delivery_attempts_total` | counter | `kind` (`workflow`, `slack`), `outcome` (`delivered`, `retry`, `dead`) |
//! | `dbconsole_run_events_written_total` | counter | |
//! | `dbconsole_run_events_backlog` | gauge | |
//! | `dbconsole_run_events_backlog_peak` | gauge | |

use std::time::Duration;

use http::{Method, StatusCode};

/// Requests answered, by route template, method and status.
pub const HTTP_REQUESTS: &str = "dbconsole_http_requests_total";
/// Time to answer a request, by route template and method.
pub const HTTP_REQUEST_DURATION: &str = "dbconsole_http_request_duration_seconds";
/// Connection checks, by adapter and outcome.
pub const CHECK_CONNECTIONS: &str = "dbconsole_check_connections_total";
/// Time of a connection check, by adapter.
pub const CHECK_CONNECTION_DURATION: &str = "dbconsole_check_connection_duration_seconds";
/// Query and panel runs, by adapter, kind (`query`, `panel`) and outcome.
pub const QUERY_RUNS: &str = "dbconsole_query_runs_total";
/// Time of a run, by adapter and kind.
pub const QUERY_RUN_DURATION: &str = "dbconsole_query_run_duration_seconds";
/// Rows sent by runs, by adapter and kind.
pub const QUERY_ROWS: &str = "dbconsole_query_rows_total";
/// Delivery attempts of the outbox worker, by target kind and outcome.
pub const DELIVERY_ATTEMPTS: &str = "dbconsole_delivery_attempts_total";
/// Storage failures that reached a request, by kind.
pub const STORAGE_ERRORS: &str = "dbconsole_storage_errors_total";

/// Run events written durably (a panel's, an agent's, …: docs/operations.md, "Run events").
pub const RUN_EVENTS_WRITTEN: &str = "dbconsole_run_events_written_total";
/// Answered runs whose event is not durable yet.
pub const RUN_EVENTS_BACKLOG: &str = "dbconsole_run_events_backlog";
/// The largest backlog since the start.
pub const RUN_EVENTS_BACKLOG_PEAK: &str = "dbconsole_run_events_backlog_peak";

/// `written` run events made durable.
pub(crate) fn record_run_events_written(written: u64) {
    metrics::counter!(RUN_EVENTS_WRITTEN).increment(written);
}

/// The run events' backlog now, and its peak.
pub(crate) fn record_run_events_backlog(backlog: usize, peak: usize) {
    metrics::gauge!(RUN_EVENTS_BACKLOG).set(backlog as f64);
    metrics::gauge!(RUN_EVENTS_BACKLOG_PEAK).set(peak as f64);
}

/// One request answered.
pub fn record_request(route: &'static str, method: &Method, status: StatusCode, took: Duration) {
    let method = method_label(method);
    metrics::counter!(HTTP_REQUESTS, "route" => route, "method" => method, "status" => status_label(status))
        .increment(1);
    metrics::histogram!(HTTP_REQUEST_DURATION, "route" => route, "method" => method)
        .record(took.as_secs_f64());
}

/// One delivery attempt, and how it ended: `delivered`, `retry` (it will be tried again) or
/// `dead` (its last attempt failed).
pub(crate) fn record_delivery(kind: &'static str, outcome: &'static str) {
    metrics::counter!(DELIVERY_ATTEMPTS, "kind" => kind, "outcome" => outcome).increment(1);
}

/// One connection check, and how it ended.
pub(crate) fn record_check(adapter: &'static str, outcome: &'static str, took: Duration) {
    metrics::counter!(CHECK_CONNECTIONS, "adapter" => adapter, "outcome" => outcome).increment(1);
    metrics::histogram!(CHECK_CONNECTION_DURATION, "adapter" => adapter).record(took.as_secs_f64());
}

/// One run, and how it ended.
pub(crate) fn record_run(
    adapter: &'static str,
    kind: &'static str,
    outcome: &'static str,
    rows: u64,
    took: Duration,
) {
    metrics::counter!(QUERY_RUNS, "adapter" => adapter, "kind" => kind, "outcome" => outcome)
        .increment(1);
    metrics::counter!(QUERY_ROWS, "adapter" => adapter, "kind" => kind).increment(rows);
    metrics::histogram!(QUERY_RUN_DURATION, "adapter" => adapter, "kind" => kind)
        .record(took.as_secs_f64());
}

/// One storage failure answered 503 (`unavailable`, `full`) or 500 (`backend`).
pub(crate) fn record_storage_error(kind: &'static str) {
    metrics::counter!(STORAGE_ERRORS, "kind" => kind).increment(1);
}

fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

fn status_label(status: StatusCode) -> metrics::SharedString {
    // The statuses the service answers, without an allocation each.
    const KNOWN: [(u16, &str); 13] = [
        (200, "200"),
        (304, "304"),
        (400, "400"),
        (401, "401"),
        (403, "403"),
        (404, "404"),
        (405, "405"),
        (408, "408"),
        (413, "413"),
        (415, "415"),
        (422, "422"),
        (500, "500"),
        (503, "503"),
    ];
    let code = status.as_u16();
    match KNOWN.iter().find(|(known, _)| *known == code) {
        Some((_, label)) => metrics::SharedString::const_str(label),
        None => metrics::SharedString::from(code.to_string()),
    }
}
