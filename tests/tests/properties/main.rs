//! Property tests of the HTTP API over the in-memory backend: generated requests, checked
//! invariants.
//!
//! 1. A valid create body reads back as sent (blank optional strings as null, left-out fields
//!    as their documented defaults), and retrieve answers what create answered:
//!    `create_reads_back.rs`.
//! 2. Fields left out of an update never move: database PATCH (credentials that carry their id
//!    keep it, and their left-out fields, the password included, keep their values),
//!    `update_keeps_left_out_fields.rs`; and dashboard PUT (panels and actions that carry their
//!    id keep it), `dashboard_update_keeps_left_out_fields.rs`.
//! 3. `updated_at` strictly increases over any sequence of successful updates; `inserted_at`
//!    never changes: `updated_at_increases.rs`.
//! 4. Hostile bodies, paths and query strings never give a 5xx, and a refused request never
//!    changes what is stored: `hostile_bodies.rs`, `hostile_paths.rs`.
//! 5. No password, certificate or key ever appears in a response body or header, even when a
//!    driver's error message repeats them all (`no_secret_in_responses.rs`), or one secret
//!    contains another (`secret_inside_secret.rs`).
//!
//! Beside the properties: `strategies/` generates the requests (each field value with what it
//! must read back as), `model.rs` computes what the service must answer from the request
//! alone, `stored.rs` holds the records hostile requests aim at, and `support.rs` runs a case
//! and holds the shared assertions.
//!
//! Every case runs on a fresh `MemoryStorage`, driven through `ConsoleService` in a
//! current-thread Tokio runtime. What a response does not show (passwords, certificates) is
//! checked through a connection checker that records what it is handed. Only passwords use
//! Greek letters, so a password can only show up in a response by leaking. A failing case is
//! saved next to its property, as `<property>.proptest-regressions`.

mod model;
mod stored;
mod strategies;
mod support;

mod create_reads_back;
mod dashboard_update_keeps_left_out_fields;
mod hostile_bodies;
mod hostile_paths;
mod no_secret_in_responses;
mod secret_inside_secret;
mod update_keeps_left_out_fields;
mod updated_at_increases;
