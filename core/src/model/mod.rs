//! The records the service stores: databases with their credentials, dashboards with their
//! panels, and the small value types they are made of.
//!
//! These are stored types, not wire types: responses are rendered from them by the service,
//! which leaves every [`Secret`] out.

mod access;
mod answer;
mod audit;
mod caller;
mod dashboard;
mod database;
mod delivery;
pub mod identity;
mod ids;
mod presentation;
mod principal;
mod query;
mod saved_query;
mod secret;
mod session;
mod time;
mod user;

pub use access::{
    AccessControl, AccessLevel, ColumnAction, ColumnRule, DataProtection, Exemption, Mask,
    MaskKind, Permission, Policy, Provisioning, SubjectKind,
};
pub use answer::{Idempotency, RenderAnswer, StoredAnswer, Written};
pub use audit::{
    Actor, AuditAction, AuditEvent, Origin, ResourceKind, Retention, RunFacts, RunOutcome,
};
pub use caller::{CallerKey, CredentialKind, Scope, key_digest, mint_caller_key};
pub use dashboard::{Action, Dashboard, InputMapping, Inputs, Panel, PanelDetails, PanelInput};
pub use database::{
    Adapter, CREDENTIAL_FIELDS, ConnectionParameter, Credential, DATABASE_FIELDS, Database, HELD,
    TlsField, TlsMaterial,
};
pub use delivery::{Delivery, DeliveryStatus, RetryPolicy, Target, TargetKind};
pub use ids::{
    ActionId, CredentialId, DashboardId, DatabaseId, DeliveryId, EventId, KeyId, PanelId, QueryId,
    SavedQueryId, SessionId,
};
pub use presentation::{
    CHOICES_MAX, ChoicesQuery, Display, DisplayKind, GRID_COLUMNS, GRID_ROWS_MAX, InputKind,
    InputSpec, Layout, MEMBERS_MAX, Member, MemberKind, NumberFormat, PanelLook, Presentation,
    RangePreset,
};
pub use principal::{Principal, Role};
pub use query::{
    Bypass, BypassRequest, Comment, Decision, EditRefusal, Query, QueryEdit, QueryRun, QueryStatus,
    Review, ReviewRefusal, RunRefusal, TITLE_MAX, title_of,
};
pub use saved_query::{SAVED_NAME_MAX, SAVED_TAGS_MAX, SavedQuery, Sharing};
pub use secret::{SealedSecret, Secret};
pub use session::{Session, SessionKind, SignInMethod};
pub use time::Timestamp;
pub use user::{User, UserPasskey, UserSettings, UserSource};
