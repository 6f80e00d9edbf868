//! A dashboard's **presentation document** (docs/dashboards.md): what dbconsole adds to the
//! interface's dashboards, kept apart from them so that a client that knows only the interface
//! (the DevHub Terraform provider) can never erase it. Each panel's display and place on the
//! grid, each input's type, default and choices, the default time range, and the dashboard's
//! editors and viewers; keyed by panel id and input key.
//!
//! It is a JSON document on the wire and in the store alike: its serde form is the contract.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Principal, SubjectKind, identity};

/// The columns of the dashboard grid.
pub const GRID_COLUMNS: u16 = 12;
/// The most rows a panel may be tall, and the lowest row it may start on.
pub const GRID_ROWS_MAX: (u16, u16) = (24, 1000);
/// The most editors, and the most viewers, of a dashboard.
pub const MEMBERS_MAX: usize = 100;
/// The most fixed choices of an input, and the most values a choices query gives.
pub const CHOICES_MAX: usize = 500;

/// A dashboard's presentation document. Every part is optional; an empty document shows the
/// dashboard as the interface describes it (tables, stacked, text inputs).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Presentation {
    /// Who may change the dashboard besides full-scope callers and super admins (a user by
    /// name, or a group).
    #[serde(default)]
    pub editors: Vec<Member>,
    /// Who may see a restricted dashboard besides its editors, super admins, and whoever may
    /// query the database of every panel.
    #[serde(default)]
    pub viewers: Vec<Member>,
    /// The time range a page opens with: the last `1h`, `24h`, `7d`, `30d`, `90d` or `365d`
    /// (`7d` when absent). Panels bind it as `${__from}` and `${__to}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_range: Option<RangePreset>,
    /// Each panel's display and place, by panel id.
    #[serde(default)]
    pub panels: BTreeMap<String, PanelLook>,
    /// Each input's type, by input key (one entry serves every panel that declares the key).
    #[serde(default)]
    pub inputs: BTreeMap<String, InputSpec>,
}

/// A user (by name) or a group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Member {
    /// `user` or `group`.
    pub kind: MemberKind,
    /// The user's or group's name (compared in its normal form).
    pub name: String,
}

/// Whether a [`Member`] names a user or a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemberKind {
    /// A user.
    User,
    /// A group.
    Group,
}

impl From<MemberKind> for SubjectKind {
    fn from(kind: MemberKind) -> Self {
        match kind {
            MemberKind::User => SubjectKind::User,
            MemberKind::Group => SubjectKind::Group,
        }
    }
}

impl Member {
    /// Whether `principal` is this member: its user, or one of its groups.
    pub fn includes(&self, principal: &Principal) -> bool {
        let name = identity::normalized(&self.name);
        match self.kind {
            MemberKind::User => identity::normalized(&principal.user) == name,
            MemberKind::Group => principal
                .groups
                .iter()
                .any(|group| identity::normalized(group) == name),
        }
    }
}

/// A default time range, relative to when the page opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum RangePreset {
    /// The last hour.
    #[serde(rename = "1h")]
    Hour,
    /// The last day.
    #[serde(rename = "24h")]
    Day,
    /// The last week.
    #[serde(rename = "7d")]
    Week,
    /// The last 30 days.
    #[serde(rename = "30d")]
    Month,
    /// The last 90 days.
    #[serde(rename = "90d")]
    Quarter,
    /// The last 365 days.
    #[serde(rename = "365d")]
    Year,
}

impl RangePreset {
    /// Its length in seconds.
    pub fn seconds(self) -> i64 {
        const DAY: i64 = 86_400;
        match self {
            RangePreset::Hour => 3_600,
            RangePreset::Day => DAY,
            RangePreset::Week => 7 * DAY,
            RangePreset::Month => 30 * DAY,
            RangePreset::Quarter => 90 * DAY,
            RangePreset::Year => 365 * DAY,
        }
    }
}

/// How a panel looks: its display and its place on the grid.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PanelLook {
    /// What the panel draws (a table when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<Display>,
    /// Where it sits (after the panels placed before it, full width, when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
}

/// What a panel draws from its rows. Charts never aggregate: each point, bar or slice is one
/// result row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Display {
    /// `table`, `bar`, `line`, `area`, `pie`, `donut` or `number`.
    pub kind: DisplayKind,
    /// The column of the x axis (of the labels, for a pie or donut); the first column when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<String>,
    /// The columns drawn as series (of the value, for a pie, donut or number); every numeric
    /// column but `x` when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<String>,
    /// A column whose values split one series into several (one per distinct value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// For a number: a second column of the same row it is compared with (a difference and a
    /// percentage).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare: Option<String>,
    /// Bars and areas stacked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stacked: bool,
    /// How numbers are written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<NumberFormat>,
}

/// The kinds of [`Display`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DisplayKind {
    /// Rows in a grid (the interface's own display).
    Table,
    /// Vertical bars.
    Bar,
    /// Lines.
    Line,
    /// Filled lines.
    Area,
    /// A pie.
    Pie,
    /// A ring.
    Donut,
    /// One number, from the first row.
    Number,
}

