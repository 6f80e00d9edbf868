//! The route table ([`ROUTES`]): each row names its method, where it is mounted, its path
//! template, who may call it, whether it takes an `Idempotency-Key`, what it may change in the
//! read cache, its OpenAPI operation, and its handler as `family.handler`: the method `handler`
//! of the family state `App::family`, in the file `family.rs` (or `family/`). Recognition
//! (404), the methods a path answers (405 with `Allow`), the metrics label and the OpenAPI
//! document's paths all come from the table: adding an endpoint is one row and one function,
//! as `route(path, post(h))` is in axum.

use std::future::Future;
use std::pin::Pin;

use http::Method;
use serde_json::Value;

use super::app::App;
use super::cache::Writes;
use super::call::{Answer, Call};
use super::idempotency::Idempotent;
use super::openapi::{self, Describe, operations};
use super::who::{Credentials, Mount, Who, mount};

/// An endpoint's handler: an `async fn(&App, Call<'_>) -> Answer`, boxed by [`routes!`].
pub(crate) type Handler =
    for<'a> fn(&'a App, Call<'a>) -> Pin<Box<dyn Future<Output = Answer> + Send + 'a>>;

/// One row of the route table.
#[derive(Debug)]
pub(crate) struct Endpoint {
    /// The method.
    pub(crate) method: Method,
    /// Where it is mounted; the first is its own path, the others compatibility paths.
    pub(crate) mounts: &'static [Mount],
    /// Its path below a mount, with `{name}` parameters: also its metrics label.
    pub(crate) path: &'static str,
    /// Who may call it.
    pub(crate) who: Who,
    /// Whether it takes an `Idempotency-Key`.
    pub(crate) idempotent: Idempotent,
    /// What it may change in the read cache.
    pub(crate) writes: Writes,
    /// Its OpenAPI operation id (a compatibility path's adds `Compat`).
    pub(crate) operation: &'static str,
    /// The rest of its OpenAPI operation.
    pub(crate) describe: Describe,
    /// What answers it.
    pub(crate) handler: Handler,
}

/// The database routes: `x-api-key`, under the console's prefix and the Terraform provider's.
const DATABASES: &[Mount] = &[
    mount("/api/v1/console", Credentials::API_KEY, false),
    mount("/api/v1/querydesk", Credentials::API_KEY, true),
];
/// The query routes: either credential, under the same two prefixes.
const QUERIES: &[Mount] = &[
    mount("/api/v1/console", Credentials::EITHER, false),
    mount("/api/v1/querydesk", Credentials::EITHER, true),
];
/// The routes a database's administrators call (its data protection's status and plan): either
/// credential, under the same two prefixes.
const ADMINISTERED: &[Mount] = QUERIES;
/// The console's own routes (audit, outbox): `x-api-key`, no compatibility path.
const CONSOLE: &[Mount] = &[mount("/api/v1/console", Credentials::API_KEY, false)];
/// The caller's own view: either credential, under the console's prefix only.
const ME: &[Mount] = &[mount("/api/v1/console", Credentials::EITHER, false)];
/// The dashboard routes: `Bearer` on their own path, either credential on the provider's.
const DASHBOARDS: &[Mount] = &[
    mount("/v1", Credentials::BEARER, false),
    mount("/api/v1", Credentials::EITHER, true),
];
/// `PATCH` for a dashboard's update, on the provider's path only.
const DASHBOARDS_COMPAT: &[Mount] = &[mount("/api/v1", Credentials::EITHER, true)];
/// Signing a browser in and out: no credential (the handlers check the browser's header and
/// origin), under the console's prefix only.
const BROWSER: &[Mount] = &[mount("/api/v1/console", Credentials::NONE, false)];
/// Open documents at the root.
const OPEN: &[Mount] = &[mount("", Credentials::NONE, false)];

macro_rules! routes {
    ($($method:ident $mounts:ident $path:literal, $who:ident, $idem:ident, $writes:ident, $op:literal => $family:ident . $handler:ident;)*) => {
        &[$(Endpoint {
            method: Method::$method,
            mounts: $mounts,
            path: $path,
            who: Who::$who,
            idempotent: Idempotent::$idem,
            writes: Writes::$writes,
            operation: $op,
            describe: operations::$handler,
            handler: |app, call| Box::pin(app.$family.$handler(call)),
        }),*]
    };
}

