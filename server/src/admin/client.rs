//! The client side: where `dbconsole keys` and `dbconsole backup` run an admin request. On the
//! storage `serve` uses (the same `--storage` and `--data-dir`): through the [admin
//! socket](super::socket) of a server that has the data directory open ([`request`]), else on
//! the data file opened here (redb lets one process at a time open it). The operations
//! themselves are in [`super::operations`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dbconsole_storage_redb::RedbStorage;
use thiserror::Error;

use super::operations::{execute, run_on_redb_store};
use super::protocol::{AdminReply, AdminRequest, Failure};
use crate::backend::{
    ADMIN_SOCKET_FILE, DATA_FILE, KEY_FILE, NodeKeys, OpenError, SECRET_KEY_VAR, StorageKind,
    StorageLocation, open_redb as open_redb_store,
};
use crate::cli::{KeysArgs, KeysCommand, SessionsArgs, SessionsCommand};

/// How long a command keeps trying when the data file is open in another process whose admin
/// socket does not answer (yet): a server that is starting (it opens the file, then binds the
/// socket) or stopping (it removes the socket, then closes the file).
const BUSY_PATIENCE: Duration = Duration::from_secs(5);

/// The pause between two tries while the data directory is busy.
const BUSY_RETRY: Duration = Duration::from_millis(100);

/// Why an admin command got no reply.
#[derive(Debug, Error)]
pub enum AdminError {
    /// `--storage memory`: the store lives inside one `serve` process and ends with it.
    #[error(
        "the memory storage has no keys another process can reach: it lives inside the \
         `dbconsole serve` process that holds it (which has no admin socket) and ends with it; \
         use --storage redb (the default) to keep keys, or {api_key} and {access_token} for \
         static credentials",
        api_key = crate::credentials::API_KEY_VAR,
        access_token = crate::credentials::ACCESS_TOKEN_VAR
    )]
    MemoryStorage,
    /// A server answers on the admin socket, but the exchange failed.
    #[cfg(unix)]
    #[error(transparent)]
    Admin(#[from] ClientError),
    /// The data file is held by a process whose admin socket does not answer.
    #[error(
        "the data file {} is open in another process, and no dbconsole server answers on {}; \
         if a server is running there, its admin socket is missing: restart it, or stop it and \
         run the command again",
        data_file.display(),
        socket.display()
    )]
    Busy {
        /// The data file.
        data_file: PathBuf,
        /// The admin socket that does not answer.
        socket: PathBuf,
    },
    /// `list` or `revoke` on a data directory without data.
    #[error(
        "no dbconsole data in {}: {} does not exist (check --data-dir or DBCONSOLE_DATA_DIR)",
        data_dir.display(),
        data_file.display()
    )]
    NoData {
        /// The data directory.
        data_dir: PathBuf,
        /// The missing data file.
        data_file: PathBuf,
    },
    /// The storage could not be opened.
    #[error("cannot open the {storage} storage: {source}")]
    Open {
        /// Which.
        storage: StorageKind,
        /// The backend's error.
        source: OpenError,
    },
}

/// What a `keys` subcommand is: a request on the store, or a change of the key file only.
enum Keys {
    Request(AdminRequest),
    AddSealKey,
}

impl From<KeysCommand> for Keys {
    fn from(command: KeysCommand) -> Self {
        Keys::Request(match command {
            KeysCommand::Create(args) => AdminRequest::Create {
                kind: args.kind,
                scope: args.scope,
                name: args.name,
                user: args.user,
                groups: args.groups,
                role: args.role.map(|role| role.as_str().to_owned()),
            },
            KeysCommand::List => AdminRequest::List,
            KeysCommand::Revoke { id } => AdminRequest::Revoke { id },
            KeysCommand::RotateSeal { batch } => AdminRequest::RotateSeal { batch },
            KeysCommand::SealStatus => AdminRequest::SealStatus,
            KeysCommand::AddSealKey => return Keys::AddSealKey,
        })
    }
}