/// How numbers are written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NumberFormat {
    /// Digits after the point, 0 to 10 (as the value has them when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decimals: Option<u8>,
    /// Thousands separators (in the reader's locale); on unless false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separators: Option<bool>,
    /// Written after the number (at most 16 characters), such as `ms` or `€`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// The value is a fraction, written times 100 with `%`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub percent: bool,
}

/// A panel's place on the 12-column grid: its first column and row (from 0), its width in
/// columns and its height in rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    /// First column, 0 to 11.
    pub x: u16,
    /// First row, from 0.
    pub y: u16,
    /// Width in columns, 1 to 12 (`x + w` at most 12).
    pub w: u16,
    /// Height in rows, 1 to 24.
    pub h: u16,
}

/// An input's type, default and whether it must be given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// `text`, `number`, `date`, `datetime` or `choice`.
    #[serde(rename = "type")]
    pub kind: InputKind,
    /// The value a page opens with (and a run binds when the input is not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
    /// Whether a value must be given (true when absent); an optional input left blank binds
    /// NULL.
    #[serde(default = "yes", skip_serializing_if = "Clone::clone")]
    pub required: bool,
    /// A choice's fixed values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    /// A choice's values from a query: its first column, read-only, as a credential that needs
    /// no reviews.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices_query: Option<ChoicesQuery>,
}

fn yes() -> bool {
    true
}

/// The kinds of input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    /// Any text.
    Text,
    /// A number (bound as its text, which the database converts).
    Number,
    /// A date, `YYYY-MM-DD`.
    Date,
    /// A date and time, `YYYY-MM-DDTHH:MM[:SS]` (bound as `YYYY-MM-DD HH:MM:SS`).
    Datetime,
    /// One of a list.
    Choice,
}

/// Where a choice input's values come from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChoicesQuery {
    /// One statement; its first column gives the values.
    pub query: String,
    /// The credential it runs as (one that needs no reviews).
    pub credential_id: String,
}

impl Presentation {
    /// Whether `principal` is among the editors.
    pub fn is_editor(&self, principal: &Principal) -> bool {
        self.editors.iter().any(|m| m.includes(principal))
    }

    /// Whether `principal` is among the editors or the viewers.
    pub fn is_member(&self, principal: &Principal) -> bool {
        self.is_editor(principal) || self.viewers.iter().any(|m| m.includes(principal))
    }

    /// Keeps the entries of panels still in `panel_ids` and of inputs one of them still
    /// declares (`input_keys`); whether any was dropped.
    pub fn retain<'a>(
        &mut self,
        panel_ids: impl IntoIterator<Item = &'a str>,
        input_keys: impl IntoIterator<Item = &'a str>,
    ) -> bool {
        let panels: std::collections::HashSet<&str> = panel_ids.into_iter().collect();
        let inputs: std::collections::HashSet<&str> = input_keys.into_iter().collect();
        let before = (self.panels.len(), self.inputs.len());
        self.panels.retain(|id, _| panels.contains(id.as_str()));
        self.inputs.retain(|key, _| inputs.contains(key.as_str()));
        before != (self.panels.len(), self.inputs.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_document_round_trips_as_its_defaults() {
        let empty: Presentation = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, Presentation::default());
        let input: InputSpec = serde_json::from_str(r#"{"type":"date"}"#).unwrap();
        assert!(
            input.required,
            "an input is required unless it says otherwise"
        );
        assert_eq!(serde_json::to_string(&input).unwrap(), r#"{"type":"date"}"#);
        assert!(serde_json::from_str::<Presentation>(r#"{"colour":"red"}"#).is_err());
    }

    #[test]
    fn retain_drops_removed_panels_and_undeclared_inputs() {
        let mut doc: Presentation = serde_json::from_str(
            r#"{"panels":{"pl_a":{},"pl_b":{}},"inputs":{"x":{"type":"text"},"y":{"type":"number"}}}"#,
        )
        .unwrap();
        assert!(!doc.clone().retain(["pl_a", "pl_b"], ["x", "y"]));
        assert!(doc.retain(["pl_b"], ["y"]));
        assert_eq!(doc.panels.keys().collect::<Vec<_>>(), ["pl_b"]);
        assert_eq!(doc.inputs.keys().collect::<Vec<_>>(), ["y"]);
    }

    #[test]
    fn members_match_users_and_groups_in_their_normal_form() {
        let principal = Principal {
            user: "Alice@Example.com".to_owned(),
            groups: vec!["Data-Team".to_owned()],
            role: super::super::Role::Member,
            agent: false,
        };
        let user = Member {
            kind: MemberKind::User,
            name: "alice@example.com".to_owned(),
        };
        let group = Member {
            kind: MemberKind::Group,
            name: "data-team".to_owned(),
        };
        let other = Member {
            kind: MemberKind::User,
            name: "data-team".to_owned(),
        };
        assert!(user.includes(&principal));
        assert!(group.includes(&principal));
        assert!(!other.includes(&principal));
    }
}
