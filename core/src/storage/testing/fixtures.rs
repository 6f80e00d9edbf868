//! Builders of the records the cases store (a rich and a plain database, dashboard, access
//! control; caller keys), and short steps on a store shared by several files (insert several
//! databases, store an access control, set an inheritance, list everything).

use super::origin;
use crate::storage::Edits as _;
use serde_json::{Map, Value, json};

use super::check::{found, ok};
use crate::model::{
    AccessControl, AccessLevel, Action, ActionId, Adapter, CallerKey, ColumnAction, ColumnRule,
    ConnectionParameter, Credential, CredentialId, CredentialKind, Dashboard, DashboardId,
    DataProtection, Database, DatabaseId, InputMapping, Panel, PanelDetails, PanelId, PanelInput,
    Permission, Policy, Scope, SealedSecret, SubjectKind, Timestamp, TlsMaterial, mint_caller_key,
};
use crate::seal::Sealer;
use crate::storage::{DatabaseRef, Page, Storage, StorageError};
use crate::validate::{ValidationErrors, dashboard_from_body, database_from_body, message};

/// Sealed bytes as a store keeps them: the stores never open them, so any bytes do (zeros and
/// invalid UTF-8 included).
pub(super) fn sealed(bytes: impl Into<Vec<u8>>) -> SealedSecret {
    SealedSecret::from_stored(bytes.into())
}

// ---------------------------------------------------------------------------------------------
// Whole listings, and request bodies
// ---------------------------------------------------------------------------------------------

/// More records than any case stores: "the whole listing".
pub(super) const ALL: usize = 10_000;

pub(super) async fn all_databases(storage: &dyn Storage) -> Vec<Database> {
    let page = Page {
        after: None,
        limit: ALL,
    };
    ok(
        storage.list_databases(page, Default::default()).await,
        "list_databases",
    )
}

pub(super) async fn all_dashboards(storage: &dyn Storage) -> Vec<Dashboard> {
    let page = Page {
        after: None,
        limit: ALL,
    };
    ok(
        storage.list_dashboards(page, Default::default()).await,
        "list_dashboards",
    )
}

