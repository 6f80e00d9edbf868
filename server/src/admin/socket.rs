//! The admin socket: how `dbconsole keys` reaches a server that has the data directory open.
//!
//! redb lets one process at a time open a data file, so while a server runs, `dbconsole keys`
//! cannot open the file itself. The server (on redb storage) therefore listens on the Unix
//! domain socket [`ADMIN_SOCKET_FILE`] in the data directory and runs key operations on its own
//! store: a revoke is seen by its next request.
//!
//! **Protocol.** One connection, one exchange: the client writes one [`AdminRequest`] as a JSON
//! line, the server answers one [`AdminReply`] as a JSON line and closes (the messages are
//! [`super::protocol`]; the server runs them with [`super::operations::run_on_redb_store`]). A request line is at
//! most [`MAX_REQUEST_BYTES`] bytes and must arrive within [`REQUEST_TIMEOUT`].
//!
//! **Who may connect.** Access to the socket is access to the data directory: whoever can
//! connect can create full-access keys, as whoever can read the key file can read the secrets.
//! The socket is created with mode 0600 (reachable only if the directory's permissions let the
//! caller reach it), and the server also checks each peer's credentials: only its own user and
//! root are served. A socket left by a server that died is removed at the next start (the
//! server holds the data file's lock by then, so no live server owns it); the socket is removed
//! at shutdown.
//!
//! [`ADMIN_SOCKET_FILE`]: crate::backend::ADMIN_SOCKET_FILE

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dbconsole_storage_redb::RedbStorage;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};

use super::operations::run_on_redb_store;
use super::protocol::{AdminReply, AdminRequest, Failure};
use crate::backend::{ADMIN_SOCKET_FILE, NodeKeys};

/// The longest request line the server reads.
pub const MAX_REQUEST_BYTES: u64 = 64 * 1024;

/// How long the server waits for a connected client's request line.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The pause after a failed `accept` (out of file descriptors…), so that it does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The listening admin socket of a running server. Dropping it (or [`AdminSocket::shutdown`])
/// removes the socket file.
#[derive(Debug)]
pub struct AdminSocket {
    path: PathBuf,
    /// Device and inode of the socket file, so that only this socket is ever removed.
    identity: (u64, u64),
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl AdminSocket {
    /// Listens on [`ADMIN_SOCKET_FILE`] in `data_dir` and serves key requests on `storage`,
    /// until [`AdminSocket::shutdown`]. Call it only while holding the data file (a server on
    /// redb storage), so that an existing socket there is known to be stale; a file there that
    /// is not a socket is an error. Needs a Tokio runtime.
    pub fn bind(data_dir: &Path, storage: Arc<RedbStorage>, keys: NodeKeys) -> io::Result<Self> {
        let path = data_dir.join(ADMIN_SOCKET_FILE);
        match fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_socket() => fs::remove_file(&path)?,
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a socket", path.display()),
                ));
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error),
        }
        let listener = UnixListener::bind(&path)?;
        let meta = fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
            .and_then(|()| fs::symlink_metadata(&path))
            .inspect_err(|_| {
                let _ = fs::remove_file(&path);
            })?;
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(accept_loop(listener, storage, keys, meta.uid(), stopped));
        Ok(Self {
            path,
            identity: (meta.dev(), meta.ino()),
            stop: Some(stop),
            task,
        })
    }

    /// The socket file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting, lets the requests in flight finish (each is bounded by
    /// [`REQUEST_TIMEOUT`] for its request line), and removes the socket file.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Err(error) = (&mut self.task).await {
            tracing::warn!(%error, "the admin socket task failed");
        }
    }
}

impl Drop for AdminSocket {
    fn drop(&mut self) {
        self.task.abort();
        if let Ok(meta) = fs::symlink_metadata(&self.path)
            && (meta.dev(), meta.ino()) == self.identity
            && let Err(error) = fs::remove_file(&self.path)
        {
            tracing::warn!(%error, path = %self.path.display(), "cannot remove the admin socket");
        }
    }
}

