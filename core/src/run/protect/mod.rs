//! Data protection on every result (docs/data-protection.md): the columns a database's
//! policies protect (its own and those it inherits, the whole chain), and how a result column
//! that comes from one is written. The guarantee itself is the database's: a run on a database
//! with policies runs as a role that can't read what they protect, verified before anything of
//! the statement reaches the server (PostgreSQL: `run::postgres`); a runner that can't enforce
//! it runs nothing there ([`super::QueryRunner::protects`]).
//!
//! ---
//!
//! *The manual's page on this part, as the repository shows it:*
#![doc = include_str!("../../../../docs/data-protection.md")]

use std::fmt;

pub mod plan;

use crate::model::{ColumnAction, DataProtection, Exemption, Mask, Principal};

/// The text every non-NULL value of a masked column becomes.
pub const MASK: &str = "****";

/// The type name a masked column reports.
pub const MASKED_TYPE: &str = "masked";

/// One protected column, as a policy names it (names compared without regard to case).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtectedColumn {
    /// The policy that protects it.
    pub policy: String,
    /// The database whose policy it is (this one, or one it inherits from).
    pub database_id: String,
    /// The schema, when the policy names one (`schema.table.column`): otherwise any.
    pub schema: Option<String>,
    /// The table, when the policy names one: otherwise any.
    pub table: Option<String>,
    /// The column.
    pub column: String,
    /// What happens to it in a result.
    pub action: ColumnAction,
    /// How it is masked, when it is.
    pub mask: Mask,
    /// Who its policy exempts.
    pub exempt: Vec<Exemption>,
    /// As the policy wrote it.
    pub named: String,
}

impl ProtectedColumn {
    /// Whether it is `column` of `schema.table`.
    pub fn is(&self, schema: &str, table: &str, column: &str) -> bool {
        self.protects_table(schema, table) && same_name(&self.column, column)
    }

    /// Whether it is a column of `schema.table`.
    pub fn protects_table(&self, schema: &str, table: &str) -> bool {
        self.schema.as_deref().is_none_or(|s| same_name(s, schema))
            && self.table.as_deref().is_none_or(|t| same_name(t, table))
    }
}

/// Whether two names are the same without regard to case, beyond ASCII too (MariaDB resolves
/// `ÉMAIL` to a column `émail`).
fn same_name(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
        || (!a.is_ascii() || !b.is_ascii()) && a.to_lowercase() == b.to_lowercase()
}

/// The protected columns of one database.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Protection {
    /// Every protected column of the chain, in policy order.
    pub columns: Vec<ProtectedColumn>,
}

/// Splits `a.b.c` (each part optionally `"quoted"`) into its parts.
fn parts(named: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = named.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                current.push('"');
            }
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    parts.push(current);
    parts.into_iter().map(|p| p.trim().to_owned()).collect()
}

impl Protection {
    /// The protection of a database whose data protection chain is `chain`: its own first,
    /// then each database it inherits from, as `(database id, data protection)`.
    pub fn of_chain<'a, I>(chain: I) -> Self
    where
        I: IntoIterator<Item = (&'a str, &'a DataProtection)>,
    {
        let mut columns = Vec::new();
        for (database_id, protection) in chain {
            for policy in &protection.policies {
                for rule in &policy.columns {
                    let mut parts = parts(&rule.column);
                    let column = parts.pop().unwrap_or_default();
                    let table = parts.pop().filter(|t| !t.is_empty());
                    let schema = parts.pop().filter(|s| !s.is_empty());
                    columns.push(ProtectedColumn {
                        policy: policy.name.clone(),
                        database_id: database_id.to_owned(),
                        schema,
                        table,
                        column,
                        action: rule.action,
                        mask: rule.mask,
                        exempt: policy.exempt.clone(),
                        named: rule.column.clone(),
                    });
                }
            }
        }
        Self { columns }
    }

    /// Whether nothing is protected.
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// The protected column `column` of `schema.table`, if any (a hidden one before a masked
    /// one, when two policies name it).
    pub fn find(&self, schema: &str, table: &str, column: &str) -> Option<&ProtectedColumn> {
        let mut found = self.columns.iter().filter(|c| c.is(schema, table, column));
        let first = found.next()?;
        Some(
            std::iter::once(first)
                .chain(found)
                .find(|c| c.action == ColumnAction::Hide)
                .unwrap_or(first),
        )
    }

    /// Whether every policy that applies exempts `principal` (by name or by group): its runs
    /// then see the values. Never an AI agent, never when nothing is protected.
    pub fn exempts(&self, principal: &Principal) -> bool {
        !principal.agent
            && !self.columns.is_empty()
            && self
                .columns
                .iter()
                .all(|c| c.exempt.iter().any(|e| e.names(principal)))
    }

    /// Whether any column of `schema.table` is protected.
    pub fn protects_table(&self, schema: &str, table: &str) -> bool {
        self.columns.iter().any(|c| c.protects_table(schema, table))
    }
}

/// Why a statement is refused: the policy and the column, and what the statement does with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The policy.
    pub policy: String,
    /// The column as the policy names it.
    pub column: String,
    /// What the statement does that can't be masked.
    pub why: String,
    /// Policy columns, as written, that match no column of a table (a view's, a typo, a
    /// dropped column): protecting nothing, they refuse every run until corrected.
    pub unmatched: Vec<String>,
}

