//! The storage conformance suite: every rule of the [`Storage`] contract (see the
//! [`storage`](super) module documentation), written once against the trait and run by every
//! backend.
//!
//! # Running it against a backend
//!
//! In the backend crate's `Cargo.toml`:
//!
//! ```toml
//! [dev-dependencies]
//! dbconsole-core = { workspace = true, features = ["testing"] }
//! tokio = { workspace = true, features = ["rt-multi-thread", "macros"] }
//! ```
//!
//! and one test file, e.g. `tests/conformance.rs`:
//!
//! ```ignore
//! //! The storage conformance suite over MyStorage.
//! use std::sync::Arc;
//! use my_backend::MyStorage;
//!
//! dbconsole_core::storage_conformance_suite!(|| Arc::new(MyStorage::new()));
//! ```
//!
//! [`storage_conformance_suite!`](crate::storage_conformance_suite) expands to one
//! `#[tokio::test(flavor = "multi_thread", worker_threads = 4)]` per case, named after the case
//! function. The factory is called once per test and must return a fresh, empty store as an
//! `Arc<S>` with `S: Storage`; a backend that needs a directory or a file keeps it alive inside
//! the store (or leaks a temporary directory for the test's lifetime). The cases run on a
//! multi-threaded runtime and really race: a backend that reads, awaits and then writes without
//! a lock or a transaction fails the `concurrent_*` and `*_racing_*` cases.
//!
//! Each case is also a plain `pub async fn` taking an `Arc<dyn Storage>`, so a backend can call
//! one directly while it is being debugged. Failure messages name the trait method and the
//! rule that broke. Secrets compare by content but print redacted, so a record that differs only
//! in a password, certificate or key is reported by field name and byte length.
//!
//! # What is covered
//!
//! - Databases: a whole record (every field, secrets, the order of `connection_parameters` and
//!   `credentials`, microsecond timestamps) reads back equal by id, by `api_id` and in listings;
//!   missing records read as `None`; inserts refuse a taken id or `api_id`; listings are ordered
//!   by id with exclusive keyset pagination and a respected limit; updates and upserts apply
//!   exactly what the edit returned, and refuse (changing nothing) an edit that fails or
//!   changes the identity; deletes by id and by `api_id` return the record as it was and free
//!   its `api_id`.
//! - Dashboards: the same for insert, read, listing, update and delete.
//! - Access control: `None` for a missing database, the default for a new one; updates apply
//!   exactly what the edit returned (`NotFound` for a missing database, `Invalid` changing
//!   nothing); `inherits_from` refused with the [`inheritance_message`] rules (itself, a
//!   missing database, a cycle of two or three) changing nothing, and clearable; the delete
//!   guard by id and by `api_id` ([`StorageError::Inherited`] naming every heir, ordered by id,
//!   nothing deleted), and a delete that takes the access control with it.
//! - Caller keys: insert, lookup by digest, listing by id, touch (the later time wins), delete
//!   (revoked at once); a taken id or digest is refused.
//! - Concurrency: no lost update under 32 racing updates (16 for access control), one database
//!   per `api_id` under racing upserts and inserts, a delete racing an update or an upsert is
//!   all-or-nothing, a delete racing an inheritance never leaves an heir of a deleted database,
//!   and crossing inheritances never make a cycle.
//!
//! Not covered here: [`StorageError::Backend`] (backend-specific failures).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::future::Future;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tokio::sync::Barrier;
use tokio::task::JoinHandle;

use super::{DatabaseKey, DatabaseRef, Page, Storage, StorageError, inheritance_message};
use crate::auth::{CredentialKind, Scope, mint_caller_key};
use crate::model::{
    AccessControl, AccessLevel, Action, ActionId, Adapter, CallerKey, ColumnAction, ColumnRule,
    ConnectionParameter, Credential, CredentialId, Dashboard, DashboardId, DataProtection,
    Database, DatabaseId, InputMapping, Panel, PanelDetails, PanelId, PanelInput, Permission,
    Policy, Secret, SubjectKind, Timestamp, TlsMaterial,
};
use crate::validate::{ValidationErrors, dashboard_from_body, database_from_body, message};

/// Expands to the whole storage conformance suite: one
/// `#[tokio::test(flavor = "multi_thread", worker_threads = 4)]` per case of
/// [`storage::testing`](crate::storage::testing), each over a fresh store made by `$factory`
/// (a closure or function returning `Arc<S>` where `S: Storage`, called once per test).
///
/// The crate that invokes it needs `tokio` (features `macros` and `rt-multi-thread`) among its
/// dev-dependencies.
///
/// ```ignore
/// dbconsole_core::storage_conformance_suite!(|| std::sync::Arc::new(MyStorage::new()));
/// ```
#[macro_export]
macro_rules! storage_conformance_suite {
    (@cases $factory:expr, [$($case:ident),* $(,)?]) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let storage: ::std::sync::Arc<dyn $crate::storage::Storage> = ($factory)();
                $crate::storage::testing::$case(storage).await;
            }
        )*
    };
    ($factory:expr) => {
        $crate::storage_conformance_suite!(@cases $factory, [
            database_round_trips_whole_record,
            reads_of_missing_records_are_none,
            database_insert_with_taken_id_is_refused,
            database_insert_with_taken_api_id_is_refused,
            databases_without_api_id_coexist,
            database_listing_is_ordered_by_id_with_keyset_pages,
            database_update_applies_and_returns_stored,
            database_update_of_missing_is_not_found,
            database_update_rejected_by_edit_changes_nothing,
            database_update_changing_identity_is_refused,
            upsert_creates_when_absent,
            upsert_updates_when_present,
            upsert_rejected_by_edit_changes_nothing,
            upsert_changing_identity_is_refused,
            delete_database_by_id_returns_it_and_frees_api_id,
            delete_database_by_api_id_returns_it_and_frees_api_id,
            delete_missing_database_is_not_found,
            dashboard_round_trips_whole_record,
            dashboard_insert_with_taken_id_is_refused,
            dashboard_listing_is_ordered_by_id_with_keyset_pages,
            dashboard_update_applies_and_returns_stored,
            dashboard_update_of_missing_is_not_found,
            dashboard_update_rejected_or_changing_id_changes_nothing,
            dashboard_delete_returns_it_and_removes_it,
            concurrent_database_updates_lose_nothing,
            concurrent_upserts_create_one_database,
            concurrent_inserts_with_one_api_id_admit_one,
            delete_racing_update_is_all_or_nothing,
            upsert_racing_delete_is_all_or_nothing,
            concurrent_dashboard_updates_lose_nothing,
            access_control_is_default_for_new_database_and_none_for_missing,
            access_control_update_applies_and_returns_stored,
            access_control_update_of_missing_database_is_not_found,
            access_control_update_rejected_by_edit_changes_nothing,
            inheritance_from_itself_is_refused,
            inheritance_from_missing_database_is_refused,
            inheritance_cycles_are_refused,
            inheritance_can_be_cleared_and_repointed,
            delete_of_inherited_database_by_id_is_refused,
            delete_of_inherited_database_by_api_id_is_refused,
            caller_keys_round_trip_by_digest_and_listing,
            caller_key_insert_with_taken_id_or_digest_is_refused,
            caller_key_touch_keeps_the_later_time,
            caller_key_delete_returns_it_and_revokes_it,
            concurrent_access_control_updates_lose_nothing,
            delete_racing_inheritance_never_leaves_a_dangling_heir,
            racing_inheritances_never_make_a_cycle,
        ]);
    };
}

// ---------------------------------------------------------------------------------------------
// Assertion helpers
// ---------------------------------------------------------------------------------------------

/// Asserts that `$result` is `Err` matching `$pattern`, naming the call in the message.
macro_rules! assert_err {
    ($result:expr, $pattern:pat, $($context:tt)+) => {
        match $result {
            Err($pattern) => {}
            Err(other) => panic!(
                "{}: expected Err({}), got Err({other:?})",
                format_args!($($context)+),
                stringify!($pattern),
            ),
            Ok(value) => panic!(
                "{}: expected Err({}), got Ok({value:?})",
                format_args!($($context)+),
                stringify!($pattern),
            ),
        }
    };
}

/// The value of a call that must succeed.
#[track_caller]
fn ok<T>(result: Result<T, StorageError>, call: &str) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("{call} failed: {error} ({error:?})"),
    }
}

/// The record a read that must find one returned.
#[track_caller]
fn found<T>(result: Result<Option<T>, StorageError>, call: &str) -> T {
    match ok(result, call) {
        Some(value) => value,
        None => panic!("{call} returned None, but the record is stored"),
    }
}

/// Asserts that a read finds nothing.
#[track_caller]
fn absent<T: Debug>(result: Result<Option<T>, StorageError>, call: &str) {
    if let Some(value) = ok(result, call) {
        panic!("{call} returned {value:?}, but no such record should be stored");
    }
}

/// How two secrets differ, without showing them; `None` when they are equal.
fn secret_difference(actual: Option<&Secret>, expected: Option<&Secret>) -> Option<String> {
    match (actual, expected) {
        (actual, expected) if actual == expected => None,
        (None, Some(expected)) => Some(format!(
            "missing (expected {} bytes)",
            expected.expose().len()
        )),
        (Some(actual), None) => Some(format!(
            "present ({} bytes) where none was stored",
            actual.expose().len()
        )),
        (Some(actual), Some(expected)) if actual.expose().len() != expected.expose().len() => {
            Some(format!(
                "{} bytes long, expected {} bytes",
                actual.expose().len(),
                expected.expose().len()
            ))
        }
        _ => Some("the same length but different bytes".to_owned()),
    }
}

/// The database with every secret replaced by an empty one: equal to another such copy when
/// everything but the secrets' bytes is equal (presence included).
fn masked(database: &Database) -> Database {
    let mask = |secret: &Option<Secret>| secret.as_ref().map(|_| Secret::new(Vec::new()));
    let mut masked = database.clone();
    masked.tls = TlsMaterial {
        ca_cert: mask(&database.tls.ca_cert),
        client_cert: mask(&database.tls.client_cert),
        client_key: mask(&database.tls.client_key),
    };
    for credential in &mut masked.credentials {
        credential.password = mask(&credential.password);
    }
    masked
}

/// Asserts two databases are equal: first that they are the same record, then every field but
/// the secrets' bytes (a readable diff), then each secret by name (secrets print redacted, so a
/// plain `assert_eq!` would show two identical dumps).
#[track_caller]
fn assert_same_database(actual: &Database, expected: &Database, context: &str) {
    assert!(
        actual.id == expected.id,
        "{context}: got the database {} ({:?}), expected the database {} ({:?})",
        actual.id,
        actual.name,
        expected.id,
        expected.name
    );
    assert_eq!(
        masked(actual),
        masked(expected),
        "{context} (secrets masked; left: got, right: expected)"
    );
    let mut secrets = vec![
        (
            "tls.ca_cert".to_owned(),
            actual.tls.ca_cert.as_ref(),
            expected.tls.ca_cert.as_ref(),
        ),
        (
            "tls.client_cert".to_owned(),
            actual.tls.client_cert.as_ref(),
            expected.tls.client_cert.as_ref(),
        ),
        (
            "tls.client_key".to_owned(),
            actual.tls.client_key.as_ref(),
            expected.tls.client_key.as_ref(),
        ),
    ];
    for (index, (a, e)) in actual
        .credentials
        .iter()
        .zip(&expected.credentials)
        .enumerate()
    {
        secrets.push((
            format!("credentials[{index}].password ({})", e.username),
            a.password.as_ref(),
            e.password.as_ref(),
        ));
    }
    for (field, actual, expected) in secrets {
        if let Some(difference) = secret_difference(actual, expected) {
            panic!("{context}: secret {field} is {difference} (secrets print redacted)");
        }
    }
    assert_eq!(actual, expected, "{context}");
}

/// Awaits spawned tasks in order; a task's panic is re-raised with its own message.
async fn join_all<T>(tasks: Vec<JoinHandle<T>>) -> Vec<T> {
    let mut results = Vec::with_capacity(tasks.len());
    for task in tasks {
        match task.await {
            Ok(value) => results.push(value),
            Err(error) => match error.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(error) => panic!("a task of the case did not finish: {error}"),
            },
        }
    }
    results
}

/// Spawns `count` tasks that all start `call(i)` at the same moment (behind one barrier).
fn spawn_together<F, Fut, T>(count: usize, call: F) -> Vec<JoinHandle<T>>
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let barrier = Arc::new(Barrier::new(count));
    (0..count)
        .map(|index| {
            let barrier = Arc::clone(&barrier);
            let call = call(index);
            tokio::spawn(async move {
                barrier.wait().await;
                call.await
            })
        })
        .collect()
}

/// More records than any case stores: "the whole listing".
const ALL: usize = 10_000;

async fn all_databases(storage: &dyn Storage) -> Vec<Database> {
    let page = Page {
        after: None,
        limit: ALL,
    };
    ok(storage.list_databases(page).await, "list_databases")
}