/// Every endpoint of the API: method, mounts, path; who may call; idempotency; cache; OpenAPI
/// operation id; handler.
pub(crate) static ROUTES: &[Endpoint] = routes! {
    GET DATABASES "/databases", Full, No, Nothing, "listDatabases" => databases.list_databases;
    POST DATABASES "/databases", Full, Record, Nothing, "createDatabase" => databases.create_database;
    PUT DATABASES "/databases/setup", Setup, Record, SomeDatabase, "setupDatabase" => databases.setup_database;
    POST DATABASES "/databases/check-connection", Full, No, Nothing, "checkUnsavedConnection" => check_connection.check_unsaved;
    DELETE DATABASES "/databases/remove/{api_id}", Setup, Record, SomeDatabase, "removeDatabase" => databases.remove_database;
    GET DATABASES "/databases/{id}", Full, No, Nothing, "getDatabase" => databases.get_database;
    PATCH DATABASES "/databases/{id}", Full, Record, Database, "updateDatabase" => databases.update_database;
    DELETE DATABASES "/databases/{id}", Full, Record, Database, "deleteDatabase" => databases.delete_database;
    GET DATABASES "/databases/{id}/permissions", Full, No, Nothing, "getPermissions" => access.get_permissions;
    PUT DATABASES "/databases/{id}/permissions", Full, Permissions, Nothing, "putPermissions" => access.put_permissions;
    GET DATABASES "/databases/{id}/data-protection", Full, No, Nothing, "getDataProtection" => access.get_data_protection;
    PUT DATABASES "/databases/{id}/data-protection", Full, DataProtection, Nothing, "putDataProtection" => access.put_data_protection;
    GET ADMINISTERED "/databases/{id}/data-protection/status", Administrator, No, Nothing, "getDataProtectionStatus" => protection_status.get_data_protection_status;
    GET ADMINISTERED "/databases/{id}/data-protection/plan", Administrator, No, Nothing, "getDataProtectionPlan" => provisioning.get_data_protection_plan;
    GET ADMINISTERED "/databases/{id}/data-protection/catalog", Administrator, No, Nothing, "getDataProtectionCatalog" => provisioning.get_data_protection_catalog;
    POST ADMINISTERED "/databases/{id}/data-protection/apply", Administrator, No, Nothing, "applyDataProtection" => provisioning.apply_data_protection;
    GET ADMINISTERED "/databases/{id}/data-protection/provisioning/check-connection", Administrator, No, Nothing, "checkProvisioningConnection" => provisioning.check_provisioning_connection;
    POST DATABASES "/databases/{id}/check-connection", Full, No, Nothing, "checkEditedConnection" => check_connection.check_edited;
    GET DATABASES "/databases/{id}/check-connection/{username}", Full, No, Nothing, "checkConnection" => check_connection.check_connection;
    POST BROWSER "/sign-in", Anyone, No, Nothing, "signIn" => browser.sign_in;
    POST BROWSER "/sign-in/link", Anyone, No, Nothing, "exchangeSignInLink" => browser.exchange_sign_in_link;
    POST BROWSER "/sign-out", Anyone, No, Nothing, "signOut" => browser.sign_out;
    GET BROWSER "/oidc", Anyone, No, Nothing, "getOidc" => oidc.get_oidc;
    GET BROWSER "/oidc/start", Anyone, No, Nothing, "startOidc" => oidc.start_oidc;
    GET BROWSER "/oidc/callback", Anyone, No, Nothing, "oidcCallback" => oidc.oidc_callback;
    POST BROWSER "/sign-in/invitation", Anyone, No, Nothing, "enrollInvitation" => browser.enroll_invitation;
    POST BROWSER "/sign-in/passkey/options", Anyone, No, Nothing, "startPasskeySignIn" => passkeys.start_sign_in;
    POST BROWSER "/sign-in/passkey", Anyone, No, Nothing, "passkeySignIn" => passkeys.finish_sign_in;
    POST ME "/me/passkeys/registration", Querier, No, Nothing, "startPasskeyRegistration" => passkeys.start_registration;
    GET ME "/me/passkeys", Querier, No, Nothing, "listMyPasskeys" => passkeys.list_my_passkeys;
    POST ME "/me/passkeys", Querier, No, Nothing, "addMyPasskey" => passkeys.finish_registration;
    DELETE ME "/me/passkeys/{id}", Querier, No, Nothing, "removeMyPasskey" => passkeys.remove_my_passkey;
    GET ME "/me/door", Querier, No, Nothing, "getMyDoor" => door.get_my_door;
    POST ME "/me/door/passwords", Querier, No, Nothing, "createDoorPassword" => door.create_door_password;
    DELETE ME "/me/door/passwords/{id}", Querier, No, Nothing, "revokeDoorPassword" => door.revoke_door_password;
    DELETE ME "/me/door/sessions/{id}", Querier, No, Nothing, "endDoorSession" => door.end_door_session;
    GET CONSOLE "/users", Full, No, Nothing, "listUsers" => users.list_users;
    GET CONSOLE "/users/{name}", Full, No, Nothing, "getUser" => users.get_user;
    PATCH CONSOLE "/users/{name}", Full, No, Nothing, "updateUser" => users.update_user;
    POST CONSOLE "/users/{name}/recovery-link", Full, No, Nothing, "createRecoveryLink" => users.create_recovery_link;
    GET CONSOLE "/invitations", Full, No, Nothing, "listInvitations" => users.list_invitations;
    POST CONSOLE "/invitations", Full, No, Nothing, "createInvitation" => users.create_invitation;
    DELETE CONSOLE "/invitations/{id}", Full, No, Nothing, "revokeInvitation" => users.revoke_invitation;
    GET ME "/me", Anyone, No, Nothing, "getMe" => me.get_me;
    GET ME "/me/settings", Querier, No, Nothing, "getMySettings" => me.get_my_settings;
    PUT ME "/me/settings", Querier, No, Nothing, "putMySettings" => me.put_my_settings;
    GET ME "/me/databases", Querier, No, Nothing, "listMyDatabases" => me.list_my_databases;
    GET ME "/me/databases/{id}/schema", Querier, No, Nothing, "getMySchema" => schema.get_my_schema;
    GET ME "/me/deliveries/{id}", Querier, No, Nothing, "getMyDelivery" => outbox.get_my_delivery;
    GET ME "/me/sessions", Querier, No, Nothing, "listMySessions" => browser.list_my_sessions;
    DELETE ME "/me/sessions/{id}", Querier, No, Nothing, "endMySession" => browser.end_my_session;
    GET QUERIES "/queries", Querier, No, Nothing, "listQueries" => queries.list_queries;
    POST QUERIES "/queries", Querier, Record, Nothing, "createQuery" => queries.create_query;
    GET QUERIES "/queries/{id}", Querier, No, Nothing, "getQuery" => queries.get_query;
    PATCH QUERIES "/queries/{id}", Querier, No, Nothing, "updateQuery" => queries.update_query;
    POST QUERIES "/queries/{id}/run", Querier, No, Nothing, "runQuery" => runs.run_query;
    POST QUERIES "/queries/{id}/download", Querier, No, Nothing, "createDownload" => downloads.create_download;
    GET BROWSER "/downloads/csv", Anyone, No, Nothing, "downloadCsv" => downloads.download_csv;
    POST QUERIES "/queries/{id}/reviews", Querier, No, Nothing, "reviewQuery" => reviews.review_query;
    POST QUERIES "/queries/{id}/comments", Querier, No, Nothing, "commentOnQuery" => reviews.comment_on_query;
    GET ME "/saved-queries", Querier, No, Nothing, "listSavedQueries" => saved_queries.list_saved_queries;
    POST ME "/saved-queries", Querier, No, Nothing, "createSavedQuery" => saved_queries.create_saved_query;
    GET ME "/saved-queries/{id}", Querier, No, Nothing, "getSavedQuery" => saved_queries.get_saved_query;
    PATCH ME "/saved-queries/{id}", Querier, No, Nothing, "updateSavedQuery" => saved_queries.update_saved_query;
    DELETE ME "/saved-queries/{id}", Querier, No, Nothing, "deleteSavedQuery" => saved_queries.delete_saved_query;
    POST ME "/saved-queries/{id}/queries", Querier, No, Nothing, "createSavedQueryRun" => saved_queries.create_saved_query_run;
    GET CONSOLE "/audit", Full, No, Nothing, "listAuditEvents" => audit.list_audit;
    GET CONSOLE "/deliveries", Full, No, Nothing, "listDeliveries" => outbox.list_deliveries;
    GET CONSOLE "/deliveries/{id}", Full, No, Nothing, "getDelivery" => outbox.get_delivery;
    POST CONSOLE "/deliveries/{id}/retry", Full, Record, Nothing, "retryDelivery" => outbox.retry_delivery;
    GET DASHBOARDS "/dashboards", Querier, No, Nothing, "listDashboards" => dashboards.list_dashboards;
    POST DASHBOARDS "/dashboards", Editor, Record, Nothing, "createDashboard" => dashboards.create_dashboard;
    GET DASHBOARDS "/dashboards/{id}", Querier, No, Nothing, "getDashboard" => dashboards.get_dashboard;
    PUT DASHBOARDS "/dashboards/{id}", Editor, Record, Dashboard, "updateDashboard" => dashboards.update_dashboard;
    PATCH DASHBOARDS_COMPAT "/dashboards/{id}", Editor, Record, Dashboard, "patchDashboard" => dashboards.update_dashboard;
    DELETE DASHBOARDS "/dashboards/{id}", Editor, Record, Dashboard, "deleteDashboard" => dashboards.delete_dashboard;
    GET DASHBOARDS "/dashboards/{id}/presentation", Querier, No, Nothing, "getDashboardPresentation" => dashboards.get_presentation;
    PUT DASHBOARDS "/dashboards/{id}/presentation", Editor, Record, Dashboard, "putDashboardPresentation" => dashboards.put_presentation;
    GET DASHBOARDS "/dashboards/{id}/inputs/{key}/choices", Querier, No, Nothing, "getInputChoices" => panels.input_choices;
    POST DASHBOARDS "/dashboards/test-run", Editor, No, Nothing, "testRunPanel" => panels.test_run_panel;
    POST DASHBOARDS "/dashboards/{id}/panels/{panel_id}/download", Querier, No, Nothing, "createPanelDownload" => downloads.create_panel_download;
    POST DASHBOARDS "/dashboards/{id}/panels/{panel_id}/run", Querier, No, Nothing, "runPanel" => panels.run_panel;
    POST DASHBOARDS "/dashboards/{id}/panels/{panel_id}/actions/{action_id}/trigger", Querier, Record, Nothing, "triggerAction" => outbox.trigger_action;
    GET OPEN "/openapi.json", Anyone, No, Nothing, "getOpenapi" => document.openapi_document;
};

