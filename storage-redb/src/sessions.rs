//! Browser sessions and sign-in links: `sessions` (session id → record) and `session_digests`
//! (digest → session id), through which a presented cookie or link token is found. The secrets
//! themselves are never stored. A backup leaves both out: a restored file signs nobody in.

use dbconsole_core::model::{Session, SessionKind, Timestamp};
use dbconsole_core::storage::{Page, StorageError, WriteLog, record};
use redb::{ReadableTable, TableDefinition};

use crate::tables::{OrBackend, page};
use crate::{RedbStorage, write_log};

pub(crate) const SESSIONS: TableDefinition<'static, &str, &[u8]> = TableDefinition::new("sessions");
pub(crate) const SESSION_DIGESTS: TableDefinition<'static, &[u8; 32], &str> =
    TableDefinition::new("session_digests");

/// [`Storage::create_session`](dbconsole_core::storage::Storage::create_session).
pub(crate) async fn create_session(
    store: &RedbStorage,
    session: Session,
    replacing: Option<&str>,
    log: WriteLog,
) -> Result<(), StorageError> {
    let replacing = replacing.map(str::to_owned);
    store
        .write(move |_, txn| {
            let mut sessions = txn.open_table(SESSIONS).or_backend()?;
            let mut digests = txn.open_table(SESSION_DIGESTS).or_backend()?;
            if let Some(old) = &replacing {
                let removed = match sessions.remove(old.as_str()).or_backend()? {
                    None => return Err(StorageError::NotFound),
                    Some(bytes) => record::decode_session(old, bytes.value())?,
                };
                digests.remove(&removed.digest).or_backend()?;
            }
            let id = session.id.as_str();
            let id_taken = sessions.get(id).or_backend()?.is_some();
            if id_taken || digests.get(&session.digest).or_backend()?.is_some() {
                return Err(StorageError::AlreadyExists);
            }
            let bytes = record::encode_session(&session)?;
            sessions.insert(id, bytes.as_slice()).or_backend()?;
            digests.insert(&session.digest, id).or_backend()?;
            write_log::append(txn, &log)
        })
        .await
}

/// [`Storage::session_by_digest`](dbconsole_core::storage::Storage::session_by_digest).
pub(crate) async fn session_by_digest(
    store: &RedbStorage,
    digest: &[u8; 32],
) -> Result<Option<Session>, StorageError> {
    let digest = *digest;
    store.read_now(|inner| {
        inner.read(|txn| {
            let digests = txn.open_table(SESSION_DIGESTS).or_backend()?;
            let Some(id) = digests.get(&digest).or_backend()? else {
                return Ok(None);
            };
            let sessions = txn.open_table(SESSIONS).or_backend()?;
            match sessions.get(id.value()).or_backend()? {
                None => Ok(None),
                Some(bytes) => Ok(Some(record::decode_session(id.value(), bytes.value())?)),
            }
        })
    })
}

/// [`Storage::list_sessions`](dbconsole_core::storage::Storage::list_sessions).
pub(crate) async fn list_sessions(store: &RedbStorage) -> Result<Vec<Session>, StorageError> {
    store
        .run(move |inner| {
            inner.read(|txn| {
                let sessions = txn.open_table(SESSIONS).or_backend()?;
                let every = Page {
                    after: None,
                    limit: usize::MAX,
                };
                page(&sessions, every, record::decode_session)
            })
        })
        .await
}

/// [`Storage::touch_session`](dbconsole_core::storage::Storage::touch_session).
pub(crate) async fn touch_session(
    store: &RedbStorage,
    id: &str,
    at: Timestamp,
) -> Result<(), StorageError> {
    let id = id.to_owned();
    store
        .write(move |_, txn| {
            let mut sessions = txn.open_table(SESSIONS).or_backend()?;
            let mut session = match sessions.get(id.as_str()).or_backend()? {
                None => return Err(StorageError::NotFound),
                Some(bytes) => record::decode_session(&id, bytes.value())?,
            };
            if session.last_seen_at < at {
                session.last_seen_at = at;
                let bytes = record::encode_session(&session)?;
                sessions
                    .insert(id.as_str(), bytes.as_slice())
                    .or_backend()?;
            }
            Ok(())
        })
        .await
}

/// [`Storage::remove_session`](dbconsole_core::storage::Storage::remove_session).
pub(crate) async fn remove_session(
    store: &RedbStorage,
    id: &str,
    log: WriteLog,
) -> Result<(), StorageError> {
    let id = id.to_owned();
    store
        .write(move |_, txn| {
            let mut sessions = txn.open_table(SESSIONS).or_backend()?;
            let mut digests = txn.open_table(SESSION_DIGESTS).or_backend()?;
            let removed = match sessions.remove(id.as_str()).or_backend()? {
                None => return Err(StorageError::NotFound),
                Some(bytes) => record::decode_session(&id, bytes.value())?,
            };
            digests.remove(&removed.digest).or_backend()?;
            write_log::append(txn, &log)
        })
        .await
}

/// [`Storage::prune_sessions`](dbconsole_core::storage::Storage::prune_sessions): one pass over
/// the sessions (there are as many as people signed in).
pub(crate) async fn prune_sessions(
    store: &RedbStorage,
    now: Timestamp,
    idle_before: Timestamp,
) -> Result<u64, StorageError> {
    store
        .write(move |_, txn| {
            let mut sessions = txn.open_table(SESSIONS).or_backend()?;
            let mut digests = txn.open_table(SESSION_DIGESTS).or_backend()?;
            let mut ended = Vec::new();
            for entry in sessions.iter().or_backend()? {
                let (key, value) = entry.or_backend()?;
                let session = record::decode_session(key.value(), value.value())?;
                let idle =
                    session.kind == SessionKind::Browser && session.last_seen_at < idle_before;
                if session.expires_at <= now || idle {
                    ended.push((key.value().to_owned(), session.digest));
                }
            }
            for (id, digest) in &ended {
                sessions.remove(id.as_str()).or_backend()?;
                digests.remove(digest).or_backend()?;
            }
            Ok(ended.len() as u64)
        })
        .await
}
