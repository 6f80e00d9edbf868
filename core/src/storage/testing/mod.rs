//! The storage conformance suite: every rule of the [`Storage`](super::Storage) contract (see the
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
//! Each case is also a plain `pub async fn` taking an `Arc<dyn Storage>`, re-exported here by its
//! name (e.g. `storage::testing::database_round_trips_whole_record`), so a backend can call one
//! directly while it is being debugged. Failure messages name the trait method and the
//! rule that broke. Secrets compare by content but print redacted, so a record that differs only
//! in a password, certificate or key is reported by field name and byte length.
//!
//! # Where things are
//!
//! - `mod.rs`: these docs, [`storage_conformance_suite!`](crate::storage_conformance_suite)
//!   and the list of cases.
//! - `check.rs`: assertions shared by the cases (`ok`, `found`, `absent`, `assert_err!`,
//!   `assert_same_database`, the refusal of an inheritance, the check of a paged listing).
//! - `fixtures.rs`: builders of records (rich and plain databases and dashboards, access
//!   control, caller keys) and short steps on a store (insert several, set an inheritance).
//! - `databases.rs`: databases: insert, read, listing, update, upsert by `api_id`, delete.
//! - `dashboards.rs`: dashboards: insert, read, listing, update, delete.
//! - `access.rs`: access control: permissions and data protection, inheritance, the delete
//!   guard.
//! - `keys.rs`: caller keys: insert, lookup by digest, listing, touch, delete.
//! - `sessions.rs`: browser sessions and sign-in links: lookup by digest, a create replacing a
//!   link once (racing too), touch, delete, pruning.
//! - `users.rs`: users and server settings: round trip, a taken name, the compare-and-swap
//!   replace (racing too), settings.
//! - `saved_queries.rs`: saved queries: round trip with each sharing, a taken id, the
//!   compare-and-swap change and removal (racing too).
//! - `races.rs`: the concurrency cases, and `race` / `race_all`, the one way they start calls
//!   that race.
//! - `versions.rs`: the compare-and-swap primitives (`replace_*`, `remove_*`) at a stale
//!   version, and racing swaps whose losers retry through core's loop.
//! - `conditions.rs`: conditional writes (`If-Match`): a refusing edit or delete check.
//! - `audit.rs`: the audit trail: one event per write, none for a refused one, pages, retention.
//! - `filters.rs`: the listing filters, and that they follow every write.
//! - `answers.rs`: the answers of idempotent writes.
//! - `seal_keys.rs`: the seal keys, and the rule that every database write seals under the
//!   current one.
//! - `queries.rs`: queries: round trip, the newest-first history and its filters, the
//!   compare-and-swap that makes a run happen once, events appended alone.
//! - `reviews.rs`: reviews racing reviews and runs through `Edits::update_query`: each reviewer
//!   counts once, and the query runs once.
//! - `deliveries.rs`: the outbox: deliveries written with their write's log or not at all, the
//!   listing by status, claims that lease each due delivery to one claimer, racing claimers.
//!
//! # Adding a case
//!
//! Write it as a `pub async fn name(storage: Arc<dyn Storage>)` in the file of its aggregate,
//! then add `file::name` to the list in the `@cases` arm of
//! [`storage_conformance_suite!`](crate::storage_conformance_suite), in this file. That list is
//! the only registration: every backend's test run, the re-export of the case as
//! `storage::testing::name` and [`CASES`] are generated from it. A case left out of the list is
//! never used, so the build warns (`dead_code`) and `cargo clippy -- -D warnings` fails: the
//! submodules are private, and only the list makes a case reachable.
//!
//! # What is covered
//!
//! - Databases: a whole record (every field, secrets, the order of `connection_parameters` and
//!   `credentials`, microsecond timestamps) reads back equal by id, by `api_id` and in listings;
//!   missing records read as `None`; inserts refuse a taken id or `api_id`; listings are ordered
//!   by id with exclusive keyset pagination and a respected limit (docs/api.md, *Decisions where the
//!   spec is silent*, 11); updates and upserts apply exactly what the edit returned, and refuse
//!   (changing nothing) an edit that fails or changes the identity; deletes by id and by
//!   `api_id` return the record as it was and free its `api_id`.
//! - Dashboards: the same for insert, read, listing, update and delete.
//! - Access control (docs/api.md, *Permissions*): `None` for a missing database,
//!   the default for a new one; updates apply exactly what the edit returned (`NotFound` for a
//!   missing database, `Invalid` changing nothing); `inherits_from` refused with the
//!   [`check_inheritance`](super::rules::check_inheritance) rules (itself, a missing database, a
//!   cycle of two or three) changing nothing, and clearable; the delete guard by id and by
//!   `api_id` ([`StorageError::Inherited`](super::StorageError::Inherited) naming every heir,
//!   ordered by id, nothing deleted), and a delete that takes the access control with it.
//! - Caller keys: insert, lookup by digest, listing by id, touch (the later time wins), delete
//!   (revoked at once); a taken id or digest is refused.
//! - Concurrency: no lost update under 32 racing updates (16 for access control), one database
//!   per `api_id` under racing upserts and inserts, a delete racing an update or an upsert is
//!   all-or-nothing, a delete racing an inheritance never leaves an heir of a deleted database,
//!   and crossing inheritances never make a cycle.
//! - Versions: a replace or remove at a version the record is no longer at (an access control
//!   that is no longer the one expected) is a `Conflict` that changes nothing and appends no
//!   event; a replace that changes the `api_id` is refused; of 16 swaps at one version exactly
//!   one wins, and the losers, retried by core, each see the winner's change.
//! - Conditions: an edit or delete check that refuses changes nothing, and runs before the
//!   delete guard; of racing conditional updates exactly one is admitted.
//! - Audit: one event per write of every kind with its action, changes and origin; none for a
//!   refused or failed write; newest-first pages by resource; retention by count and age; 16
//!   racing updates leave exactly 16 events.
//! - Filters: each listing filter alone and combined, paged, following updates, setups and
//!   deletes.
//!
//! - Answers: a write with an `Idempotency-Key` stores its answer in its own atomic change; a
//!   second write with that key is `AnswerExists` and writes nothing; 16 racing writes with one
//!   key admit one; answers are pruned by age.
//!
//! - Seal keys: a database sealed under another key than the current one is refused
//!   (`SealKeyChanged`, nothing written); the keys are replaced only from the expected ones; a
//!   key a stored secret needs is not dropped (`SealKeyInUse`), even while stale writers race
//!   the rotation.
//!
//! Not covered here: [`StorageError::Backend`](super::StorageError::Backend) (backend-specific
//! failures).