/// The OpenAPI document of the table, for a service mounted at `base_path`.
pub(crate) fn openapi_document(base_path: &str) -> Value {
    openapi::document(
        base_path,
        ROUTES.iter().map(|endpoint| openapi::Documented {
            method: &endpoint.method,
            mounts: endpoint.mounts,
            path: endpoint.path,
            operation: endpoint.operation,
            describe: endpoint.describe,
            idempotent: endpoint.idempotent != Idempotent::No,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::QueryStatus;
    use crate::service::router::Route;

    fn document(base_path: &str) -> Value {
        openapi_document(base_path)
    }

    /// Every path and method of the document is the router's, and every route of the router is
    /// in the document: a path template with its parameters filled in is recognized as a route
    /// that allows exactly the document's methods.
    /// The `Database` schema's properties are exactly the keys a database answer has.
    #[test]
    fn the_database_schema_is_the_answer() {
        let body = serde_json::json!({
            "name": "Orders", "adapter": "postgres", "hostname": "db.internal",
            "database": "orders", "credentials": [{"username": "reader", "password": "pw"}],
        });
        let sealer = crate::seal::Sealer::ephemeral().unwrap();
        let db = crate::validate::database_from_body(
            None,
            &body.as_object().unwrap().clone().into(),
            crate::model::Timestamp::now(),
            &sealer,
        )
        .unwrap();
        let answer = serde_json::to_value(super::super::render::DatabaseView::from(&db)).unwrap();
        let mut answered: Vec<&String> = answer.as_object().unwrap().keys().collect();
        let document = document("");
        let schema = &document["components"]["schemas"]["Database"]["properties"];
        let mut documented: Vec<&String> = schema.as_object().unwrap().keys().collect();
        answered.sort();
        documented.sort();
        assert_eq!(answered, documented);
    }

    /// The `Query` schema's properties are exactly the keys a query answer has, before and
    /// after its run.
    #[test]
    fn the_query_schema_is_the_answer() {
        let now = crate::model::Timestamp::now();
        let mut query = crate::model::Query {
            id: crate::model::QueryId::generate(),
            database_id: "db_1".to_owned(),
            credential_id: "crd_1".to_owned(),
            query: "SELECT 1".to_owned(),
            title: "one".to_owned(),
            description: String::new(),
            limit: 10,
            author: "a@example.com".to_owned(),
            by_agent: false,
            target: None,
            status: QueryStatus::Ready,
            reviews: Vec::new(),
            revision: 0,
            comments: Vec::new(),
            saved_query: None,
            params: Vec::new(),
            bypass: None,
            run: None,
            inserted_at: now,
            updated_at: now,
        };
        let document = document("");
        let schema = &document["components"]["schemas"]["Query"];
        let documented = |schema: &Value| {
            let mut keys: Vec<String> = schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            keys.sort();
            keys
        };
        let answered = |value: &Value| {
            let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
            keys.sort();
            keys
        };
        let view = serde_json::to_value(super::super::render::QueryView::from(&query)).unwrap();
        assert_eq!(answered(&view), documented(schema));
        query.run = Some(crate::model::QueryRun {
            run_by: "a@example.com".to_owned(),
            started_at: now,
            finished_at: Some(now),
            row_count: 1,
            affected_rows: Some(1),
            truncated: false,
            duration_ms: 2,
            error: None,
        });
        let view = serde_json::to_value(super::super::render::QueryView::from(&query)).unwrap();
        let run = serde_json::to_string(&schema["properties"]["run"]).unwrap();
        assert!(run.contains("#/components/schemas/QueryRun"), "{run}");
        assert_eq!(
            answered(&view["run"]),
            documented(&document["components"]["schemas"]["QueryRun"])
        );
    }

    #[test]
    fn the_document_is_the_router() {
        let document = document("");
        let paths = document["paths"].as_object().unwrap();
        let mut documented_rows = 0;
        for (template, item) in paths {
            let path = template
                .replace("{id}", "db_01arz3ndektsv4rrffq69g5fav")
                .replace("{api_id}", "ext-1")
                .replace("{username}", "reader")
                .replace("{panel_id}", "pl_1")
                .replace("{action_id}", "act_1");
            let route =
                Route::recognize(&path).unwrap_or_else(|| panic!("{template} is not a route"));
            let mut documented: Vec<String> = item
                .as_object()
                .unwrap()
                .keys()
                .map(|m| m.to_uppercase())
                .collect();
            documented.sort();
            let mut allowed: Vec<String> = route
                .allowed_methods()
                .iter()
                .map(|m| m.to_string())
                .collect();
            allowed.sort();
            assert_eq!(documented, allowed, "{template}");
            documented_rows += documented.len();
        }
        // Every row at every mount, once.
        let rows: usize = ROUTES.iter().map(|e| e.mounts.len()).sum();
        assert_eq!(documented_rows, rows);
        assert_eq!(
            paths.len(),
            2 * 9 + 2 * 2 + 2 * 4 + 2 + 2 + 3 + 1 + 1 + 2 + 3 + 1 + 2 + 1 + 2 + 1 + 2 + 2
                // The OIDC sign-in: …/oidc, …/oidc/start, …/oidc/callback.
                + 3
                // Provisioning, at both database mounts: …/data-protection/plan, …/catalog,
                // …/apply, …/provisioning/check-connection.
                + 2 * 4
                // The user's own sessions: …/me/sessions, …/me/sessions/{id}.
                + 2
                // People: …/sign-in/invitation, …/users, …/users/{name},
                // …/users/{name}/recovery-link, …/invitations, …/invitations/{id}.
                + 6
                // Passkeys: …/sign-in/passkey/options, …/sign-in/passkey,
                // …/me/passkeys/registration, …/me/passkeys, …/me/passkeys/{id}.
                + 5
                // The door: …/me/door, …/me/door/passwords, …/me/door/passwords/{id},
                // …/me/door/sessions/{id}.
                + 4
                // A query's thread, at both query mounts: …/queries/{id}/comments.
                + 2
                // Saved queries: …/saved-queries, …/saved-queries/{id},
                // …/saved-queries/{id}/queries.
                + 3
                // The person's settings: …/me/settings.
                + 1
                // A dashboard's presentation and an input's choices, at both dashboard mounts.
                + 2 * 2
        );
    }

    #[test]
    fn operation_ids_are_unique_and_links_point_at_them() {
        let document = document("/console");
        assert_eq!(document["servers"][0]["url"], "/console");
        let mut ids = std::collections::HashSet::new();
        let mut links = Vec::new();
        for item in document["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                assert!(ids.insert(operation["operationId"].as_str().unwrap().to_owned()));
                if let Some(found) = operation["responses"]["200"]["links"].as_object() {
                    links.extend(
                        found
                            .values()
                            .map(|l| l["operationId"].as_str().unwrap().to_owned()),
                    );
                }
            }
        }
        assert!(!links.is_empty());
        for link in links {
            assert!(ids.contains(&link), "link to {link}");
        }
    }
}