async fn all_dashboards(storage: &dyn Storage) -> Vec<Dashboard> {
    let page = Page {
        after: None,
        limit: ALL,
    };
    ok(storage.list_dashboards(page).await, "list_dashboards")
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("fixture body is not an object: {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

fn parameter(name: &str, value: &str) -> ConnectionParameter {
    ConnectionParameter {
        name: name.to_owned(),
        value: value.to_owned(),
    }
}

/// A database with every field set to something other than its default, secrets that are not
/// UTF-8, and lists in an order that is neither sorted by name nor by id.
fn rich_database(api_id: Option<&str>) -> Database {
    let older = CredentialId::generate();
    let newer = CredentialId::generate();
    let newest = CredentialId::generate();
    Database {
        id: DatabaseId::generate(),
        api_id: api_id.map(str::to_owned),
        name: "Orders — primary ✓".to_owned(),
        adapter: Adapter::Clickhouse,
        hostname: "orders.db.internal".to_owned(),
        port: Some(6543),
        database: "orders".to_owned(),
        ssl: true,
        verify_server_hostname: true,
        restrict_access: true,
        review_bypass_allowed: true,
        group: Some("Payments".to_owned()),
        slack_channel: Some("#orders-requests".to_owned()),
        tunnel_id: Some("tun_eu_1".to_owned()),
        ai_enabled: true,
        ai_max_rows: 1234,
        connection_parameters: vec![
            parameter("statement_timeout", "30s"),
            parameter("application_name", ""),
            parameter("search_path", "app, public"),
        ],
        credentials: vec![
            Credential {
                id: newest,
                username: "writer".to_owned(),
                password: Some(Secret::from("wr1ter-pässwörd")),
                hostname: Some("primary.internal".to_owned()),
                ai_allowed: true,
                timeout: Some(30),
                reviews_required: 2,
                default_credential: false,
            },
            Credential {
                id: older,
                username: "Reader".to_owned(),
                password: None,
                hostname: None,
                ai_allowed: false,
                timeout: None,
                reviews_required: 0,
                default_credential: true,
            },
            Credential {
                id: newer,
                username: "reader".to_owned(),
                password: Some(Secret::from("r3ader password with spaces ")),
                hostname: Some("replica.internal".to_owned()),
                ai_allowed: false,
                timeout: Some(1),
                reviews_required: 7,
                default_credential: false,
            },
        ],
        tls: TlsMaterial {
            ca_cert: Some(Secret::new(vec![
                0x30, 0x82, 0x01, 0x0a, 0x00, 0xff, 0xfe, 0x00,
            ])),
            client_cert: Some(Secret::from(
                "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n",
            )),
            client_key: Some(Secret::new(vec![0x00, 0x9f, 0x80, 0xc3, 0x28, 0x0a, 0x00])),
        },
        inserted_at: Timestamp::from_micros(1_795_341_845_123_456),
        updated_at: Timestamp::from_micros(1_795_341_905_654_321),
    }
}

/// A small database made the way the service makes one, from a create body.
fn plain_database(name: &str, api_id: Option<&str>) -> Database {
    let body = object(json!({
        "name": name,
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "app",
        "credentials": [{"username": "reader", "password": "pw-reader-1"}],
    }));
    let mut database = match database_from_body(None, &body, Timestamp::now()) {
        Ok(database) => database,
        Err(errors) => panic!("fixture database body is invalid: {errors}"),
    };
    database.api_id = api_id.map(str::to_owned);
    database
}

/// A dashboard with every field set, several panels, inputs, actions and mappings.
fn rich_dashboard() -> Dashboard {
    Dashboard {
        id: DashboardId::generate(),
        name: "Ops — on call ✓".to_owned(),
        restricted_access: true,
        archived_at: Some(Timestamp::from_micros(1_795_341_999_000_001)),
        panels: vec![
            Panel {
                id: PanelId::generate(),
                title: "Stuck orders".to_owned(),
                inputs: vec![
                    PanelInput {
                        key: "since".to_owned(),
                        description: "Start of the window".to_owned(),
                    },
                    PanelInput {
                        key: "limit".to_owned(),
                        description: String::new(),
                    },
                ],
                actions: vec![
                    Action {
                        id: ActionId::generate(),
                        label: Some("Refund".to_owned()),
                        workflow_id: Some("wf_refund".to_owned()),
                        input_mappings: vec![
                            InputMapping {
                                workflow_input_key: "order_id".to_owned(),
                                column: Some("id".to_owned()),
                                prompt_user: false,
                                prompt: None,
                            },
                            InputMapping {
                                workflow_input_key: "reason".to_owned(),
                                column: None,
                                prompt_user: true,
                                prompt: Some("Why?".to_owned()),
                            },
                        ],
                    },
                    Action {
                        id: ActionId::generate(),
                        label: None,
                        workflow_id: None,
                        input_mappings: Vec::new(),
                    },
                ],
                details: PanelDetails::Query {
                    query: "SELECT *\n  FROM orders\n WHERE state = 'stuck' -- ünïcode\t\n"
                        .to_owned(),
                    credential_id: "crd_anything".to_owned(),
                },
            },
            Panel {
                id: PanelId::generate(),
                title: "Empty".to_owned(),
                inputs: Vec::new(),
                actions: Vec::new(),
                details: PanelDetails::Query {
                    query: "select 1".to_owned(),
                    credential_id: String::new(),
                },
            },
        ],
        inserted_at: Timestamp::from_micros(1_795_341_845_123_456),
        updated_at: Timestamp::from_micros(1_795_341_905_654_321),
    }
}

/// A small dashboard made the way the service makes one, from a create body.
fn plain_dashboard(name: &str) -> Dashboard {
    let body = object(json!({ "name": name, "restricted_access": false }));
    match dashboard_from_body(None, &body, Timestamp::now()) {
        Ok(dashboard) => dashboard,
        Err(errors) => panic!("fixture dashboard body is invalid: {errors}"),
    }
}

/// A query panel with this id and title.
fn query_panel(id: PanelId, title: &str) -> Panel {
    Panel {
        id,
        title: title.to_owned(),
        inputs: Vec::new(),
        actions: Vec::new(),
        details: PanelDetails::Query {
            query: format!("select '{title}'"),
            credential_id: "crd_x".to_owned(),
        },
    }
}

/// The errors the failing edits of the suite return.
fn edit_errors() -> ValidationErrors {
    ValidationErrors::single("name", message::BLANK)
}

// ---------------------------------------------------------------------------------------------
// Listings (shared by databases and dashboards)
// ---------------------------------------------------------------------------------------------

/// How many ids a listing case makes; records are stored for the odd indexes only, so the even
/// ones are ids that sort before, between and after the stored ones without being stored.
const LISTING_IDS: usize = 11;

/// Checks ordering, the limit and keyset pagination of a listing of `ids[1], ids[3], …`, where
/// `ids` (sorted, generated in order) has [`LISTING_IDS`] entries. `list(after, limit)` returns
/// the ids of one page.
async fn check_listing<L>(what: &str, ids: &[String], list: L)
where
    L: AsyncFn(Option<&str>, usize) -> Vec<String>,
{
    assert_eq!(ids.len(), LISTING_IDS);
    let stored: Vec<String> = ids.iter().skip(1).step_by(2).cloned().collect();
    let from = |index: usize| stored[index..].to_vec();

    assert_eq!(
        list(None, ALL).await,
        stored,
        "{what}(after: None): every record, ordered by id"
    );
    assert_eq!(
        list(None, 3).await,
        stored[..3].to_vec(),
        "{what}(after: None, limit: 3): the first 3 by id"
    );
    assert_eq!(
        list(None, 0).await,
        Vec::<String>::new(),
        "{what}(limit: 0): at most 0 records"
    );
    assert_eq!(
        list(Some(&stored[1]), ALL).await,
        from(2),
        "{what}(after: a stored id): `after` is exclusive"
    );
    assert_eq!(
        list(Some(&stored[0]), 2).await,
        stored[1..3].to_vec(),
        "{what}(after: the first id, limit: 2)"
    );
    assert_eq!(
        list(Some(&ids[4]), ALL).await,
        from(2),
        "{what}(after: an id that is not stored but sorts between stored ones)"
    );
    assert_eq!(
        list(Some(&ids[0]), ALL).await,
        stored,
        "{what}(after: an id that sorts before every stored one)"
    );
    assert_eq!(
        list(Some(""), ALL).await,
        stored,
        "{what}(after: \"\"): every id sorts after the empty string"
    );
    assert_eq!(
        list(Some(&ids[LISTING_IDS - 1]), ALL).await,
        Vec::<String>::new(),
        "{what}(after: an id that sorts after every stored one)"
    );
    assert_eq!(
        list(Some("zz"), ALL).await,
        Vec::<String>::new(),
        "{what}(after: \"zz\", a string that sorts after every id)"
    );
    assert_eq!(
        list(Some(&stored[stored.len() - 1]), ALL).await,
        Vec::<String>::new(),
        "{what}(after: the last stored id)"
    );

    let mut walked = Vec::new();
    let mut after: Option<String> = None;
    for _ in 0..=stored.len() {
        let page = list(after.as_deref(), 2).await;
        assert!(
            page.len() <= 2,
            "{what}(limit: 2) returned {} records: {page:?}",
            page.len()
        );
        let Some(last) = page.last().cloned() else {
            break;
        };
        walked.extend(page);
        after = Some(last);
    }
    assert_eq!(
        walked, stored,
        "{what}: walking pages of 2 with `after` = the last id of the previous page must visit \
         every record once, in order"
    );
}

/// [`LISTING_IDS`] ids of one kind, in generation (and sort) order.
fn listing_ids(generate: impl Fn() -> String) -> Vec<String> {
    let ids: Vec<String> = (0..LISTING_IDS).map(|_| generate()).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "generated ids sort in generation order");
    ids
}

/// The odd-indexed ids of `ids`, in an order that is neither sorted nor reversed.
fn insertion_order(ids: &[String]) -> Vec<String> {
    let stored: Vec<&String> = ids.iter().skip(1).step_by(2).collect();
    [3, 0, 4, 2, 1]
        .into_iter()
        .map(|index| stored[index].clone())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Databases: insert and read
// ---------------------------------------------------------------------------------------------

/// A database reads back exactly as inserted — every field, every secret, the order of
/// `connection_parameters` and `credentials` — by id, by `api_id` and in the listing.
pub async fn database_round_trips_whole_record(storage: Arc<dyn Storage>) {
    let with_api_id = rich_database(Some("ext-orders"));
    let mut without_api_id = rich_database(None);
    without_api_id.name = "Second".to_owned();
    without_api_id.credentials.reverse();
    without_api_id.connection_parameters.reverse();
    without_api_id.tls.client_key = None;
    without_api_id.port = None;

    for database in [&with_api_id, &without_api_id] {
        ok(
            storage.insert_database(database.clone()).await,
            "insert_database of a new record",
        );
    }
    for expected in [&with_api_id, &without_api_id] {
        let by_id = found(storage.database(expected.id.as_str()).await, "database(id)");
        assert_same_database(&by_id, expected, "database(id) after insert_database");
    }
    let by_api_id = found(
        storage.database_by_api_id("ext-orders").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &with_api_id,
        "database_by_api_id after insert_database",
    );

    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(listed.len(), 2, "list_databases after two inserts");
    for (listed, expected) in listed.iter().zip([&with_api_id, &without_api_id]) {
        assert_same_database(listed, expected, "list_databases after insert_database");
    }
}

/// Reads of ids that are not stored are `None`, and ids, `api_id`s and dashboard ids are
/// separate keys.
pub async fn reads_of_missing_records_are_none(storage: Arc<dyn Storage>) {
    absent(
        storage.database("db_missing").await,
        "database on an empty store",
    );
    absent(
        storage.database_by_api_id("ext-missing").await,
        "database_by_api_id on an empty store",
    );
    absent(
        storage.dashboard("dash_missing").await,
        "dashboard on an empty store",
    );

    let database = plain_database("Orders", Some("ext-1"));
    let dashboard = plain_dashboard("Ops");
    ok(
        storage.insert_database(database.clone()).await,
        "insert_database",
    );
    ok(
        storage.insert_dashboard(dashboard.clone()).await,
        "insert_dashboard",
    );

    absent(
        storage.database("db_missing").await,
        "database(an id that is not stored)",
    );
    absent(
        storage.database("ext-1").await,
        "database(a stored api_id): ids and api_ids are separate keys",
    );
    absent(
        storage.database_by_api_id(database.id.as_str()).await,
        "database_by_api_id(a stored id): ids and api_ids are separate keys",
    );
    absent(
        storage.database_by_api_id("EXT-1").await,
        "database_by_api_id compares with case",
    );
    absent(
        storage.database(dashboard.id.as_str()).await,
        "database(a dashboard's id)",
    );
    absent(
        storage.dashboard(database.id.as_str()).await,
        "dashboard(a database's id)",
    );
    absent(
        storage.dashboard("dash_missing").await,
        "dashboard(an id that is not stored)",
    );
}

/// Inserting a database whose id is taken fails with `AlreadyExists` and changes nothing.
pub async fn database_insert_with_taken_id_is_refused(storage: Arc<dyn Storage>) {
    let first = rich_database(Some("ext-first"));
    ok(
        storage.insert_database(first.clone()).await,
        "insert_database",
    );

    let mut impostor = plain_database("Impostor", Some("ext-impostor"));
    impostor.id = first.id.clone();
    assert_err!(
        storage.insert_database(impostor).await,
        StorageError::AlreadyExists,
        "insert_database with the id of a stored database"
    );

    let stored = found(storage.database(first.id.as_str()).await, "database");
    assert_same_database(
        &stored,
        &first,
        "the first database after a refused insert with its id",
    );
    absent(
        storage.database_by_api_id("ext-impostor").await,
        "database_by_api_id(the api_id of the refused insert)",
    );
    assert_eq!(
        all_databases(storage.as_ref()).await.len(),
        1,
        "list_databases after a refused insert"
    );
}

/// Inserting a database whose `api_id` is taken fails with `AlreadyExists` and changes
/// nothing.
pub async fn database_insert_with_taken_api_id_is_refused(storage: Arc<dyn Storage>) {
    let first = rich_database(Some("ext-shared"));
    ok(
        storage.insert_database(first.clone()).await,
        "insert_database",
    );

    let second = plain_database("Second", Some("ext-shared"));
    assert_err!(
        storage.insert_database(second.clone()).await,
        StorageError::AlreadyExists,
        "insert_database with the api_id of a stored database"
    );

    absent(
        storage.database(second.id.as_str()).await,
        "database(the id of the refused insert)",
    );
    let by_api_id = found(
        storage.database_by_api_id("ext-shared").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &first,
        "database_by_api_id after a refused insert with the same api_id",
    );
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(listed.len(), 1, "list_databases after a refused insert");
    assert_same_database(&listed[0], &first, "list_databases after a refused insert");
}

/// Any number of databases without an `api_id` can be stored: `None` is no key.
pub async fn databases_without_api_id_coexist(storage: Arc<dyn Storage>) {
    let databases: Vec<Database> = (0..3)
        .map(|index| plain_database(&format!("Local {index}"), None))
        .collect();
    for database in &databases {
        ok(
            storage.insert_database(database.clone()).await,
            "insert_database of a database without api_id, next to others without one",
        );
    }
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(
        listed, databases,
        "list_databases: every database without api_id"
    );
    absent(
        storage.database_by_api_id("").await,
        "database_by_api_id(\"\") when no database has an api_id",
    );
    let with_api_id = plain_database("External", Some("ext-1"));
    ok(
        storage.insert_database(with_api_id.clone()).await,
        "insert_database with an api_id next to databases without one",
    );
    let by_api_id = found(
        storage.database_by_api_id("ext-1").await,
        "database_by_api_id",
    );
    assert_same_database(&by_api_id, &with_api_id, "database_by_api_id");
}

/// `list_databases` is ordered by id, respects the limit, and pages with an exclusive `after`
/// that may be any string; an empty store lists nothing.
pub async fn database_listing_is_ordered_by_id_with_keyset_pages(storage: Arc<dyn Storage>) {
    for after in [None, Some("db_anything")] {
        let page = Page { after, limit: 10 };
        assert!(
            ok(storage.list_databases(page).await, "list_databases").is_empty(),
            "list_databases(after: {after:?}) on an empty store must be empty"
        );
    }

    let ids = listing_ids(|| DatabaseId::generate().as_str().to_owned());
    for id in insertion_order(&ids) {
        let mut database = plain_database(&format!("Listed {id}"), None);
        database.id = DatabaseId::from_stored(id);
        ok(storage.insert_database(database).await, "insert_database");
    }
    let storage = storage.as_ref();
    check_listing(
        "list_databases",
        &ids,
        async |after: Option<&str>, limit: usize| {
            let call = format!("list_databases(after: {after:?}, limit: {limit})");
            ok(storage.list_databases(Page { after, limit }).await, &call)
                .into_iter()
                .map(|database| database.id.as_str().to_owned())
                .collect()
        },
    )
    .await;
}

// ---------------------------------------------------------------------------------------------
// Databases: update
// ---------------------------------------------------------------------------------------------

/// `update_database` passes the stored record to the edit, stores exactly what the edit
/// returned, and returns it.
pub async fn database_update_applies_and_returns_stored(storage: Arc<dyn Storage>) {
    let original = rich_database(Some("ext-update"));
    let other = plain_database("Bystander", Some("ext-bystander"));
    ok(
        storage.insert_database(original.clone()).await,
        "insert_database",
    );
    ok(
        storage.insert_database(other.clone()).await,
        "insert_database",
    );

    let kept = original.credentials[2].id.as_str().to_owned();
    let body = object(json!({
        "name": "Orders (renamed)",
        "port": null,
        "group": "",
        "connection_parameters": [
            {"name": "search_path", "value": "other"},
            {"name": "lock_timeout", "value": "5s"},
        ],
        "credentials": [
            {"username": "auditor", "password": "aud1tor-pass"},
            {"id": kept, "password": "n3w-pässword", "timeout": 9},
        ],
    }));
    let now = Timestamp::now();
    let seen: Arc<Mutex<Vec<Database>>> = Arc::default();
    let produced: Arc<Mutex<Option<Database>>> = Arc::default();
    let edit = {
        let seen = Arc::clone(&seen);
        let produced = Arc::clone(&produced);
        Box::new(move |stored: &Database| {
            seen.lock().unwrap().push(stored.clone());
            let mut next = database_from_body(Some(stored), &body, now)?;
            next.tls.client_key = Some(Secret::new(vec![0x01, 0x00, 0x02]));
            next.tls.client_cert = None;
            *produced.lock().unwrap() = Some(next.clone());
            Ok(next)
        })
    };
    let returned = ok(
        storage.update_database(original.id.as_str(), edit).await,
        "update_database",
    );

    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "update_database never called the edit");
    for stored in &seen {
        assert_same_database(
            stored,
            &original,
            "the record update_database passed to the edit",
        );
    }
    let produced = produced.lock().unwrap().clone().expect("the edit ran");
    assert_same_database(
        &returned,
        &produced,
        "update_database must return what the edit produced",
    );
    assert_eq!(returned.name, "Orders (renamed)");
    assert_eq!(returned.port, None);
    assert_eq!(returned.group, None);
    assert_eq!(
        returned.connection_parameters,
        vec![
            parameter("search_path", "other"),
            parameter("lock_timeout", "5s")
        ]
    );
    let usernames: Vec<&str> = returned
        .credentials
        .iter()
        .map(|c| c.username.as_str())
        .collect();
    assert_eq!(
        usernames,
        ["auditor", "reader"],
        "credentials in the new order"
    );
    assert_eq!(returned.credentials[1].id.as_str(), kept);
    assert_eq!(
        returned.credentials[1].password,
        Some(Secret::from("n3w-pässword")),
        "the kept credential's new password (redacted)"
    );

    let by_id = found(storage.database(original.id.as_str()).await, "database");
    assert_same_database(&by_id, &returned, "database(id) after update_database");
    let by_api_id = found(
        storage.database_by_api_id("ext-update").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &returned,
        "database_by_api_id after update_database",
    );
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(listed.len(), 2, "list_databases after update_database");
    assert_same_database(
        &listed[0],
        &returned,
        "list_databases after update_database",
    );
    assert_same_database(&listed[1], &other, "another database after update_database");
}

/// `update_database` of an id that is not stored fails with `NotFound` and creates nothing.
pub async fn database_update_of_missing_is_not_found(storage: Arc<dyn Storage>) {
    let edit = || Box::new(|stored: &Database| Ok(stored.clone()));
    assert_err!(
        storage.update_database("db_missing", edit()).await,
        StorageError::NotFound,
        "update_database on an empty store"
    );
    let database = plain_database("Orders", Some("ext-1"));
    ok(
        storage.insert_database(database.clone()).await,
        "insert_database",
    );
    assert_err!(
        storage.update_database("db_missing", edit()).await,
        StorageError::NotFound,
        "update_database of an id that is not stored"
    );
    assert_err!(
        storage.update_database("ext-1", edit()).await,
        StorageError::NotFound,
        "update_database(a stored api_id): update_database takes an id"
    );
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(
        listed,
        vec![database],
        "list_databases after failed updates"
    );
}

/// An edit that returns `Err` makes `update_database` fail with `Invalid` carrying those
/// errors, and nothing changes.
pub async fn database_update_rejected_by_edit_changes_nothing(storage: Arc<dyn Storage>) {
    let original = rich_database(Some("ext-rejected"));
    ok(
        storage.insert_database(original.clone()).await,
        "insert_database",
    );

    let edit = Box::new(|stored: &Database| {
        let mut next = stored.clone();
        next.name = "half-applied".to_owned();
        next.credentials.clear();
        Err(edit_errors())
    });
    match storage.update_database(original.id.as_str(), edit).await {
        Err(StorageError::Invalid(errors)) => assert_eq!(
            errors,
            edit_errors(),
            "StorageError::Invalid must carry the edit's own errors"
        ),
        other => panic!(
            "update_database with an edit that returns Err: expected Err(Invalid), got {other:?}"
        ),
    }
    let stored = found(storage.database(original.id.as_str()).await, "database");
    assert_same_database(&stored, &original, "database after a rejected edit");
    let by_api_id = found(
        storage.database_by_api_id("ext-rejected").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &original,
        "database_by_api_id after a rejected edit",
    );
}

/// An edit that changes the id or the `api_id` makes `update_database` fail with
/// `IdentityChanged`, and nothing changes under either identity.
pub async fn database_update_changing_identity_is_refused(storage: Arc<dyn Storage>) {
    let with_api_id = rich_database(Some("ext-a"));
    let without_api_id = plain_database("Local", None);
    ok(
        storage.insert_database(with_api_id.clone()).await,
        "insert_database",
    );
    ok(
        storage.insert_database(without_api_id.clone()).await,
        "insert_database",
    );
    let new_id = DatabaseId::generate();

    type Change = fn(&mut Database, &DatabaseId);
    let cases: [(&Database, &str, Change); 5] = [
        (&with_api_id, "changes the id", |d, new_id| {
            d.id = new_id.clone();
        }),
        (&with_api_id, "changes the api_id", |d, _| {
            d.api_id = Some("ext-b".to_owned());
        }),
        (&with_api_id, "clears the api_id", |d, _| d.api_id = None),
        (&without_api_id, "sets an api_id", |d, _| {
            d.api_id = Some("ext-b".to_owned());
        }),
        (&without_api_id, "changes the id", |d, new_id| {
            d.id = new_id.clone();
        }),
    ];
    for (original, what, change) in cases {
        let moved_to = new_id.clone();
        let edit = Box::new(move |stored: &Database| {
            let mut next = stored.clone();
            next.name = "moved".to_owned();
            change(&mut next, &moved_to);
            Ok(next)
        });
        assert_err!(
            storage.update_database(original.id.as_str(), edit).await,
            StorageError::IdentityChanged,
            "update_database with an edit that {what}"
        );
        let stored = found(storage.database(original.id.as_str()).await, "database");
        assert_same_database(
            &stored,
            original,
            &format!("database after a refused edit that {what}"),
        );
        absent(
            storage.database(new_id.as_str()).await,
            &format!("database(the new id) after a refused edit that {what}"),
        );
        absent(
            storage.database_by_api_id("ext-b").await,
            &format!("database_by_api_id(the new api_id) after a refused edit that {what}"),
        );
        let by_api_id = found(
            storage.database_by_api_id("ext-a").await,
            "database_by_api_id",
        );
        assert_same_database(
            &by_api_id,
            &with_api_id,
            &format!("database_by_api_id(the old api_id) after a refused edit that {what}"),
        );
        assert_eq!(
            all_databases(storage.as_ref()).await.len(),
            2,
            "list_databases after a refused edit that {what}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Databases: upsert by api_id
// ---------------------------------------------------------------------------------------------

/// `upsert_database_by_api_id` with an `api_id` that is not stored passes `None` to the edit
/// and stores what it returns.
pub async fn upsert_creates_when_absent(storage: Arc<dyn Storage>) {
    let other = plain_database("Bystander", Some("ext-other"));
    ok(
        storage.insert_database(other.clone()).await,
        "insert_database",
    );

    let fresh = rich_database(Some("ext-new"));
    let seen: Arc<Mutex<Vec<Option<Database>>>> = Arc::default();
    let edit = {
        let seen = Arc::clone(&seen);
        let fresh = fresh.clone();
        Box::new(move |stored: Option<&Database>| {
            seen.lock().unwrap().push(stored.cloned());
            Ok(fresh.clone())
        })
    };
    let returned = ok(
        storage.upsert_database_by_api_id("ext-new", edit).await,
        "upsert_database_by_api_id of a new api_id",
    );
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "upsert never called the edit");
    assert!(
        seen.iter().all(Option::is_none),
        "upsert of an api_id that is not stored must pass None to the edit, got {seen:?}"
    );
    assert_same_database(
        &returned,
        &fresh,
        "upsert must return what the edit produced",
    );

    let by_id = found(storage.database(fresh.id.as_str()).await, "database");
    assert_same_database(&by_id, &fresh, "database(id) after an upsert created it");
    let by_api_id = found(
        storage.database_by_api_id("ext-new").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &fresh,
        "database_by_api_id after an upsert created it",
    );
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(
        listed.len(),
        2,
        "list_databases after an upsert created one"
    );
    let still = found(storage.database(other.id.as_str()).await, "database");
    assert_same_database(&still, &other, "another database after an upsert");
}

/// `upsert_database_by_api_id` with a stored `api_id` passes the stored record to the edit and
/// replaces it with what the edit returns; other databases stay as they were.
pub async fn upsert_updates_when_present(storage: Arc<dyn Storage>) {
    let target = rich_database(Some("ext-target"));
    let others = [
        plain_database("Other with api_id", Some("ext-other")),
        plain_database("Other without api_id", None),
    ];
    ok(
        storage.insert_database(target.clone()).await,
        "insert_database",
    );
    for other in &others {
        ok(
            storage.insert_database(other.clone()).await,
            "insert_database",
        );
    }

    fn apply(stored: &Database) -> Database {
        let mut next = stored.clone();
        next.name = "Upserted".to_owned();
        next.connection_parameters
            .push(parameter("upserted", "yes"));
        next.credentials[0].password = Some(Secret::from("upserted-pässword"));
        next.tls.ca_cert = Some(Secret::new(vec![0xde, 0xad, 0x00, 0xbe, 0xef]));
        next
    }
    let expected = apply(&target);
    let seen: Arc<Mutex<Vec<Option<Database>>>> = Arc::default();
    let edit = {
        let seen = Arc::clone(&seen);
        Box::new(move |stored: Option<&Database>| {
            seen.lock().unwrap().push(stored.cloned());
            match stored {
                Some(stored) => Ok(apply(stored)),
                None => Err(ValidationErrors::single("id", "the edit got None")),
            }
        })
    };
    let returned = ok(
        storage.upsert_database_by_api_id("ext-target", edit).await,
        "upsert_database_by_api_id of a stored api_id",
    );
    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "upsert never called the edit");
    for stored in &seen {
        let stored = stored
            .as_ref()
            .expect("upsert of a stored api_id must pass the stored record to the edit, not None");
        assert_same_database(stored, &target, "the record upsert passed to the edit");
    }
    assert_same_database(
        &returned,
        &expected,
        "upsert must return what the edit produced",
    );
    let by_id = found(storage.database(target.id.as_str()).await, "database");
    assert_same_database(&by_id, &expected, "database(id) after an upsert updated it");
    let by_api_id = found(
        storage.database_by_api_id("ext-target").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &expected,
        "database_by_api_id after an upsert updated it",
    );
    for other in &others {
        let still = found(storage.database(other.id.as_str()).await, "database");
        assert_same_database(&still, other, "another database after an upsert");
    }
    assert_eq!(
        all_databases(storage.as_ref()).await.len(),
        3,
        "list_databases after an upsert that updated: no new record"
    );
}

/// An upsert whose edit returns `Err` fails with `Invalid` carrying those errors and changes
/// nothing, whether the `api_id` is stored or not.
pub async fn upsert_rejected_by_edit_changes_nothing(storage: Arc<dyn Storage>) {
    let rejecting = || Box::new(|_: Option<&Database>| Err(edit_errors()));
    match storage
        .upsert_database_by_api_id("ext-absent", rejecting())
        .await
    {
        Err(StorageError::Invalid(errors)) => assert_eq!(errors, edit_errors()),
        other => panic!(
            "upsert (absent api_id) with a rejecting edit: expected Err(Invalid), got {other:?}"
        ),
    }
    absent(
        storage.database_by_api_id("ext-absent").await,
        "database_by_api_id after a rejected upsert",
    );
    assert!(
        all_databases(storage.as_ref()).await.is_empty(),
        "list_databases after a rejected upsert must be empty"
    );

    let original = rich_database(Some("ext-present"));
    ok(
        storage.insert_database(original.clone()).await,
        "insert_database",
    );
    match storage
        .upsert_database_by_api_id("ext-present", rejecting())
        .await
    {
        Err(StorageError::Invalid(errors)) => assert_eq!(errors, edit_errors()),
        other => panic!(
            "upsert (stored api_id) with a rejecting edit: expected Err(Invalid), got {other:?}"
        ),
    }
    let stored = found(
        storage.database_by_api_id("ext-present").await,
        "database_by_api_id",
    );
    assert_same_database(&stored, &original, "database after a rejected upsert");
}

/// An upsert must keep the identity: updating, the edit keeps id and `api_id`; creating, the
/// new record has the requested `api_id` and an id that is free. Otherwise nothing changes.
pub async fn upsert_changing_identity_is_refused(storage: Arc<dyn Storage>) {
    let original = rich_database(Some("ext-present"));
    ok(
        storage.insert_database(original.clone()).await,
        "insert_database",
    );
    let new_id = DatabaseId::generate();

    let edit = {
        let new_id = new_id.clone();
        Box::new(move |stored: Option<&Database>| {
            let mut next = stored.cloned().expect("the stored record");
            next.id = new_id.clone();
            Ok(next)
        })
    };
    assert_err!(
        storage.upsert_database_by_api_id("ext-present", edit).await,
        StorageError::IdentityChanged,
        "upsert of a stored api_id with an edit that changes the id"
    );
    absent(
        storage.database(new_id.as_str()).await,
        "database(the new id) after a refused upsert",
    );

    let edit = Box::new(|stored: Option<&Database>| {
        let mut next = stored.cloned().expect("the stored record");
        next.api_id = Some("ext-elsewhere".to_owned());
        Ok(next)
    });
    assert_err!(
        storage.upsert_database_by_api_id("ext-present", edit).await,
        StorageError::IdentityChanged,
        "upsert of a stored api_id with an edit that changes the api_id"
    );
    absent(
        storage.database_by_api_id("ext-elsewhere").await,
        "database_by_api_id(the new api_id) after a refused upsert",
    );

    for (api_id, what) in [
        (Some("ext-elsewhere"), "another api_id"),
        (None, "no api_id"),
    ] {
        let mut wrong = plain_database("Wrong", api_id);
        wrong.id = new_id.clone();
        let edit = Box::new(move |_: Option<&Database>| Ok(wrong.clone()));
        assert_err!(
            storage.upsert_database_by_api_id("ext-absent", edit).await,
            StorageError::IdentityChanged,
            "upsert of an absent api_id with an edit that creates a database with {what}"
        );
        absent(
            storage.database(new_id.as_str()).await,
            &format!("database(id) after a refused upsert that created {what}"),
        );
    }

    let mut taken = plain_database("Taken id", Some("ext-absent"));
    taken.id = original.id.clone();
    let edit = Box::new(move |_: Option<&Database>| Ok(taken.clone()));
    assert_err!(
        storage.upsert_database_by_api_id("ext-absent", edit).await,
        StorageError::AlreadyExists,
        "upsert of an absent api_id with an edit that creates a database with a taken id"
    );
    absent(
        storage.database_by_api_id("ext-absent").await,
        "database_by_api_id after a refused upsert",
    );

    let stored = found(storage.database(original.id.as_str()).await, "database");
    assert_same_database(&stored, &original, "database after refused upserts");
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(listed.len(), 1, "list_databases after refused upserts");
}

// ---------------------------------------------------------------------------------------------
// Databases: delete
// ---------------------------------------------------------------------------------------------

/// Checks a delete of `target` through `key`: it returns the record as it was, removes it from
/// every lookup, a second delete is `NotFound`, and its `api_id` can be used again.
async fn check_delete(storage: &dyn Storage, by_api_id: bool) {
    let target = rich_database(Some("ext-delete"));
    let other = plain_database("Bystander", Some("ext-keep"));
    ok(
        storage.insert_database(target.clone()).await,
        "insert_database",
    );
    ok(
        storage.insert_database(other.clone()).await,
        "insert_database",
    );
    let key = if by_api_id {
        DatabaseKey::ApiId("ext-delete")
    } else {
        DatabaseKey::Id(target.id.as_str())
    };

    let removed = ok(
        storage.delete_database(key).await,
        &format!("delete_database({key:?})"),
    );
    assert_same_database(
        &removed,
        &target,
        &format!("delete_database({key:?}) must return the record as it was"),
    );
    absent(
        storage.database(target.id.as_str()).await,
        &format!("database(id) after delete_database({key:?})"),
    );
    absent(
        storage.database_by_api_id("ext-delete").await,
        &format!("database_by_api_id after delete_database({key:?})"),
    );
    let listed = all_databases(storage).await;
    assert_eq!(
        listed.len(),
        1,
        "list_databases after delete_database({key:?})"
    );
    assert_same_database(
        &listed[0],
        &other,
        &format!("list_databases after delete_database({key:?})"),
    );
    assert_err!(
        storage.delete_database(key).await,
        StorageError::NotFound,
        "a second delete_database({key:?})"
    );

    let successor = plain_database("Successor", Some("ext-delete"));
    ok(
        storage.insert_database(successor.clone()).await,
        &format!("insert_database with the api_id of a database removed by {key:?}"),
    );
    let by_api_id = found(
        storage.database_by_api_id("ext-delete").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &successor,
        "database_by_api_id after the api_id was used again",
    );
    let still = found(storage.database(other.id.as_str()).await, "database");
    assert_same_database(&still, &other, "another database after a delete");
}

/// `delete_database(Id)` returns the record as it was, removes it everywhere, and frees its
/// `api_id` for a new insert.
pub async fn delete_database_by_id_returns_it_and_frees_api_id(storage: Arc<dyn Storage>) {
    check_delete(storage.as_ref(), false).await;
}

/// `delete_database(ApiId)` returns the record as it was, removes it everywhere, and frees its
/// `api_id` for a new insert.
pub async fn delete_database_by_api_id_returns_it_and_frees_api_id(storage: Arc<dyn Storage>) {
    check_delete(storage.as_ref(), true).await;
}

/// Deleting a database that is not stored is `NotFound`; `Id` and `ApiId` keys do not cross.
pub async fn delete_missing_database_is_not_found(storage: Arc<dyn Storage>) {
    assert_err!(
        storage.delete_database(DatabaseKey::Id("db_missing")).await,
        StorageError::NotFound,
        "delete_database(Id) on an empty store"
    );
    assert_err!(
        storage
            .delete_database(DatabaseKey::ApiId("ext-missing"))
            .await,
        StorageError::NotFound,
        "delete_database(ApiId) on an empty store"
    );

    let database = plain_database("Orders", Some("ext-1"));
    let local = plain_database("Local", None);
    ok(
        storage.insert_database(database.clone()).await,
        "insert_database",
    );
    ok(
        storage.insert_database(local.clone()).await,
        "insert_database",
    );
    assert_err!(
        storage.delete_database(DatabaseKey::Id("ext-1")).await,
        StorageError::NotFound,
        "delete_database(Id(a stored api_id))"
    );
    assert_err!(
        storage
            .delete_database(DatabaseKey::ApiId(database.id.as_str()))
            .await,
        StorageError::NotFound,
        "delete_database(ApiId(a stored id))"
    );
    assert_err!(
        storage.delete_database(DatabaseKey::ApiId("")).await,
        StorageError::NotFound,
        "delete_database(ApiId(\"\")) when one database has no api_id"
    );
    assert_eq!(
        all_databases(storage.as_ref()).await,
        vec![database, local],
        "list_databases after deletes that found nothing"
    );
}

// ---------------------------------------------------------------------------------------------
// Dashboards
// ---------------------------------------------------------------------------------------------

/// A dashboard reads back exactly as inserted, by id and in the listing.
pub async fn dashboard_round_trips_whole_record(storage: Arc<dyn Storage>) {
    let rich = rich_dashboard();
    let plain = plain_dashboard("Plain");
    for dashboard in [&rich, &plain] {
        ok(
            storage.insert_dashboard(dashboard.clone()).await,
            "insert_dashboard",
        );
    }
    for expected in [&rich, &plain] {
        let stored = found(storage.dashboard(expected.id.as_str()).await, "dashboard");
        assert_eq!(&stored, expected, "dashboard(id) after insert_dashboard");
    }
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![rich, plain],
        "list_dashboards after insert_dashboard"
    );
}

/// Inserting a dashboard whose id is taken fails with `AlreadyExists` and changes nothing.
pub async fn dashboard_insert_with_taken_id_is_refused(storage: Arc<dyn Storage>) {
    let first = rich_dashboard();
    ok(
        storage.insert_dashboard(first.clone()).await,
        "insert_dashboard",
    );
    let mut impostor = plain_dashboard("Impostor");
    impostor.id = first.id.clone();
    assert_err!(
        storage.insert_dashboard(impostor).await,
        StorageError::AlreadyExists,
        "insert_dashboard with the id of a stored dashboard"
    );
    let stored = found(storage.dashboard(first.id.as_str()).await, "dashboard");
    assert_eq!(stored, first, "the first dashboard after a refused insert");
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![first],
        "list_dashboards after a refused insert"
    );
}

