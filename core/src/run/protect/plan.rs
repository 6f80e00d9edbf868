//! A provisioning plan (docs/data-protection.md, "Provisioning"): the statements that bring
//! each protected login to what the policies allow, each with its reason, as the provisioning
//! credential would run them.

use serde::Serialize;

/// One statement of a plan and why it is there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// The statement.
    pub sql: String,
    /// Why: what it grants, revokes or makes, and for which policy or table.
    pub reason: String,
}

/// What a plan does for one protected login (a credential of the database).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RolePlan {
    /// The login (the credential's username).
    pub role: String,
    /// Its statements, in the order they run.
    pub steps: Vec<Step>,
}

/// A whole plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// Per protected login, those with something to do.
    pub roles: Vec<RolePlan>,
    /// Policy columns that match no column of a table (they protect nothing).
    pub unmatched: Vec<String>,
    /// What the plan can't change with the provisioning credential's rights, with what to run
    /// instead (the verification refuses runs until it is done).
    pub notes: Vec<String>,
    /// For [`Provision::Catalog`]: the columns the provisioning login sees.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub catalog: Vec<CatalogColumn>,
}

/// One column of the catalog as the provisioning login sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CatalogColumn {
    /// Its schema.
    pub schema: String,
    /// Its table (or view).
    pub table: String,
    /// The column.
    pub column: String,
    /// Its type, as the database names it.
    #[serde(rename = "type")]
    pub type_name: String,
}

impl Plan {
    /// Whether it has nothing to do.
    pub fn is_empty(&self) -> bool {
        self.roles.iter().all(|r| r.steps.is_empty())
    }

    /// How many statements it runs.
    pub fn len(&self) -> usize {
        self.roles.iter().map(|r| r.steps.len()).sum()
    }
}

/// What [`provision`](crate::run::provision::provision) does.
#[derive(Clone, Copy, Debug)]
pub enum Provision {
    /// Connect, and nothing else (the provisioning credential's check-connection).
    Connect,
    /// Compute the plan.
    Plan,
    /// Read the columns the provisioning login sees, in the schemas provisioned.
    Catalog,
    /// Apply it, serialized by the advisory lock of this key.
    Apply(i64),
}

/// Why [`provision`](crate::run::provision::provision) did not answer a plan.
#[derive(Debug)]
pub enum ProvisionError {
    /// The provisioning login could not connect (the driver's message).
    Connect(String),
    /// The database refused a statement, or the plan can't be made (what to do).
    Refused(String),
    /// Provisioning is not built for this adapter (or this build).
    NotBuilt,
}
