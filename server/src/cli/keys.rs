//! `dbconsole keys`: the stored API keys and access tokens, and the seal keys.

use clap::builder::TypedValueParser;
use clap::{Args, Subcommand};
use dbconsole_core::model::Role;
use dbconsole_core::{CredentialKind, Scope};

use super::store::StoreArgs;
use super::values::wire_names;

/// Shown after `dbconsole keys --help`.
const KEYS_AFTER_HELP: &str = "\
Keys live in the storage `serve` uses (the same --storage, --data-dir and --database-url), as
SHA-256 digests only: a secret is printed once, by `keys create`, and cannot be shown again.
With --storage postgres the commands work on the shared database, and every node honours a
new or revoked key from its next request. With redb (the default) they work on the data file of
DATA_DIR. The commands work whether or not a server is running on DATA_DIR: when one is,
they ask it through DATA_DIR/admin.sock, and a revoke takes effect from its next request.
Without a running server they open the data file themselves, with the same secret key as
`serve`:
  DBCONSOLE_SECRET_KEY    the seal keys that encrypt secrets at rest (base64 of a 32-byte
                          key, or <id>:<base64> per key); when unset, DATA_DIR/secret.key
                          is used
With --storage memory the commands fail: a memory store lives inside its server process, which
no other process can reach.
API keys (x-api-key) are for the database routes, access tokens (Authorization: Bearer) for the
dashboard routes. Scope `setup` allows only PUT /api/v1/console/databases/setup and
DELETE /api/v1/console/databases/remove/{api_id}; anything else answers 403.";

/// The flags of `dbconsole keys`.
#[derive(Clone, Debug, Args)]
#[command(after_help = KEYS_AFTER_HELP)]
pub struct KeysArgs {
    /// Where the keys are stored.
    #[command(flatten)]
    pub store: StoreArgs,

    /// What to do with the keys.
    #[command(subcommand)]
    pub command: KeysCommand,
}

/// The subcommands of `dbconsole keys`.
#[derive(Clone, Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key and print its secret, once.
    Create(CreateKeyArgs),
    /// List the stored keys (never a secret).
    List,
    /// Revoke (delete) a key: requests with it fail with 401 from then on.
    Revoke {
        /// The key's id (`key_…`), as `keys list` shows it.
        id: String,
    },
    /// Rotate the seal key that encrypts stored secrets, while the server keeps serving: make
    /// a new key current (on redb, made here when none waits in the key file; on PostgreSQL,
    /// the one `add-seal-key` added and every node has), seal every stored secret again, and
    /// retire the old key. Run it again to finish a rotation that was cut off.
    #[command(name = "rotate-seal")]
    RotateSeal {
        /// Databases sealed again per page.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..).map(usize::from))]
        batch: usize,
    },
    /// Show the store's seal keys: the current one, and those stored secrets may still need.
    #[command(name = "seal-status")]
    SealStatus,
    /// Add a new random seal key to the data directory's key file, for `rotate-seal` to make
    /// current (on PostgreSQL, copy the file to every node and restart them first).
    #[command(name = "add-seal-key")]
    AddSealKey,
}

/// The flags of `dbconsole keys create`.
#[derive(Clone, Debug, Args)]
pub struct CreateKeyArgs {
    /// An API key (database routes, `x-api-key`) or an access token (dashboard routes,
    /// `Authorization: Bearer`).
    #[arg(long, value_parser = wire_names(CredentialKind::ALL, CredentialKind::as_str))]
    pub kind: CredentialKind,

    /// What the key allows: everything; only setup and remove by api_id; only running
    /// queries as its user (`query`), or as an AI agent for its user (`ai-agent`).
    #[arg(long, value_parser = wire_names(Scope::ALL, Scope::as_str))]
    pub scope: Scope,

    /// What the key is for (shown by `keys list`); at most 100 characters.
    #[arg(long)]
    pub name: String,

    /// The user the key acts for (e-mail or login): only a key bound to a user runs queries,
    /// and restricted databases grant access to users and groups.
    #[arg(long)]
    pub user: Option<String>,

    /// The user's groups, comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub groups: Vec<String>,

    /// The user's role: `member` (default) queries what permissions allow; `super-admin`
    /// queries every database.
    #[arg(long, value_parser = wire_names(Role::ALL, Role::as_str))]
    pub role: Option<Role>,
}
