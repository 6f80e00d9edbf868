//! # dbconsole-core
//!
//! The control plane of a database console: the records (databases with their credentials,
//! dashboards with their query panels and row actions), their validation, the [`Storage`]
//! trait that keeps them, and the whole HTTP JSON API as one [`tower_service::Service`]:
//! [`ConsoleService`].
//!
//! Why a hand-written `Service` and not a web framework: the API has to mount inside any
//! tower-based server (axum, a plain hyper loop, a test's `oneshot`) without choosing one for
//! the embedder, and every error has to become its status and body in exactly one place
//! ([`ApiError`]).
//!
//! Why a storage trait of versioned writes: every write is one atomic change of a whole
//! aggregate, so concurrent requests never lose each other's changes and a crash never splits a
//! write. The service reads a record, builds the new one (validated, secrets sealed) and its
//! audit event outside any transaction, and the store swaps it in only if the record is still at
//! the version read; on a conflict core reads again and retries. See [`storage`].
//!
//! Why sealed secrets: a record carries its passwords and keys encrypted
//! ([`model::SealedSecret`]), so reading, listing and storing records never decrypts anything;
//! only check-connection opens a secret ([`seal`]).
//!
//! The modules read bottom-up: [`model`] → [`seal`] → [`validate`] → [`storage`] → [`check`] →
//! [`run`] → [`auth`] → [`service`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use dbconsole_core::{ConsoleService, Sealer, StaticCredentials, Secret};
//! # fn storage() -> Arc<dyn dbconsole_core::Storage> { unimplemented!() }
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//!
//! let auth = StaticCredentials::new(Some(&Secret::from("api-key")), Some(&Secret::from("token")));
//! let sealer = Sealer::ephemeral()?; // a durable store: the sealer it was opened with
//! let service = ConsoleService::builder(storage(), Arc::new(auth), sealer).build();
//! // `service` is a `tower::Service<http::Request<B>>`: serve it with hyper, mount it in axum…
//! # let _ = service;
//! # Ok(())
//! # }
//! ```

#[macro_use]
mod wire;

pub mod auth;
pub mod check;
pub mod metrics;
pub mod model;
pub mod outbox;
pub mod run;
pub mod seal;
pub mod service;
pub mod storage;
pub mod validate;

pub use auth::{Authenticator, StaticCredentials};
pub use check::{Checkers, ConnectionChecker};
pub use model::{CredentialKind, Scope, Secret};
pub use seal::{Keyring, Sealer, SecretKey};
pub use service::{
    ApiError, ConsoleService, ConsoleServiceBuilder, DEFAULT_AUDIT_RETENTION, DEFAULT_BODY_TIMEOUT,
    DEFAULT_CHECK_TIMEOUT, REQUEST_ID_HEADER, RequestId, ResponseBody,
};
pub use storage::{Storage, StorageError};
pub use validate::ValidationErrors;