pub(super) fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("fixture body is not an object: {other}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Databases and dashboards
// ---------------------------------------------------------------------------------------------

pub(super) fn parameter(name: &str, value: &str) -> ConnectionParameter {
    ConnectionParameter {
        name: name.to_owned(),
        value: value.to_owned(),
    }
}

/// A database with every field set to something other than its default, secrets that are not
/// UTF-8, and lists in an order that is neither sorted by name nor by id.
pub(super) fn rich_database(api_id: Option<&str>) -> Database {
    let older = CredentialId::generate();
    let newer = CredentialId::generate();
    let newest = CredentialId::generate();
    Database {
        id: DatabaseId::generate(),
        api_id: api_id.map(str::to_owned),
        name: "Orders — primary ✓".to_owned(),
        adapter: Adapter::Clickhouse,
        hostname: "orders.db.internal".to_owned(),
        port: Some(6543),
        database: "orders".to_owned(),
        ssl: true,
        verify_server_hostname: true,
        restrict_access: true,
        review_bypass_allowed: true,
        group: Some("Payments".to_owned()),
        slack_channel: Some("#orders-requests".to_owned()),
        tunnel_id: Some("tun_eu_1".to_owned()),
        ai_enabled: true,
        ai_max_rows: 1234,
        connection_parameters: vec![
            parameter("statement_timeout", "30s"),
            parameter("application_name", ""),
            parameter("search_path", "app, public"),
        ],
        credentials: vec![
            Credential {
                id: newest,
                username: "writer".to_owned(),
                password: Some(sealed("wr1ter-pässwörd")),
                password_for: Some([0xa5; 32]),
                hostname: Some("primary.internal".to_owned()),
                ai_allowed: true,
                timeout: Some(30),
                reviews_required: 2,
                default_credential: false,
            },
            Credential {
                id: older,
                username: "Reader".to_owned(),
                password: None,
                password_for: None,
                hostname: None,
                ai_allowed: false,
                timeout: None,
                reviews_required: 0,
                default_credential: true,
            },
            Credential {
                id: newer,
                username: "reader".to_owned(),
                password: Some(sealed("r3ader password with spaces ")),
                password_for: None,
                hostname: Some("replica.internal".to_owned()),
                ai_allowed: false,
                timeout: Some(1),
                reviews_required: 7,
                default_credential: false,
            },
        ],
        tls: TlsMaterial {
            ca_cert: Some(sealed(vec![0x30, 0x82, 0x01, 0x0a, 0x00, 0xff, 0xfe, 0x00])),
            client_cert: Some(sealed(
                "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n",
            )),
            client_key: Some(sealed(vec![0x00, 0x9f, 0x80, 0xc3, 0x28, 0x0a, 0x00])),
        },
        inserted_at: Timestamp::from_micros(1_795_341_845_123_456),
        updated_at: Timestamp::from_micros(1_795_341_905_654_321),
    }
}

/// A small database made the way the service makes one, from a create body.
pub(super) fn plain_database(name: &str, api_id: Option<&str>) -> Database {
    let body = object(json!({
        "name": name,
        "adapter": "postgres",
        "hostname": "db.internal",
        "database": "app",
        "credentials": [{"username": "reader", "password": "pw-reader-1"}],
    }));
    let sealer = Sealer::ephemeral().expect("a random key");
    let mut database =
        match database_from_body(None, &body.clone().into(), Timestamp::now(), &sealer) {
            Ok(database) => database,
            Err(errors) => panic!("fixture database body is invalid: {errors}"),
        };
    database.api_id = api_id.map(str::to_owned);
    database
}

/// A dashboard with every field set, several panels, inputs, actions and mappings.
pub(super) fn rich_dashboard() -> Dashboard {
    let mut dashboard = Dashboard {
        id: DashboardId::generate(),
        name: "Ops — on call ✓".to_owned(),
        restricted_access: true,
        archived_at: Some(Timestamp::from_micros(1_795_341_999_000_001)),
        panels: vec![
            Panel {
                id: PanelId::generate(),
                title: "Stuck orders".to_owned(),
                inputs: vec![
                    PanelInput {
                        key: "since".to_owned(),
                        description: "Start of the window".to_owned(),
                    },
                    PanelInput {
                        key: "limit".to_owned(),
                        description: String::new(),
                    },
                ],
                actions: vec![
                    Action {
                        id: ActionId::generate(),
                        label: Some("Refund".to_owned()),
                        workflow_id: Some("wf_refund".to_owned()),
                        input_mappings: vec![
                            InputMapping {
                                workflow_input_key: "order_id".to_owned(),
                                column: Some("id".to_owned()),
                                prompt_user: false,
                                prompt: None,
                            },
                            InputMapping {
                                workflow_input_key: "reason".to_owned(),
                                column: None,
                                prompt_user: true,
                                prompt: Some("Why?".to_owned()),
                            },
                        ],
                    },
                    Action {
                        id: ActionId::generate(),
                        label: None,
                        workflow_id: None,
                        input_mappings: Vec::new(),
                    },
                ],
                details: PanelDetails::Query {
                    query: "SELECT *\n  FROM orders\n WHERE state = 'stuck' -- ünïcode\t\n"
                        .to_owned(),
                    credential_id: "crd_anything".to_owned(),
                },
            },
            Panel {
                id: PanelId::generate(),
                title: "Empty".to_owned(),
                inputs: Vec::new(),
                actions: Vec::new(),
                details: PanelDetails::Query {
                    query: "select 1".to_owned(),
                    credential_id: String::new(),
                },
            },
        ],
        presentation: crate::model::Presentation::default(),
        presented_at: Timestamp::from_micros(1_795_341_900_000_007),
        inserted_at: Timestamp::from_micros(1_795_341_845_123_456),
        updated_at: Timestamp::from_micros(1_795_341_905_654_321),
    };
    // A presentation with every part, keyed by the panels' own ids.
    let first = dashboard.panels[0].id.as_str().to_owned();
    dashboard.presentation = serde_json::from_value(json!({
        "editors": [{"kind": "user", "name": "Ålice@example.com"}],
        "viewers": [{"kind": "group", "name": "on-call"}],
        "time_range": "30d",
        "panels": { (first): {
            "display": {"kind": "bar", "x": "state", "series": ["count"], "stacked": true,
                        "format": {"decimals": 1, "unit": "€", "percent": false}},
            "layout": {"x": 6, "y": 2, "w": 6, "h": 4}
        }},
        "inputs": {
            "since": {"type": "date", "default": "2026-01-01"},
            "limit": {"type": "choice", "required": false, "choices": ["10", "100"],
                      "choices_query": {"query": "select n from limits", "credential_id": "crd_x"}}
        }
    }))
    .expect("the fixture's presentation is valid");
    dashboard
}

/// A small dashboard made the way the service makes one, from a create body.
pub(super) fn plain_dashboard(name: &str) -> Dashboard {
    let body = object(json!({ "name": name, "restricted_access": false }));
    match dashboard_from_body(None, &body, Timestamp::now()) {
        Ok(dashboard) => dashboard,
        Err(errors) => panic!("fixture dashboard body is invalid: {errors}"),
    }
}

/// A query panel with this id and title.
pub(super) fn query_panel(id: PanelId, title: &str) -> Panel {
    Panel {
        id,
        title: title.to_owned(),
        inputs: Vec::new(),
        actions: Vec::new(),
        details: PanelDetails::Query {
            query: format!("select '{title}'"),
            credential_id: "crd_x".to_owned(),
        },
    }
}

/// The errors the failing edits of the suite return.
pub(super) fn edit_errors() -> ValidationErrors {
    ValidationErrors::single("name", message::BLANK)
}

// ---------------------------------------------------------------------------------------------
// Access control
// ---------------------------------------------------------------------------------------------

pub(super) fn permission(kind: SubjectKind, subject: &str, access: AccessLevel) -> Permission {
    Permission {
        subject_kind: kind,
        subject: subject.to_owned(),
        access,
    }
}

/// Access control with every part set: permissions of both kinds and several levels (not in
/// sorted order), policies with a description and without, hide and mask rules.
pub(super) fn rich_access_control(inherits_from: Option<&str>) -> AccessControl {
    AccessControl {
        permissions: vec![
            permission(SubjectKind::User, "zoë@example.com", AccessLevel::Review),
            permission(SubjectKind::Group, "Payments", AccessLevel::Admin),
            permission(SubjectKind::User, "ana", AccessLevel::Query),
        ],
        data_protection: DataProtection {
            inherits_from: inherits_from.map(str::to_owned),
            provisioning: None,
            policies: vec![
                Policy {
                    name: "pii".to_owned(),
                    exempt: Vec::new(),
                    description: Some("Personal data — ünïcode".to_owned()),
                    columns: vec![
                        ColumnRule {
                            column: "users.email".to_owned(),
                            action: ColumnAction::Mask,
                            mask: crate::model::Mask {
                                kind: crate::model::MaskKind::Email,
                                ..Default::default()
                            },
                        },
                        ColumnRule {
                            column: "public.users.ssn".to_owned(),
                            action: ColumnAction::Hide,
                            mask: Default::default(),
                        },
                    ],
                },
                Policy {
                    name: "cards".to_owned(),
                    exempt: Vec::new(),
                    description: None,
                    columns: vec![ColumnRule {
                        column: "payments.card_number".to_owned(),
                        action: ColumnAction::Hide,
                        mask: Default::default(),
                    }],
                },
            ],
        },
    }
}

/// The access control of a stored database.
pub(super) async fn access_of(storage: &dyn Storage, id: &str, context: &str) -> AccessControl {
    found(
        storage.access_control(id).await,
        &format!("access_control({id}) {context}"),
    )
}

/// Stores `access` as the whole access control of database `id` (it must be accepted).
pub(super) async fn put_access(
    storage: &dyn Storage,
    id: &str,
    access: AccessControl,
) -> AccessControl {
    let edit = Box::new(move |_: &AccessControl| Ok(access.clone()));
    ok(
        storage.update_access_control(id, edit, origin()).await,
        &format!("update_access_control({id}) storing a whole access control"),
    )
}

/// Sets (or clears) `inherits_from` of database `id`, keeping everything else.
pub(super) async fn set_inheritance(
    storage: &dyn Storage,
    id: &str,
    target: Option<&str>,
) -> Result<AccessControl, StorageError> {
    let target = target.map(str::to_owned);
    let edit = Box::new(move |stored: &AccessControl| {
        let mut next = stored.clone();
        next.data_protection.inherits_from = target.clone();
        Ok(next)
    });
    storage.update_access_control(id, edit, origin()).await
}

pub(super) fn reference(database: &Database) -> DatabaseRef {
    DatabaseRef {
        id: database.id.as_str().to_owned(),
        name: database.name.clone(),
    }
}

/// Inserts databases named after `names`, in that order (so their ids sort in that order).
pub(super) async fn insert_named(storage: &dyn Storage, names: &[&str]) -> Vec<Database> {
    let mut databases = Vec::new();
    for name in names {
        let database = plain_database(name, None);
        ok(
            storage.insert_database(database.clone(), origin()).await,
            "insert_database",
        );
        databases.push(database);
    }
    databases
}

// ---------------------------------------------------------------------------------------------
// Caller keys
// ---------------------------------------------------------------------------------------------

/// Three keys of different kinds and scopes, in id order; one already used.
pub(super) fn caller_keys() -> Vec<CallerKey> {
    let (mut used, _) = mint_caller_key(CredentialKind::ApiKey, Scope::Full, "deploy bot");
    used.last_used_at = Some(Timestamp::from_micros(1_795_341_845_123_456));
    let (setup, _) = mint_caller_key(CredentialKind::ApiKey, Scope::Setup, "setup ✓");
    let (mut token, _) = mint_caller_key(CredentialKind::AccessToken, Scope::Agent, "");
    token.principal = Some(
        crate::model::Principal::member("alice@example.com")
            .groups(["data-team", "ops ✓"])
            .role(crate::model::Role::SuperAdmin)
            .agent(true),
    );
    vec![used, setup, token]
}
