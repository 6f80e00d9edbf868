//! Where the storage is: [`DatabaseArgs`] (the PostgreSQL storage's flags, in `serve`, `keys`
//! and `sessions`) and [`StoreArgs`] (the storage flags `keys` and `sessions` share, each the
//! same as `serve`'s), with the data directory's default and variable every subcommand uses.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use dbconsole_core::model::Secret;

use super::values::secret_value;
use crate::backend::{StorageKind, StorageLocation};

/// The data directory when `--data-dir` and its variable are not given.
pub(super) const DEFAULT_DATA_DIR: &str = "./data";
/// The variable of `--data-dir` (every command that takes it).
pub(super) const DATA_DIR_ENV: &str = "DBCONSOLE_DATA_DIR";

/// The storage flags of `dbconsole keys` and `dbconsole sessions`, global to their
/// subcommands: the storage `serve` uses, the same flags and variables.
#[derive(Clone, Debug, Args)]
pub struct StoreArgs {
    /// Storage backend (the same as `serve`'s): `redb` or `postgres`; `memory` cannot be
    /// reached from another process.
    #[arg(
        long,
        env = "DBCONSOLE_STORAGE",
        value_enum,
        default_value_t = StorageKind::Redb,
        global = true
    )]
    pub storage: StorageKind,

    /// Directory of the redb data file (the same as `serve`'s).
    #[arg(
        long,
        env = DATA_DIR_ENV,
        default_value = DEFAULT_DATA_DIR,
        global = true
    )]
    pub data_dir: PathBuf,

    /// Where the PostgreSQL storage is (the same as `serve`'s).
    #[command(flatten)]
    pub database: DatabaseArgs,
}

impl StoreArgs {
    /// Where the storage is.
    pub fn location(&self) -> StorageLocation {
        self.database.location(&self.data_dir)
    }
}

/// The PostgreSQL storage's flags, shared by `serve`, `keys` and `sessions`.
#[derive(Clone, Debug, Args)]
pub struct DatabaseArgs {
    /// PostgreSQL URL for `--storage postgres`, e.g.
    /// postgres://dbconsole:PASSWORD@db.internal:5432/dbconsole?sslmode=require (never logged).
    #[arg(
        long,
        env = "DBCONSOLE_DATABASE_URL",
        hide_env_values = true,
        global = true
    )]
    #[arg(value_parser = secret_value)]
    pub database_url: Option<Secret>,

    /// PostgreSQL schema the tables live in (created when missing).
    #[arg(
        long,
        env = "DBCONSOLE_DATABASE_SCHEMA",
        default_value = "dbconsole",
        global = true
    )]
    pub database_schema: String,

    /// CA bundle (PEM) the PostgreSQL server certificate must chain to; with it, TLS is required
    /// and the host name verified.
    #[arg(long, env = "DBCONSOLE_DATABASE_CA_FILE", global = true)]
    pub database_ca_file: Option<PathBuf>,

    /// Bound in seconds on each PostgreSQL operation, waiting for a connection included; a
    /// request that reaches it answers 503.
    #[arg(
        long,
        env = "DBCONSOLE_DATABASE_TIMEOUT_SECS",
        default_value_t = 5,
        value_parser = clap::value_parser!(u64).range(1..),
        global = true
    )]
    pub database_timeout_secs: u64,
}

impl DatabaseArgs {
    /// The storage's location with this data directory.
    pub fn location(&self, data_dir: &std::path::Path) -> StorageLocation {
        StorageLocation {
            data_dir: data_dir.to_owned(),
            database_url: self.database_url.clone(),
            database_schema: self.database_schema.clone(),
            database_ca_file: self.database_ca_file.clone(),
            database_timeout: Duration::from_secs(self.database_timeout_secs),
            redb_cache_bytes: None,
        }
    }
}
