//! Database connection records and their credentials, as stored.

use super::{CredentialId, DatabaseId, SealedSecret, Timestamp};

/// The database engines the console can connect to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Adapter {
    /// PostgreSQL.
    Postgres,
    /// MySQL and MariaDB.
    Mysql,
    /// ClickHouse, over HTTP.
    Clickhouse,
    /// Microsoft SQL Server.
    Sqlserver,
    /// Oracle Database.
    Oracle,
}

wire_enum!(Adapter, [
    Postgres => "postgres",
    Mysql => "mysql",
    Clickhouse => "clickhouse",
    Sqlserver => "sqlserver",
    Oracle => "oracle",
]);

impl Adapter {
    /// The port a connection uses when the record has none.
    pub fn default_port(self, ssl: bool) -> u16 {
        match self {
            Adapter::Postgres => 5432,
            Adapter::Mysql => 3306,
            Adapter::Clickhouse if ssl => 8443,
            Adapter::Clickhouse => 8123,
            Adapter::Sqlserver => 1433,
            Adapter::Oracle => 1521,
        }
    }
}

/// A database connection record with its credentials: one aggregate, stored and changed as a
/// whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Database {
    /// Assigned by the service (`db_…`).
    pub id: DatabaseId,
    /// External id; set only for databases created through setup.
    pub api_id: Option<String>,
    /// Display name.
    pub name: String,
    /// Which engine.
    pub adapter: Adapter,
    /// Host name or IP address of the server.
    pub hostname: String,
    /// Port; `None` means the adapter's default ([`Adapter::default_port`]).
    pub port: Option<u16>,
    /// Name of the database to connect to.
    pub database: String,
    /// Whether connections use TLS.
    pub ssl: bool,
    /// Whether the server certificate must also match the host name (needs a CA certificate).
    pub verify_server_hostname: bool,
    /// Whether access must be granted explicitly.
    pub restrict_access: bool,
    /// Whether a super admin may bypass required reviews.
    pub review_bypass_allowed: bool,
    /// UI group.
    pub group: Option<String>,
    /// Chat channel for query request notifications.
    pub slack_channel: Option<String>,
    /// Tunnel used to reach a private network.
    pub tunnel_id: Option<String>,
    /// Whether the AI agent may use this database.
    pub ai_enabled: bool,
    /// Row limit for the AI agent's queries.
    pub ai_max_rows: u32,
    /// Run-time parameters sent to PostgreSQL at connection start, in order.
    pub connection_parameters: Vec<ConnectionParameter>,
    /// The credentials, in the order the last write gave them.
    pub credentials: Vec<Credential>,
    /// Certificate and key material.
    pub tls: TlsMaterial,
    /// Creation time.
    pub inserted_at: Timestamp,
    /// Time of the last change; strictly increases.
    pub updated_at: Timestamp,
}

/// The list of a record's fields a change names (their wire names, in this order), and the
/// comparison that names them: written once, for the audit diff and for the stored form of an
/// event's changes (which stores a name by its position: only ever append).
macro_rules! changed_fields {
    ($record:ident, $list:ident, $($field:ident),* $(,)?) => {
        /// The fields of a [`
        #[doc = stringify!($record)]
        /// `] a change names, by wire name, in their stored order.
        pub const $list: &[&str] = &[$(stringify!($field)),*];

        impl $record {
            /// The names of the fields of [`
            #[doc = stringify!($list)]
            /// `] whose values differ between `self` and `other`, in that order.
            pub fn changed_fields<'a>(&'a self, other: &'a Self) -> impl Iterator<Item = &'static str> + 'a {
                [$((stringify!($field), self.$field != other.$field)),*]
                    .into_iter()
                    .filter_map(|(name, changed)| changed.then_some(name))
            }
        }
    };
}

changed_fields!(
    Database,
    DATABASE_FIELDS,
    api_id,
    name,
    adapter,
    hostname,
    port,
    database,
    ssl,
    verify_server_hostname,
    restrict_access,
    review_bypass_allowed,
    group,
    slack_channel,
    tunnel_id,
    ai_enabled,
    ai_max_rows,
    connection_parameters,
);

changed_fields!(
    Credential,
    CREDENTIAL_FIELDS,
    username,
    password,
    hostname,
    ai_allowed,
    timeout,
    reviews_required,
    default_credential,
);

impl Database {
    /// The port a connection uses: the stored one or the adapter's default.
    pub fn effective_port(&self) -> u16 {
        self.port
            .unwrap_or_else(|| self.adapter.default_port(self.ssl))
    }

    /// What a statement run as `credential` reaches, as a digest (hex SHA-256): the adapter,
    /// host, port, database name, tunnel and connection parameters, and the credential's
    /// username and host. Not its password or timeout: a rotated password logs in as the same
    /// role. A query keeps it from its creation, so its approvals never cover a statement run
    /// somewhere else (docs/queries.md, "Reviews").
    pub fn target_digest(&self, credential: &Credential) -> String {
        use sha2::{Digest as _, Sha256};
        let parameters: Vec<[&str; 2]> = self
            .connection_parameters
            .iter()
            .map(|p| [p.name.as_str(), p.value.as_str()])
            .collect();
        let canonical = serde_json::json!([
            self.adapter.as_str(),
            self.hostname,
            self.effective_port(),
            self.database,
            self.tunnel_id,
            parameters,
            credential.username,
            credential.hostname,
        ]);
        format!("{:x}", Sha256::digest(canonical.to_string().as_bytes()))
    }

