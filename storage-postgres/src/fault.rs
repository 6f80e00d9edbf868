//! Fault classification: what a PostgreSQL error means for the contract. A serialization
//! failure or a deadlock is a [`Failure::Retry`] (the transaction rolled back; it is run
//! again), the seal key trigger's refusal is [`StorageError::SealKeyChanged`], PostgreSQL or the
//! network being away is [`StorageError::Unavailable`], and anything else is a backend failure.

use dbconsole_core::storage::StorageError;
use dbconsole_core::storage::record::RecordError;
use tokio_postgres::error::SqlState;

/// Why one attempt of an operation failed: a conflict to run again, or the answer.
pub(crate) enum Failure {
    /// A serialization failure or deadlock: the transaction rolled back; run it again.
    Retry(tokio_postgres::Error),
    /// The operation's answer.
    Fail(StorageError),
}

impl From<StorageError> for Failure {
    fn from(error: StorageError) -> Self {
        Failure::Fail(error)
    }
}

impl From<RecordError> for Failure {
    fn from(error: RecordError) -> Self {
        Failure::Fail(error.into())
    }
}

impl From<tokio_postgres::Error> for Failure {
    fn from(error: tokio_postgres::Error) -> Self {
        if let Some(current) = stale_seal_key(&error) {
            return Failure::Fail(StorageError::SealKeyChanged(current));
        }
        match error.code() {
            Some(code)
                if *code == SqlState::T_R_SERIALIZATION_FAILURE
                    || *code == SqlState::T_R_DEADLOCK_DETECTED =>
            {
                Failure::Retry(error)
            }
            _ => Failure::Fail(classify(error)),
        }
    }
}

/// The SQLSTATE of the trigger that refuses a database whose secrets are not all sealed under
/// the current key (migration 5); its message ends with the current key's id.
const STALE_SEAL_KEY: &str = "DBC01";

/// The current seal key named by the trigger that refused a database sealed under another.
fn stale_seal_key(error: &tokio_postgres::Error) -> Option<u32> {
    let error = error.as_db_error()?;
    if error.code().code() != STALE_SEAL_KEY {
        return None;
    }
    error.message().rsplit(' ').next()?.parse().ok()
}

/// A PostgreSQL error as the contract sees it: the server or the network being away is
/// [`StorageError::Unavailable`]; anything else (a decoding or type error, a constraint, a bug)
/// is a backend failure.
pub(crate) fn classify(error: tokio_postgres::Error) -> StorageError {
    if unreachable(&error) {
        StorageError::unavailable(error)
    } else {
        StorageError::backend(error)
    }
}

/// Whether the error says PostgreSQL can't be reached now (rather than refusing what was sent).
pub(crate) fn unreachable(error: &tokio_postgres::Error) -> bool {
    match error.code() {
        None => error.is_closed() || caused_by_io(error),
        Some(code) => {
            let code = code.code();
            // 08: connection exception; 57P01..57P03: shutdown, crash, cannot connect now;
            // 53: insufficient resources (too many connections…).
            code.starts_with("08") || code.starts_with("57P") || code.starts_with("53")
        }
    }
}

/// Whether an I/O error is in the error's chain (a refused or dropped connection, a timeout).
fn caused_by_io(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = error.source();
    while let Some(cause) = source {
        if cause.is::<std::io::Error>() {
            return true;
        }
        source = cause.source();
    }
    false
}
