//! Saved queries ([`SavedQuery`]): a statement kept under a name for a database and credential,
//! with the `${name}` parameters each run fills in as bind parameters, shared with its author
//! alone, with named groups, or with everyone who may query its database (docs/queries.md,
//! "Saved queries"). A run of one is a new [`super::Query`] that links back to it.

use super::{Principal, Role, SavedQueryId, Timestamp, identity};

/// Who sees a saved query, besides its author (and a super admin, who sees every one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sharing {
    /// Its author alone.
    Author,
    /// The members of these groups (in their normal form) who may query its database.
    Groups(Vec<String>),
    /// Everyone who may query its database.
    Database,
}

impl Sharing {
    /// Its wire name: `author`, `groups` or `database`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Sharing::Author => "author",
            Sharing::Groups(_) => "groups",
            Sharing::Database => "database",
        }
    }
}

/// The most characters of a saved query's name.
pub const SAVED_NAME_MAX: usize = 200;
/// The most tags of a saved query, and the most characters of one.
pub const SAVED_TAGS_MAX: (usize, usize) = (20, 50);

/// A statement kept under a name (docs/queries.md, "Saved queries").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedQuery {
    /// Assigned at creation (`sq_…`).
    pub id: SavedQueryId,
    /// What it is called (unique nowhere: two people may each have a "Daily signups").
    pub name: String,
    /// What it is for (may be empty).
    pub description: String,
    /// The statement, with `${name}` parameters.
    pub query: String,
    /// The database it runs on.
    pub database_id: String,
    /// The credential it runs as.
    pub credential_id: String,
    /// Words to find it by, in the order given, each once.
    pub tags: Vec<String>,
    /// Who sees it.
    pub sharing: Sharing,
    /// Who saved it (the principal's user, normalised).
    pub author: String,
    /// Creation time.
    pub created_at: Timestamp,
    /// Time of the last change; strictly increases (a change compares it).
    pub updated_at: Timestamp,
}

impl SavedQuery {
    /// Whether `principal` sees it, given whether they may query its database (which only the
    /// service knows): its author and a super admin always; the others as its sharing says.
    pub fn visible_to(&self, principal: &Principal, may_query: bool) -> bool {
        if self.is_authors(principal) || (principal.role == Role::SuperAdmin && !principal.agent) {
            return true;
        }
        match &self.sharing {
            Sharing::Author => false,
            Sharing::Database => may_query,
            Sharing::Groups(groups) => {
                may_query
                    && groups
                        .iter()
                        .any(|g| principal.groups.iter().any(|mine| identity::same(g, mine)))
            }
        }
    }

    /// Whether `principal` is its author: who renames, changes and deletes it (and a super
    /// admin, who may delete it).
    pub fn is_authors(&self, principal: &Principal) -> bool {
        identity::same(&self.author, &principal.user)
    }

    /// Whether `text` finds it: each word of `text` in its name, description, statement or
    /// tags, ignoring case.
    pub fn matches(&self, text: &str) -> bool {
        let haystack = format!(
            "{}\n{}\n{}\n{}",
            self.name,
            self.description,
            self.query,
            self.tags.join("\n")
        )
        .to_lowercase();
        text.to_lowercase()
            .split_whitespace()
            .all(|word| haystack.contains(word))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(sharing: Sharing) -> SavedQuery {
        SavedQuery {
            id: SavedQueryId::generate(),
            name: "Signups by day".to_owned(),
            description: "For the weekly review".to_owned(),
            query: "SELECT day, count(*) FROM signups WHERE day > ${since} GROUP BY 1".to_owned(),
            database_id: "db_1".to_owned(),
            credential_id: "crd_1".to_owned(),
            tags: vec!["growth".to_owned()],
            sharing,
            author: "ann@example.com".to_owned(),
            created_at: Timestamp::from_micros(1),
            updated_at: Timestamp::from_micros(1),
        }
    }

    fn member(user: &str, groups: &[&str]) -> Principal {
        Principal {
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            ..Principal::member(user)
        }
    }

    #[test]
    fn sharing_decides_who_sees_it() {
        let ann = member("Ann@Example.com", &[]);
        let bob = member("bob@example.com", &["analysts"]);
        let eve = member("eve@example.com", &["sales"]);
        let author_only = saved(Sharing::Author);
        assert!(author_only.visible_to(&ann, false), "its author, always");
        assert!(!author_only.visible_to(&bob, true));
        let groups = saved(Sharing::Groups(vec!["analysts".to_owned()]));
        assert!(groups.visible_to(&bob, true));
        assert!(
            !groups.visible_to(&bob, false),
            "a member who may not query"
        );
        assert!(!groups.visible_to(&eve, true), "not a member");
        let everyone = saved(Sharing::Database);
        assert!(everyone.visible_to(&eve, true));
        assert!(!everyone.visible_to(&eve, false));
        let admin = Principal {
            role: Role::SuperAdmin,
            ..member("root@example.com", &[])
        };
        assert!(author_only.visible_to(&admin, false));
        let agent = Principal {
            agent: true,
            ..admin.clone()
        };
        assert!(
            !author_only.visible_to(&agent, true),
            "an agent is no admin"
        );
    }

    #[test]
    fn a_search_needs_every_word_somewhere() {
        let query = saved(Sharing::Author);
        assert!(query.matches("signups WEEKLY"));
        assert!(query.matches("growth"));
        assert!(query.matches(""));
        assert!(!query.matches("signups churn"));
    }
}
