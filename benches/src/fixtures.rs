//! Request bodies and seeded stores for the benchmarks. The bodies are shaped like real
//! clients' (the Terraform provider's create, a partial PATCH, a dashboard with row actions);
//! the tests at the bottom check that the service accepts every one of them, so the benchmarks
//! measure successful operations, not validation failures.

use bytes::Bytes;
use dbconsole_core::ConsoleService;
use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::{DASHBOARDS, DATABASES, dashboard_request, database_request, json_of};

/// A path that no route matches: the service answers 404 right after routing, before
/// authentication and storage.
pub const UNKNOWN_PATH: &str = "/api/v1/console/nothing-here";

/// The body of `POST /api/v1/console/databases`: a PostgreSQL database with every optional
/// field set, two connection parameters and two credentials.
pub fn create_database_body() -> Bytes {
    let body = json!({
        "name": "orders",
        "adapter": "postgres",
        "hostname": "orders.db.internal",
        "port": 5432,
        "database": "orders",
        "ssl": true,
        "verify_server_hostname": false,
        "restrict_access": true,
        "review_bypass_allowed": false,
        "group": "payments",
        "slack_channel": "#db-requests",
        "tunnel_id": "tun_eu_west",
        "ai_enabled": true,
        "ai_max_rows": 1000,
        "connection_parameters": [
            {"name": "application_name", "value": "dbconsole"},
            {"name": "statement_timeout", "value": "30s"},
        ],
        "credentials": [
            {"username": "console_ro", "password": "ro-password", "reviews_required": 0,
             "default_credential": true, "ai_allowed": true},
            {"username": "console_rw", "password": "rw-password", "reviews_required": 2,
             "default_credential": false},
        ],
    });
    Bytes::from(body.to_string())
}

/// The body of `PATCH /api/v1/console/databases/{id}`: a partial update of three fields and
/// the connection parameters; credentials are left out, so they stay as stored.
pub fn update_database_body() -> Bytes {
    let body = json!({
        "name": "orders (primary)",
        "ai_max_rows": 250,
        "slack_channel": "#orders-db",
        "connection_parameters": [{"name": "application_name", "value": "dbconsole-2"}],
    });
    Bytes::from(body.to_string())
}

/// The body of `POST /v1/dashboards`: `panels` query panels with two inputs each, each panel
/// with `actions` row actions of two input mappings (one from a column, one prompted).
pub fn dashboard_body(panels: usize, actions: usize) -> Bytes {
    let panels: Vec<Value> = (0..panels)
        .map(|p| {
            let actions: Vec<Value> = (0..actions)
                .map(|a| {
                    json!({
                        "label": format!("Action {a}"),
                        "workflow_id": format!("wf_{p}_{a}"),
                        "input_mappings": [
                            {"workflow_input_key": "customer_id", "column": "id"},
                            {"workflow_input_key": "reason", "prompt_user": true,
                             "prompt": "Why?"},
                        ],
                    })
                })
                .collect();
            json!({
                "title": format!("Panel {p}"),
                "inputs": [
                    {"key": "since", "description": "Start date"},
                    {"key": "region", "description": ""},
                ],
                "actions": actions,
                "details": {
                    "__type__": "query",
                    "query": format!("select id, email from customers where region = {{{{region}}}} -- {p}"),
                    "credential_id": "crd_01hxxxxxxxxxxxxxxxxxxxxxxx",
                },
            })
        })
        .collect();
    let body = json!({"name": "Customer support", "restricted_access": false, "panels": panels});
    Bytes::from(body.to_string())
}

/// A store filled for the read and update benchmarks, and the records they address.
#[derive(Clone, Debug)]
pub struct Seeded {
    /// The service over the filled store.
    pub service: ConsoleService,
    /// A database in the middle of the store.
    pub database_id: String,
    /// A dashboard in the middle of the store.
    pub dashboard_id: String,
}

/// A service whose store holds `databases` databases (the create body) and `dashboards`
/// dashboards of `panels` × `actions`, created through the API.
///
/// # Panics
///
/// When the service refuses one of the creations.
pub async fn seeded(databases: usize, dashboards: usize, panels: usize, actions: usize) -> Seeded {
    seeded_on(crate::service(), databases, dashboards, panels, actions).await
}

/// As [`seeded`], on the store of `service`.
pub async fn seeded_on(
    service: ConsoleService,
    databases: usize,
    dashboards: usize,
    panels: usize,
    actions: usize,
) -> Seeded {
    let mut database_id = String::new();
    for i in 0..databases {
        let request = database_request(Method::POST, DATABASES, Some(create_database_body()));
        let (status, body) = json_of(&service, request).await;
        assert_eq!(status, StatusCode::OK, "seeding databases: {body}");
        if i == databases / 2 {
            database_id = id_of(&body);
        }
    }
    let mut dashboard_id = String::new();
    for i in 0..dashboards {
        let request = dashboard_request(
            Method::POST,
            DASHBOARDS,
            Some(dashboard_body(panels, actions)),
        );
        let (status, body) = json_of(&service, request).await;
        assert_eq!(status, StatusCode::OK, "seeding dashboards: {body}");
        if i == dashboards / 2 {
            dashboard_id = id_of(&body);
        }
    }
    Seeded {
        service,
        database_id,
        dashboard_id,
    }
}

fn id_of(body: &Value) -> String {
    body["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {body}"))
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{service, status_of};

    #[tokio::test]
    async fn every_benchmarked_request_succeeds() {
        let seeded = seeded(3, 3, 10, 3).await;
        let service = &seeded.service;

        let (status, created) = json_of(
            service,
            database_request(Method::POST, DATABASES, Some(create_database_body())),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{created}");
        assert_eq!(created["credentials"].as_array().unwrap().len(), 2);
        assert_eq!(created["connection_parameters"][1]["value"], "30s");

        let path = format!("{DATABASES}/{}", seeded.database_id);
        let (status, retrieved) =
            json_of(service, database_request(Method::GET, &path, None)).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(retrieved["id"], seeded.database_id.as_str());

        let (status, updated) = json_of(
            service,
            database_request(Method::PATCH, &path, Some(update_database_body())),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{updated}");
        assert_eq!(updated["name"], "orders (primary)");
        assert_eq!(updated["credentials"], retrieved["credentials"]);

        let path = format!("{DASHBOARDS}/{}", seeded.dashboard_id);
        let (status, dashboard) =
            json_of(service, dashboard_request(Method::GET, &path, None)).await;
        assert_eq!(status, StatusCode::OK);
        let panels = dashboard["panels"].as_array().unwrap();
        assert_eq!(panels.len(), 10);
        assert!(
            panels
                .iter()
                .all(|p| p["actions"].as_array().unwrap().len() == 3)
        );

        let status = status_of(service, database_request(Method::GET, UNKNOWN_PATH, None)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn a_fresh_service_accepts_the_creations() {
        let service = service();
        let status = status_of(
            &service,
            dashboard_request(Method::POST, DASHBOARDS, Some(dashboard_body(10, 3))),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
    }

    #[test]
    fn the_create_body_parses_as_an_object() {
        let value: Value = serde_json::from_slice(&create_database_body()).unwrap();
        assert_eq!(value["credentials"].as_array().unwrap().len(), 2);
    }
}