/// `list_dashboards` is ordered by id, respects the limit, and pages with an exclusive `after`
/// that may be any string; an empty store lists nothing.
pub async fn dashboard_listing_is_ordered_by_id_with_keyset_pages(storage: Arc<dyn Storage>) {
    for after in [None, Some("dash_anything")] {
        let page = Page { after, limit: 10 };
        assert!(
            ok(storage.list_dashboards(page).await, "list_dashboards").is_empty(),
            "list_dashboards(after: {after:?}) on an empty store must be empty"
        );
    }

    let ids = listing_ids(|| DashboardId::generate().as_str().to_owned());
    for id in insertion_order(&ids) {
        let mut dashboard = plain_dashboard(&format!("Listed {id}"));
        dashboard.id = DashboardId::from_stored(id);
        ok(
            storage.insert_dashboard(dashboard).await,
            "insert_dashboard",
        );
    }
    let storage = storage.as_ref();
    check_listing(
        "list_dashboards",
        &ids,
        async |after: Option<&str>, limit: usize| {
            let call = format!("list_dashboards(after: {after:?}, limit: {limit})");
            ok(storage.list_dashboards(Page { after, limit }).await, &call)
                .into_iter()
                .map(|dashboard| dashboard.id.as_str().to_owned())
                .collect()
        },
    )
    .await;
}

