//! Who may use a database (permissions) and how its data is protected (policies, possibly
//! inherited from another database).
//!
//! Permissions and policies belong to their database: they are written by their own endpoints
//! but deleted with the database, in the same atomic change.

/// Who a permission is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SubjectKind {
    /// One user, named by e-mail or login.
    User,
    /// A group of users.
    Group,
}

/// What a permission allows, each level including the ones before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessLevel {
    /// Run queries (subject to the credential's required reviews).
    Query,
    /// Also review other people's queries.
    Review,
    /// Also manage the database record, its permissions and its policies.
    Admin,
}

/// One grant of access to a database whose `restrict_access` is true.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Permission {
    /// User or group.
    pub subject_kind: SubjectKind,
    /// The user's e-mail or login, or the group's name; unique per kind within a database.
    pub subject: String,
    /// What it allows.
    pub access: AccessLevel,
}

/// What a policy does to a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ColumnAction {
    /// The column is left out of results.
    Hide,
    /// The column's values are replaced by a mask.
    Mask,
}

/// What a masked column's values become.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MaskKind {
    /// `****`.
    #[default]
    Full,
    /// The first and last few characters kept around `****` (`jo****`); a value no longer than
    /// what is kept is `****`.
    Partial,
    /// The domain of an e-mail address kept (`****@example.com`); anything else is `****`.
    Email,
    /// NULL.
    Null,
}

/// How a masked column is masked (`Full` unless the policy says otherwise).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mask {
    /// Which mask.
    pub kind: MaskKind,
    /// For a partial mask: how many characters are kept at the start.
    pub keep_first: u8,
    /// For a partial mask: how many characters are kept at the end.
    pub keep_last: u8,
}

impl Mask {
    /// The most characters a partial mask keeps at either end.
    pub const MAX_KEPT: u8 = 16;

    /// The mask as the stored action's suffix (`partial:2:0`, `email`, `null`); `None` for the
    /// full mask.
    pub fn encode(&self) -> Option<String> {
        match self.kind {
            MaskKind::Full => None,
            MaskKind::Partial => Some(format!("partial:{}:{}", self.keep_first, self.keep_last)),
            other => Some(other.as_str().to_owned()),
        }
    }

    /// The mask [`Mask::encode`] wrote.
    pub fn decode(text: &str) -> Option<Self> {
        let mut parts = text.split(':');
        let kind: MaskKind = parts.next()?.parse().ok()?;
        let mut kept = || -> Option<u8> { parts.next()?.parse().ok() };
        Some(match kind {
            MaskKind::Partial => Self {
                kind,
                keep_first: kept()?,
                keep_last: kept()?,
            },
            kind => Self {
                kind,
                ..Self::default()
            },
        })
    }
}

/// One column a policy protects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnRule {
    /// The column, as `table.column` or `schema.table.column`.
    pub column: String,
    /// Hide or mask.
    pub action: ColumnAction,
    /// How a masked column is masked (the full mask for a hidden one).
    pub mask: Mask,
}

/// A named data protection policy of a database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Name, unique within the database.
    pub name: String,
    /// What the policy is for.
    pub description: Option<String>,
    /// The columns it protects (at least one), each once.
    pub columns: Vec<ColumnRule>,
    /// Who sees the values anyway (users and groups), each once: a caller exempt from every
    /// policy that applies runs as the provisioning credential.
    pub exempt: Vec<Exemption>,
}

/// A user or a group a policy exempts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Exemption {
    /// User or group.
    pub subject_kind: SubjectKind,
    /// The user's e-mail or login, or the group's name.
    pub subject: String,
}

impl Exemption {
    /// Whether it names `principal` (the user, or one of its groups).
    pub fn names(&self, principal: &super::Principal) -> bool {
        match self.subject_kind {
            SubjectKind::User => super::identity::same(&principal.user, &self.subject),
            SubjectKind::Group => principal
                .groups
                .iter()
                .any(|g| super::identity::same(g, &self.subject)),
        }
    }
}

/// A database's data protection: its own policies, and the database whose policies it inherits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataProtection {
    /// The id of another existing database whose policies also apply here; never this database,
    /// never a chain that leads back here.
    pub inherits_from: Option<String>,
    /// The database's own policies.
    pub policies: Vec<Policy>,
    /// The login dbconsole provisions the protected roles with, when the document names one.
    pub provisioning: Option<Provisioning>,
}

/// The provisioning credential of a data protection document (docs/data-protection.md,
/// "Provisioning"): a login that owns the protected tables (or may grant them), with which
/// dbconsole grants each of the database's credentials what the policies allow and makes
/// their masking views.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provisioning {
    /// The login: its id names its sealed password's place; `username` and `password` only
    /// are used (host, port and TLS are the database's).
    pub credential: super::Credential,
    /// The schemas provisioned; empty: every schema the login sees but the system ones.
    pub schemas: Vec<String>,
    /// Whether a plan that is out of date is applied without waiting for someone to apply it.
    pub auto_apply: bool,
}

/// The access-control part of a database: stored beside it, deleted with it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessControl {
    /// Grants of access, in order.
    pub permissions: Vec<Permission>,
    /// Policies and inheritance.
    pub data_protection: DataProtection,
}

wire_enum!(SubjectKind, [User => "user", Group => "group"]);
wire_enum!(AccessLevel, [Query => "query", Review => "review", Admin => "admin"]);
wire_enum!(ColumnAction, [Hide => "hide", Mask => "mask"]);
wire_enum!(MaskKind, [Full => "full", Partial => "partial", Email => "email", Null => "null"]);