/// `dbconsole keys add-seal-key`: a new key in the data directory's key file, waiting for
/// `rotate-seal`. Keys from [`SECRET_KEY_VAR`] are the operator's to add.
fn add_seal_key(
    data_dir: &std::path::Path,
    secret_key: Option<&str>,
) -> Result<AdminReply, AdminError> {
    if secret_key.is_some_and(|key| !key.trim().is_empty()) {
        return Ok(AdminReply::failed(
            Failure::Invalid,
            format!(
                "the keys come from {SECRET_KEY_VAR}: add the new key to it on every node as \
                 <id>:<base64 of 32 random bytes>, with an id above the others"
            ),
        ));
    }
    let key_file = data_dir.join(KEY_FILE);
    if !key_file.exists() {
        return Ok(AdminReply::failed(
            Failure::NotFound,
            format!("no key file at {}", key_file.display()),
        ));
    }
    Ok(match super::seal::add_seal_key(&key_file, 0) {
        Ok((id, _)) => AdminReply::SealKeyAdded { id, key_file },
        Err(error) => AdminReply::failed(Failure::Storage, format!("the key file failed: {error}")),
    })
}

/// Runs `dbconsole keys …` on the storage of `args`: through the admin socket when a server
/// has the data directory open, else on the data file itself. `secret_key` is the value of
/// [`crate::backend::SECRET_KEY_VAR`], used only when the file is opened here. A memory store cannot
/// be reached from another process: that is [`AdminError::MemoryStorage`].
///
/// `list` and `revoke` need an existing data file; `create` creates one (and the key file)
/// when missing, so keys can be made before the first `serve`.
pub async fn run(args: KeysArgs, secret_key: Option<&str>) -> Result<AdminReply, AdminError> {
    let location = args.store.location();
    let request = match Keys::from(args.command) {
        Keys::Request(request) => request,
        Keys::AddSealKey => return add_seal_key(&args.store.data_dir, secret_key),
    };
    run_request(args.store.storage, &location, secret_key, request).await
}

/// Runs `dbconsole sessions …` as [`run`] runs `keys`: through the admin socket of a server on
/// the data directory, else on the store itself.
pub async fn run_sessions(
    args: SessionsArgs,
    secret_key: Option<&str>,
) -> Result<AdminReply, AdminError> {
    let location = args.store.location();
    let request = match args.command {
        SessionsCommand::List => AdminRequest::Sessions,
        SessionsCommand::Revoke { id, user } => AdminRequest::RevokeSessions { id, user },
        SessionsCommand::Link {
            user, groups, role, ..
        } => AdminRequest::SignInLink {
            user,
            groups,
            role: role.map(|role| role.as_str().to_owned()),
            invitation: false,
        },
        SessionsCommand::Invite {
            user, groups, role, ..
        } => AdminRequest::SignInLink {
            user,
            groups,
            role: role.map(|role| role.as_str().to_owned()),
            invitation: true,
        },
    };
    run_request(args.store.storage, &location, secret_key, request).await
}

async fn run_request(
    storage: StorageKind,
    location: &StorageLocation,
    secret_key: Option<&str>,
    request: AdminRequest,
) -> Result<AdminReply, AdminError> {
    match storage {
        StorageKind::Memory => Err(AdminError::MemoryStorage),
        // Every node and this command share the database: no server to go through.
        StorageKind::Postgres => {
            let opened = storage
                .open(location, secret_key)
                .await
                .map_err(|source| AdminError::Open { storage, source })?;
            Ok(execute(&*opened.storage, &opened.keys, request).await)
        }
        StorageKind::Redb => run_on_redb(location, secret_key, request).await,
    }
}