/// `update_dashboard` passes the stored record to the edit, stores exactly what the edit
/// returned, and returns it.
pub async fn dashboard_update_applies_and_returns_stored(storage: Arc<dyn Storage>) {
    let original = rich_dashboard();
    let other = plain_dashboard("Bystander");
    ok(
        storage.insert_dashboard(original.clone()).await,
        "insert_dashboard",
    );
    ok(
        storage.insert_dashboard(other.clone()).await,
        "insert_dashboard",
    );

    let kept_panel = original.panels[1].id.as_str().to_owned();
    let body = object(json!({
        "name": "Ops (renamed)",
        "restricted_access": false,
        "panels": [
            {
                "title": "New first",
                "details": {"__type__": "query", "query": "select now()", "credential_id": "crd_1"},
                "actions": [{"label": "Go", "input_mappings": [
                    {"workflow_input_key": "who", "prompt_user": true, "prompt": "Who?"}
                ]}],
            },
            {
                "id": kept_panel,
                "title": "Kept",
                "details": {"__type__": "query", "query": "select 2", "credential_id": "crd_2"},
            },
        ],
    }));
    let now = Timestamp::now();
    let seen: Arc<Mutex<Vec<Dashboard>>> = Arc::default();
    let produced: Arc<Mutex<Option<Dashboard>>> = Arc::default();
    let edit = {
        let seen = Arc::clone(&seen);
        let produced = Arc::clone(&produced);
        Box::new(move |stored: &Dashboard| {
            seen.lock().unwrap().push(stored.clone());
            let next = dashboard_from_body(Some(stored), &body, now)?;
            *produced.lock().unwrap() = Some(next.clone());
            Ok(next)
        })
    };
    let returned = ok(
        storage.update_dashboard(original.id.as_str(), edit).await,
        "update_dashboard",
    );

    let seen = seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "update_dashboard never called the edit");
    for stored in &seen {
        assert_eq!(
            stored, &original,
            "the record update_dashboard passed to the edit"
        );
    }
    let produced = produced.lock().unwrap().clone().expect("the edit ran");
    assert_eq!(
        returned, produced,
        "update_dashboard must return what the edit produced"
    );
    assert_eq!(returned.name, "Ops (renamed)");
    assert!(!returned.restricted_access);
    let titles: Vec<&str> = returned.panels.iter().map(|p| p.title.as_str()).collect();
    assert_eq!(titles, ["New first", "Kept"]);
    assert_eq!(returned.panels[1].id.as_str(), kept_panel);

    let stored = found(storage.dashboard(original.id.as_str()).await, "dashboard");
    assert_eq!(stored, returned, "dashboard(id) after update_dashboard");
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![returned, other],
        "list_dashboards after update_dashboard: the updated one and the other, unchanged"
    );
}

/// `update_dashboard` of an id that is not stored fails with `NotFound` and creates nothing.
pub async fn dashboard_update_of_missing_is_not_found(storage: Arc<dyn Storage>) {
    let edit = || Box::new(|stored: &Dashboard| Ok(stored.clone()));
    assert_err!(
        storage.update_dashboard("dash_missing", edit()).await,
        StorageError::NotFound,
        "update_dashboard on an empty store"
    );
    let dashboard = plain_dashboard("Ops");
    ok(
        storage.insert_dashboard(dashboard.clone()).await,
        "insert_dashboard",
    );
    assert_err!(
        storage.update_dashboard("dash_missing", edit()).await,
        StorageError::NotFound,
        "update_dashboard of an id that is not stored"
    );
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![dashboard],
        "list_dashboards after failed updates"
    );
}

/// An edit that returns `Err` makes `update_dashboard` fail with `Invalid`; one that changes
/// the id fails with `IdentityChanged`. Either way nothing changes.
pub async fn dashboard_update_rejected_or_changing_id_changes_nothing(storage: Arc<dyn Storage>) {
    let original = rich_dashboard();
    ok(
        storage.insert_dashboard(original.clone()).await,
        "insert_dashboard",
    );

    let edit = Box::new(|stored: &Dashboard| {
        let mut next = stored.clone();
        next.panels.clear();
        Err(edit_errors())
    });
    match storage.update_dashboard(original.id.as_str(), edit).await {
        Err(StorageError::Invalid(errors)) => assert_eq!(
            errors,
            edit_errors(),
            "StorageError::Invalid must carry the edit's own errors"
        ),
        other => panic!(
            "update_dashboard with an edit that returns Err: expected Err(Invalid), got {other:?}"
        ),
    }
    let stored = found(storage.dashboard(original.id.as_str()).await, "dashboard");
    assert_eq!(stored, original, "dashboard after a rejected edit");

    let new_id = DashboardId::generate();
    let edit = {
        let new_id = new_id.clone();
        Box::new(move |stored: &Dashboard| {
            let mut next = stored.clone();
            next.id = new_id.clone();
            next.name = "moved".to_owned();
            Ok(next)
        })
    };
    assert_err!(
        storage.update_dashboard(original.id.as_str(), edit).await,
        StorageError::IdentityChanged,
        "update_dashboard with an edit that changes the id"
    );
    absent(
        storage.dashboard(new_id.as_str()).await,
        "dashboard(the new id) after a refused edit",
    );
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![original],
        "list_dashboards after refused edits"
    );
}

