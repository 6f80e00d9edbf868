//! Validation: pure functions from a JSON body (and the stored record, on update) to a new
//! record or field-keyed [`ValidationErrors`]. No I/O happens here.

mod access;
mod dashboard;
mod database;
mod errors;
mod inputs;
mod key_name;
mod listing;
mod presentation;
mod query;
mod reader;
mod saved_query;
mod settings;
mod text;

pub use access::{data_protection_from_body, permissions_from_body};
pub use dashboard::{dashboard_from_body, panel_from_body};
pub(crate) use database::blank_database;
pub use database::{
    DEFAULT_AI_MAX_ROWS, DatabaseBody, SetupRequest, apply_setup, database_from_body, parse_setup,
};
pub use errors::{FieldErrors, ValidationErrors, message};
pub use inputs::{TIME_RANGE_KEYS, checked_input, panel_inputs};
pub use key_name::{KEY_NAME_MAX_CHARS, KeyNameError, check_key_name};
pub use listing::{
    AuditFilterQuery, DEFAULT_PAGE_SIZE, DashboardFilterQuery, DatabaseFilterQuery, MAX_PAGE_SIZE,
    PageQuery, given_parameter, parse_audit_filter, parse_audit_query, parse_dashboard_filter,
    parse_database_filter, parse_named_parameter, parse_page_query,
};
pub use presentation::{check_presentation, presentation_from_body};
pub use query::{
    AskedBypass, DEFAULT_ROW_LIMIT, DESCRIPTION_MAX, QueryDraft, REASON_MAX, bypass_of, comment_of,
    query_draft, query_edit, review_of, row_limit, run_timeout_of,
};
pub use saved_query::{SHARED_GROUPS_MAX, SavedDraft, saved_draft, saved_params};
pub use settings::settings_of;
pub use text::{CERTIFICATE_MAX, HOSTNAME_MAX, NAME_MAX, PASSWORD_MAX, QUERY_MAX, Text, VALUE_MAX};
