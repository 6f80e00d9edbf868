//! `dbconsole backup`.

use std::path::PathBuf;

use clap::Args;

use super::store::{DATA_DIR_ENV, DEFAULT_DATA_DIR};

/// Shown after `dbconsole backup --help`.
const BACKUP_AFTER_HELP: &str = "\
The backup is the data as it was at one moment: every write a server acknowledged before the
command started is in it, and no write is in it by halves. While a server runs on DATA_DIR, the
command asks it through DATA_DIR/admin.sock, and the server writes FILE (so FILE is on the
server's machine, written by the server's user); writes go on meanwhile. Without a running
server the command opens the data file itself. FILE must not exist; it is written as
FILE.partial and renamed when complete. Secrets in it stay encrypted: restoring it needs the
secret key the data was written with (DATA_DIR/secret.key, or DBCONSOLE_SECRET_KEY), which the
backup does not hold; keep the key apart from the backups. Only the redb storage is backed up
here; a PostgreSQL store is backed up with PostgreSQL's own tools (pg_dump).";

/// The flags of `dbconsole backup`.
#[derive(Clone, Debug, Args)]
#[command(after_help = BACKUP_AFTER_HELP)]
pub struct BackupArgs {
    /// The file to write; it must not exist.
    #[arg(long, value_name = "FILE")]
    pub to: PathBuf,

    /// Directory of the redb data file (the same as `serve`'s).
    #[arg(long, env = DATA_DIR_ENV, default_value = DEFAULT_DATA_DIR)]
    pub data_dir: PathBuf,
}