/// `delete_dashboard` returns the record as it was and removes it; deleting it again, or an id
/// that was never stored, is `NotFound`.
pub async fn dashboard_delete_returns_it_and_removes_it(storage: Arc<dyn Storage>) {
    assert_err!(
        storage.delete_dashboard("dash_missing").await,
        StorageError::NotFound,
        "delete_dashboard on an empty store"
    );
    let target = rich_dashboard();
    let other = plain_dashboard("Bystander");
    ok(
        storage.insert_dashboard(target.clone()).await,
        "insert_dashboard",
    );
    ok(
        storage.insert_dashboard(other.clone()).await,
        "insert_dashboard",
    );

    let removed = ok(
        storage.delete_dashboard(target.id.as_str()).await,
        "delete_dashboard",
    );
    assert_eq!(
        removed, target,
        "delete_dashboard must return the record as it was"
    );
    absent(
        storage.dashboard(target.id.as_str()).await,
        "dashboard(id) after delete_dashboard",
    );
    assert_eq!(
        all_dashboards(storage.as_ref()).await,
        vec![other],
        "list_dashboards after delete_dashboard"
    );
    assert_err!(
        storage.delete_dashboard(target.id.as_str()).await,
        StorageError::NotFound,
        "a second delete_dashboard"
    );
    assert_err!(
        storage.delete_dashboard("dash_missing").await,
        StorageError::NotFound,
        "delete_dashboard of an id that is not stored"
    );
}

// ---------------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------------

/// How many updates race on one record.
const UPDATERS: usize = 32;
/// How many upserts or inserts race for one `api_id`.
const RACERS: usize = 16;
/// How many rounds a two-party race runs.
const ROUNDS: usize = 50;

/// Asserts that `names` holds exactly `prefix0 .. prefix{count-1}`, each once.
#[track_caller]
fn assert_each_once<'a>(
    names: impl IntoIterator<Item = &'a str>,
    prefix: &str,
    count: usize,
    what: &str,
) {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for name in names {
        *counts.entry(name.to_owned()).or_default() += 1;
    }
    let missing: Vec<String> = (0..count)
        .map(|index| format!("{prefix}{index}"))
        .filter(|name| !counts.contains_key(name))
        .collect();
    let repeated: Vec<&String> = counts
        .iter()
        .filter(|(_, seen)| **seen > 1)
        .map(|(name, _)| name)
        .collect();
    assert!(
        missing.is_empty() && repeated.is_empty() && counts.len() == count,
        "{what}: lost updates {missing:?}, applied twice {repeated:?}, all {counts:?}"
    );
}

/// 32 concurrent `update_database` calls on one record, each appending its own connection
/// parameter: afterwards every one of them is there, once.
pub async fn concurrent_database_updates_lose_nothing(storage: Arc<dyn Storage>) {
    let original = plain_database("Contended", Some("ext-contended"));
    let id = original.id.as_str().to_owned();
    ok(storage.insert_database(original).await, "insert_database");

    let tasks = spawn_together(UPDATERS, |index| {
        let storage = Arc::clone(&storage);
        let id = id.clone();
        async move {
            let edit = Box::new(move |stored: &Database| {
                // Widens the window between read and write of a backend that has one.
                std::thread::yield_now();
                let mut next = stored.clone();
                next.connection_parameters
                    .push(parameter(&format!("p{index}"), &index.to_string()));
                Ok(next)
            });
            storage.update_database(&id, edit).await
        }
    });
    for (index, result) in join_all(tasks).await.into_iter().enumerate() {
        let returned = ok(result, &format!("concurrent update_database #{index}"));
        assert!(
            returned
                .connection_parameters
                .iter()
                .any(|p| p.name == format!("p{index}")),
            "update_database #{index} returned a record without its own change p{index}"
        );
    }

    let stored = found(storage.database(&id).await, "database");
    assert_each_once(
        stored.connection_parameters.iter().map(|p| p.name.as_str()),
        "p",
        UPDATERS,
        "connection parameters after 32 concurrent update_database calls",
    );
    let by_api_id = found(
        storage.database_by_api_id("ext-contended").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        &stored,
        "database_by_api_id after concurrent updates",
    );
}

/// 16 concurrent upserts with one `api_id`: exactly one database has it, every call returned
/// that database's id, and no call's change was lost.
pub async fn concurrent_upserts_create_one_database(storage: Arc<dyn Storage>) {
    let bystander = plain_database("Bystander", Some("ext-bystander"));
    ok(
        storage.insert_database(bystander.clone()).await,
        "insert_database",
    );

    let tasks = spawn_together(RACERS, |index| {
        let storage = Arc::clone(&storage);
        let fresh = plain_database(&format!("Created by {index}"), Some("ext-raced"));
        async move {
            let edit = Box::new(move |stored: Option<&Database>| {
                std::thread::yield_now();
                let mut next = stored.cloned().unwrap_or_else(|| fresh.clone());
                next.connection_parameters
                    .push(parameter(&format!("u{index}"), ""));
                Ok(next)
            });
            storage.upsert_database_by_api_id("ext-raced", edit).await
        }
    });
    let ids: Vec<String> = join_all(tasks)
        .await
        .into_iter()
        .enumerate()
        .map(|(index, result)| {
            ok(
                result,
                &format!("concurrent upsert_database_by_api_id #{index}"),
            )
            .id
            .as_str()
            .to_owned()
        })
        .collect();
    assert!(
        ids.iter().all(|id| *id == ids[0]),
        "every racing upsert must return the one database with that api_id; got ids {ids:?}"
    );

    let listed = all_databases(storage.as_ref()).await;
    let raced: Vec<&Database> = listed
        .iter()
        .filter(|d| d.api_id.as_deref() == Some("ext-raced"))
        .collect();
    assert_eq!(
        raced.len(),
        1,
        "list_databases after {RACERS} racing upserts: databases with the api_id: {:?}",
        raced.iter().map(|d| d.id.as_str()).collect::<Vec<_>>()
    );
    assert_eq!(raced[0].id.as_str(), ids[0]);
    assert_eq!(
        listed.len(),
        2,
        "list_databases: the upserted one and the bystander"
    );
    assert_each_once(
        raced[0]
            .connection_parameters
            .iter()
            .map(|p| p.name.as_str()),
        "u",
        RACERS,
        "changes of racing upserts",
    );
    let by_api_id = found(
        storage.database_by_api_id("ext-raced").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        raced[0],
        "database_by_api_id after racing upserts",
    );
    let still = found(storage.database(bystander.id.as_str()).await, "database");
    assert_same_database(&still, &bystander, "another database after racing upserts");
}

/// 16 concurrent inserts of different databases with one `api_id`: exactly one succeeds, the
/// others fail with `AlreadyExists`.
pub async fn concurrent_inserts_with_one_api_id_admit_one(storage: Arc<dyn Storage>) {
    let candidates: Vec<Database> = (0..RACERS)
        .map(|index| plain_database(&format!("Candidate {index}"), Some("ext-contested")))
        .collect();
    let tasks = spawn_together(RACERS, |index| {
        let storage = Arc::clone(&storage);
        let candidate = candidates[index].clone();
        async move { storage.insert_database(candidate).await }
    });
    let mut winners = Vec::new();
    for (index, result) in join_all(tasks).await.into_iter().enumerate() {
        match result {
            Ok(()) => winners.push(index),
            Err(StorageError::AlreadyExists) => {}
            Err(other) => panic!(
                "concurrent insert_database #{index} with a contested api_id: expected Ok or \
                 Err(AlreadyExists), got Err({other:?})"
            ),
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "exactly one of {RACERS} racing inserts with one api_id must succeed; winners: {winners:?}"
    );
    let winner = &candidates[winners[0]];
    let listed = all_databases(storage.as_ref()).await;
    assert_eq!(listed.len(), 1, "list_databases after racing inserts");
    assert_same_database(&listed[0], winner, "the stored database is the winner's");
    let by_api_id = found(
        storage.database_by_api_id("ext-contested").await,
        "database_by_api_id",
    );
    assert_same_database(
        &by_api_id,
        winner,
        "database_by_api_id after racing inserts",
    );
}

/// What the racing update of [`delete_racing_update_is_all_or_nothing`] does: several fields,
/// secrets included, so that a torn write shows.
fn race_update(stored: &Database) -> Database {
    let mut next = stored.clone();
    next.name = "Updated".to_owned();
    next.hostname = "updated.internal".to_owned();
    next.connection_parameters.push(parameter("raced", "yes"));
    next.credentials[0].password = Some(Secret::from("upd4ted-pässword"));
    next.tls.client_key = Some(Secret::new(vec![0x42, 0x00, 0x42]));
    next
}

/// A delete racing an update, 50 rounds: the update either applied wholly before the delete
/// (and the delete returned the updated record) or found nothing (and the delete returned the
/// original); the record is gone either way.
pub async fn delete_racing_update_is_all_or_nothing(storage: Arc<dyn Storage>) {
    for round in 0..ROUNDS {
        let api_id = format!("ext-race-{round}");
        let original = rich_database(Some(&api_id));
        let updated = race_update(&original);
        let id = original.id.as_str().to_owned();
        ok(
            storage.insert_database(original.clone()).await,
            "insert_database",
        );
        let by_api_id = round % 2 == 1;

        let barrier = Arc::new(Barrier::new(2));
        let update = {
            let (storage, barrier, id) = (Arc::clone(&storage), Arc::clone(&barrier), id.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let edit = Box::new(|stored: &Database| {
                    std::thread::yield_now();
                    Ok(race_update(stored))
                });
                storage.update_database(&id, edit).await
            })
        };
        let delete = {
            let (storage, barrier) = (Arc::clone(&storage), Arc::clone(&barrier));
            let (id, api_id) = (id.clone(), api_id.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let key = if by_api_id {
                    DatabaseKey::ApiId(&api_id)
                } else {
                    DatabaseKey::Id(&id)
                };
                storage.delete_database(key).await
            })
        };
        let update = join_all(vec![update]).await.remove(0);
        let delete = join_all(vec![delete]).await.remove(0);
        let context = format!(
            "round {round}, delete by {}",
            if by_api_id { "api_id" } else { "id" }
        );

        let removed = ok(
            delete,
            &format!("{context}: delete_database racing an update"),
        );
        match update {
            Ok(returned) => {
                assert_same_database(
                    &returned,
                    &updated,
                    &format!("{context}: update_database that won the race returns the update"),
                );
                assert_same_database(
                    &removed,
                    &updated,
                    &format!(
                        "{context}: the update came first, so the delete must return the \
                         updated record"
                    ),
                );
            }
            Err(StorageError::NotFound) => assert_same_database(
                &removed,
                &original,
                &format!("{context}: the delete came first, so it must return the original record"),
            ),
            Err(other) => panic!(
                "{context}: update_database racing a delete: expected Ok or Err(NotFound), got \
                 Err({other:?})"
            ),
        }
        absent(
            storage.database(&id).await,
            &format!("{context}: database(id) after the race"),
        );
        absent(
            storage.database_by_api_id(&api_id).await,
            &format!("{context}: database_by_api_id after the race"),
        );
    }
    assert!(
        all_databases(storage.as_ref()).await.is_empty(),
        "list_databases after every round's delete must be empty"
    );
}

/// An upsert racing a delete of the same `api_id`, 50 rounds: either the upsert updated the
/// stored record and the delete then removed that updated record (nothing left), or the delete
/// removed the original and the upsert created a new record (that record left). Never a mix.
pub async fn upsert_racing_delete_is_all_or_nothing(storage: Arc<dyn Storage>) {
    for round in 0..ROUNDS {
        let api_id = format!("ext-upsert-race-{round}");
        let original = plain_database("Original", Some(&api_id));
        let fresh = plain_database("Recreated", Some(&api_id));
        let mark = |stored: &Database| {
            let mut next = stored.clone();
            next.connection_parameters
                .push(parameter("upserted", "yes"));
            next
        };
        let (updated, recreated) = (mark(&original), mark(&fresh));
        ok(
            storage.insert_database(original.clone()).await,
            "insert_database",
        );
        let by_api_id = round % 2 == 0;

        let barrier = Arc::new(Barrier::new(2));
        let upsert = {
            let (storage, barrier) = (Arc::clone(&storage), Arc::clone(&barrier));
            let (api_id, fresh) = (api_id.clone(), fresh.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let edit = Box::new(move |stored: Option<&Database>| {
                    std::thread::yield_now();
                    Ok(mark(stored.unwrap_or(&fresh)))
                });
                storage.upsert_database_by_api_id(&api_id, edit).await
            })
        };
        let delete = {
            let (storage, barrier) = (Arc::clone(&storage), Arc::clone(&barrier));
            let (id, api_id) = (original.id.as_str().to_owned(), api_id.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let key = if by_api_id {
                    DatabaseKey::ApiId(&api_id)
                } else {
                    DatabaseKey::Id(&id)
                };
                storage.delete_database(key).await
            })
        };
        let upsert = join_all(vec![upsert]).await.remove(0);
        let delete = join_all(vec![delete]).await.remove(0);
        let context = format!(
            "round {round}, delete by {}",
            if by_api_id { "api_id" } else { "id" }
        );

        let returned = ok(upsert, &format!("{context}: upsert racing a delete"));
        let removed = ok(
            delete,
            &format!("{context}: delete_database racing an upsert"),
        );
        if returned.id == original.id {
            assert_same_database(
                &returned,
                &updated,
                &format!("{context}: the upsert came first and updated the original"),
            );
            assert_same_database(
                &removed,
                &updated,
                &format!("{context}: the upsert came first, so the delete returns its result"),
            );
            absent(
                storage.database_by_api_id(&api_id).await,
                &format!("{context}: database_by_api_id after upsert-then-delete"),
            );
        } else {
            assert_same_database(
                &returned,
                &recreated,
                &format!("{context}: the delete came first, so the upsert created a new record"),
            );
            assert_same_database(
                &removed,
                &original,
                &format!("{context}: the delete came first, so it returns the original"),
            );
            let stored = found(
                storage.database_by_api_id(&api_id).await,
                &format!("{context}: database_by_api_id after delete-then-upsert"),
            );
            assert_same_database(
                &stored,
                &recreated,
                &format!("{context}: database_by_api_id after delete-then-upsert"),
            );
        }
        absent(
            storage.database(original.id.as_str()).await,
            &format!("{context}: database(the original id) after the race"),
        );
        let listed = all_databases(storage.as_ref()).await;
        let with_api_id = listed
            .iter()
            .filter(|d| d.api_id.as_deref() == Some(api_id.as_str()))
            .count();
        assert!(
            with_api_id <= 1,
            "{context}: {with_api_id} databases with one api_id after the race"
        );
    }
}