    /// Where `credential`'s password goes, as a digest (SHA-256): the adapter, host (the
    /// credential's, else the database's), port, tunnel and TLS settings (whether TLS is used,
    /// whether the host name is verified, whether a CA certificate is set: a new CA certificate
    /// holds the passwords kept back by itself, [`HELD`]). Nothing is opened. A stored password
    /// goes only where it was given for ([`Credential::password_for`]).
    pub fn destination(&self, credential: &Credential) -> [u8; 32] {
        self.destination_via(credential.hostname.as_deref())
    }

    /// [`Database::destination`] of a login whose host is `hostname` (`None`: the
    /// database's).
    pub fn destination_via(&self, hostname: Option<&str>) -> [u8; 32] {
        use sha2::{Digest as _, Sha256};
        let ca = self.tls.ca_cert.is_some();
        let canonical = serde_json::json!([
            self.adapter.as_str(),
            hostname.unwrap_or(&self.hostname),
            self.effective_port(),
            self.tunnel_id,
            self.ssl,
            self.verify_server_hostname,
            ca,
        ]);
        Sha256::digest(canonical.to_string().as_bytes()).into()
    }

    /// The credential with this username (usernames are unique within a database and compare
    /// with case).
    pub fn credential_by_username(&self, username: &str) -> Option<&Credential> {
        self.credentials.iter().find(|c| c.username == username)
    }
}

/// The [`Credential::password_for`] of a password held back whatever the destination (one kept
/// by an update that gave the database another CA certificate): no destination digests to it.
pub const HELD: [u8; 32] = [0; 32];

/// One `{name, value}` run-time parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionParameter {
    /// Parameter name; never `user` or `database`.
    pub name: String,
    /// Parameter value, kept as given (`""` included).
    pub value: String,
}

/// A credential of a database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    /// Assigned by the service (`crd_…`).
    pub id: CredentialId,
    /// Login name; unique within the database, compared with case.
    pub username: String,
    /// Login password, sealed; never part of a response.
    pub password: Option<SealedSecret>,
    /// Where the password was given for ([`Database::destination`]): it is sent nowhere else.
    /// `None` for one stored before dbconsole kept this (bound to where it goes at the next
    /// change of the destination).
    pub password_for: Option<[u8; 32]>,
    /// Overrides the database's host name when set.
    pub hostname: Option<String>,
    /// Whether the AI may run queries as this credential.
    pub ai_allowed: bool,
    /// Connect timeout in whole seconds.
    pub timeout: Option<u32>,
    /// Reviews a query needs before it runs.
    pub reviews_required: u32,
    /// Marks the database's default credential.
    pub default_credential: bool,
}

/// Certificates and keys for TLS connections: the decoded bytes of the base64 the client sent
/// (PEM text, or DER). Records hold them sealed (the default `S`); never part of a response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsMaterial<S = SealedSecret> {
    /// CA certificate(s) the server chain is verified against.
    pub ca_cert: Option<S>,
    /// Client certificate presented to the server.
    pub client_cert: Option<S>,
    /// Key of the client certificate.
    pub client_key: Option<S>,
}

impl<S> Default for TlsMaterial<S> {
    fn default() -> Self {
        Self {
            ca_cert: None,
            client_cert: None,
            client_key: None,
        }
    }
}

impl<S> TlsMaterial<S> {
    /// One field.
    pub fn get(&self, field: TlsField) -> Option<&S> {
        match field {
            TlsField::CaCert => self.ca_cert.as_ref(),
            TlsField::ClientCert => self.client_cert.as_ref(),
            TlsField::ClientKey => self.client_key.as_ref(),
        }
    }

    /// One field, to set.
    pub fn get_mut(&mut self, field: TlsField) -> &mut Option<S> {
        match field {
            TlsField::CaCert => &mut self.ca_cert,
            TlsField::ClientCert => &mut self.client_cert,
            TlsField::ClientKey => &mut self.client_key,
        }
    }
}

/// The fields of [`TlsMaterial`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TlsField {
    /// The CA certificate(s) (`ssl_ca_cert`).
    CaCert,
    /// The client certificate (`ssl_cert`).
    ClientCert,
    /// The client certificate's key (`ssl_key`).
    ClientKey,
}

impl TlsField {
    /// Every field, in order.
    pub const ALL: [TlsField; 3] = [TlsField::CaCert, TlsField::ClientCert, TlsField::ClientKey];

    /// The field's name in a request body.
    pub fn body_key(self) -> &'static str {
        match self {
            TlsField::CaCert => "ssl_ca_cert",
            TlsField::ClientCert => "ssl_cert",
            TlsField::ClientKey => "ssl_key",
        }
    }

    /// The field's name in the place a sealed value is bound to.
    pub fn place_name(self) -> &'static str {
        match self {
            TlsField::CaCert => "ca_cert",
            TlsField::ClientCert => "client_cert",
            TlsField::ClientKey => "client_key",
        }
    }
}
