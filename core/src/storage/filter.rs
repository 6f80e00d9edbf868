//! What a listing keeps: [`DatabaseFilter`] and [`DashboardFilter`] (docs/api.md, "Finding records").
//! Every given field must match; a listing with a filter is ordered by id and paged by `after`
//! exactly as one without. The backends serve them from indexes; [`DatabaseFilter::matches`] is
//! the rule they all answer to (and what the memory store applies as it is).

use crate::model::{Adapter, Dashboard, Database, Query, QueryStatus};

/// Which databases a listing keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DatabaseFilter<'a> {
    /// Only databases of this adapter.
    pub adapter: Option<Adapter>,
    /// Only databases in this group (exactly).
    pub group: Option<&'a str>,
    /// Only databases whose name starts with this (exactly: case counts).
    pub name_prefix: Option<&'a str>,
    /// Only the database with this `api_id`.
    pub api_id: Option<&'a str>,
    /// Only databases reached through this tunnel.
    pub tunnel_id: Option<&'a str>,
}

impl DatabaseFilter<'_> {
    /// Whether it keeps every database.
    pub fn is_empty(&self) -> bool {
        *self == DatabaseFilter::default()
    }

    /// Whether `database` is kept.
    pub fn matches(&self, database: &Database) -> bool {
        self.adapter
            .is_none_or(|adapter| database.adapter == adapter)
            && self
                .group
                .is_none_or(|group| database.group.as_deref() == Some(group))
            && self
                .name_prefix
                .is_none_or(|prefix| database.name.starts_with(prefix))
            && self
                .api_id
                .is_none_or(|api_id| database.api_id.as_deref() == Some(api_id))
            && self
                .tunnel_id
                .is_none_or(|tunnel| database.tunnel_id.as_deref() == Some(tunnel))
    }
}

/// Which dashboards a listing keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DashboardFilter<'a> {
    /// Only dashboards whose name starts with this (exactly: case counts).
    pub name_prefix: Option<&'a str>,
}

impl DashboardFilter<'_> {
    /// Whether it keeps every dashboard.
    pub fn is_empty(&self) -> bool {
        self.name_prefix.is_none()
    }

    /// Whether `dashboard` is kept.
    pub fn matches(&self, dashboard: &Dashboard) -> bool {
        self.name_prefix
            .is_none_or(|prefix| dashboard.name.starts_with(prefix))
    }
}

/// Which queries a listing of the history keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueryFilter<'a> {
    /// Only queries of this database.
    pub database_id: Option<&'a str>,
    /// Only queries by this author (exactly).
    pub author: Option<&'a str>,
    /// Only queries in this status.
    pub status: Option<QueryStatus>,
}

impl QueryFilter<'_> {
    /// Whether `query` is kept.
    pub fn matches(&self, query: &Query) -> bool {
        self.database_id.is_none_or(|id| query.database_id == id)
            && self
                .author
                .is_none_or(|author| crate::model::identity::same(&query.author, author))
            && self.status.is_none_or(|status| query.status == status)
    }
}

/// Which events a page of the audit trail keeps, beyond its `resource` (all given ones apply).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AuditFilter<'a> {
    /// Only the events of one of these records (a database and its queries, say): a set, so
    /// that each event is looked up, not compared with every record.
    pub any_of: Option<&'a std::collections::BTreeSet<String>>,
    /// Only events of this action.
    pub action: Option<crate::model::AuditAction>,
    /// Only events by this actor: its stored key's (or session's) id, or its name, exactly.
    pub actor: Option<&'a str>,
    /// Only events at or after this time.
    pub since: Option<crate::model::Timestamp>,
    /// Only events before this time.
    pub until: Option<crate::model::Timestamp>,
}

impl AuditFilter<'_> {
    /// Whether it keeps every event.
    pub fn is_empty(&self) -> bool {
        *self == AuditFilter::default()
    }

    /// Whether `event` is kept.
    pub fn matches(&self, event: &crate::model::AuditEvent) -> bool {
        self.any_of
            .is_none_or(|ids| ids.contains(&event.resource_id))
            && self.action.is_none_or(|action| event.action == action)
            && self.actor.is_none_or(|actor| {
                event.actor.name == actor || event.actor.id.as_deref() == Some(actor)
            })
            && self.since.is_none_or(|since| event.at >= since)
            && self.until.is_none_or(|until| event.at < until)
    }
}