/// 32 concurrent `update_dashboard` calls on one dashboard, each appending its own panel:
/// afterwards every one of them is there, once.
pub async fn concurrent_dashboard_updates_lose_nothing(storage: Arc<dyn Storage>) {
    let original = plain_dashboard("Contended");
    let id = original.id.as_str().to_owned();
    ok(storage.insert_dashboard(original).await, "insert_dashboard");

    let tasks = spawn_together(UPDATERS, |index| {
        let storage = Arc::clone(&storage);
        let id = id.clone();
        let panel = query_panel(PanelId::generate(), &format!("t{index}"));
        async move {
            let edit = Box::new(move |stored: &Dashboard| {
                std::thread::yield_now();
                let mut next = stored.clone();
                next.panels.push(panel.clone());
                Ok(next)
            });
            storage.update_dashboard(&id, edit).await
        }
    });
    for (index, result) in join_all(tasks).await.into_iter().enumerate() {
        let returned = ok(result, &format!("concurrent update_dashboard #{index}"));
        assert!(
            returned
                .panels
                .iter()
                .any(|p| p.title == format!("t{index}")),
            "update_dashboard #{index} returned a dashboard without its own panel t{index}"
        );
    }
    let stored = found(storage.dashboard(&id).await, "dashboard");
    assert_each_once(
        stored.panels.iter().map(|p| p.title.as_str()),
        "t",
        UPDATERS,
        "panels after 32 concurrent update_dashboard calls",
    );
}

// ---------------------------------------------------------------------------------------------
// Access control: permissions and data protection
// ---------------------------------------------------------------------------------------------

fn permission(kind: SubjectKind, subject: &str, access: AccessLevel) -> Permission {
    Permission {
        subject_kind: kind,
        subject: subject.to_owned(),
        access,
    }
}

/// Access control with every part set: permissions of both kinds and several levels (not in
/// sorted order), policies with a description and without, hide and mask rules.
fn rich_access_control(inherits_from: Option<&str>) -> AccessControl {
    AccessControl {
        permissions: vec![
            permission(SubjectKind::User, "zoë@example.com", AccessLevel::Review),
            permission(SubjectKind::Group, "Payments", AccessLevel::Admin),
            permission(SubjectKind::User, "ana", AccessLevel::Query),
        ],
        data_protection: DataProtection {
            inherits_from: inherits_from.map(str::to_owned),
            policies: vec![
                Policy {
                    name: "pii".to_owned(),
                    description: Some("Personal data — ünïcode".to_owned()),
                    columns: vec![
                        ColumnRule {
                            column: "users.email".to_owned(),
                            action: ColumnAction::Mask,
                        },
                        ColumnRule {
                            column: "public.users.ssn".to_owned(),
                            action: ColumnAction::Hide,
                        },
                    ],
                },
                Policy {
                    name: "cards".to_owned(),
                    description: None,
                    columns: vec![ColumnRule {
                        column: "payments.card_number".to_owned(),
                        action: ColumnAction::Hide,
                    }],
                },
            ],
        },
    }
}

/// The access control of a stored database.
async fn access_of(storage: &dyn Storage, id: &str, context: &str) -> AccessControl {
    found(
        storage.access_control(id).await,
        &format!("access_control({id}) {context}"),
    )
}

/// Stores `access` as the whole access control of database `id` (it must be accepted).
async fn put_access(storage: &dyn Storage, id: &str, access: AccessControl) -> AccessControl {
    let edit = Box::new(move |_: &AccessControl| Ok(access.clone()));
    ok(
        storage.update_access_control(id, edit).await,
        &format!("update_access_control({id}) storing a whole access control"),
    )
}

/// Sets (or clears) `inherits_from` of database `id`, keeping everything else.
async fn set_inheritance(
    storage: &dyn Storage,
    id: &str,
    target: Option<&str>,
) -> Result<AccessControl, StorageError> {
    let target = target.map(str::to_owned);
    let edit = Box::new(move |stored: &AccessControl| {
        let mut next = stored.clone();
        next.data_protection.inherits_from = target.clone();
        Ok(next)
    });
    storage.update_access_control(id, edit).await
}

/// Asserts that `result` is the refusal of an `inherits_from` with this message.
#[track_caller]
fn assert_inheritance_refused(
    result: Result<AccessControl, StorageError>,
    expected: &str,
    context: &str,
) {
    match result {
        Err(StorageError::Invalid(errors)) => assert_eq!(
            errors,
            ValidationErrors::single("inherits_from", expected),
            "{context}: StorageError::Invalid must carry `inherits_from: {expected}`"
        ),
        other => {
            panic!("{context}: expected Err(Invalid(inherits_from: {expected:?})), got {other:?}")
        }
    }
}

fn reference(database: &Database) -> DatabaseRef {
    DatabaseRef {
        id: database.id.as_str().to_owned(),
        name: database.name.clone(),
    }
}

/// Inserts databases named after `names`, in that order (so their ids sort in that order).
async fn insert_named(storage: &dyn Storage, names: &[&str]) -> Vec<Database> {
    let mut databases = Vec::new();
    for name in names {
        let database = plain_database(name, None);
        ok(
            storage.insert_database(database.clone()).await,
            "insert_database",
        );
        databases.push(database);
    }
    databases
}

/// `access_control` is `None` for a database that is not stored (on an empty store, for an id
/// never stored, for an `api_id`), and the default, empty access control for a new database.
pub async fn access_control_is_default_for_new_database_and_none_for_missing(
    storage: Arc<dyn Storage>,
) {
    absent(
        storage.access_control("db_missing").await,
        "access_control on an empty store",
    );
    let database = plain_database("Orders", Some("ext-1"));
    ok(
        storage.insert_database(database.clone()).await,
        "insert_database",
    );
    let access = access_of(storage.as_ref(), database.id.as_str(), "of a new database").await;
    assert_eq!(
        access,
        AccessControl::default(),
        "access_control of a new database: no permissions, no policies, no inheritance"
    );
    absent(
        storage.access_control("db_missing").await,
        "access_control(an id that is not stored)",
    );
    absent(
        storage.access_control("ext-1").await,
        "access_control(a stored api_id): access_control takes an id",
    );
}

/// `update_access_control` passes the stored access control to the edit (the default one
/// first), stores exactly what the edit returned, and returns it; each database has its own.
pub async fn access_control_update_applies_and_returns_stored(storage: Arc<dyn Storage>) {
    let [target, parent, other] = <[Database; 3]>::try_from(
        insert_named(storage.as_ref(), &["Target", "Parent", "Bystander"]).await,
    )
    .expect("three databases");
    let id = target.id.as_str();
    let produced = rich_access_control(Some(parent.id.as_str()));

    let seen: Arc<Mutex<Vec<AccessControl>>> = Arc::default();
    let edit = {
        let (seen, produced) = (Arc::clone(&seen), produced.clone());
        Box::new(move |stored: &AccessControl| {
            seen.lock().unwrap().push(stored.clone());
            Ok(produced.clone())
        })
    };
    let returned = ok(
        storage.update_access_control(id, edit).await,
        "update_access_control",
    );
    let seen = seen.lock().unwrap().clone();
    assert!(
        !seen.is_empty(),
        "update_access_control never called the edit"
    );
    for stored in &seen {
        assert_eq!(
            stored,
            &AccessControl::default(),
            "the first update_access_control must pass the default access control to the edit"
        );
    }
    assert_eq!(
        returned, produced,
        "update_access_control must return what the edit produced"
    );
    assert_eq!(
        access_of(storage.as_ref(), id, "after update_access_control").await,
        produced,
        "access_control after update_access_control: exactly what the edit returned, in order"
    );

    // A second edit sees the first one's result, and may empty every part.
    let seen_second: Arc<Mutex<Option<AccessControl>>> = Arc::default();
    let edit = {
        let seen_second = Arc::clone(&seen_second);
        Box::new(move |stored: &AccessControl| {
            *seen_second.lock().unwrap() = Some(stored.clone());
            let mut next = stored.clone();
            next.permissions.truncate(1);
            next.data_protection.policies.clear();
            next.data_protection.inherits_from = None;
            Ok(next)
        })
    };
    let second = ok(
        storage.update_access_control(id, edit).await,
        "a second update_access_control",
    );
    assert_eq!(
        seen_second.lock().unwrap().clone(),
        Some(produced.clone()),
        "a second update_access_control must pass the stored access control to the edit"
    );
    let expected = AccessControl {
        permissions: produced.permissions[..1].to_vec(),
        data_protection: DataProtection::default(),
    };
    assert_eq!(
        second, expected,
        "the second update_access_control's result"
    );
    assert_eq!(
        access_of(storage.as_ref(), id, "after a second update_access_control").await,
        expected
    );

    for bystander in [&parent, &other] {
        assert_eq!(
            access_of(
                storage.as_ref(),
                bystander.id.as_str(),
                "of another database"
            )
            .await,
            AccessControl::default(),
            "update_access_control of one database must not touch another's"
        );
    }
    // The database record itself is untouched.
    let stored = found(storage.database(id).await, "database");
    assert_same_database(&stored, &target, "database after update_access_control");
}

/// `update_access_control` of a database that is not stored fails with `NotFound`, without
/// calling the edit into a stored record: a database inserted later with that id starts with
/// the default access control.
pub async fn access_control_update_of_missing_database_is_not_found(storage: Arc<dyn Storage>) {
    let edit = || Box::new(|_: &AccessControl| Ok(rich_access_control(None)));
    assert_err!(
        storage.update_access_control("db_missing", edit()).await,
        StorageError::NotFound,
        "update_access_control on an empty store"
    );
    let stored = plain_database("Orders", Some("ext-1"));
    ok(
        storage.insert_database(stored.clone()).await,
        "insert_database",
    );
    let late_id = DatabaseId::generate();
    assert_err!(
        storage
            .update_access_control(late_id.as_str(), edit())
            .await,
        StorageError::NotFound,
        "update_access_control of an id that is not stored"
    );
    assert_err!(
        storage.update_access_control("ext-1", edit()).await,
        StorageError::NotFound,
        "update_access_control(a stored api_id): update_access_control takes an id"
    );
    absent(
        storage.access_control(late_id.as_str()).await,
        "access_control of the id a failed update_access_control named",
    );

    let mut late = plain_database("Late", None);
    late.id = late_id.clone();
    ok(storage.insert_database(late).await, "insert_database");
    assert_eq!(
        access_of(
            storage.as_ref(),
            late_id.as_str(),
            "of a database inserted later"
        )
        .await,
        AccessControl::default(),
        "an update_access_control that failed with NotFound must not have stored anything"
    );
    assert_eq!(
        access_of(storage.as_ref(), stored.id.as_str(), "of a bystander").await,
        AccessControl::default()
    );
}

/// An edit that returns `Err` makes `update_access_control` fail with `Invalid` carrying those
/// errors, and nothing changes.
pub async fn access_control_update_rejected_by_edit_changes_nothing(storage: Arc<dyn Storage>) {
    let [database, parent] =
        <[Database; 2]>::try_from(insert_named(storage.as_ref(), &["Orders", "Parent"]).await)
            .expect("two databases");
    let id = database.id.as_str();
    let original = put_access(storage.as_ref(), id, rich_access_control(None)).await;

    let parent_id = parent.id.as_str().to_owned();
    let edit = Box::new(move |stored: &AccessControl| {
        let mut next = stored.clone();
        next.permissions.clear();
        next.data_protection.inherits_from = Some(parent_id.clone());
        Err(edit_errors())
    });
    match storage.update_access_control(id, edit).await {
        Err(StorageError::Invalid(errors)) => assert_eq!(
            errors,
            edit_errors(),
            "StorageError::Invalid must carry the edit's own errors"
        ),
        other => panic!(
            "update_access_control with an edit that returns Err: expected Err(Invalid), got \
             {other:?}"
        ),
    }
    assert_eq!(
        access_of(storage.as_ref(), id, "after a rejected edit").await,
        original,
        "access_control after a rejected edit"
    );
    // The rejected edit named `parent`, but nothing inherits it: it can be deleted.
    ok(
        storage
            .delete_database(DatabaseKey::Id(parent.id.as_str()))
            .await,
        "delete_database of the database a rejected edit wanted to inherit from",
    );
}

// ---------------------------------------------------------------------------------------------
// Access control: inheritance
// ---------------------------------------------------------------------------------------------

/// A database cannot inherit its own policies: `Invalid` on `inherits_from` with
/// [`ITSELF`](inheritance_message::ITSELF), and nothing changes.
pub async fn inheritance_from_itself_is_refused(storage: Arc<dyn Storage>) {
    let [database] = <[Database; 1]>::try_from(insert_named(storage.as_ref(), &["Self"]).await)
        .expect("one database");
    let id = database.id.as_str();
    let original = put_access(storage.as_ref(), id, rich_access_control(None)).await;
    assert_inheritance_refused(
        set_inheritance(storage.as_ref(), id, Some(id)).await,
        inheritance_message::ITSELF,
        "update_access_control setting inherits_from to the database itself",
    );
    assert_eq!(
        access_of(storage.as_ref(), id, "after a refused inheritance").await,
        original,
        "access_control after a refused inheritance from itself"
    );
    ok(
        storage.delete_database(DatabaseKey::Id(id)).await,
        "delete_database after a refused inheritance from itself (nothing inherits it)",
    );
}