mod access;
mod answers;
mod audit;
mod check;
mod conditions;
mod dashboards;
mod databases;
mod deliveries;
mod filters;
mod fixtures;
mod keys;
mod queries;
pub use queries::{log_of, query};
mod races;
mod reviews;
mod saved_queries;
mod seal_keys;
mod sessions;
mod users;
mod versions;

/// The origin of every write the suite makes (and of a backend's own tests).
pub fn origin() -> &'static crate::model::Origin {
    static ORIGIN: std::sync::OnceLock<crate::model::Origin> = std::sync::OnceLock::new();
    ORIGIN.get_or_init(|| crate::model::Origin {
        actor: crate::model::Actor::named("conformance suite"),
        request_id: Some("conformance".to_owned()),
        idempotency: None,
    })
}

// Every case re-exported by its name, and `CASES`: generated from the list of cases.
crate::storage_conformance_suite!(@cases @exports);

/// Expands to the whole storage conformance suite: one
/// `#[tokio::test(flavor = "multi_thread", worker_threads = 4)]` per case of
/// [`storage::testing`](crate::storage::testing), named after the case, each over a fresh store
/// made by `$factory` (a closure or function returning `Arc<S>` where `S: Storage`, called once
/// per test).
///
/// The crate that invokes it needs `tokio` (features `macros` and `rt-multi-thread`) among its
/// dev-dependencies.
///
/// ```ignore
/// dbconsole_core::storage_conformance_suite!(|| std::sync::Arc::new(MyStorage::new()));
/// ```
///
/// The `@cases` arm holds the list of every case, as `file::case`; it hands the list to the arm
/// named after it (`@tests` for a backend's run, `@exports` inside this crate), so one list
/// feeds everything that enumerates the cases.
#[macro_export]
macro_rules! storage_conformance_suite {
    // The list of cases: the one place a case is registered. `@cases @arm args` expands to
    // `@arm args [list]`.
    (@cases $($then:tt)*) => {
        $crate::storage_conformance_suite! { $($then)* [
            databases::database_round_trips_whole_record,
            databases::reads_of_missing_records_are_none,
            databases::database_insert_with_taken_id_is_refused,
            databases::database_insert_with_taken_api_id_is_refused,
            databases::databases_without_api_id_coexist,
            databases::database_listing_is_ordered_by_id_with_keyset_pages,
            databases::database_update_applies_and_returns_stored,
            databases::database_update_of_missing_is_not_found,
            databases::database_update_rejected_by_edit_changes_nothing,
            databases::database_update_changing_identity_is_refused,
            databases::upsert_creates_when_absent,
            databases::upsert_updates_when_present,
            databases::upsert_rejected_by_edit_changes_nothing,
            databases::upsert_changing_identity_is_refused,
            databases::delete_database_by_id_returns_it_and_frees_api_id,
            databases::delete_database_by_api_id_returns_it_and_frees_api_id,
            databases::delete_missing_database_is_not_found,
            dashboards::dashboard_round_trips_whole_record,
            dashboards::dashboard_insert_with_taken_id_is_refused,
            dashboards::dashboard_listing_is_ordered_by_id_with_keyset_pages,
            dashboards::dashboard_update_applies_and_returns_stored,
            dashboards::dashboard_update_of_missing_is_not_found,
            dashboards::dashboard_update_rejected_or_changing_id_changes_nothing,
            dashboards::dashboard_delete_returns_it_and_removes_it,
            access::access_control_is_default_for_new_database_and_none_for_missing,
            access::access_control_update_applies_and_returns_stored,
            access::access_control_update_of_missing_database_is_not_found,
            access::access_control_update_rejected_by_edit_changes_nothing,
            access::inheritance_from_itself_is_refused,
            access::inheritance_from_missing_database_is_refused,
            access::inheritance_cycles_are_refused,
            access::inheritance_can_be_cleared_and_repointed,
            access::delete_of_inherited_database_by_id_is_refused,
            access::delete_of_inherited_database_by_api_id_is_refused,
            conditions::refused_delete_checks_delete_nothing,
            conditions::edits_refusing_a_precondition_change_nothing,
            conditions::delete_checks_run_before_the_inheritance_guard,
            conditions::racing_conditional_updates_admit_exactly_one,
            audit::every_write_appends_one_event,
            audit::refused_writes_append_no_event,
            audit::audit_listing_pages_newest_first_by_resource,
            audit::audit_listing_filters_by_records_action_actor_and_time,
            audit::prune_keeps_the_newest_events_within_retention,
            audit::racing_writes_each_leave_exactly_one_event,
            filters::database_filters_keep_exactly_the_matches,
            filters::database_filters_follow_every_write,
            filters::dashboard_name_prefix_keeps_the_matches,
            keys::caller_keys_round_trip_by_digest_and_listing,
            keys::caller_key_insert_with_taken_id_or_digest_is_refused,
            keys::caller_key_touch_keeps_the_later_time,
            keys::caller_key_delete_returns_it_and_revokes_it,
            keys::record_counts_follow_inserts_and_deletes,
            sessions::sessions_round_trip_by_digest_and_listing,
            sessions::session_replacing_a_link_uses_it_once,
            sessions::session_touch_and_delete,
            sessions::prune_sessions_ends_expired_and_idle_ones,
            users::users_round_trip_and_refuse_a_taken_name,
            users::user_replace_is_a_compare_and_swap,
            users::racing_user_replaces_admit_one,
            users::settings_keep_the_last_value,
            saved_queries::saved_queries_round_trip_and_refuse_a_taken_id,
            saved_queries::saved_query_changes_are_a_compare_and_swap,
            saved_queries::racing_saved_query_changes_admit_one,
            races::concurrent_database_updates_lose_nothing,
            races::concurrent_upserts_create_one_database,
            races::concurrent_inserts_with_one_api_id_admit_one,
            races::delete_racing_update_is_all_or_nothing,
            races::upsert_racing_delete_is_all_or_nothing,
            races::concurrent_dashboard_updates_lose_nothing,
            races::concurrent_access_control_updates_lose_nothing,
            races::delete_racing_inheritance_never_leaves_a_dangling_heir,
            races::racing_inheritances_never_make_a_cycle,
            races::reads_racing_writes_never_see_what_a_write_replaced,
            versions::writes_at_a_stale_version_conflict_and_change_nothing,
            versions::racing_swaps_admit_one_and_losers_retry_onto_the_winner,
            answers::answers_are_stored_with_their_write_once_per_key,
            answers::racing_writes_with_one_key_admit_one,
            seal_keys::database_writes_seal_under_the_current_key,
            seal_keys::racing_writers_never_strand_a_dropped_key,
            queries::queries_round_trip_and_list_newest_first,
            queries::query_replace_is_a_compare_and_swap,
            queries::appended_events_keep_their_run_facts,
            reviews::racing_reviewers_each_count_once,
            reviews::approvals_racing_runs_let_the_query_run_once,
            deliveries::deliveries_are_written_with_their_log_or_not_at_all,
            deliveries::deliveries_list_newest_first_by_status,
            deliveries::claims_lease_due_deliveries_until_the_lease_ends,
            deliveries::claims_take_only_the_kinds_asked_for,
            deliveries::delivery_replace_is_a_compare_and_swap,
            deliveries::racing_claims_never_hand_out_one_delivery_twice,
        ] }
    };
    // A backend's run: one test per case, over a fresh store.
    (@tests $factory:expr, [$($file:ident :: $case:ident),* $(,)?]) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $case() {
                let storage: ::std::sync::Arc<dyn $crate::storage::Storage> = ($factory)();
                $crate::storage::testing::$case(storage).await;
            }
        )*
    };
    // Inside `storage::testing`: each case re-exported by its name, and the names in order.
    (@exports [$($file:ident :: $case:ident),* $(,)?]) => {
        $(pub use $crate::storage::testing::$file::$case;)*

        /// Every case of the suite as `file::case`, in the order a backend's run declares them.
        pub const CASES: &[&str] = &[$(concat!(stringify!($file), "::", stringify!($case))),*];
    };
    ($factory:expr) => {
        $crate::storage_conformance_suite! { @cases @tests $factory, }
    };
}
