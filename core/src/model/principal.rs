//! Who is asking: a [`Principal`] is a person (or an AI agent acting for one), with the groups
//! the permissions of restricted databases name. Running a query needs one; the management
//! routes need only a caller credential (docs/api.md, "Who may do what").

/// A principal's role in the console.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Role {
    /// May query every database, restricted or not.
    SuperAdmin,
    /// May query unrestricted databases, and restricted ones it (or a group of it) is granted.
    #[default]
    Member,
}

wire_enum!(Role, [SuperAdmin => "super-admin", Member => "member"]);

/// A person (or an agent) the service runs queries for.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Principal {
    /// The user's e-mail or login: what `user` permissions name, and the author of queries.
    pub user: String,
    /// The groups the user is in: what `group` permissions name.
    pub groups: Vec<String>,
    /// Super admin or member.
    pub role: Role,
    /// Whether the principal is an AI agent: it may query only `ai_enabled` databases, only as
    /// `ai_allowed` credentials, and gets at most the database's `ai_max_rows` rows.
    pub agent: bool,
}

impl Principal {
    /// A member with no group, not an agent.
    pub fn member(user: impl Into<String>) -> Self {
        Self {
            user: super::identity::normalized(&user.into()),
            ..Self::default()
        }
    }

    /// The principal with its user and groups in their normal form
    /// ([`super::identity::normalized`]): how the service takes a principal it did not build.
    #[must_use]
    pub fn normalized(mut self) -> Self {
        self.user = super::identity::normalized(&self.user);
        for group in &mut self.groups {
            *group = super::identity::normalized(group);
        }
        self
    }

    /// Puts the user in these groups.
    #[must_use]
    pub fn groups<I, S>(mut self, groups: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.groups = groups
            .into_iter()
            .map(|group| super::identity::normalized(&group.into()))
            .collect();
        self
    }

    /// Sets the role.
    #[must_use]
    pub fn role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// Marks the principal as an AI agent (or not).
    #[must_use]
    pub fn agent(mut self, agent: bool) -> Self {
        self.agent = agent;
        self
    }

    /// Whether this principal may query `db`, whose access control is `access` (docs/api.md, "Who may
    /// do what"): every database when it is a super admin, an unrestricted one when it is a
    /// member, a restricted one when a permission names it or one of its groups.
    pub fn may_query(&self, db: &super::Database, access: Option<&super::AccessControl>) -> bool {
        self.role == Role::SuperAdmin
            || !db.restrict_access
            || access.is_some_and(|access| {
                access
                    .permissions
                    .iter()
                    .any(|permission| self.is_named_by(permission))
            })
    }

    /// Whether this principal may review queries on `db`, whose access control is `access`
    /// (docs/queries.md, "Reviews"): a super admin anywhere; on an unrestricted database anyone; on a
    /// restricted one those a `review` or `admin` permission names. AI agents never review.
    pub fn may_review(&self, db: &super::Database, access: Option<&super::AccessControl>) -> bool {
        if self.agent {
            return false;
        }
        self.role == Role::SuperAdmin
            || !db.restrict_access
            || access.is_some_and(|access| {
                access.permissions.iter().any(|permission| {
                    matches!(
                        permission.access,
                        super::AccessLevel::Review | super::AccessLevel::Admin
                    ) && self.is_named_by(permission)
                })
            })
    }

    /// Whether this principal may administer a database whose access control is `access`
    /// (apply its data protection plan, docs/data-protection.md): a super admin, or one an
    /// `admin` permission names. AI agents never do.
    pub fn may_administer(&self, access: Option<&super::AccessControl>) -> bool {
        !self.agent
            && (self.role == Role::SuperAdmin
                || access.is_some_and(|access| {
                    access.permissions.iter().any(|permission| {
                        permission.access == super::AccessLevel::Admin
                            && self.is_named_by(permission)
                    })
                }))
    }

    /// Whether this principal sees `query` whatever its database's grants: its author, or a
    /// super admin (others see it when they may query its database).
    pub fn sees_without_grant(&self, query: &super::Query) -> bool {
        super::identity::same(&query.author, &self.user) || self.role == Role::SuperAdmin
    }

    /// Whether this principal is the user, or in the group, a permission names.
    pub fn is_named_by(&self, permission: &super::Permission) -> bool {
        match permission.subject_kind {
            super::SubjectKind::User => super::identity::same(&permission.subject, &self.user),
            super::SubjectKind::Group => self
                .groups
                .iter()
                .any(|group| super::identity::same(&permission.subject, group)),
        }
    }
}