/// A database cannot inherit from a database that is not stored — never stored, deleted, or
/// named by its `api_id`: `Invalid` on `inherits_from` with
/// [`MISSING`](inheritance_message::MISSING), and nothing changes.
pub async fn inheritance_from_missing_database_is_refused(storage: Arc<dyn Storage>) {
    let heir = plain_database("Heir", None);
    let external = plain_database("External", Some("ext-parent"));
    let deleted = plain_database("Deleted", None);
    for database in [&heir, &external, &deleted] {
        ok(
            storage.insert_database(database.clone()).await,
            "insert_database",
        );
    }
    ok(
        storage
            .delete_database(DatabaseKey::Id(deleted.id.as_str()))
            .await,
        "delete_database",
    );
    let id = heir.id.as_str();
    let original = put_access(storage.as_ref(), id, rich_access_control(None)).await;

    for (target, what) in [
        ("db_missing", "an id that was never stored"),
        (deleted.id.as_str(), "a deleted database"),
        ("ext-parent", "a stored api_id (inherits_from takes an id)"),
    ] {
        assert_inheritance_refused(
            set_inheritance(storage.as_ref(), id, Some(target)).await,
            inheritance_message::MISSING,
            &format!("update_access_control setting inherits_from to {what}"),
        );
        assert_eq!(
            access_of(storage.as_ref(), id, "after a refused inheritance").await,
            original,
            "access_control after a refused inheritance from {what}"
        );
    }
    ok(
        storage
            .delete_database(DatabaseKey::ApiId("ext-parent"))
            .await,
        "delete_database of a database only named by its api_id in a refused inheritance",
    );
}

/// No inheritance cycle: with A → B stored, B → A is refused; with A → B → C stored, C → A is
/// refused (`Invalid` on `inherits_from` with [`CYCLE`](inheritance_message::CYCLE)); nothing
/// changes. Chains and several heirs of one database are fine.
pub async fn inheritance_cycles_are_refused(storage: Arc<dyn Storage>) {
    let databases = insert_named(storage.as_ref(), &["A", "B", "C", "D"]).await;
    let [a, b, c, d] = [0, 1, 2, 3].map(|index| databases[index].id.as_str().to_owned());

    ok(
        set_inheritance(storage.as_ref(), &a, Some(&b)).await,
        "update_access_control: A inherits from B",
    );
    let b_before = put_access(storage.as_ref(), &b, rich_access_control(None)).await;
    assert_inheritance_refused(
        set_inheritance(storage.as_ref(), &b, Some(&a)).await,
        inheritance_message::CYCLE,
        "update_access_control: B inherits from A while A inherits from B",
    );
    assert_eq!(
        access_of(storage.as_ref(), &b, "after a refused cycle").await,
        b_before,
        "B's access control after its refused inheritance from A"
    );

    ok(
        set_inheritance(storage.as_ref(), &b, Some(&c)).await,
        "update_access_control: B inherits from C (A → B → C)",
    );
    let c_before = put_access(storage.as_ref(), &c, rich_access_control(None)).await;
    for (heir, name) in [(&c, "C"), (&b, "B")] {
        assert_inheritance_refused(
            set_inheritance(storage.as_ref(), heir, Some(&a)).await,
            inheritance_message::CYCLE,
            &format!("update_access_control: {name} inherits from A while A → B → C"),
        );
    }
    assert_eq!(
        access_of(storage.as_ref(), &c, "after a refused cycle").await,
        c_before,
        "C's access control after its refused inheritance from A"
    );
    let chain = [(&a, Some(&b)), (&b, Some(&c)), (&c, None)];
    for (id, parent) in chain {
        assert_eq!(
            access_of(storage.as_ref(), id, "after refused cycles")
                .await
                .data_protection
                .inherits_from
                .as_ref(),
            parent,
            "inherits_from of {id} after refused cycles: A → B → C stays as it was"
        );
    }

    // Not a cycle: a second heir of A, and an heir of the end of the chain.
    ok(
        set_inheritance(storage.as_ref(), &d, Some(&a)).await,
        "update_access_control: D inherits from A (D → A → B → C)",
    );
    assert_inheritance_refused(
        set_inheritance(storage.as_ref(), &c, Some(&d)).await,
        inheritance_message::CYCLE,
        "update_access_control: C inherits from D while D → A → B → C",
    );
    // Setting the same target again is no cycle.
    ok(
        set_inheritance(storage.as_ref(), &a, Some(&b)).await,
        "update_access_control: A inherits from B again",
    );
}

/// `inherits_from` can be cleared and pointed elsewhere; after that, the old links no longer
/// count for cycles or for the delete guard.
pub async fn inheritance_can_be_cleared_and_repointed(storage: Arc<dyn Storage>) {
    let databases = insert_named(storage.as_ref(), &["A", "B", "C"]).await;
    let [a, b, c] = [0, 1, 2].map(|index| databases[index].id.as_str().to_owned());
    let original = put_access(storage.as_ref(), &a, rich_access_control(Some(b.as_str()))).await;

    let cleared = ok(
        set_inheritance(storage.as_ref(), &a, None).await,
        "update_access_control clearing inherits_from",
    );
    let mut expected = original.clone();
    expected.data_protection.inherits_from = None;
    assert_eq!(
        cleared, expected,
        "clearing inherits_from keeps everything else"
    );
    assert_eq!(
        access_of(storage.as_ref(), &a, "after clearing inherits_from").await,
        expected
    );
    ok(
        set_inheritance(storage.as_ref(), &b, Some(&a)).await,
        "update_access_control: B inherits from A once A no longer inherits from B",
    );

    // Re-point C from A to B; then A is inherited by B only.
    ok(
        set_inheritance(storage.as_ref(), &c, Some(&a)).await,
        "update_access_control: C inherits from A",
    );
    ok(
        set_inheritance(storage.as_ref(), &c, Some(&b)).await,
        "update_access_control: C inherits from B instead",
    );
    match storage.delete_database(DatabaseKey::Id(&a)).await {
        Err(StorageError::Inherited(heirs)) => assert_eq!(
            heirs,
            vec![reference(&databases[1])],
            "delete_database of A: only B still inherits from A (C was re-pointed to B)"
        ),
        other => {
            panic!("delete_database of an inherited database: expected Inherited, got {other:?}")
        }
    }
    ok(
        set_inheritance(storage.as_ref(), &b, None).await,
        "update_access_control: B clears its inheritance",
    );
    ok(
        storage.delete_database(DatabaseKey::Id(&a)).await,
        "delete_database of A once no database inherits from it",
    );
}

// ---------------------------------------------------------------------------------------------
// Access control: the delete guard, and the delete's cascade
// ---------------------------------------------------------------------------------------------

/// Asserts that deleting `parent` through `key` is refused with `Inherited(expected)` and that
/// the parent is still there.
async fn assert_delete_refused(
    storage: &dyn Storage,
    key: DatabaseKey<'_>,
    parent: &Database,
    expected: &[DatabaseRef],
    context: &str,
) {
    match storage.delete_database(key).await {
        Err(StorageError::Inherited(named)) => assert_eq!(
            named, expected,
            "{context}: StorageError::Inherited must name every heir (id and name), ordered by id"
        ),
        other => panic!("{context}: expected Err(Inherited), got {other:?}"),
    }
    let stored = found(
        storage.database(parent.id.as_str()).await,
        &format!("database(id) after {context}"),
    );
    assert_same_database(&stored, parent, &format!("the parent after {context}"));
    let by_api_id = found(
        storage.database_by_api_id("ext-parent").await,
        &format!("database_by_api_id after {context}"),
    );
    assert_same_database(&by_api_id, parent, &format!("the parent after {context}"));
}

/// Checks the delete guard through `Id` or `ApiId`: refused with every heir named (ordered by
/// id) and nothing deleted; allowed once the heirs are gone or no longer inherit, and then the
/// access control goes with the database.
async fn check_delete_guard(storage: &dyn Storage, by_api_id: bool) {
    let mut parent = plain_database("Parent", Some("ext-parent"));
    parent.restrict_access = true;
    ok(
        storage.insert_database(parent.clone()).await,
        "insert_database",
    );
    // Heirs made in id order but linked in another order; a bystander inheriting elsewhere.
    let heirs = insert_named(storage, &["Heir one", "Heir two ✓", "Heir three"]).await;
    let [other_parent, bystander] =
        <[Database; 2]>::try_from(insert_named(storage, &["Other parent", "Bystander"]).await)
            .expect("two databases");
    let parent_access = put_access(storage, parent.id.as_str(), rich_access_control(None)).await;
    for index in [2, 0, 1] {
        ok(
            set_inheritance(storage, heirs[index].id.as_str(), Some(parent.id.as_str())).await,
            "update_access_control: an heir inherits from the parent",
        );
    }
    ok(
        set_inheritance(
            storage,
            bystander.id.as_str(),
            Some(other_parent.id.as_str()),
        )
        .await,
        "update_access_control: the bystander inherits from another database",
    );
    let key = if by_api_id {
        DatabaseKey::ApiId("ext-parent")
    } else {
        DatabaseKey::Id(parent.id.as_str())
    };

    let all_heirs: Vec<DatabaseRef> = heirs.iter().map(reference).collect();
    assert_delete_refused(
        storage,
        key,
        &parent,
        &all_heirs,
        &format!("delete_database({key:?}) of a database three others inherit from"),
    )
    .await;
    assert_eq!(
        access_of(storage, parent.id.as_str(), "after a refused delete").await,
        parent_access,
        "the parent's access control after a refused delete"
    );
    for heir in &heirs {
        let access = access_of(storage, heir.id.as_str(), "after a refused delete").await;
        assert_eq!(
            access.data_protection.inherits_from.as_deref(),
            Some(parent.id.as_str()),
            "an heir's inheritance after a refused delete of its parent"
        );
    }
    assert_eq!(
        all_databases(storage).await.len(),
        6,
        "list_databases after a refused delete"
    );

    // One heir drops its inheritance, another is deleted (its access control with it).
    ok(
        set_inheritance(storage, heirs[1].id.as_str(), None).await,
        "update_access_control: an heir clears its inheritance",
    );
    ok(
        storage
            .delete_database(DatabaseKey::Id(heirs[0].id.as_str()))
            .await,
        "delete_database of an heir (nothing inherits from it)",
    );
    assert_delete_refused(
        storage,
        key,
        &parent,
        &all_heirs[2..],
        &format!("delete_database({key:?}) with one heir left"),
    )
    .await;
    ok(
        set_inheritance(storage, heirs[2].id.as_str(), Some(heirs[1].id.as_str())).await,
        "update_access_control: the last heir inherits from another database instead",
    );

    let removed = ok(
        storage.delete_database(key).await,
        &format!("delete_database({key:?}) once no database inherits from it"),
    );
    assert_same_database(
        &removed,
        &parent,
        &format!("delete_database({key:?}) must return the record as it was"),
    );
    absent(
        storage.database(parent.id.as_str()).await,
        "database(id) after the delete",
    );
    absent(
        storage.access_control(parent.id.as_str()).await,
        "access_control of a deleted database",
    );
    assert_inheritance_refused(
        set_inheritance(storage, heirs[1].id.as_str(), Some(parent.id.as_str())).await,
        inheritance_message::MISSING,
        "update_access_control inheriting from a deleted database",
    );

    // The access control went with the database: a database stored again under the same ids
    // (the deleted parent's, the deleted heir's) starts with the default.
    for (old, name) in [(&parent, "the parent"), (&heirs[0], "the deleted heir")] {
        let mut again = plain_database("Again", None);
        again.id = old.id.clone();
        ok(
            storage.insert_database(again).await,
            &format!("insert_database with the id of {name}"),
        );
        assert_eq!(
            access_of(storage, old.id.as_str(), "of a database stored again").await,
            AccessControl::default(),
            "a delete must remove the access control of {name} with it: a database stored \
             again under its id must not see the old one"
        );
    }
    // And the re-stored parent is not held by its old heirs.
    ok(
        storage
            .delete_database(DatabaseKey::Id(parent.id.as_str()))
            .await,
        "delete_database of a database stored again under a deleted parent's id",
    );
    let bystander_access = access_of(storage, bystander.id.as_str(), "of the bystander").await;
    assert_eq!(
        bystander_access.data_protection.inherits_from.as_deref(),
        Some(other_parent.id.as_str()),
        "another database's inheritance after the delete"
    );
}

/// `delete_database(Id)` of a database others inherit from is refused with `Inherited` naming
/// them, and changes nothing; once they no longer inherit, the delete succeeds and takes the
/// access control with it.
pub async fn delete_of_inherited_database_by_id_is_refused(storage: Arc<dyn Storage>) {
    check_delete_guard(storage.as_ref(), false).await;
}

/// The same as [`delete_of_inherited_database_by_id_is_refused`], through `ApiId`.
pub async fn delete_of_inherited_database_by_api_id_is_refused(storage: Arc<dyn Storage>) {
    check_delete_guard(storage.as_ref(), true).await;
}

// ---------------------------------------------------------------------------------------------
// Caller keys
// ---------------------------------------------------------------------------------------------

/// Asserts two caller keys are equal, naming the digest when it differs (it prints redacted).
#[track_caller]
fn assert_same_key(actual: &CallerKey, expected: &CallerKey, context: &str) {
    assert!(
        actual.digest == expected.digest,
        "{context}: the key {} has another digest than expected (digests print redacted)",
        actual.id
    );
    assert_eq!(actual, expected, "{context}");
}

#[track_caller]
fn assert_same_keys(actual: &[CallerKey], expected: &[CallerKey], context: &str) {
    let ids = |keys: &[CallerKey]| -> Vec<String> {
        keys.iter().map(|k| k.id.as_str().to_owned()).collect()
    };
    assert_eq!(
        ids(actual),
        ids(expected),
        "{context}: the keys' ids, in order"
    );
    for (actual, expected) in actual.iter().zip(expected) {
        assert_same_key(actual, expected, context);
    }
}

/// Three keys of different kinds and scopes, in id order; one already used.
fn caller_keys() -> Vec<CallerKey> {
    let (mut used, _) = mint_caller_key(CredentialKind::ApiKey, Scope::Full, "deploy bot");
    used.last_used_at = Some(Timestamp::from_micros(1_795_341_845_123_456));
    let (setup, _) = mint_caller_key(CredentialKind::ApiKey, Scope::Setup, "setup ✓");
    let (token, _) = mint_caller_key(CredentialKind::AccessToken, Scope::Full, "");
    vec![used, setup, token]
}

