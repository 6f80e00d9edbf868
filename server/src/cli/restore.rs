//! `dbconsole restore`.

use std::path::PathBuf;

use clap::Args;

use super::store::{DATA_DIR_ENV, DEFAULT_DATA_DIR};

/// Shown after `dbconsole restore --help`.
const RESTORE_AFTER_HELP: &str = "\
DATA_DIR must hold no data file (a new directory is created). The backup's secrets are
encrypted under the key its data was written with: give that key as DBCONSOLE_SECRET_KEY, or
copy the original DATA_DIR/secret.key into DATA_DIR first. The file is checked (a dbconsole data
file, in a format this version reads, under that key) before it is put in place; the backup
itself is never changed. Then start `dbconsole serve` on DATA_DIR.";

/// The flags of `dbconsole restore`.
#[derive(Clone, Debug, Args)]
#[command(after_help = RESTORE_AFTER_HELP)]
pub struct RestoreArgs {
    /// The backup to restore, written by `dbconsole backup`.
    #[arg(long, value_name = "FILE")]
    pub from: PathBuf,

    /// The data directory to restore into; it must hold no data file.
    #[arg(long, env = DATA_DIR_ENV, default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
}
