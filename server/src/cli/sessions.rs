//! `dbconsole sessions`: browser sessions and one-time sign-in links.

use clap::{Args, Subcommand};
use dbconsole_core::model::Role;

use super::store::StoreArgs;
use super::values::{public_url, wire_names};

/// `--storage`'s help here: [`StoreArgs`]' without its word on `memory`, as `sessions` has
/// always said it.
const STORAGE_HELP: &str = "Storage backend (the same as `serve`'s): `redb` or `postgres`";

/// The flags of `dbconsole sessions`.
#[derive(Clone, Debug, Args)]
#[command(mut_arg("storage", |storage| storage.help(STORAGE_HELP)))]
pub struct SessionsArgs {
    /// Where the sessions are stored.
    #[command(flatten)]
    pub store: StoreArgs,

    /// What to do with the sessions.
    #[command(subcommand)]
    pub command: SessionsCommand,
}

/// The subcommands of `dbconsole sessions`.
#[derive(Clone, Debug, Subcommand)]
pub enum SessionsCommand {
    /// List the browser sessions and unused sign-in links (never a secret: none is stored).
    List,
    /// End a session or link at once, on every node: by id, or every one of a user.
    Revoke {
        /// The session's id (`ses_…`), as `sessions list` shows it.
        id: Option<String>,
        /// Every session and link of this user.
        #[arg(long)]
        user: Option<String>,
    },
    /// Make a one-time sign-in link for a user (15 minutes, single use) and print it, once.
    Link {
        /// The user it signs in (e-mail or login).
        #[arg(long)]
        user: String,
        /// The user's groups, comma-separated.
        #[arg(long, value_delimiter = ',')]
        groups: Vec<String>,
        /// `member` (default) or `super-admin`.
        #[arg(long, value_parser = wire_names(Role::ALL, Role::as_str))]
        role: Option<Role>,
        /// The console's public URL, which the printed link starts with (default: the one the
        /// running server recorded in the store at its start).
        #[arg(long, env = "DBCONSOLE_PUBLIC_URL", value_parser = public_url)]
        public_url: Option<String>,
    },
    /// Invite a person (7 days, single use): the link enrolls them with a passkey; print it,
    /// once. A super admin invites from the console's Users screen too.
    Invite {
        /// The person (e-mail or login).
        #[arg(long)]
        user: String,
        /// Their groups, comma-separated.
        #[arg(long, value_delimiter = ',')]
        groups: Vec<String>,
        /// `member` (default) or `super-admin`.
        #[arg(long, value_parser = wire_names(Role::ALL, Role::as_str))]
        role: Option<Role>,
        /// The console's public URL, which the printed link starts with (default: the one the
        /// running server recorded in the store at its start).
        #[arg(long, env = "DBCONSOLE_PUBLIC_URL", value_parser = public_url)]
        public_url: Option<String>,
    },
}