/// Caller keys read back exactly as inserted, by digest and in the listing (ordered by id);
/// an unknown digest is `None`.
pub async fn caller_keys_round_trip_by_digest_and_listing(storage: Arc<dyn Storage>) {
    assert!(
        ok(storage.list_caller_keys().await, "list_caller_keys").is_empty(),
        "list_caller_keys on an empty store must be empty"
    );
    absent(
        storage.caller_key_by_digest(&[0; 32]).await,
        "caller_key_by_digest on an empty store",
    );
    let keys = caller_keys();
    for index in [2, 0, 1] {
        ok(
            storage.insert_caller_key(keys[index].clone()).await,
            "insert_caller_key",
        );
    }
    for key in &keys {
        let by_digest = found(
            storage.caller_key_by_digest(&key.digest).await,
            "caller_key_by_digest",
        );
        assert_same_key(
            &by_digest,
            key,
            "caller_key_by_digest after insert_caller_key",
        );
    }
    let mut unknown = keys[0].digest;
    unknown[31] ^= 1;
    absent(
        storage.caller_key_by_digest(&unknown).await,
        "caller_key_by_digest(a digest one bit away from a stored one)",
    );
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &keys,
        "list_caller_keys: every key, ordered by id",
    );
}

/// Inserting a caller key whose id or digest is taken fails with `AlreadyExists` and changes
/// nothing.
pub async fn caller_key_insert_with_taken_id_or_digest_is_refused(storage: Arc<dyn Storage>) {
    let keys = caller_keys();
    ok(
        storage.insert_caller_key(keys[0].clone()).await,
        "insert_caller_key",
    );

    let mut same_id = keys[1].clone();
    same_id.id = keys[0].id.clone();
    assert_err!(
        storage.insert_caller_key(same_id.clone()).await,
        StorageError::AlreadyExists,
        "insert_caller_key with the id of a stored key"
    );
    let mut same_digest = keys[2].clone();
    same_digest.digest = keys[0].digest;
    assert_err!(
        storage.insert_caller_key(same_digest.clone()).await,
        StorageError::AlreadyExists,
        "insert_caller_key with the digest of a stored key"
    );

    absent(
        storage.caller_key_by_digest(&same_id.digest).await,
        "caller_key_by_digest(the digest of a key refused for its id)",
    );
    let by_digest = found(
        storage.caller_key_by_digest(&keys[0].digest).await,
        "caller_key_by_digest",
    );
    assert_same_key(&by_digest, &keys[0], "the stored key after refused inserts");
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &keys[..1],
        "list_caller_keys after refused inserts",
    );
    // Neither refused insert left its id behind.
    ok(
        storage.insert_caller_key(keys[2].clone()).await,
        "insert_caller_key of the key whose id a refused insert used",
    );
}

/// `touch_caller_key` keeps the later of the stored time and the given one, changes nothing
/// else, and is `NotFound` for a key that is not stored.
pub async fn caller_key_touch_keeps_the_later_time(storage: Arc<dyn Storage>) {
    let keys = caller_keys();
    for key in &keys {
        ok(
            storage.insert_caller_key(key.clone()).await,
            "insert_caller_key",
        );
    }
    let (t1, t2, t3) = (
        Timestamp::from_micros(1_800_000_000_000_001),
        Timestamp::from_micros(1_800_000_000_000_002),
        Timestamp::from_micros(1_800_000_060_000_000),
    );
    let fresh = &keys[1];
    assert_eq!(fresh.last_used_at, None);
    let mut expected = keys.clone();
    for (at, kept, what) in [
        (t2, t2, "a first use"),
        (t1, t2, "an earlier time (kept the later one)"),
        (t2, t2, "the same time"),
        (t3, t3, "a later time"),
    ] {
        ok(
            storage.touch_caller_key(fresh.id.as_str(), at).await,
            &format!("touch_caller_key with {what}"),
        );
        expected[1].last_used_at = Some(kept);
        let by_digest = found(
            storage.caller_key_by_digest(&fresh.digest).await,
            "caller_key_by_digest",
        );
        assert_same_key(
            &by_digest,
            &expected[1],
            &format!("caller_key_by_digest after touch_caller_key with {what}"),
        );
    }
    // The already used key goes back in time: its stored time stays.
    ok(
        storage
            .touch_caller_key(keys[0].id.as_str(), Timestamp::from_micros(5))
            .await,
        "touch_caller_key with a time before the stored one",
    );
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &expected,
        "list_caller_keys after touches: only the touched key's last_used_at moved",
    );
    assert_err!(
        storage.touch_caller_key("key_missing", t3).await,
        StorageError::NotFound,
        "touch_caller_key of a key that is not stored"
    );
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &expected,
        "list_caller_keys after a touch of a missing key (it creates nothing)",
    );
}

/// `delete_caller_key` returns the key as it was and revokes it: not found by its digest, not
/// listed, not touchable; a second delete is `NotFound`.
pub async fn caller_key_delete_returns_it_and_revokes_it(storage: Arc<dyn Storage>) {
    let mut keys = caller_keys();
    for key in &keys {
        ok(
            storage.insert_caller_key(key.clone()).await,
            "insert_caller_key",
        );
    }
    let at = Timestamp::from_micros(1_800_000_000_000_000);
    ok(
        storage.touch_caller_key(keys[1].id.as_str(), at).await,
        "touch_caller_key",
    );
    keys[1].last_used_at = Some(at);

    let removed = ok(
        storage.delete_caller_key(keys[1].id.as_str()).await,
        "delete_caller_key",
    );
    assert_same_key(
        &removed,
        &keys[1],
        "delete_caller_key must return the key as it was",
    );
    absent(
        storage.caller_key_by_digest(&keys[1].digest).await,
        "caller_key_by_digest of a deleted key",
    );
    let remaining = vec![keys[0].clone(), keys[2].clone()];
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &remaining,
        "list_caller_keys after delete_caller_key",
    );
    assert_err!(
        storage.touch_caller_key(keys[1].id.as_str(), at).await,
        StorageError::NotFound,
        "touch_caller_key of a deleted key"
    );
    assert_err!(
        storage.delete_caller_key(keys[1].id.as_str()).await,
        StorageError::NotFound,
        "a second delete_caller_key"
    );
    assert_err!(
        storage.delete_caller_key("key_missing").await,
        StorageError::NotFound,
        "delete_caller_key of a key that is not stored"
    );
    for key in &remaining {
        let by_digest = found(
            storage.caller_key_by_digest(&key.digest).await,
            "caller_key_by_digest of a key that was not deleted",
        );
        assert_same_key(&by_digest, key, "another key after delete_caller_key");
    }
    // The deleted key's id and digest are free again.
    ok(
        storage.insert_caller_key(keys[1].clone()).await,
        "insert_caller_key with the id and digest of a deleted key",
    );
    assert_same_keys(
        &ok(storage.list_caller_keys().await, "list_caller_keys"),
        &keys,
        "list_caller_keys after the key was stored again",
    );
}

// ---------------------------------------------------------------------------------------------
// Access control: concurrency
// ---------------------------------------------------------------------------------------------

/// 16 concurrent `update_access_control` calls on one database, each appending its own
/// permission: afterwards every one of them is there, once.
pub async fn concurrent_access_control_updates_lose_nothing(storage: Arc<dyn Storage>) {
    let database = plain_database("Contended", None);
    let id = database.id.as_str().to_owned();
    ok(storage.insert_database(database).await, "insert_database");

    let tasks = spawn_together(RACERS, |index| {
        let storage = Arc::clone(&storage);
        let id = id.clone();
        async move {
            let edit = Box::new(move |stored: &AccessControl| {
                std::thread::yield_now();
                let mut next = stored.clone();
                next.permissions.push(permission(
                    SubjectKind::User,
                    &format!("s{index}"),
                    AccessLevel::Query,
                ));
                Ok(next)
            });
            storage.update_access_control(&id, edit).await
        }
    });
    for (index, result) in join_all(tasks).await.into_iter().enumerate() {
        let returned = ok(
            result,
            &format!("concurrent update_access_control #{index}"),
        );
        assert!(
            returned
                .permissions
                .iter()
                .any(|p| p.subject == format!("s{index}")),
            "update_access_control #{index} returned access control without its own \
             permission s{index}"
        );
    }
    let stored = access_of(storage.as_ref(), &id, "after concurrent updates").await;
    assert_each_once(
        stored.permissions.iter().map(|p| p.subject.as_str()),
        "s",
        RACERS,
        "permissions after 16 concurrent update_access_control calls",
    );
}

/// How many rounds the inheritance races run.
const INHERITANCE_ROUNDS: usize = 30;

/// A delete of A racing "B inherits from A", 30 rounds: either the inheritance came first (it
/// succeeded, the delete was refused naming B, A is still there) or the delete came first (A
/// is gone, the inheritance was refused with [`MISSING`](inheritance_message::MISSING)). Never
/// an heir of a deleted database.
pub async fn delete_racing_inheritance_never_leaves_a_dangling_heir(storage: Arc<dyn Storage>) {
    for round in 0..INHERITANCE_ROUNDS {
        let api_id = format!("ext-inherit-race-{round}");
        let target = plain_database(&format!("Target {round}"), Some(&api_id));
        let heir = plain_database(&format!("Heir {round}"), None);
        for database in [&target, &heir] {
            ok(
                storage.insert_database(database.clone()).await,
                "insert_database",
            );
        }
        let (a, b) = (target.id.as_str().to_owned(), heir.id.as_str().to_owned());
        let by_api_id = round % 2 == 1;

        let barrier = Arc::new(Barrier::new(2));
        let inherit = {
            let (storage, barrier) = (Arc::clone(&storage), Arc::clone(&barrier));
            let (a, b) = (a.clone(), b.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let edit = Box::new(move |stored: &AccessControl| {
                    std::thread::yield_now();
                    let mut next = stored.clone();
                    next.data_protection.inherits_from = Some(a.clone());
                    Ok(next)
                });
                storage.update_access_control(&b, edit).await
            })
        };
        let delete = {
            let (storage, barrier) = (Arc::clone(&storage), Arc::clone(&barrier));
            let (a, api_id) = (a.clone(), api_id.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let key = if by_api_id {
                    DatabaseKey::ApiId(&api_id)
                } else {
                    DatabaseKey::Id(&a)
                };
                storage.delete_database(key).await
            })
        };
        let inherit = join_all(vec![inherit]).await.remove(0);
        let delete = join_all(vec![delete]).await.remove(0);
        let context = format!(
            "round {round}, delete by {}",
            if by_api_id { "api_id" } else { "id" }
        );

        let stored_a = ok(
            storage.database(&a).await,
            &format!("{context}: database(A)"),
        );
        let inherits = access_of(storage.as_ref(), &b, &format!("{context}: of B"))
            .await
            .data_protection
            .inherits_from;
        match (&inherit, &delete) {
            (Ok(returned), Err(StorageError::Inherited(heirs))) => {
                assert_eq!(
                    returned.data_protection.inherits_from.as_deref(),
                    Some(a.as_str()),
                    "{context}: the inheritance that won returns it"
                );
                assert_eq!(
                    heirs,
                    &vec![reference(&heir)],
                    "{context}: the refused delete names B"
                );
                assert!(
                    stored_a.is_some(),
                    "{context}: the delete was refused, but A is gone"
                );
                assert_eq!(
                    inherits.as_deref(),
                    Some(a.as_str()),
                    "{context}: the inheritance succeeded, but B does not inherit from A"
                );
                ok(
                    set_inheritance(storage.as_ref(), &b, None).await,
                    &format!("{context}: B clears its inheritance"),
                );
                ok(
                    storage.delete_database(DatabaseKey::Id(&a)).await,
                    &format!("{context}: delete_database(A) once B no longer inherits"),
                );
            }
            (Err(StorageError::Invalid(errors)), Ok(removed)) => {
                assert_eq!(
                    errors,
                    &ValidationErrors::single("inherits_from", inheritance_message::MISSING),
                    "{context}: the inheritance that lost the race is refused: A is missing"
                );
                assert_same_database(removed, &target, &format!("{context}: the deleted A"));
                assert!(
                    stored_a.is_none(),
                    "{context}: the delete succeeded, but A is still there"
                );
                assert_eq!(
                    inherits, None,
                    "{context}: B inherits from a deleted database"
                );
            }
            _ => panic!(
                "{context}: expected (Ok, Err(Inherited)) or (Err(Invalid), Ok), got \
                 inheritance {inherit:?} and delete {delete:?}"
            ),
        }
        ok(
            storage.delete_database(DatabaseKey::Id(&b)).await,
            &format!("{context}: delete_database(B)"),
        );
    }
    assert!(
        all_databases(storage.as_ref()).await.is_empty(),
        "list_databases after every round"
    );
}

/// "A inherits from B" racing "B inherits from A", 30 rounds: exactly one succeeds, the other
/// is refused with [`CYCLE`](inheritance_message::CYCLE); never a cycle.
pub async fn racing_inheritances_never_make_a_cycle(storage: Arc<dyn Storage>) {
    for round in 0..INHERITANCE_ROUNDS {
        let pair = insert_named(storage.as_ref(), &["A", "B"]).await;
        let ids: Vec<String> = pair.iter().map(|d| d.id.as_str().to_owned()).collect();
        let tasks = spawn_together(2, |index| {
            let storage = Arc::clone(&storage);
            let (id, target) = (ids[index].clone(), ids[1 - index].clone());
            async move { set_inheritance(storage.as_ref(), &id, Some(&target)).await }
        });
        let results = join_all(tasks).await;
        let context = format!("round {round}");
        let winners: Vec<usize> = (0..2).filter(|&i| results[i].is_ok()).collect();
        assert_eq!(
            winners.len(),
            1,
            "{context}: exactly one of two crossing inheritances must succeed; got {results:?}"
        );
        let loser = 1 - winners[0];
        let result = results.into_iter().nth(loser).expect("two results");
        assert_inheritance_refused(
            result,
            inheritance_message::CYCLE,
            &format!("{context}: the crossing inheritance that lost"),
        );
        let links: Vec<Option<String>> = {
            let mut links = Vec::new();
            for id in &ids {
                let access = access_of(storage.as_ref(), id, &context).await;
                links.push(access.data_protection.inherits_from);
            }
            links
        };
        assert_eq!(
            links[winners[0]].as_deref(),
            Some(ids[loser].as_str()),
            "{context}: the winner inherits"
        );
        assert_eq!(links[loser], None, "{context}: the loser does not inherit");
    }
}
