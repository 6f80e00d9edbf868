//! The command line: `dbconsole serve`, `keys`, `sessions`, `backup` and `restore`, their flags
//! each also read from the environment. One file per subcommand; `store.rs` holds the flags
//! that say where the storage is (shared by `serve`, `keys` and `sessions`), `values.rs` the
//! value parsers several subcommands share.

mod backup;
mod keys;
mod restore;
mod serve;
mod sessions;
mod store;
mod values;

use clap::{Parser, Subcommand};

pub use backup::BackupArgs;
pub use keys::{CreateKeyArgs, KeysArgs, KeysCommand};
pub use restore::RestoreArgs;
pub use serve::ServeArgs;
pub use sessions::{SessionsArgs, SessionsCommand};
pub use store::{DatabaseArgs, StoreArgs};

/// The `dbconsole` command line.
#[derive(Debug, Parser)]
#[command(
    name = "dbconsole",
    version,
    about = "The dbconsole control plane server"
)]
pub struct Cli {
    /// The format of the log lines on standard error: `text` for people, `json` for one JSON
    /// object per line (with the request's `request_id` in its span).
    #[arg(
        long,
        global = true,
        env = "DBCONSOLE_LOG_FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,

    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The command line `args` (program name first), completed by the environment (`env` looks
    /// a variable up) and by the TOML file of `serve --config`: a setting of the file is used
    /// only where neither the command line nor the environment gives one.
    pub fn load(
        args: Vec<std::ffi::OsString>,
        env: impl Fn(&str) -> bool,
    ) -> Result<Self, clap::Error> {
        use clap::CommandFactory;
        use clap::parser::ValueSource;

        let cli = Self::try_parse_from(&args)?;
        let Command::Serve(ServeArgs {
            config: Some(path), ..
        }) = &cli.command
        else {
            return Ok(cli);
        };
        let invalid =
            |message: String| Self::command().error(clap::error::ErrorKind::InvalidValue, message);
        let text = std::fs::read_to_string(path)
            .map_err(|error| invalid(format!("cannot read {}: {error}", path.display())))?;
        let table: toml::Table = text
            .parse()
            .map_err(|error| invalid(format!("{} is not valid TOML: {error}", path.display())))?;
        let mut command = Self::command();
        command.build();
        let matches = command.clone().try_get_matches_from(&args)?;
        let serve = command
            .find_subcommand("serve")
            .expect("the serve command")
            .clone();
        let serve_matches = matches.subcommand_matches("serve").expect("serve matched");
        let mut extra = Vec::new();
        for (key, value) in &table {
            let Some(arg) = serve
                .get_arguments()
                .find(|arg| arg.get_long() == Some(key.as_str()) && key != "config")
            else {
                return Err(invalid(format!(
                    "{}: unknown setting `{key}` (settings are the long flags of `dbconsole serve`)",
                    path.display()
                )));
            };
            let value = match value {
                toml::Value::String(text) => text.clone(),
                toml::Value::Integer(number) => number.to_string(),
                toml::Value::Boolean(flag) => flag.to_string(),
                other => {
                    return Err(invalid(format!(
                        "{}: `{key}` must be a string, a number or a boolean, not {}",
                        path.display(),
                        other.type_str()
                    )));
                }
            };
            let id = arg.get_id().as_str();
            // Globals (`log-format`) are propagated into the subcommand's matches.
            let from_command_line =
                serve_matches.value_source(id) == Some(ValueSource::CommandLine);
            let from_env = arg
                .get_env()
                .and_then(|name| name.to_str())
                .is_some_and(&env);
            if !from_command_line && !from_env {
                extra.push(std::ffi::OsString::from(format!("--{key}={value}")));
            }
        }
        let mut args = args;
        args.extend(extra);
        Self::try_parse_from(args)
    }
}

/// The format of the log lines (`--log-format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One line of text per event, for people.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
#[allow(
    clippy::large_enum_variant,
    reason = "parsed once at start; boxing the serve flags would buy nothing"
)]
pub enum Command {
    /// Serve the HTTP API until SIGINT or SIGTERM.
    Serve(ServeArgs),
    /// Create, list and revoke the stored API keys and access tokens (of the redb or PostgreSQL
    /// storage `serve` uses).
    Keys(KeysArgs),
    /// List and end browser sessions, and make one-time sign-in links (of the redb or
    /// PostgreSQL storage `serve` uses).
    Sessions(SessionsArgs),
    /// Write a consistent copy of the redb data to a new file, while a server runs or not.
    Backup(BackupArgs),
    /// Put a backup in place as the data of an empty data directory.
    Restore(RestoreArgs),
}

#[cfg(test)]
mod tests;
