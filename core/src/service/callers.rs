//! [`Callers`]: who presents a caller credential (a key or a token), as the authenticator
//! answers: the pipeline asks for every request that presents one, a key sign-in once.

use std::sync::Arc;

use super::error::ApiError;
use crate::auth::{Authenticator, Caller};
use crate::model::CredentialKind;
use crate::storage::StorageError;

/// The authenticator, with the errors of its check made statuses.
#[derive(Clone, Debug)]
pub(crate) struct Callers {
    /// Tells who a credential is.
    pub(crate) authenticator: Arc<dyn Authenticator>,
}

impl Callers {
    /// The caller `secret` is as a credential of `kind` (`None`: not a valid one); a failure of
    /// the check itself is the storage's error, or 500.
    pub(crate) async fn authenticate(
        &self,
        kind: CredentialKind,
        secret: &str,
    ) -> Result<Option<Caller>, ApiError> {
        if let Some(known) = self.authenticator.authenticate_now(kind, secret) {
            return Ok(known);
        }
        self.authenticator
            .authenticate(kind, secret)
            .await
            .map_err(|error| match error.downcast::<StorageError>() {
                Ok(error) => ApiError::from(*error),
                Err(error) => {
                    tracing::error!(%error, "authenticator failure");
                    ApiError::Internal
                }
            })
    }
}
