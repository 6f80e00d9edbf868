//! The command line: `dbconsole serve` and its flags, each also read from the environment.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::backend::StorageKind;

/// The `dbconsole` command line.
#[derive(Debug, Parser)]
#[command(
    name = "dbconsole",
    version,
    about = "The dbconsole control plane server"
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the HTTP API until SIGINT or SIGTERM.
    Serve(ServeArgs),
}

/// Shown after `dbconsole serve --help`: what the flags do not say.
const SERVE_AFTER_HELP: &str = "\
Callers' credentials come from the environment only:
  DBCONSOLE_API_KEY       API key for the database routes (x-api-key)
  DBCONSOLE_ACCESS_TOKEN  access token for the dashboard routes (Authorization: Bearer)
When neither is set, one of each is generated and printed once on standard output.
  DBCONSOLE_SECRET_KEY    base64 of the 32-byte key that encrypts secrets at rest (redb);
                          when unset, DATA_DIR/secret.key is used, created once (mode 0600)
Logs go to standard error; RUST_LOG filters them (default: info).";

/// The flags of `dbconsole serve`.
#[derive(Clone, Debug, Args)]
#[command(after_help = SERVE_AFTER_HELP)]
pub struct ServeArgs {
    /// Socket address to listen on; port 0 picks a free port (the bound address is printed).
    #[arg(long, env = "DBCONSOLE_LISTEN", default_value = "127.0.0.1:4000")]
    pub listen: SocketAddr,

    /// Storage backend.
    #[arg(long, env = "DBCONSOLE_STORAGE", value_enum, default_value_t = StorageKind::Redb)]
    pub storage: StorageKind,

    /// Directory of the redb data file and, unless DBCONSOLE_SECRET_KEY is set, of the secret
    /// key file; created when missing (unused by `memory`).
    #[arg(long, env = "DBCONSOLE_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,

    /// Check-connection timeout in seconds, for credentials that set none.
    #[arg(
        long,
        env = "DBCONSOLE_CHECK_TIMEOUT_SECS",
        default_value_t = 10,
        value_parser = clap::value_parser!(u64).range(1..)
    )]
    pub check_timeout_secs: u64,
}

impl ServeArgs {
    /// `--check-timeout-secs` as a duration.
    pub fn check_timeout(&self) -> Duration {
        Duration::from_secs(self.check_timeout_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::{ACCESS_TOKEN_VAR, API_KEY_VAR};
    use clap::CommandFactory;

    fn serve_args(args: &[&str]) -> Result<ServeArgs, clap::Error> {
        let cli = Cli::try_parse_from(["dbconsole", "serve"].iter().chain(args))?;
        let Command::Serve(args) = cli.command;
        Ok(args)
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn flags_parse_into_their_types() {
        let args = serve_args(&[
            "--listen",
            "0.0.0.0:8080",
            "--storage",
            "memory",
            "--data-dir",
            "/var/lib/dbconsole",
            "--check-timeout-secs",
            "3",
        ])
        .unwrap();
        assert_eq!(args.listen, "0.0.0.0:8080".parse().unwrap());
        assert_eq!(args.storage, StorageKind::Memory);
        assert_eq!(args.data_dir, PathBuf::from("/var/lib/dbconsole"));
        assert_eq!(args.check_timeout(), Duration::from_secs(3));
    }

    #[test]
    fn bad_values_are_rejected() {
        for bad in [
            &["--listen", "localhost"][..],
            &["--storage", "postgres"],
            &["--check-timeout-secs", "0"],
            &["--check-timeout-secs", "soon"],
            &["--no-such-flag"],
        ] {
            assert!(serve_args(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn help_names_the_credential_variables() {
        assert!(SERVE_AFTER_HELP.contains(API_KEY_VAR));
        assert!(SERVE_AFTER_HELP.contains(ACCESS_TOKEN_VAR));
    }
}
