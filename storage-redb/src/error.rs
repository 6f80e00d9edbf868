//! [`OpenError`]: why a store could not be opened.

use std::io;
use std::path::PathBuf;

use dbconsole_core::storage::StorageError;

/// Why [`RedbStorage::open`](crate::RedbStorage::open) or
/// [`RedbStorage::in_memory`](crate::RedbStorage::in_memory) failed. Opening never changes a
/// file it refuses.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The key check value in the file does not decrypt under the given key.
    #[error("the secret key does not match the one this data was written with")]
    WrongKey,
    /// The data's secrets need a seal key this node's keyring lacks (named in the message).
    #[error(transparent)]
    SealKey(dbconsole_core::seal::SealKeyError),
    /// The file was written in a format newer than this build reads.
    #[error(
        "the data file was written in format {found} by a newer version of dbconsole; \
         this version reads formats up to {supported}"
    )]
    NewerFormat {
        /// The format version recorded in the file.
        found: u32,
        /// The newest format version this build reads.
        supported: u32,
    },
    /// The file is a redb database, but not one that dbconsole wrote.
    #[error("the file is a redb database but not a dbconsole data file")]
    NotDbconsole,
    /// The file's metadata is damaged.
    #[error("the data file's metadata is damaged: {0}")]
    Corrupt(&'static str),
    /// Another process has the file open.
    #[error("the data file {} is already open in another process", path.display())]
    AlreadyOpen {
        /// The data file.
        path: PathBuf,
    },
    /// The system random number generator failed (while making a new file's key check value).
    #[error("the system random number generator failed")]
    Random,
    /// The data file or its directory could not be created.
    #[error("cannot create {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// redb failed to open or initialise the file.
    #[error("the data file could not be opened: {0}")]
    Redb(#[from] redb::Error),
    /// The listing indexes could not be built from the stored records (at the first open of a
    /// file written before them).
    #[error("the listing indexes could not be built: {0}")]
    Index(#[source] StorageError),
    /// The writer thread could not be started.
    #[error("the writer thread could not be started: {0}")]
    Thread(#[source] io::Error),
}

/// How a redb failure is answered: what the service tells the caller, and whether the file must
/// be reopened before it can be written again (redb refuses every operation of a handle once
/// one of its I/O calls failed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// No room on the disk (`ENOSPC`, `EDQUOT`): [`StorageError::Full`], 503.
    Full,
    /// Another I/O failure, or a handle an earlier I/O failure closed:
    /// [`StorageError::Unavailable`], 503. The file is reopened.
    Io,
    /// Anything else (a record too large, corruption, a bug): [`StorageError::Backend`], 500.
    Backend,
}

impl Class {
    pub(crate) fn of(error: &redb::Error) -> Self {
        match error {
            redb::Error::Io(io)
                if matches!(
                    io.kind(),
                    io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
                ) =>
            {
                Class::Full
            }
            redb::Error::Io(_) | redb::Error::PreviousIo | redb::Error::DatabaseClosed => Class::Io,
            _ => Class::Backend,
        }
    }

    /// Whether the handle that failed must be reopened.
    pub(crate) fn is_io(self) -> bool {
        self != Class::Backend
    }

    /// The storage error for `error` of this class.
    pub(crate) fn error(
        self,
        error: impl std::error::Error + Send + Sync + 'static,
    ) -> StorageError {
        match self {
            Class::Full => StorageError::full(error),
            Class::Io => StorageError::unavailable(error),
            Class::Backend => StorageError::backend(error),
        }
    }

    /// The class of a storage error a job answered with.
    pub(crate) fn of_storage(error: &StorageError) -> Option<Self> {
        match error {
            StorageError::Full(_) => Some(Class::Full),
            StorageError::Unavailable(_) => Some(Class::Io),
            _ => None,
        }
    }
}

/// A redb failure as a storage error.
pub(crate) fn storage_error(error: redb::Error) -> StorageError {
    Class::of(&error).error(error)
}