impl Refused {
    /// A refusal for `column`.
    pub fn of(column: &ProtectedColumn, why: impl Into<String>) -> Self {
        Self {
            policy: column.policy.clone(),
            column: column.named.clone(),
            why: why.into(),
            unmatched: Vec::new(),
        }
    }

    /// A refusal that names every policy, when the check itself can't decide.
    pub fn undecided(protection: &Protection, why: impl Into<String>) -> Self {
        let mut policies: Vec<&str> = protection
            .columns
            .iter()
            .map(|c| c.policy.as_str())
            .collect();
        policies.dedup();
        Self {
            policy: policies.join("\", \""),
            column: protection
                .columns
                .iter()
                .map(|c| c.named.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            why: why.into(),
            unmatched: Vec::new(),
        }
    }
}

/// What would let a protected database's login read what its policies protect, with the
/// statement that removes it when there is one: the verifications' findings
/// (`run::postgres::verify`, `run::mysql::verify`).
pub type Problem = (String, Option<String>);

impl Refused {
    /// The refusal of every run on a database whose login (`who`: "the role r", "the user
    /// 'u'@'h'") could read what `protection` protects: the first problems, each with its fix
    /// as `fixer` would run it.
    pub fn unverified(
        protection: &Protection,
        who: &str,
        problems: &[Problem],
        fixer: &str,
    ) -> Self {
        const SHOWN: usize = 8;
        let mut why = format!(
            "{who} that this database's queries run as could read what its policies protect, so \
             no query runs on it until it can't ({} problem{}). ",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" }
        );
        for (i, (problem, fix)) in problems.iter().take(SHOWN).enumerate() {
            if i > 0 {
                why.push_str("; ");
            }
            why.push_str(problem);
            if let Some(fix) = fix {
                why.push_str(&format!(" ({fixer}: {fix})"));
            }
        }
        if problems.len() > SHOWN {
            why.push_str(&format!("; and {} more", problems.len() - SHOWN));
        }
        Self::undecided(protection, why)
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refused by data protection policy \"{}\" on {}: {}",
            self.policy, self.column, self.why
        )
    }
}

/// What happens to one result column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Treatment {
    /// Sent as it is.
    Show,
    /// Left out of the result.
    Hide,
    /// Every non-NULL value is [`MASK`].
    Mask,
    /// Typed [`MASKED_TYPE`], each value as it is: a verified masking view's masked column,
    /// whose values are already its mask's (`jo****`, `****@example.com`, NULL).
    Masked,
}

impl Treatment {
    /// What happens to a result column: `origin` is the protected column the server says it
    /// comes from, `itself` the protected column the statement selects there as itself. A
    /// protected column selected where the server doesn't say where it came from is refused.
    pub fn of(
        origin: Option<&ProtectedColumn>,
        itself: Option<ProtectedColumn>,
    ) -> Result<Self, Refused> {
        match (origin, itself) {
            (Some(column), _) => Ok(Treatment::from(column.action)),
            (None, Some(column)) => Err(Refused::of(
                &column,
                "the column reaches the result where the server doesn't say which table it came \
                 from (through a view or a function), so it can't be masked; select it from its \
                 table",
            )),
            (None, None) => Ok(Treatment::Show),
        }
    }
}

impl From<ColumnAction> for Treatment {
    fn from(action: ColumnAction) -> Self {
        match action {
            ColumnAction::Hide => Treatment::Hide,
            ColumnAction::Mask => Treatment::Mask,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ColumnRule, Mask, Policy};

    fn protection(columns: &[(&str, ColumnAction)]) -> DataProtection {
        DataProtection {
            inherits_from: None,
            provisioning: None,
            policies: vec![Policy {
                name: "pii".to_owned(),
                exempt: Vec::new(),
                description: None,
                columns: columns
                    .iter()
                    .map(|(column, action)| ColumnRule {
                        column: (*column).to_owned(),
                        action: *action,
                        mask: Mask::default(),
                    })
                    .collect(),
            }],
        }
    }

    #[test]
    fn names_resolve_with_or_without_a_schema_and_without_regard_to_case() {
        let own = protection(&[
            ("users.email", ColumnAction::Mask),
            ("billing.\"Cards\".\"Number\"", ColumnAction::Hide),
        ]);
        let inherited = protection(&[("USERS.email", ColumnAction::Hide)]);
        let p = Protection::of_chain([("db_a", &own), ("db_b", &inherited)]);
        assert_eq!(p.columns.len(), 3);
        assert!(p.find("public", "users", "EMAIL").is_some());
        assert!(p.find("other", "Users", "email").is_some(), "any schema");
        assert_eq!(
            p.find("public", "users", "email").unwrap().action,
            ColumnAction::Hide,
            "hide wins over mask"
        );
        assert!(p.find("billing", "cards", "number").is_some());
        assert!(
            p.find("public", "cards", "number").is_none(),
            "its schema only"
        );
        assert!(p.find("public", "users", "name").is_none());
        assert!(p.protects_table("x", "users"));
        assert_eq!(p.columns[1].schema.as_deref(), Some("billing"));
        assert_eq!(p.columns[1].table.as_deref(), Some("Cards"));
    }
}
