//! `dbconsole`: the reference server of dbconsole and the management of its stored keys.
//! Flags, environment and behaviour are described in the crate docs of [`dbconsole_server`];
//! `dbconsole serve --help` and `dbconsole keys --help` list them.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use dbconsole_core::ConsoleService;
use dbconsole_core::auth::StoredCredentials;
use dbconsole_core::{CredentialKind, Storage};
use dbconsole_server::backend::secret_key_from_env;
use dbconsole_server::credentials::{self, ACCESS_TOKEN_VAR, API_KEY_VAR, EnvCredentials};
use dbconsole_server::{Cli, Command, KeysArgs, ServeArgs, ShutdownSignal, StorageKind, keys};
use tokio::net::TcpListener;

fn main() -> ExitCode {
    let Cli { command } = Cli::parse();
    dbconsole_server::init_tracing();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the async runtime: {error}"))
        .and_then(|runtime| match command {
            Command::Serve(args) => runtime.block_on(serve(args)),
            Command::Keys(args) => runtime.block_on(manage_keys(args)),
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("dbconsole: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Storage + authenticator + service, then the serving loop until a signal.
async fn serve(args: ServeArgs) -> Result<(), String> {
    let storage = args
        .storage
        .open(&args.data_dir, secret_key_from_env().as_deref())
        .map_err(|error| format!("cannot open the {} storage: {error}", args.storage))?;
    let env = EnvCredentials::from_env();
    let authenticator = StoredCredentials::new(Arc::clone(&storage), env.static_credentials());
    let service = ConsoleService::builder(Arc::clone(&storage), Arc::new(authenticator))
        .checkers(dbconsole_core::check::standard_checkers())
        .check_timeout(args.check_timeout())
        .build();

    let signal = ShutdownSignal::install()
        .map_err(|error| format!("cannot install signal handlers: {error}"))?;
    let listener = TcpListener::bind(args.listen)
        .await
        .map_err(|error| format!("cannot listen on {}: {error}", args.listen))?;
    let address = listener
        .local_addr()
        .map_err(|error| format!("cannot read the bound address: {error}"))?;
    #[cfg(unix)]
    let admin = match args.storage {
        StorageKind::Redb => Some(
            dbconsole_server::admin::AdminSocket::bind(&args.data_dir, Arc::clone(&storage))
                .map_err(|error| {
                    format!(
                        "cannot create the admin socket in {}: {error}",
                        args.data_dir.display()
                    )
                })?,
        ),
        StorageKind::Memory => None,
    };

    // After everything that can fail before serving: keys created here are printed below.
    let created = credentials::bootstrap(&*storage, &env)
        .await
        .map_err(|error| format!("cannot create the initial keys: {error}"))?;
    warn_about_missing_credentials(&*storage, &env).await;
    tracing::info!(
        %address,
        storage = %args.storage,
        created_keys = created.is_some(),
        "listening"
    );
    let mut stdout = std::io::stdout().lock();
    created
        .as_ref()
        .map_or(Ok(()), |created| created.write(&mut stdout))
        .and_then(|()| writeln!(stdout, "listening on {address}"))
        .and_then(|()| stdout.flush())
        .map_err(|error| format!("cannot write to standard output: {error}"))?;
    drop(stdout);
    drop(created);

    dbconsole_server::serve(listener, service, signal.recv()).await;
    #[cfg(unix)]
    if let Some(admin) = admin {
        admin.shutdown().await;
    }
    Ok(())
}

/// A warning for each kind of route that no credential can open yet.
async fn warn_about_missing_credentials(storage: &dyn Storage, env: &EnvCredentials) {
    let stored = match storage.list_caller_keys().await {
        Ok(keys) => keys,
        Err(error) => {
            tracing::warn!(%error, "cannot list the stored keys");
            return;
        }
    };
    let stored_kind = |kind| stored.iter().any(|key| key.kind == kind);
    if !env.has_api_key() && !stored_kind(CredentialKind::ApiKey) {
        tracing::warn!(
            "no {API_KEY_VAR} is set and no API key is stored: the database routes accept none \
             until one is created with `dbconsole keys create --kind api-key`"
        );
    }
    if !env.has_access_token() && !stored_kind(CredentialKind::AccessToken) {
        tracing::warn!(
            "no {ACCESS_TOKEN_VAR} is set and no access token is stored: the dashboard routes \
             accept none until one is created with `dbconsole keys create --kind access-token`"
        );
    }
}

/// `dbconsole keys …`: the reply on standard output, a failure as the error.
async fn manage_keys(args: KeysArgs) -> Result<(), String> {
    let reply = keys::run(args, secret_key_from_env().as_deref()).await?;
    keys::print_reply(&reply, &mut std::io::stdout().lock())
}