/// redb lets one process open the file: through the server's admin socket when one runs on the
/// data directory, else on the file itself.
pub(crate) async fn run_on_redb(
    location: &StorageLocation,
    secret_key: Option<&str>,
    request: AdminRequest,
) -> Result<AdminReply, AdminError> {
    let data_dir = &location.data_dir;
    let patience = Instant::now() + BUSY_PATIENCE;
    loop {
        #[cfg(unix)]
        {
            let socket = data_dir.join(ADMIN_SOCKET_FILE);
            match self::request(&socket, &request).await {
                Ok(reply) => return Ok(reply),
                Err(ClientError::NoServer) => {}
                Err(error) => return Err(error.into()),
            }
        }
        match open_redb(location, secret_key, &request).await {
            Ok((store, keys)) => {
                return Ok(run_on_redb_store(&store, &keys, request).await);
            }
            Err(AdminError::Busy { .. }) if Instant::now() < patience => {
                tokio::time::sleep(BUSY_RETRY).await;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Opens the data file here: [`AdminError::Busy`] when another process has it open.
async fn open_redb(
    location: &StorageLocation,
    secret_key: Option<&str>,
    request: &AdminRequest,
) -> Result<(Arc<RedbStorage>, NodeKeys), AdminError> {
    let data_dir = &location.data_dir;
    let data_file = data_dir.join(DATA_FILE);
    if !matches!(request, AdminRequest::Create { .. }) && !data_file.exists() {
        return Err(AdminError::NoData {
            data_dir: data_dir.to_owned(),
            data_file,
        });
    }
    let storage = StorageKind::Redb;
    open_redb_store(location, secret_key).map_err(|source| {
        if source.is_already_open() {
            AdminError::Busy {
                data_file,
                socket: data_dir.join(ADMIN_SOCKET_FILE),
            }
        } else {
            AdminError::Open { storage, source }
        }
    })
}

use std::io;
use std::path::Path;

#[cfg(unix)]
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
#[cfg(unix)]
use tokio::net::UnixStream;

/// The longest reply line the client reads (a listing of many keys).
const MAX_REPLY_BYTES: u64 = 16 * 1024 * 1024;

/// How long the client waits for the server's answer: only keeps a wedged server from hanging
/// the command forever.
const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the client waits for a rotation, which seals every stored secret again: a day.
const ROTATION_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// Why [`request`] got no reply.
#[derive(Debug, Error)]
pub enum ClientError {
    /// Nothing listens on the socket (no socket file, or one left by a server that is gone).
    #[error("no server listens on the admin socket")]
    NoServer,
    /// The socket could not be used.
    #[error("cannot use the admin socket {}: {source}", path.display())]
    Io {
        /// The socket.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// The server closed the connection, or answered something that is not a reply.
    #[error(
        "the server on {} {problem}; `dbconsole keys list` shows whether the change was made",
        path.display()
    )]
    Protocol {
        /// The socket.
        path: PathBuf,
        /// What the server did.
        problem: ProtocolError,
    },
}

/// What a server on the admin socket did instead of answering a reply.
#[derive(Debug, Error)]
pub enum ProtocolError {
    /// No answer within the reply timeout.
    #[error("did not answer within {} s", .0.as_secs())]
    Timeout(Duration),
    /// The connection ended before a reply line.
    #[error("closed the connection without answering")]
    Closed,
    /// The line is not a [`AdminReply`].
    #[error("answered something unreadable ({0})")]
    Unreadable(serde_json::Error),
}

/// Sends `request` to the server listening on `socket` and reads its reply.
#[cfg(unix)]
pub async fn request(socket: &Path, request: &AdminRequest) -> Result<AdminReply, ClientError> {
    let io_error = |source| ClientError::Io {
        path: socket.to_owned(),
        source,
    };
    let protocol_error = |problem| ClientError::Protocol {
        path: socket.to_owned(),
        problem,
    };
    let mut stream = match UnixStream::connect(socket).await {
        Ok(stream) => stream,
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Err(ClientError::NoServer);
        }
        Err(error) => return Err(io_error(error)),
    };
    let mut line = serde_json::to_vec(request).map_err(|error| io_error(error.into()))?;
    line.push(b'\n');
    let exchange = async {
        stream.write_all(&line).await?;
        let mut reply = Vec::new();
        BufReader::new(&mut stream)
            .take(MAX_REPLY_BYTES)
            .read_until(b'\n', &mut reply)
            .await?;
        Ok::<_, io::Error>(reply)
    };
    let timeout = match request {
        AdminRequest::RotateSeal { .. } => ROTATION_TIMEOUT,
        _ => REPLY_TIMEOUT,
    };
    let reply = match tokio::time::timeout(timeout, exchange).await {
        Err(_) => return Err(protocol_error(ProtocolError::Timeout(timeout))),
        Ok(Err(error)) => return Err(io_error(error)),
        Ok(Ok(reply)) => reply,
    };
    if reply.is_empty() {
        return Err(protocol_error(ProtocolError::Closed));
    }
    serde_json::from_slice(&reply).map_err(|error| protocol_error(ProtocolError::Unreadable(error)))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn keys_args(args: &[&str]) -> KeysArgs {
        let cli = Cli::try_parse_from(["dbconsole", "keys"].iter().chain(args)).unwrap();
        match cli.command {
            Command::Keys(args) => args,
            other => panic!("parsed as {other:?}"),
        }
    }

    #[tokio::test]
    async fn memory_storage_is_refused_and_nothing_is_created() {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().join("data");
        let dir_flag = data_dir.to_str().unwrap();
        for command in [
            &[
                "create", "--kind", "api-key", "--scope", "full", "--name", "x",
            ][..],
            &["list"],
            &["revoke", "key_01"],
        ] {
            let mut args = vec!["--storage", "memory", "--data-dir", dir_flag];
            args.extend_from_slice(command);
            let error = run(keys_args(&args), None).await.unwrap_err();
            assert!(matches!(error, AdminError::MemoryStorage), "{error:?}");
            assert!(error.to_string().contains("--storage redb"), "{error}");
        }
        assert!(!data_dir.exists());
    }

    #[tokio::test]
    async fn redb_storage_is_opened_here_without_a_server() {
        let dir = tempfile::tempdir().unwrap();
        let dir_flag = dir.path().to_str().unwrap();
        let error = run(keys_args(&["--data-dir", dir_flag, "list"]), None)
            .await
            .unwrap_err();
        assert!(matches!(error, AdminError::NoData { .. }), "{error:?}");
        assert!(error.to_string().contains("does not exist"), "{error}");

        let create = [
            "--storage",
            "redb",
            "--data-dir",
            dir_flag,
            "create",
            "--kind",
            "api-key",
            "--scope",
            "setup",
            "--name",
            "ci",
        ];
        let reply = run(keys_args(&create), None).await.unwrap();
        let AdminReply::Created { key, .. } = reply else {
            panic!("{reply:?}");
        };
        let reply = run(keys_args(&["--data-dir", dir_flag, "list"]), None)
            .await
            .unwrap();
        assert!(
            matches!(&reply, AdminReply::Listed { keys } if keys.len() == 1 && keys[0].id == key.id),
            "{reply:?}"
        );
    }

    #[tokio::test]
    async fn a_bad_secret_key_is_an_open_error() {
        let dir = tempfile::tempdir().unwrap();
        let dir_flag = dir.path().to_str().unwrap();
        let create = [
            "--data-dir",
            dir_flag,
            "create",
            "--kind",
            "api-key",
            "--scope",
            "full",
            "--name",
            "x",
        ];
        let error = run(keys_args(&create), Some("not base64!"))
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                AdminError::Open {
                    storage: StorageKind::Redb,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(
            error
                .to_string()
                .starts_with("cannot open the redb storage: "),
            "{error}"
        );
    }
}