async fn accept_loop(
    listener: UnixListener,
    storage: Arc<RedbStorage>,
    keys: NodeKeys,
    owner: u32,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            _ = &mut stopped => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(
                        stream,
                        Arc::clone(&storage),
                        keys.clone(),
                        owner,
                    ));
                }
                Err(error) => {
                    tracing::warn!(%error, "accepting an admin connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            },
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// One exchange: check the peer, read a request line, answer it.
async fn serve_connection(
    mut stream: UnixStream,
    storage: Arc<RedbStorage>,
    keys: NodeKeys,
    owner: u32,
) {
    match stream.peer_cred() {
        Ok(peer) if peer.uid() == owner || peer.uid() == 0 => {}
        Ok(peer) => {
            tracing::warn!(
                target: "dbconsole::admin",
                uid = peer.uid(),
                "refused an admin connection from another user"
            );
            return;
        }
        Err(error) => {
            tracing::warn!(target: "dbconsole::admin", %error, "cannot check an admin peer");
            return;
        }
    }
    let (read, mut write) = stream.split();
    let mut line = Vec::new();
    let mut reader = BufReader::new(read).take(MAX_REQUEST_BYTES + 1);
    let reply = match tokio::time::timeout(REQUEST_TIMEOUT, reader.read_until(b'\n', &mut line))
        .await
    {
        Err(_) => {
            tracing::warn!(target: "dbconsole::admin", "no admin request within the timeout");
            return;
        }
        Ok(Err(error)) => {
            tracing::warn!(target: "dbconsole::admin", %error, "reading an admin request failed");
            return;
        }
        Ok(Ok(_)) if line.len() as u64 > MAX_REQUEST_BYTES => AdminReply::Failed {
            error: Failure::BadRequest,
            message: format!("a request is one line of at most {MAX_REQUEST_BYTES} bytes"),
        },
        Ok(Ok(_)) => match serde_json::from_slice::<AdminRequest>(&line) {
            Ok(request) => {
                let op = request.op();
                let reply = run_on_redb_store(&storage, &keys, request).await;
                log_reply(op, &reply);
                reply
            }
            Err(error) => AdminReply::Failed {
                error: Failure::BadRequest,
                message: format!("not a key request: {error}"),
            },
        },
    };
    let mut text = match serde_json::to_vec(&reply) {
        Ok(text) => text,
        Err(error) => {
            tracing::warn!(target: "dbconsole::admin", %error, "cannot encode an admin reply");
            return;
        }
    };
    text.push(b'\n');
    let written = async {
        write.write_all(&text).await?;
        write.shutdown().await
    };
    if let Err(error) = written.await {
        tracing::debug!(target: "dbconsole::admin", %error, "the admin client went away");
    }
}

/// One log line per admin operation: what, and which key or file; never a secret.
fn log_reply(op: &str, reply: &AdminReply) {
    match reply {
        AdminReply::Created { key, .. } | AdminReply::Revoked { key } => tracing::info!(
            target: "dbconsole::admin",
            op,
            result = reply.result(),
            id = %key.id,
            kind = key.kind.as_str(),
            scope = key.scope.as_str(),
            "key request"
        ),
        AdminReply::SessionsListed { sessions } | AdminReply::SessionsRevoked { sessions } => {
            tracing::info!(
                target: "dbconsole::admin",
                op,
                result = reply.result(),
                count = sessions.len(),
                "session request"
            );
        }
        AdminReply::LinkCreated { link, .. } => tracing::info!(
            target: "dbconsole::admin",
            op,
            result = reply.result(),
            id = %link.id,
            "session request"
        ),
        AdminReply::Listed { keys } => tracing::info!(
            target: "dbconsole::admin",
            op,
            result = reply.result(),
            count = keys.len(),
            "key request"
        ),
        AdminReply::BackedUp {
            to,
            databases,
            bytes,
            ..
        } => tracing::info!(
            target: "dbconsole::admin",
            op,
            result = reply.result(),
            to = %to.display(),
            databases,
            bytes,
            "admin request"
        ),
        AdminReply::Rotated {
            current,
            resealed,
            retired,
            ..
        } => tracing::info!(
            target: "dbconsole::admin",
            op,
            result = reply.result(),
            current,
            resealed,
            ?retired,
            "admin request"
        ),
        AdminReply::SealKeyAdded { id, .. } => tracing::info!(
            target: "dbconsole::admin",
            op,
            result = reply.result(),
            id,
            "admin request"
        ),
        AdminReply::SealStatus { current, .. } => tracing::info!(
            target: "dbconsole::admin",
            op,
            result = reply.result(),
            current,
            "admin request"
        ),
        AdminReply::Failed { error, .. } => tracing::info!(
            target: "dbconsole::admin",
            op,
            result = reply.result(),
            error = ?error,
            "admin request"
        ),
    }
}

#[cfg(test)]
mod tests {
    use dbconsole_core::auth::StoredCredentials;
    use dbconsole_core::seal::Sealer;
    use dbconsole_core::{Authenticator, CredentialKind, Scope, StaticCredentials};

    use super::*;
    use crate::admin::client::{ClientError, ProtocolError, request};

    fn memory_store() -> (Arc<RedbStorage>, NodeKeys) {
        let sealer = Sealer::ephemeral().unwrap();
        let store = Arc::new(RedbStorage::in_memory(&sealer).unwrap());
        (store, NodeKeys { sealer, file: None })
    }

    async fn raw_exchange(socket: &Path, bytes: &[u8]) -> String {
        let mut stream = UnixStream::connect(socket).await.unwrap();
        stream.write_all(bytes).await.unwrap();
        stream.shutdown().await.unwrap();
        let mut reply = String::new();
        stream.read_to_string(&mut reply).await.unwrap();
        reply
    }

    #[tokio::test]
    async fn requests_run_on_the_servers_store() {
        let dir = tempfile::tempdir().unwrap();
        let (storage, keys) = memory_store();
        let admin = AdminSocket::bind(dir.path(), storage.clone(), keys).unwrap();
        let socket = admin.path().to_owned();
        let mode = fs::metadata(&socket).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let create = AdminRequest::Create {
            kind: CredentialKind::AccessToken,
            scope: Scope::Full,
            name: "grafana".to_owned(),
            user: None,
            groups: Vec::new(),
            role: None,
        };
        let reply = request(&socket, &create).await.unwrap();
        let AdminReply::Created { key, secret } = reply else {
            panic!("{reply:?}");
        };
        let auth = StoredCredentials::new(storage.clone(), StaticCredentials::default());
        let presented = secret.expose_str().unwrap();
        assert_eq!(
            auth.authenticate(CredentialKind::AccessToken, presented)
                .await
                .unwrap()
                .map(|caller| caller.scope),
            Some(Scope::Full)
        );

        let listed = request(&socket, &AdminRequest::List).await.unwrap();
        assert!(
            matches!(&listed, AdminReply::Listed { keys } if keys.len() == 1 && keys[0].id == key.id),
            "{listed:?}"
        );

        let revoke = AdminRequest::Revoke { id: key.id.clone() };
        let revoked = request(&socket, &revoke).await.unwrap();
        assert!(matches!(revoked, AdminReply::Revoked { .. }), "{revoked:?}");
        assert_eq!(
            auth.authenticate(CredentialKind::AccessToken, presented)
                .await
                .unwrap(),
            None
        );
        let unknown = request(&socket, &revoke).await.unwrap();
        assert!(
            matches!(
                unknown,
                AdminReply::Failed {
                    error: Failure::NotFound,
                    ..
                }
            ),
            "{unknown:?}"
        );

        admin.shutdown().await;
        assert!(!socket.exists(), "the socket outlived the shutdown");
        assert!(matches!(
            request(&socket, &AdminRequest::List).await,
            Err(ClientError::NoServer)
        ));
    }

    #[tokio::test]
    async fn garbage_and_oversized_lines_are_bad_requests() {
        let dir = tempfile::tempdir().unwrap();
        let admin = {
            let (store, keys) = memory_store();
            AdminSocket::bind(dir.path(), store, keys)
        }
        .unwrap();
        for bytes in [
            b"list\n".to_vec(),
            br#"{"op":"create","kind":"api-key"}"#.to_vec(),
            vec![b' '; MAX_REQUEST_BYTES as usize + 10],
        ] {
            let reply = raw_exchange(admin.path(), &bytes).await;
            let reply: AdminReply = serde_json::from_str(&reply).unwrap();
            assert!(
                matches!(
                    reply,
                    AdminReply::Failed {
                        error: Failure::BadRequest,
                        ..
                    }
                ),
                "{reply:?}"
            );
        }
        // A request without its final newline is still one request.
        let reply = raw_exchange(admin.path(), br#"{"op":"list"}"#).await;
        let reply: AdminReply = serde_json::from_str(&reply).unwrap();
        assert!(matches!(reply, AdminReply::Listed { keys } if keys.is_empty()));
    }

    #[tokio::test]
    async fn a_stale_socket_is_replaced_and_a_foreign_file_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(ADMIN_SOCKET_FILE);
        // A socket nobody listens on any more: what a killed server leaves.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        assert!(matches!(
            request(&path, &AdminRequest::List).await,
            Err(ClientError::NoServer)
        ));
        let admin = {
            let (store, keys) = memory_store();
            AdminSocket::bind(dir.path(), store, keys)
        }
        .unwrap();
        assert!(matches!(
            request(&path, &AdminRequest::List).await,
            Ok(AdminReply::Listed { .. })
        ));
        drop(admin);
        assert!(!path.exists(), "dropping the socket removes its file");

        fs::write(&path, "not a socket").unwrap();
        let error = {
            let (store, keys) = memory_store();
            AdminSocket::bind(dir.path(), store, keys)
        }
        .expect_err("a regular file is not replaced");
        assert!(error.to_string().contains("not a socket"), "{error}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "not a socket");
    }

    #[tokio::test]
    async fn a_server_that_does_not_answer_a_reply_is_a_protocol_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(ADMIN_SOCKET_FILE);
        let listener = UnixListener::bind(&path).unwrap();
        let server = tokio::spawn(async move {
            for answer in [&b""[..], b"not json\n"] {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut line = Vec::new();
                BufReader::new(&mut stream)
                    .read_until(b'\n', &mut line)
                    .await
                    .unwrap();
                stream.write_all(answer).await.unwrap();
            }
        });
        let error = request(&path, &AdminRequest::List).await.unwrap_err();
        assert!(
            matches!(
                &error,
                ClientError::Protocol {
                    problem: ProtocolError::Closed,
                    ..
                }
            ),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "the server on {} closed the connection without answering; `dbconsole keys list` \
                 shows whether the change was made",
                path.display()
            )
        );
        let error = request(&path, &AdminRequest::List).await.unwrap_err();
        assert!(
            matches!(
                &error,
                ClientError::Protocol {
                    problem: ProtocolError::Unreadable(_),
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .contains("answered something unreadable ("),
            "{error}"
        );
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_socket_replaced_by_someone_else_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let admin = {
            let (store, keys) = memory_store();
            AdminSocket::bind(dir.path(), store, keys)
        }
        .unwrap();
        let path = admin.path().to_owned();
        fs::remove_file(&path).unwrap();
        fs::write(&path, "someone else's").unwrap();
        admin.shutdown().await;
        assert_eq!(fs::read_to_string(&path).unwrap(), "someone else's");
    }
}
