//! `dbconsole`: the reference server of dbconsole. Flags, environment and behaviour are
//! described in the crate docs of [`dbconsole_server`]; `dbconsole serve --help` lists them.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use dbconsole_core::ConsoleService;
use dbconsole_server::credentials::{ACCESS_TOKEN_VAR, API_KEY_VAR};
use dbconsole_server::{CallerCredentials, Cli, Command, ServeArgs, ShutdownSignal};
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
        .open(
            &args.data_dir,
            std::env::var(dbconsole_server::backend::SECRET_KEY_VAR)
                .ok()
                .as_deref(),
        )
        .map_err(|error| format!("cannot open the {} storage: {error}", args.storage))?;
    let credentials = CallerCredentials::from_env()
        .map_err(|error| format!("cannot generate credentials: {error}"))?;
    let service = ConsoleService::builder(storage, Arc::new(credentials.authenticator()))
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

    if !credentials.has_api_key() {
        tracing::warn!("{API_KEY_VAR} is not set: the database routes accept no API key");
    }
    if !credentials.has_access_token() {
        tracing::warn!("{ACCESS_TOKEN_VAR} is not set: the dashboard routes accept no token");
    }
    tracing::info!(
        %address,
        storage = %args.storage,
        generated_credentials = credentials.generated(),
        "listening"
    );
    let mut stdout = std::io::stdout().lock();
    credentials
        .write_generated(&mut stdout)
        .and_then(|()| writeln!(stdout, "listening on {address}"))
        .and_then(|()| stdout.flush())
        .map_err(|error| format!("cannot write to standard output: {error}"))?;
    drop(stdout);

    dbconsole_server::serve(listener, service, signal.recv()).await;
    Ok(())
}
