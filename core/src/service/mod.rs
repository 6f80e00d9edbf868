//! [`ConsoleService`]: the whole HTTP JSON API as one `tower::Service`.
//!
//! A request goes through the same steps in the same order whatever the route: recognize the
//! path (unknown: 404), authenticate (401) and check the scope (403), check the method (405),
//! then the handler of the route family, which reads the body (400/413/415), validates it (422)
//! and asks the [`Storage`](crate::storage::Storage). Every error becomes its status in [`ApiError`]
//! (module `error`), so the service never fails: `Error = Infallible`.
//!
//! The rooms, from the ground up: the request's parts (`body`, `params`, `call`, `error`,
//! `response`, `render`, `who`); what several families share (`admission`: who may reach
//! what; `launch`: starting a run; `cache`, `conditional`, `idempotency`, `row_tokens`,
//! `run_events`, `callers`); one file (or folder) per route family, each with the state it
//! reads; the route table (`routes`) and recognition (`router`); the assembled state (`app`),
//! the builder (`builder`) and the pipeline (`pipeline`).
//!
//! Secrets arrive in bodies and are sealed by validation with the service's [`Sealer`](crate::seal::Sealer); only
//! check-connection opens them.
//!
//! ---
//!
//! *The manual's page on this part, as the repository shows it:*
#![doc = include_str!("../../../docs/api.md")]

mod access;
mod admission;
pub mod agent;
mod agent_calls;
mod app;
mod audit;
mod body;
pub mod browser;
mod builder;
mod cache;
mod call;
mod callers;
mod check_connection;
mod conditional;
mod dashboards;
mod databases;
mod document;
pub mod door;
mod downloads;
mod error;
pub mod idempotency;
mod launch;
mod me;
mod oidc;
mod openapi;
mod outbox;
mod panels;
mod params;
mod passkeys;
mod pipeline;
mod protection_status;
mod provisioning;
mod queries;
mod render;
mod request_id;
mod response;
mod reviews;
mod router;
mod routes;
mod row_tokens;
pub mod run_events;
mod runs;
mod saved_queries;
mod schema;
mod throttle;
mod upkeep;
pub mod users;
mod who;

pub use builder::{
    ConsoleServiceBuilder, DEFAULT_AUDIT_RETENTION, DEFAULT_BODY_LIMIT, DEFAULT_BODY_TIMEOUT,
    DEFAULT_CHECK_TIMEOUT, InvalidBasePath,
};
pub use call::PeerAddr;
pub use door::{DoorHandle, DoorOptions};
pub use error::ApiError;
pub use outbox::OutboxTargets;
pub use pipeline::{ConsoleService, ResponseFuture};
pub use queries::{DEFAULT_MAX_ROWS, DEFAULT_ROW_LIMIT, DEFAULT_STATEMENT_TIMEOUT};
pub use request_id::{REQUEST_ID_HEADER, REQUEST_ID_MAX, RequestId};
pub use response::{BodyError, ResponseBody};
pub use row_tokens::RowTokenOptions;
pub use run_events::RunEventStats;
