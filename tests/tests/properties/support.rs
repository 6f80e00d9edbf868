//! Running a case and talking to the service: the runtime, fresh services, checkers that
//! connect nowhere, paths and raw requests, shared assertions, and the records several
//! properties start from.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use dbconsole_core::check::{Adapter, CheckTarget};
use dbconsole_core::{Checkers, ConnectionChecker};
use dbconsole_storage_memory::MemoryStorage;
use dbconsole_tests::{ACCESS_TOKEN, API_KEY, Api, DASHBOARDS, DATABASES, TestResponse};
use http::{Method, Request, header};
use http_body_util::Full;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Value, json};

use crate::strategies::*;

/// The configuration of a property: `cases` cases, and a failing case saved next to the
/// property's file (`<property>.proptest-regressions`), where the next run replays it first.
pub(crate) fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::with_cases(cases)
    }
}

/// What a case's checks end with.
pub(crate) type Checked = Result<(), TestCaseError>;

/// Runs one case's requests on a fresh current-thread runtime.
pub(crate) fn run(case: impl Future<Output = Checked>) -> Checked {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime")
        .block_on(case)
}

/// A service over a fresh in-memory store, with no connection checker.
pub(crate) fn fresh_api() -> Api {
    Api::new(Arc::new(MemoryStorage::new()))
}

/// A service over a fresh in-memory store whose connection checks all go to `checker`.
pub(crate) fn api_checked_by(checker: Arc<dyn ConnectionChecker>) -> Api {
    let checkers = Adapter::ALL
        .into_iter()
        .fold(Checkers::none(), |checkers, adapter| {
            checkers.with(adapter, Arc::clone(&checker))
        });
    Api::with_checkers(Arc::new(MemoryStorage::new()), checkers)
}

/// A checker that connects nowhere: it records what it was asked to connect with.
#[derive(Debug, Default)]
pub(crate) struct RecordingChecker {
    pub(crate) seen: Mutex<Vec<CheckTarget>>,
}

impl RecordingChecker {
    pub(crate) fn last(&self) -> CheckTarget {
        self.seen
            .lock()
            .expect("checker lock")
            .pop()
            .expect("the checker was called")
    }
}

#[async_trait]
impl ConnectionChecker for RecordingChecker {
    async fn check(&self, target: &CheckTarget) -> Result<(), String> {
        self.seen.lock().expect("checker lock").push(target.clone());
        Ok(())
    }
}

/// A careless driver: its error message repeats every secret it was given, on several lines.
#[derive(Debug)]
pub(crate) struct EchoingChecker;

#[async_trait]
impl ConnectionChecker for EchoingChecker {
    async fn check(&self, target: &CheckTarget) -> Result<(), String> {
        let text = |secret: &Option<dbconsole_core::Secret>| {
            secret
                .as_ref()
                .and_then(|s| s.expose_str())
                .unwrap_or("-")
                .to_owned()
        };
        Err(format!(
            "FATAL: password authentication failed for user \"{}\" with password {}\n\
             ca:\n{}\ncert:\n{}\nkey:\n{}",
            target.username,
            text(&target.password),
            text(&target.ca_cert),
            text(&target.client_cert),
            text(&target.client_key),
        ))
    }
}

pub(crate) fn database_path(id: &str) -> String {
    format!("{DATABASES}/{id}")
}

pub(crate) fn dashboard_path(id: &str) -> String {
    format!("{DASHBOARDS}/{id}")
}

pub(crate) fn check_path(id: &str, username: &str) -> String {
    format!(
        "{DATABASES}/{id}/check-connection/{}",
        percent_encode(username)
    )
}

/// Every byte but the unreserved ones as `%XX`.
pub(crate) fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A request with both caller credentials, an optional content type and raw body bytes.
pub(crate) fn raw_request(
    method: Method,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> Request<Full<Bytes>> {
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header("x-api-key", API_KEY)
        .header(header::AUTHORIZATION, format!("Bearer {ACCESS_TOKEN}"));
    if let Some(content_type) = content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    builder
        .body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|e| panic!("request to {path:?}: {e}"))
}

pub(crate) fn str_of(value: &Value) -> &str {
    value.as_str().unwrap_or_default()
}

/// `<prefix>_` then 26 lowercase ULID characters.
pub(crate) fn assert_id(value: &Value, prefix: &str) -> Result<(), TestCaseError> {
    let ulid = str_of(value)
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'));
    prop_assert!(
        ulid.is_some_and(|u| u.len() == 26
            && u.bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase())),
        "not a {} id: {}",
        prefix,
        value
    );
    Ok(())
}

/// RFC 3339 UTC with microseconds, `2026-11-22T10:04:05.123456Z`: fixed width, so that these
/// strings compare as the instants do.
pub(crate) fn assert_timestamp(value: &Value) -> Result<(), TestCaseError> {
    let text = str_of(value).as_bytes();
    let shaped = text.len() == 27
        && text.iter().enumerate().all(|(i, &b)| match i {
            4 | 7 => b == b'-',
            10 => b == b'T',
            13 | 16 => b == b':',
            19 => b == b'.',
            26 => b == b'Z',
            _ => b.is_ascii_digit(),
        });
    prop_assert!(shaped, "not a timestamp: {}", value);
    Ok(())
}

/// The response with its status checked (the body is shown when it differs).
pub(crate) fn expect_status(
    response: TestResponse,
    status: u16,
    call: &str,
) -> Result<Value, TestCaseError> {
    prop_assert_eq!(
        response.status.as_u16(),
        status,
        "{} answered {}",
        call,
        response.text()
    );
    Ok(serde_json::from_slice(&response.body).unwrap_or(Value::Null))
}

pub(crate) fn distinct<T: Eq + std::hash::Hash>(items: impl IntoIterator<Item = T>) -> bool {
    let mut seen = HashSet::new();
    items.into_iter().all(|item| seen.insert(item))
}

pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

pub(crate) const SETUP_API_ID: &str = "prop-setup";

/// A dashboard with a query panel, an action and input mappings.
pub(crate) fn stored_dashboard() -> Value {
    json!({
        "name": "Ops",
        "restricted_access": true,
        "panels": [{
            "title": "Orders",
            "inputs": [{"key": "customer", "description": "Customer id"}],
            "actions": [{
                "label": "Refund",
                "workflow_id": "wf_refund",
                "input_mappings": [
                    {"workflow_input_key": "order", "column": "id"},
                    {"workflow_input_key": "reason", "prompt_user": true, "prompt": "Why?"}
                ]
            }],
            "details": {"__type__": "query", "query": "select 1", "credential_id": "crd_x"}
        }]
    })
}

/// A database with parameters, two credentials and a CA certificate.
pub(crate) fn stored_database() -> Value {
    json!({
        "name": "Orders",
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "orders",
        "port": 5433,
        "ssl": true,
        "ssl_ca_cert": base64(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
        "verify_server_hostname": true,
        "connection_parameters": [{"name": "search_path", "value": "app"}],
        "credentials": [
            {"username": "reader", "password": "pw-reader-1", "default_credential": true},
            {"username": "writer", "password": "pw-writer-1", "timeout": 5}
        ]
    })
}

pub(crate) fn setup_database() -> Value {
    json!({
        "id": SETUP_API_ID, "adapter": "mysql", "hostname": "10.0.0.7",
        "database": "shop", "username": "app", "password": "pw-app-1"
    })
}
