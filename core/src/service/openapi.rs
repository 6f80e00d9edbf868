//! The OpenAPI 3.1 document of the service, served at `GET {base}/openapi.json`.
//!
//! It is built from the code's own values, so it cannot drift from them: the paths and methods
//! from the router's table (a test holds every path of the document against
//! `Route::recognize` and `allowed_methods`), the enums from their wire names, the string
//! rules from `validate::Text`, the bounds from the validation constants. Cross-field rules
//! that JSON Schema states only in part (unique usernames, parameter names, input keys and
//! workflow input keys; one default credential; a CA certificate stored for
//! `verify_server_hostname`) are written into the descriptions and answered with 422.

use serde_json::{Map, Value, json};

use super::queries::REASON_MAX;
use crate::model::{
    AccessLevel, Adapter, AuditAction, ColumnAction, Database, DeliveryStatus, QueryStatus,
    ResourceKind, RunOutcome, SubjectKind,
};
use crate::validate::{
    CERTIFICATE_MAX, DEFAULT_AI_MAX_ROWS, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, NAME_MAX, PASSWORD_MAX,
    QUERY_MAX, Text, VALUE_MAX,
};

/// The path of the document, below the service's base path.
pub(crate) const OPENAPI_PATH: &str = "/openapi.json";

const NAME: Text = Text::Line(NAME_MAX);
const U32_MAX: u64 = u32::MAX as u64;

/// Which caller credentials an operation takes (the security requirement).
#[derive(Clone, Copy)]
enum Auth {
    ApiKey,
    Bearer,
    Either,
}

impl Auth {
    fn requirement(self) -> Value {
        match self {
            Auth::ApiKey => json!([{ "apiKey": [] }]),
            Auth::Bearer => json!([{ "bearer": [] }]),
            Auth::Either => json!([{ "apiKey": [] }, { "bearer": [] }]),
        }
    }
}

/// The whole document, for a service mounted at `base_path` (`""` for the root).
pub(crate) fn document(base_path: &str) -> Value {
    let mut paths = Map::new();
    for prefix in ["/api/v1/console", "/api/v1/querydesk"] {
        let compat = prefix.ends_with("querydesk");
        database_paths(&mut paths, prefix, compat);
    }
    dashboard_paths(&mut paths, "/v1/dashboards", Auth::Bearer, false);
    dashboard_paths(&mut paths, "/api/v1/dashboards", Auth::Either, true);
    for prefix in ["/api/v1/console", "/api/v1/querydesk"] {
        query_paths(&mut paths, prefix, prefix.ends_with("querydesk"));
    }
    panel_run_path(&mut paths, "/v1/dashboards", Auth::Bearer, false);
    panel_run_path(&mut paths, "/api/v1/dashboards", Auth::Either, true);
    trigger_path(&mut paths, "/v1/dashboards", Auth::Bearer, false);
    trigger_path(&mut paths, "/api/v1/dashboards", Auth::Either, true);
    delivery_paths(&mut paths);
    let mut audit_params = page_params();
    audit_params.push(json!({
        "name": "resource", "in": "query", "required": false,
        "description": "Only the events of this record (`db_…`, `dash_…`, `key_…`).",
        "schema": { "type": "string" },
    }));
    paths.insert(
        "/api/v1/console/audit".to_owned(),
        json!({
            "get": operation("listAuditEvents", "The audit trail: one event per change, newest first", json!(["audit"]), Auth::ApiKey)
                .params(audit_params)
                .ok(json_content(schema_ref("AuditEventPage")))
                .errors(&[401, 403, 422, 503])
                .build(),
        }),
    );
    paths.insert(
        OPENAPI_PATH.to_owned(),
        json!({
            "get": {
                "operationId": "getOpenapi",
                "summary": "This document",
                "security": [],
                "responses": {
                    "200": { "description": "The OpenAPI 3.1 document.", "content": json_content(json!({ "type": "object" })) },
                },
            },
        }),
    );
    let mut document = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "dbconsole",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The control plane of a database console: databases with their \
                credentials, access control, check-connection, and dashboards. Every success is \
                200 with JSON (check-connection: text/plain). Errors are \
                `{\"errors\":{\"detail\":…}}`, or field-keyed `{\"errors\":{\"<field>\":[…]}}` \
                for 422. A blank string (empty or white space only) for an optional string \
                means unset; for a required one it is \"can't be blank\". Unknown fields are \
                ignored.",
        },
        "paths": paths,
        "components": components(),
        "tags": [
            { "name": "databases", "description": "Databases, their credentials and access control (x-api-key)." },
            { "name": "dashboards", "description": "Dashboards of query panels with row actions (Bearer)." },
            { "name": "queries", "description": "Queries run once under the access rules, limits and AI caps (x-api-key or Bearer, bound to a user)." },
            { "name": "outbox", "description": "Workflow runs and Slack messages waiting to be delivered, delivered, or dead (x-api-key)." },
            { "name": "compat", "description": "The same operations under the paths the Terraform provider uses." },
        ],
    });
    if !base_path.is_empty() {
        document["servers"] = json!([{ "url": base_path }]);
    }
    document
}

// ---------------------------------------------------------------------------------------------
// Paths

fn database_paths(paths: &mut Map<String, Value>, prefix: &str, compat: bool) {
    let op = |id: &str| {
        if compat {
            format!("{id}Compat")
        } else {
            id.to_owned()
        }
    };
    let tags = |tag: &str| {
        if compat {
            json!(["compat"])
        } else {
            json!([tag])
        }
    };
    let auth = Auth::ApiKey;
    let base = format!("{prefix}/databases");
    let db_links = |id_from: &str| {
        json!({
            "GetDatabase": link(&op("getDatabase"), &[("id", id_from)]),
            "UpdateDatabase": link(&op("updateDatabase"), &[("id", id_from)]),
            "DeleteDatabase": link(&op("deleteDatabase"), &[("id", id_from)]),
            "GetPermissions": link(&op("getPermissions"), &[("id", id_from)]),
            "PutPermissions": link(&op("putPermissions"), &[("id", id_from)]),
            "GetDataProtection": link(&op("getDataProtection"), &[("id", id_from)]),
            "PutDataProtection": link(&op("putDataProtection"), &[("id", id_from)]),
            "CheckConnection": link(
                &op("checkConnection"),
                &[("id", id_from), ("username", "$response.body#/credentials/0/username")],
            ),
        })
    };
    paths.insert(
        base.clone(),
        json!({
            "get": operation(&op("listDatabases"), "List databases, ordered by id; the filters given all apply", tags("databases"), auth)
                .params(database_filter_params())
                .ok(json_content(schema_ref("DatabasePage")))
                .errors(&[401, 403, 422, 503])
                .build(),
            "post": operation(&op("createDatabase"), "Create a database", tags("databases"), auth)
                .body(schema_ref("DatabaseCreate"))
                .ok_with_links(json_content(schema_ref("Database")), db_links("$response.body#/id"))
                .versioned()
                .idempotent()
                .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
                .build(),
        }),
    );
    paths.insert(
        format!("{base}/setup"),
        json!({
            "put": operation(&op("setupDatabase"), "Create or update the database whose api_id is the body's id (declarative)", tags("databases"), auth)
                .body(schema_ref("DatabaseSetup"))
                .ok_with_links(json_content(schema_ref("Database")), {
                    let mut links = db_links("$response.body#/id");
                    links["RemoveDatabase"] = link(&op("removeDatabase"), &[("api_id", "$response.body#/api_id")]);
                    links
                })
                .versioned()
                .conditional()
                .idempotent()
                .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
                .build(),
        }),
    );
    paths.insert(
        format!("{base}/remove/{{api_id}}"),
        json!({
            "delete": operation(&op("removeDatabase"), "Delete the database with this api_id; answers the deleted database", tags("databases"), auth)
                .params(vec![path_param("api_id", "The database's api_id (the id given to setup).", text_schema(NAME, Presence::Required))])
                .ok(json_content(schema_ref("Database")))
                .conditional()
                .idempotent()
                .errors(&[401, 403, 404, 422, 503])
                .build(),
        }),
    );
    let id = || path_param("id", "The database's id.", id_param_schema("db"));
    paths.insert(
        format!("{base}/{{id}}"),
        json!({
            "get": operation(&op("getDatabase"), "Retrieve a database", tags("databases"), auth)
                .params(vec![id()])
                .ok(json_content(schema_ref("Database")))
                .versioned()
                .cacheable()
                .errors(&[401, 403, 404, 503])
                .build(),
            "patch": operation(&op("updateDatabase"), "Update a database: fields left out stay", tags("databases"), auth)
                .params(vec![id()])
                .body(schema_ref("DatabaseUpdate"))
                .ok(json_content(schema_ref("Database")))
                .versioned()
                .conditional()
                .idempotent()
                .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
                .build(),
            "delete": operation(&op("deleteDatabase"), "Delete a database with its credentials and access control; answers the deleted database", tags("databases"), auth)
                .params(vec![id()])
                .ok(json_content(schema_ref("Database")))
                .conditional()
                .idempotent()
                .errors(&[401, 403, 404, 422, 503])
                .build(),
        }),
    );
    paths.insert(
        format!("{base}/{{id}}/check-connection/{{username}}"),
        json!({
            "get": operation(&op("checkConnection"), "Open a real connection with this credential: `ok`, or the driver's error in one line (secrets scrubbed)", tags("databases"), auth)
                .params(vec![
                    id(),
                    path_param("username", "The credential's username.", text_schema(NAME, Presence::Required)),
                ])
                .ok(text_content("ok"))
                .errors(&[401, 403, 503])
                .response(404, json!({ "description": "No such database or username.", "content": text_content("not found") }))
                .build(),
        }),
    );
    paths.insert(
        format!("{base}/check-connection"),
        json!({
            "post": operation(&op("checkUnsavedConnection"), "Check a database before saving it: the body of a create plus `username`, the credential to try (left out: the default one). The same real connection as the stored check; nothing is stored", tags("databases"), auth)
                .body(schema_ref("DatabaseCheck"))
                .ok(text_content("ok"))
                .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
                .build(),
        }),
    );
    paths.insert(
        format!("{base}/{{id}}/check-connection"),
        json!({
            "post": operation(&op("checkEditedConnection"), "Check a stored database with changes not saved: the body of an update (merged over the stored database) plus `username`, the credential to try (left out: the default one); nothing is stored", tags("databases"), auth)
                .params(vec![id()])
                .body(schema_ref("DatabaseEditCheck"))
                .ok(text_content("ok"))
                .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
                .build(),
        }),
    );
    paths.insert(
        format!("{base}/{{id}}/permissions"),
        json!({
            "get": operation(&op("getPermissions"), "Who may use the database", tags("databases"), auth)
                .params(vec![id()])
                .ok(json_content(schema_ref("Permissions")))
                .errors(&[401, 403, 404, 503])
                .build(),
            "put": operation(&op("putPermissions"), "Replace the permissions", tags("databases"), auth)
                .params(vec![id()])
                .body(schema_ref("PermissionsInput"))
                .ok(json_content(schema_ref("Permissions")))
                .idempotent()
                .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
                .build(),
        }),
    );
    paths.insert(
        format!("{base}/{{id}}/data-protection"),
        json!({
            "get": operation(&op("getDataProtection"), "The database's data protection policies and what it inherits", tags("databases"), auth)
                .params(vec![id()])
                .ok(json_content(schema_ref("DataProtection")))
                .errors(&[401, 403, 404, 503])
                .build(),
            "put": operation(&op("putDataProtection"), "Replace the policies and inherits_from", tags("databases"), auth)
                .params(vec![id()])
                .body(schema_ref("DataProtectionInput"))
                .ok(json_content(schema_ref("DataProtection")))
                .idempotent()
                .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
                .build(),
        }),
    );
}

fn dashboard_paths(paths: &mut Map<String, Value>, base: &str, auth: Auth, compat: bool) {
    let op = |id: &str| {
        if compat {
            format!("{id}Compat")
        } else {
            id.to_owned()
        }
    };
    let tags = if compat {
        json!(["compat"])
    } else {
        json!(["dashboards"])
    };
    let id_from = "$response.body#/id";
    let mut links = json!({
        "GetDashboard": link(&op("getDashboard"), &[("id", id_from)]),
        "UpdateDashboard": link(&op("updateDashboard"), &[("id", id_from)]),
        "DeleteDashboard": link(&op("deleteDashboard"), &[("id", id_from)]),
    });
    if compat {
        links["PatchDashboard"] = link("patchDashboardCompat", &[("id", id_from)]);
    }
    paths.insert(
        base.to_owned(),
        json!({
            "get": operation(&op("listDashboards"), "List dashboards, ordered by id; name_prefix filters", tags.clone(), auth)
                .params({
                    let mut params = page_params();
                    params.push(filter_param("name_prefix", "Only dashboards whose name starts with this (case counts)."));
                    params
                })
                .ok(json_content(schema_ref("DashboardPage")))
                .errors(&[401, 403, 422, 503])
                .build(),
            "post": operation(&op("createDashboard"), "Create a dashboard", tags.clone(), auth)
                .body(schema_ref("DashboardCreate"))
                .ok_with_links(json_content(schema_ref("Dashboard")), links)
                .versioned()
                .idempotent()
                .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
                .build(),
        }),
    );
    let id = || path_param("id", "The dashboard's id.", id_param_schema("dash"));
    let update = |operation_id: &str| {
        operation(
            operation_id,
            "Update a dashboard: fields left out stay; `panels`, when given, is the whole new list",
            tags.clone(),
            auth,
        )
        .params(vec![id()])
        .body(schema_ref("DashboardUpdate"))
        .ok(json_content(schema_ref("Dashboard")))
        .versioned()
        .conditional()
        .idempotent()
        .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
        .build()
    };
    let mut item = json!({
        "get": operation(&op("getDashboard"), "Retrieve a dashboard", tags.clone(), auth)
            .params(vec![id()])
            .ok(json_content(schema_ref("Dashboard")))
            .versioned()
            .cacheable()
            .errors(&[401, 403, 404, 503])
            .build(),
        "put": update(&op("updateDashboard")),
        "delete": operation(&op("deleteDashboard"), "Delete a dashboard; answers the deleted dashboard", tags.clone(), auth)
            .params(vec![id()])
            .ok(json_content(schema_ref("Dashboard")))
            .conditional()
            .idempotent()
            .errors(&[401, 403, 404, 503])
            .build(),
    });
    if compat {
        item["patch"] = update("patchDashboardCompat");
    }
    paths.insert(format!("{base}/{{id}}"), item);
}

// ---------------------------------------------------------------------------------------------
// Operations

/// An operation being built.
struct Operation {
    value: Value,
}

/// The query routes under `prefix` (docs/queries.md, "Running queries").
fn query_paths(paths: &mut Map<String, Value>, prefix: &str, compat: bool) {
    let id = |name: &str| {
        if compat {
            format!("{name}Compat")
        } else {
            name.to_owned()
        }
    };
    let tags = if compat {
        json!(["queries", "compat"])
    } else {
        json!(["queries"])
    };
    let mut list_params = page_params();
    for (name, description) in [
        ("database_id", "Only the queries of this database."),
        ("author", "Only the queries of this author (exactly)."),
    ] {
        list_params.push(filter_param(name, description));
    }
    list_params.push(json!({
        "name": "status", "in": "query", "required": false,
        "description": "Only the queries in this status; another value is 422.",
        "schema": enum_schema(&names(&QueryStatus::ALL, QueryStatus::as_str), false),
    }));
    list_params.push(json!({
        "name": "reviewer", "in": "query", "required": false,
        "description": "`me`: only the queries the caller can act on as a reviewer (not their own, not yet reviewed by them, not run, on a database where they may review); another value is 422.",
        "schema": { "type": "string", "enum": ["me"] },
    }));
    paths.insert(
        format!("{prefix}/queries"),
        json!({
            "get": operation(&id("listQueries"), "The query history, newest first (what the caller may see)", tags.clone(), Auth::Either)
                .params(list_params)
                .ok(json_content(schema_ref("QueryPage")))
                .errors(&[401, 403, 422, 503])
                .build(),
            "post": operation(&id("createQuery"), "Store a query (one statement) to run once", tags.clone(), Auth::Either)
                .body(schema_ref("QueryInput"))
                .ok(json_content(schema_ref("Query")))
                .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
                .idempotent()
                .build(),
        }),
    );
    let query_id = path_param(
        "id",
        "The query's id (`qry_…`).",
        json!({ "type": "string" }),
    );
    paths.insert(
        format!("{prefix}/queries/{{id}}"),
        json!({
            "get": operation(&id("getQuery"), "A query, with the outcome of its run", tags.clone(), Auth::Either)
                .params(vec![query_id.clone()])
                .ok(json_content(schema_ref("Query")))
                .errors(&[401, 403, 404, 503])
                .build(),
        }),
    );
    paths.insert(
        format!("{prefix}/queries/{{id}}/run"),
        json!({
            "post": run_operation(&id("runQuery"), "Run a query, once: its rows, streamed", tags.clone(), Auth::Either)
                .params(vec![query_id.clone()])
                .optional_body(schema_ref("RunInput"))
                .errors(&[400, 401, 403, 404, 408, 409, 413, 415, 422, 503])
                .build(),
        }),
    );
    paths.insert(
        format!("{prefix}/queries/{{id}}/reviews"),
        json!({
            "post": operation(&id("reviewQuery"), "Approve or reject a query (docs/queries.md, \"Reviews\")", tags, Auth::Either)
                .params(vec![query_id])
                .body(schema_ref("ReviewInput"))
                .ok(json_content(schema_ref("Query")))
                .errors(&[400, 401, 403, 404, 408, 409, 413, 415, 422, 503])
                .build(),
        }),
    );
}

/// The panel run route under a dashboards `base`.
fn panel_run_path(paths: &mut Map<String, Value>, base: &str, auth: Auth, compat: bool) {
    let (id, tags) = if compat {
        ("runPanelCompat", json!(["dashboards", "compat"]))
    } else {
        ("runPanel", json!(["dashboards"]))
    };
    paths.insert(
        format!("{base}/{{id}}/panels/{{panel_id}}/run"),
        json!({
            "post": run_operation(id, "Run a panel's query with its inputs as bind parameters: its rows, streamed", tags, auth)
                .params(vec![
                    path_param("id", "The dashboard's id.", json!({ "type": "string" })),
                    path_param("panel_id", "The panel's id.", json!({ "type": "string" })),
                ])
                .body(schema_ref("PanelRunInput"))
                .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
                .build(),
        }),
    );
}

/// The row action trigger under a dashboards `base`.
fn trigger_path(paths: &mut Map<String, Value>, base: &str, auth: Auth, compat: bool) {
    let (id, tags) = if compat {
        ("triggerActionCompat", json!(["dashboards", "compat"]))
    } else {
        ("triggerAction", json!(["dashboards"]))
    };
    paths.insert(
        format!("{base}/{{id}}/panels/{{panel_id}}/actions/{{action_id}}/trigger"),
        json!({
            "post": operation(id, "Start a row action's workflow with the clicked row and the prompted values: the delivery it put in the outbox (docs/workflows.md, \"Workflows and notifications\")", tags, auth)
                .params(vec![
                    path_param("id", "The dashboard's id.", json!({ "type": "string" })),
                    path_param("panel_id", "The panel's id.", json!({ "type": "string" })),
                    path_param("action_id", "The action's id.", json!({ "type": "string" })),
                ])
                .body(schema_ref("TriggerInput"))
                .response(202, json!({ "description": "Stored in the outbox; delivered after this answer.", "content": json_content(schema_ref("Delivery")) }))
                .errors(&[400, 401, 403, 404, 408, 409, 413, 415, 422, 503])
                .idempotent()
                .build(),
        }),
    );
}

/// The outbox: list, read, retry a dead letter.
fn delivery_paths(paths: &mut Map<String, Value>) {
    let tags = json!(["outbox"]);
    let mut list_params = page_params();
    list_params.push(json!({
        "name": "status", "in": "query", "required": false,
        "description": "Only the deliveries in this status; another value is 422.",
        "schema": enum_schema(&names(&DeliveryStatus::ALL, DeliveryStatus::as_str), false),
    }));
    paths.insert(
        "/api/v1/console/deliveries".to_owned(),
        json!({
            "get": operation("listDeliveries", "The outbox, newest first", tags.clone(), Auth::ApiKey)
                .params(list_params)
                .ok(json_content(schema_ref("DeliveryPage")))
                .errors(&[401, 403, 422, 503])
                .build(),
        }),
    );
    let delivery_id = path_param(
        "id",
        "The delivery's id (`dlv_…`).",
        json!({ "type": "string" }),
    );
    paths.insert(
        "/api/v1/console/deliveries/{id}".to_owned(),
        json!({
            "get": operation("getDelivery", "A delivery of the outbox", tags.clone(), Auth::ApiKey)
                .params(vec![delivery_id.clone()])
                .ok(json_content(schema_ref("Delivery")))
                .errors(&[401, 403, 404, 503])
                .build(),
        }),
    );
    paths.insert(
        "/api/v1/console/deliveries/{id}/retry".to_owned(),
        json!({
            "post": operation("retryDelivery", "Retry a dead letter: pending again, with every attempt", tags, Auth::ApiKey)
                .params(vec![delivery_id])
                .response(202, json!({ "description": "Pending again.", "content": json_content(schema_ref("Delivery")) }))
                .errors(&[401, 403, 404, 409, 503])
                .idempotent()
                .build(),
        }),
    );
}

/// A run: 200 streamed in the format `Accept` names, and the statuses only runs answer.
fn run_operation(id: &str, summary: &str, tags: Value, auth: Auth) -> Operation {
    let text =
        |description: &str| json!({ "schema": { "type": "string" }, "example": description });
    operation(id, summary, tags, auth)
        .response(
            200,
            json!({
                "description": "The rows, streamed. An error after the first rows ends JSON and NDJSON with an `error` member and cuts a CSV off.",
                "content": {
                    "application/json": { "schema": schema_ref("RunResult") },
                    "application/x-ndjson": text("{\"columns\":[…]}\n[1,\"a\"]\n{\"row_count\":1,…}\n"),
                    "text/csv": text("id,name\r\n1,a\r\n"),
                },
            }),
        )
        .response(501, error_response("No runner for the database's adapter is built into this server."))
        .response(502, error_response("The database could not be reached or logged into (its message, scrubbed of secrets)."))
        .response(504, error_response("The statement ran past its timeout and was ended on the server."))
}

fn operation(id: &str, summary: &str, tags: Value, auth: Auth) -> Operation {
    Operation {
        value: json!({
            "operationId": id,
            "summary": summary,
            "tags": tags,
            "security": auth.requirement(),
            "responses": {},
        }),
    }
}

impl Operation {
    fn params(mut self, params: Vec<Value>) -> Self {
        self.value["parameters"] = Value::Array(params);
        self
    }

    fn body(mut self, schema: Value) -> Self {
        self.value["requestBody"] = json!({
            "required": true,
            "content": { "application/json": { "schema": schema } },
        });
        self
    }

    /// A body that may be left out (empty).
    fn optional_body(mut self, schema: Value) -> Self {
        self.value["requestBody"] = json!({
            "required": false,
            "content": { "application/json": { "schema": schema } },
        });
        self
    }

    fn ok(self, content: Value) -> Self {
        self.response(
            200,
            json!({ "description": "Success.", "content": content }),
        )
    }

    fn ok_with_links(self, content: Value, links: Value) -> Self {
        self.response(
            200,
            json!({ "description": "Success.", "content": content, "links": links }),
        )
    }

    fn errors(mut self, statuses: &[u16]) -> Self {
        for status in statuses {
            let name = match status {
                400 => "BadRequest",
                401 => "Unauthorized",
                403 => "Forbidden",
                404 => "NotFound",
                408 => "RequestTimeout",
                409 => "Conflict",
                413 => "PayloadTooLarge",
                412 => "PreconditionFailed",
                415 => "UnsupportedMediaType",
                422 => "Invalid",
                503 => "Unavailable",
                other => unreachable!("no shared response for {other}"),
            };
            self = self.response(
                *status,
                json!({ "$ref": format!("#/components/responses/{name}") }),
            );
        }
        self.value["responses"]["500"] = json!({ "$ref": "#/components/responses/Internal" });
        self
    }

    /// The 200 answer carries the record's `ETag`.
    fn versioned(mut self) -> Self {
        self.value["responses"]["200"]["headers"] =
            json!({ "ETag": { "$ref": "#/components/headers/ETag" } });
        self
    }

    /// The write takes an `Idempotency-Key`: a retry of the same request gets the first answer
    /// (400 for a malformed key, 409 while another request with it is being answered, 422 for
    /// the key with another request).
    fn idempotent(self) -> Self {
        self.header_param("IdempotencyKey").errors(&[400, 409, 422])
    }

    /// The write honours `If-Match`: 412 when it does not match (400 when it is not entity
    /// tags).
    fn conditional(self) -> Self {
        self.header_param("IfMatch").errors(&[400, 412])
    }

    /// The read honours `If-None-Match`: 304 when it names the record's `ETag` (400 when it is
    /// not entity tags).
    fn cacheable(self) -> Self {
        self.header_param("IfNoneMatch").errors(&[400]).response(
            304,
            json!({
                "description": "Not Modified: the client's copy (named by If-None-Match) is the record's current version. No body.",
                "headers": { "ETag": { "$ref": "#/components/headers/ETag" } },
            }),
        )
    }

    fn header_param(mut self, name: &str) -> Self {
        let parameter = json!({ "$ref": format!("#/components/parameters/{name}") });
        match self.value["parameters"].as_array_mut() {
            Some(parameters) => parameters.push(parameter),
            None => self.value["parameters"] = json!([parameter]),
        }
        self
    }

    fn response(mut self, status: u16, response: Value) -> Self {
        self.value["responses"][status.to_string()] = response;
        self
    }

    fn build(self) -> Value {
        self.value
    }
}

fn link(operation_id: &str, parameters: &[(&str, &str)]) -> Value {
    let parameters: Map<String, Value> = parameters
        .iter()
        .map(|(name, from)| ((*name).to_owned(), json!(from)))
        .collect();
    json!({ "operationId": operation_id, "parameters": parameters })
}

fn path_param(name: &str, description: &str, schema: Value) -> Value {
    json!({ "name": name, "in": "path", "required": true, "description": description, "schema": schema })
}

/// An optional query parameter that filters a listing (an empty value filters nothing).
fn filter_param(name: &str, description: &str) -> Value {
    json!({ "name": name, "in": "query", "required": false, "description": description, "schema": { "type": "string" } })
}

/// The page parameters and the filters of the database listing.
fn database_filter_params() -> Vec<Value> {
    let mut params = page_params();
    params.push(json!({
        "name": "adapter", "in": "query", "required": false,
        "description": "Only databases of this adapter; another value is 422.",
        "schema": enum_schema(&names(&Adapter::ALL, Adapter::as_str), false),
    }));
    params.push(filter_param("group", "Only databases in this group."));
    params.push(filter_param(
        "name_prefix",
        "Only databases whose name starts with this (case counts).",
    ));
    params.push(filter_param(
        "api_id",
        "Only the database with this api_id.",
    ));
    params.push(filter_param(
        "tunnel_id",
        "Only databases reached through this tunnel.",
    ));
    params
}

fn page_params() -> Vec<Value> {
    vec![
        json!({
            "name": "limit", "in": "query", "required": false,
            "description": format!("Items per page (default {DEFAULT_PAGE_SIZE}); outside 1..={MAX_PAGE_SIZE} or not a number is 422."),
            "schema": { "type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": DEFAULT_PAGE_SIZE },
        }),
        json!({
            "name": "after", "in": "query", "required": false,
            "description": "The last id of the previous page (`next`); empty means from the start.",
            "schema": { "type": "string" },
        }),
    ]
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn json_content(schema: Value) -> Value {
    json!({ "application/json": { "schema": schema } })
}

fn text_content(example: &str) -> Value {
    json!({ "text/plain; charset=utf-8": { "schema": { "type": "string" }, "example": example } })
}

// ---------------------------------------------------------------------------------------------
// Schemas of values

/// How a string field may be given.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Presence {
    /// Must be given, not null, not blank (create's required fields).
    Required,
    /// May be left out; when given, not null and not blank (update of a required field).
    NotBlank,
    /// May be null or blank, meaning unset.
    Optional,
    /// Kept as sent, `""` included; null means `""`.
    Raw,
}

fn text_schema(rule: Text, presence: Presence) -> Value {
    let max = rule.max_len();
    let pattern = match presence {
        Presence::Required | Presence::NotBlank => rule.non_blank_pattern(),
        Presence::Optional => rule.blank_or_valid_pattern(),
        Presence::Raw => rule.pattern(),
    };
    let nullable = matches!(presence, Presence::Optional | Presence::Raw);
    if rule == Text::Host {
        // IPv4 addresses match the host name pattern; IPv6 ones are the other alternative.
        let mut choices = vec![
            json!({ "type": "string", "maxLength": max, "pattern": pattern }),
            json!({ "type": "string", "maxLength": max, "format": "ipv6" }),
        ];
        if nullable {
            choices.push(json!({ "type": "null" }));
        }
        return json!({ "anyOf": choices });
    }
    // `maxLength` and `pattern` constrain strings only: null passes them.
    let kind = if nullable {
        json!(["string", "null"])
    } else {
        json!("string")
    };
    json!({ "type": kind, "maxLength": max, "pattern": pattern })
}

fn enum_schema(names: &[&str], nullable: bool) -> Value {
    let mut names: Vec<Value> = names.iter().map(|n| json!(n)).collect();
    if nullable {
        names.push(Value::Null);
    }
    json!({ "enum": names })
}

fn integer(min: u64, max: u64, nullable: bool) -> Value {
    let kind = if nullable {
        json!(["integer", "null"])
    } else {
        json!("integer")
    };
    json!({ "type": kind, "minimum": min, "maximum": max })
}

fn boolean(nullable: bool) -> Value {
    if nullable {
        json!({ "type": ["boolean", "null"] })
    } else {
        json!({ "type": "boolean" })
    }
}

/// A secret given as base64 text of its PEM (or DER): written, never read.
fn certificate(description: &str) -> Value {
    // Groups of four base64 symbols, the last one padded with `=` where it must be (and with
    // the bits a padded group leaves over set to zero), white space anywhere; blank is unset.
    let s = r"[ \t\r\n]*";
    let b = "[A-Za-z0-9+/]";
    let pattern = format!(
        "^{s}(?:(?:{b}{s}){{4}})*(?:{b}{s}[AQgw]{s}={s}={s}|{b}{s}{b}{s}[AEIMQUYcgkosw048]{s}={s})?$"
    );
    json!({
        "anyOf": [
            { "type": "string", "maxLength": CERTIFICATE_MAX, "pattern": pattern },
            { "type": "null" },
        ],
        "writeOnly": true,
        "description": format!("{description} Base64 of the PEM (or DER) text; stored encrypted and never returned; null or blank clears it."),
    })
}

/// A record's id as responses carry it.
fn id_schema(prefix: &str) -> Value {
    json!({ "type": "string", "pattern": format!("^{prefix}_[0-9a-z]{{26}}$"), "readOnly": true })
}

/// A record's id in a path.
fn id_param_schema(prefix: &str) -> Value {
    json!({ "type": "string", "pattern": format!("^{prefix}_[0-9a-z]{{26}}$") })
}

/// A blank string: empty or white space only (unset).
fn blank() -> Value {
    json!({ "type": "string", "pattern": Text::blank_pattern() })
}

/// `schema` with a description.
fn described(schema: Value, description: &str) -> Value {
    with(schema, "description", json!(description))
}

/// `schema` with one more keyword.
fn with(mut schema: Value, key: &str, value: Value) -> Value {
    schema[key] = value;
    schema
}

fn names<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|v| name(*v)).collect()
}

/// A body of `base` plus the `username` of the credential to check.
fn with_username(base: &str) -> Value {
    json!({ "allOf": [
        schema_ref(base),
        object(&[], json!({
            "username": described(text_schema(NAME, Presence::NotBlank), "The username of the credential to try, as given in `credentials` (or stored). Left out: the default credential, else the first."),
        })),
    ]})
}

fn object(required: &[&str], properties: Value) -> Value {
    json!({ "type": "object", "required": required, "properties": properties })
}

/// A closed object: exactly these keys (responses).
fn closed(properties: Value) -> Value {
    let required: Vec<&String> = properties
        .as_object()
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    json!({ "type": "object", "required": required, "properties": properties, "additionalProperties": false })
}

/// `schema` with `name` left out of its required properties.
fn optional_property(name: &str, mut schema: Value) -> Value {
    if let Some(required) = schema["required"].as_array_mut() {
        required.retain(|r| r != name);
    }
    schema
}

fn list(items: Value, nullable: bool) -> Value {
    let kind = if nullable {
        json!(["array", "null"])
    } else {
        json!("array")
    };
    json!({ "type": kind, "items": items })
}

fn nullable_string() -> Value {
    json!({ "type": ["string", "null"] })
}

// ---------------------------------------------------------------------------------------------
// Components

fn components() -> Value {
    json!({
        "securitySchemes": {
            "apiKey": { "type": "apiKey", "in": "header", "name": "x-api-key", "description": "An API key: the database routes and the /api/v1/dashboards compat routes." },
            "bearer": { "type": "http", "scheme": "bearer", "description": "An access token: the dashboard routes." },
        },
        "responses": responses(),
        "schemas": schemas(),
        "headers": {
            "ETag": {
                "description": "The record's version: it changes with every write. Send it back in If-Match to make a write conditional, or in If-None-Match to get 304 while it is current.",
                "schema": { "type": "string", "pattern": "^\"[0-9]+\"$" },
            },
        },
        "parameters": {
            "IdempotencyKey": {
                "name": "Idempotency-Key", "in": "header", "required": false,
                "description": "Makes the write safe to retry: its answer is kept for at least 24 hours with the write (scoped to the caller, the method and the path). The same request sent again with the same key gets that first answer again, with `Idempotent-Replayed: true`, and writes nothing; the same key with another body is 422. A write that was refused (4xx) keeps no answer.",
                "schema": { "type": "string", "pattern": "^[ -~]{0,255}$" },
            },
            "IfMatch": entity_tags_param("If-Match", "Makes the write conditional: it is made only if the record is at one of these versions (an ETag; weak tags never match), or exists (`*`); otherwise 412 and nothing changes. Without it the write is unconditional."),
            "IfNoneMatch": entity_tags_param("If-None-Match", "304 with no body when the record's ETag is one of these (weak comparison), or for `*`."),
        },
    })
}

/// An optional header of entity tags (`*` or a comma-separated list of `"…"` / `W/"…"`).
fn entity_tags_param(name: &str, description: &str) -> Value {
    json!({
        "name": name, "in": "header", "required": false, "description": description,
        "schema": { "type": "string", "pattern": ENTITY_TAGS_PATTERN },
    })
}

/// `*`, or one or more entity tags separated by commas (RFC 9110, section 8.8.3); an empty
/// value counts as no header.
const ENTITY_TAGS_PATTERN: &str =
    "^(\\*|(W/)?\"[\\x21\\x23-\\x7e]*\"([ \\t]*,[ \\t]*(W/)?\"[\\x21\\x23-\\x7e]*\")*)?$";

fn error_response(description: &str) -> Value {
    json!({ "description": description, "content": json_content(schema_ref("Error")) })
}

fn responses() -> Value {
    json!({
        "BadRequest": error_response("The body is not a JSON object (malformed JSON, another JSON type, an empty body), or an If-Match or If-None-Match that is not entity tags."),
        "Conflict": error_response("Another request with the same Idempotency-Key is being answered; send it again in a moment."),
        "PreconditionFailed": error_response("If-Match does not name the record's current version (its ETag): someone changed it since. Nothing was changed; read it again."),
        "Unauthorized": {
            "description": "A missing or wrong caller credential; `hint` says what the route takes. Dashboard routes add `www-authenticate: Bearer`.",
            "content": json_content(schema_ref("Error")),
        },
        "Forbidden": error_response("A valid credential whose scope does not allow the call (a `setup` key outside setup and remove)."),
        "NotFound": error_response("No such record."),
        "RequestTimeout": error_response("The body did not arrive within the body timeout; the connection is closed."),
        "PayloadTooLarge": error_response("The body is larger than the limit (1 MiB by default)."),
        "UnsupportedMediaType": error_response("A body whose content type is not JSON."),
        "Invalid": {
            "description": "Validation failed: field-keyed messages, one object per list item (`{}` for a valid one). A delete refused because other databases inherit the policies answers `detail` and `inherited_by`.",
            "content": json_content(schema_ref("ValidationError")),
        },
        "Unavailable": error_response("The storage cannot be reached now; try again."),
        "Internal": error_response("A backend failure."),
    })
}

fn schemas() -> Value {
    let review = closed(json!({
        "reviewer": { "type": "string" },
        "decision": { "type": "string", "enum": ["approve", "reject"] },
        "comment": nullable_string(),
        "reviewed_at": { "type": "string", "format": "date-time" },
    }));
    let bypass = described(
        closed(json!({
            "by": { "type": "string" },
            "at": { "type": "string", "format": "date-time" },
            "reason": { "type": "string" },
            "approvals": integer(0, U32_MAX, false),
            "required": integer(0, U32_MAX, false),
        })),
        "A super admin ran their own query without the approvals it lacked.",
    );
    let query = closed(json!({
        "id": described(json!({ "type": "string" }), "`qry_…`: ordered by creation; pass as `after` to page on (newest first)."),
        "database_id": { "type": "string" },
        "credential_id": { "type": "string" },
        "query": { "type": "string" },
        "limit": integer(1, U32_MAX, false),
        "author": { "type": "string" },
        "status": enum_schema(&names(&QueryStatus::ALL, QueryStatus::as_str), false),
        "by_agent": described(json!({ "type": "boolean" }), "Whether an AI agent wrote it: it then runs read-only and capped, whoever runs it."),
        "approvals": described(integer(0, U32_MAX, false), "How many reviewers approved."),
        "reviews": list(review.clone(), false),
        "bypass": { "oneOf": [{ "type": "null" }, bypass.clone()] },
        "run": {
            "oneOf": [
                { "type": "null" },
                closed(json!({
                    "run_by": { "type": "string" },
                    "started_at": { "type": "string", "format": "date-time" },
                    "finished_at": { "type": ["string", "null"], "format": "date-time" },
                    "row_count": integer(0, u64::MAX, false),
                    "truncated": { "type": "boolean" },
                    "duration_ms": integer(0, u64::MAX, false),
                    "error": nullable_string(),
                })),
            ],
        },
        "inserted_at": { "type": "string", "format": "date-time" },
        "updated_at": { "type": "string", "format": "date-time" },
    }));
    let delivery = closed(json!({
        "id": described(json!({ "type": "string" }), "`dlv_…`: ordered by creation; the `Idempotency-Key` of every attempt."),
        "kind": enum_schema(&["workflow", "slack"], false),
        "workflow_id": nullable_string(),
        "channel": nullable_string(),
        "resource_id": described(json!({ "type": "string" }), "The dashboard (a trigger) or query (a review request) it came from."),
        "status": enum_schema(&names(&DeliveryStatus::ALL, DeliveryStatus::as_str), false),
        "attempts": integer(0, U32_MAX, false),
        "due_at": { "type": ["string", "null"], "format": "date-time" },
        "last_error": nullable_string(),
        "payload": described(json!({}), "The JSON body every attempt sends."),
        "inserted_at": { "type": "string", "format": "date-time" },
        "updated_at": { "type": "string", "format": "date-time" },
        "delivered_at": { "type": ["string", "null"], "format": "date-time" },
    }));
    let run_input = object(
        &[],
        json!({
            "bypass_review": described(json!({
                "type": ["object", "null"],
                "properties": {
                    "acknowledge": { "type": ["boolean", "null"] },
                    "reason": { "type": ["string", "null"], "maxLength": REASON_MAX },
                },
            }), "A super admin's override of missing approvals on their own query, on a database with `review_bypass_allowed`: `acknowledge` true and a reason; otherwise 403 naming the condition that failed."),
        }),
    );
    let review_input = object(
        &["decision"],
        json!({
            "decision": { "type": "string", "enum": ["approve", "reject"] },
            "comment": { "type": ["string", "null"], "maxLength": REASON_MAX },
        }),
    );
    let adapters = names(&Adapter::ALL, Adapter::as_str);
    let optional = |rule| text_schema(rule, Presence::Optional);
    let credential_input = |creating: bool| {
        let username = if creating {
            Presence::Required
        } else {
            Presence::NotBlank
        };
        let mut schema = object(
            if creating { &["username"] } else { &[] },
            json!({
                "id": described(text_schema(NAME, Presence::Optional), "The id of a stored credential of this database to update (fields left out keep their values); absent, blank or unknown makes a new credential."),
                "username": text_schema(NAME, username),
                "password": with(
                    described(
                        text_schema(Text::Opaque(PASSWORD_MAX), Presence::Optional),
                        "Stored encrypted, never returned. Left out on update: kept; null or blank: cleared.",
                    ),
                    "writeOnly",
                    json!(true),
                ),
                "hostname": described(text_schema(Text::Host, Presence::Optional), "Overrides the database's hostname for this credential."),
                "ai_allowed": boolean(true),
                "timeout": described(integer(1, U32_MAX, true), "Check-connection timeout in seconds (null: the server's default)."),
                "reviews_required": integer(0, U32_MAX, true),
                "default_credential": boolean(true),
            }),
        );
        schema["description"] = json!(
            "Usernames are unique within a database (compared with case); at most one credential is the default. Either breaks as 422 on the later item."
        );
        schema
    };
    let database_input = |creating: bool| {
        let required = if creating {
            Presence::Required
        } else {
            Presence::NotBlank
        };
        let properties = json!({
            "name": text_schema(NAME, required),
            "adapter": enum_schema(&adapters, false),
            "hostname": text_schema(Text::Host, required),
            "database": text_schema(NAME, required),
            "port": described(integer(1, 65535, true), "null: the adapter's default port."),
            "ssl": boolean(true),
            "verify_server_hostname": described(boolean(true), "true needs a CA certificate stored or given in the same request (422 otherwise)."),
            "restrict_access": boolean(true),
            "review_bypass_allowed": boolean(true),
            "group": optional(NAME),
            "slack_channel": optional(NAME),
            "tunnel_id": optional(NAME),
            "ai_enabled": boolean(true),
            "ai_max_rows": with(integer(1, U32_MAX, true), "default", json!(DEFAULT_AI_MAX_ROWS)),
            "ssl_ca_cert": certificate("The CA certificate(s) the server's certificate must chain to."),
            "ssl_cert": certificate("A client certificate."),
            "ssl_key": certificate("The client certificate's key."),
            "connection_parameters": described(
                list(object(&["name"], json!({
                    "name": text_schema(NAME, Presence::Required),
                    "value": text_schema(Text::Line(VALUE_MAX), Presence::Raw),
                })), true),
                "The whole new list. Names are unique without regard to case; `user` and `database` are reserved.",
            ),
            "credentials": {
                "description": "The whole new list, in order: items with the id of a stored credential update it, others are new, stored ones left out are deleted.",
                "type": "array", "minItems": 1, "items": credential_input(creating),
            },
        });
        let required: &[&str] = if creating {
            &["name", "adapter", "hostname", "database", "credentials"]
        } else {
            &[]
        };
        let mut schema = object(required, properties);
        if creating {
            // On update a CA certificate may be stored already: only the description says it.
            schema["if"] = json!({ "required": ["verify_server_hostname"], "properties": { "verify_server_hostname": { "const": true } } });
            schema["then"] = json!({ "required": ["ssl_ca_cert"], "properties": { "ssl_ca_cert": { "type": "string", "pattern": "[A-Za-z0-9+/]" } } });
        }
        schema
    };
    let input_mapping = {
        let mut schema = object(
            &["workflow_input_key"],
            json!({
                "workflow_input_key": text_schema(NAME, Presence::Required),
                "prompt_user": boolean(true),
                "column": optional(NAME),
                "prompt": optional(Text::Lines(VALUE_MAX)),
            }),
        );
        schema["description"] = json!(
            "With prompt_user false (the default) `column` is required; with prompt_user true it must be absent or null. Workflow input keys are unique within an action."
        );
        schema["if"] = json!({ "required": ["prompt_user"], "properties": { "prompt_user": { "const": true } } });
        schema["then"] =
            json!({ "properties": { "column": { "anyOf": [blank(), { "type": "null" }] } } });
        schema["else"] = json!({ "required": ["column"], "properties": { "column": text_schema(NAME, Presence::Required) } });
        schema
    };
    let panel_input = object(
        &["title", "details"],
        json!({
            "id": described(text_schema(NAME, Presence::Optional), "A stored panel's id keeps it; any other value gets a new id."),
            "title": text_schema(NAME, Presence::Required),
            "inputs": described(
                list(object(&["key"], json!({
                    "key": text_schema(NAME, Presence::Required),
                    "description": text_schema(Text::Lines(VALUE_MAX), Presence::Raw),
                })), true),
                "Keys are unique within a panel.",
            ),
            "actions": list(object(&[], json!({
                "id": described(text_schema(NAME, Presence::Optional), "A stored action's id keeps it; any other value gets a new id."),
                "label": optional(NAME),
                "workflow_id": optional(NAME),
                "input_mappings": list(input_mapping, true),
            })), true),
            "details": object(&["__type__", "query", "credential_id"], json!({
                "__type__": enum_schema(&["query"], false),
                "query": text_schema(Text::Lines(QUERY_MAX), Presence::Required),
                "credential_id": text_schema(NAME, Presence::Required),
            })),
        }),
    );
    let dashboard_input = |creating: bool| {
        let name = if creating {
            Presence::Required
        } else {
            Presence::NotBlank
        };
        object(
            if creating {
                &["name", "restricted_access"]
            } else {
                &[]
            },
            json!({
                "name": text_schema(NAME, name),
                "restricted_access": boolean(false),
                "panels": described(list(panel_input.clone(), true), "The whole new list, in order."),
            }),
        )
    };
    let timestamp = json!({ "type": "string", "format": "date-time", "readOnly": true, "description": "RFC 3339 UTC with microseconds." });
    let credential = closed(json!({
        "id": id_schema("crd"),
        "username": { "type": "string" },
        "hostname": nullable_string(),
        "ai_allowed": { "type": "boolean" },
        "timeout": integer(1, U32_MAX, true),
        "reviews_required": integer(0, U32_MAX, false),
        "default_credential": { "type": "boolean" },
    }));
    // Every field of `Database`, destructured whole (no `..`): a new field fails to compile here
    // until the document says how it is answered. The test `the_database_schema_is_the_answer`
    // ties the properties below to what the API answers.
    let _ = |db: &Database| {
        let Database {
            id: _,
            api_id: _,
            name: _,
            adapter: _,
            hostname: _,
            port: _,
            database: _,
            ssl: _,
            verify_server_hostname: _,
            restrict_access: _,
            review_bypass_allowed: _,
            group: _,
            slack_channel: _,
            tunnel_id: _,
            ai_enabled: _,
            ai_max_rows: _,
            connection_parameters: _,
            credentials: _,
            // Write-only: taken as `ssl_ca_cert`, `ssl_cert`, `ssl_key`, never answered.
            tls: _,
            inserted_at: _,
            updated_at: _,
        } = db;
    };
    let database = closed(json!({
        "id": id_schema("db"),
        "api_id": nullable_string(),
        "name": { "type": "string" },
        "adapter": enum_schema(&adapters, false),
        "hostname": { "type": "string" },
        "port": integer(1, 65535, true),
        "database": { "type": "string" },
        "ssl": { "type": "boolean" },
        "verify_server_hostname": { "type": "boolean" },
        "restrict_access": { "type": "boolean" },
        "review_bypass_allowed": { "type": "boolean" },
        "group": nullable_string(),
        "slack_channel": nullable_string(),
        "tunnel_id": nullable_string(),
        "ai_enabled": { "type": "boolean" },
        "ai_max_rows": integer(1, U32_MAX, false),
        "connection_parameters": list(closed(json!({ "name": { "type": "string" }, "value": { "type": "string" } })), false),
        "credentials": list(credential, false),
        "inserted_at": timestamp,
        "updated_at": timestamp,
    }));
    let dashboard = closed(json!({
        "id": id_schema("dash"),
        "name": { "type": "string" },
        "restricted_access": { "type": "boolean" },
        "panels": list(closed(json!({
            "id": id_schema("pl"),
            "title": { "type": "string" },
            "inputs": list(closed(json!({ "key": { "type": "string" }, "description": { "type": "string" } })), false),
            "actions": list(closed(json!({
                "id": id_schema("act"),
                "label": nullable_string(),
                "workflow_id": nullable_string(),
                "input_mappings": list(closed(json!({
                    "workflow_input_key": { "type": "string" },
                    "column": nullable_string(),
                    "prompt_user": { "type": "boolean" },
                    "prompt": nullable_string(),
                })), false),
            })), false),
            "details": closed(json!({
                "__type__": enum_schema(&["query"], false),
                "query": { "type": "string" },
                "credential_id": { "type": "string" },
            })),
        })), false),
    }));
    let page = |item: &str| {
        closed(json!({
            "data": list(schema_ref(item), false),
            "next": { "type": ["string", "null"], "description": "The id to pass as `after` for the next page; null when nothing follows." },
        }))
    };
    let subject_kinds = names(&SubjectKind::ALL, SubjectKind::as_str);
    let access_levels = names(&AccessLevel::ALL, AccessLevel::as_str);
    let column_actions = names(&ColumnAction::ALL, ColumnAction::as_str);
    json!({
        "Error": {
            "type": "object",
            "required": ["errors"],
            "properties": {
                "errors": {
                    "type": "object",
                    "required": ["detail"],
                    "properties": {
                        "detail": { "type": "string" },
                        "hint": { "type": "string" },
                    },
                },
            },
        },
        "ValidationError": {
            "type": "object",
            "required": ["errors"],
            "properties": {
                "errors": {
                    "type": "object",
                    "description": "Field-keyed: a list of messages, a list of per-item error objects, or a nested error object. A refused delete: `detail` and `inherited_by`.",
                    "additionalProperties": {
                        "anyOf": [
                            { "type": "string" },
                            { "type": "array" },
                            { "type": "object" },
                        ],
                    },
                },
            },
        },
        "Database": database,
        "DatabaseCreate": database_input(true),
        "DatabaseUpdate": database_input(false),
        "DatabaseCheck": with_username("DatabaseCreate"),
        "DatabaseEditCheck": with_username("DatabaseUpdate"),
        "DatabaseSetup": object(
            &["id", "adapter", "hostname", "database", "username", "password"],
            json!({
                "id": described(text_schema(NAME, Presence::Required), "The caller's id for the database, stored as `api_id`."),
                "adapter": enum_schema(&adapters, false),
                "hostname": text_schema(Text::Host, Presence::Required),
                "database": text_schema(NAME, Presence::Required),
                "username": text_schema(NAME, Presence::Required),
                "password": with(text_schema(Text::Opaque(PASSWORD_MAX), Presence::Required), "writeOnly", json!(true)),
                "name": described(optional(NAME), "Defaults to `database`."),
                "port": integer(1, 65535, true),
                "group": optional(NAME),
                "tunnel_id": optional(NAME),
                "ssl": described(
                    json!({ "anyOf": [enum_schema(&["enabled", "disabled"], true), blank()] }),
                    "\"enabled\" turns TLS on; \"disabled\", blank or null leave it off; any other string is 422.",
                ),
                "ssl_ca_cert": certificate("The CA certificate(s)."),
                "ssl_cert": certificate("A client certificate."),
                "ssl_key": certificate("The client certificate's key."),
                "reviews_required": integer(0, U32_MAX, true),
                "review_bypass_allowed": boolean(true),
            }),
        ),
        "Permissions": closed(json!({
            "database_id": { "type": "string" },
            "permissions": list(closed(json!({
                "subject_kind": enum_schema(&subject_kinds, false),
                "subject": { "type": "string" },
                "access": enum_schema(&access_levels, false),
            })), false),
        })),
        "PermissionsInput": object(&["permissions"], json!({
            "permissions": described(
                list(object(&["subject_kind", "subject", "access"], json!({
                    "subject_kind": enum_schema(&subject_kinds, false),
                    "subject": text_schema(NAME, Presence::Required),
                    "access": enum_schema(&access_levels, false),
                })), true),
                "The whole new list; null means empty. A subject appears once per kind.",
            ),
        })),
        "DataProtection": closed(json!({
            "database_id": { "type": "string" },
            "inherits_from": nullable_string(),
            "policies": list(closed(json!({
                "name": { "type": "string" },
                "description": nullable_string(),
                "columns": list(closed(json!({
                    "column": { "type": "string" },
                    "action": enum_schema(&column_actions, false),
                })), false),
            })), false),
        })),
        "DataProtectionInput": object(&["policies"], json!({
            "inherits_from": described(optional(NAME), "Another database's id (it must exist, not be this one, and make no cycle), or null."),
            "policies": described(
                list(object(&["name", "columns"], json!({
                    "name": text_schema(NAME, Presence::Required),
                    "description": optional(Text::Lines(VALUE_MAX)),
                    "columns": { "type": "array", "minItems": 1, "items": object(&["column", "action"], json!({
                        "column": text_schema(NAME, Presence::Required),
                        "action": enum_schema(&column_actions, false),
                    })) },
                })), true),
                "The whole new list; null means empty. Names are unique, and columns within a policy.",
            ),
        })),
        "Dashboard": dashboard,
        "DashboardCreate": dashboard_input(true),
        "DashboardUpdate": dashboard_input(false),
        "DatabasePage": page("Database"),
        "AuditEventPage": page("AuditEvent"),
        "AuditEvent": optional_property("run", closed(json!({
            "id": described(json!({ "type": "string" }), "`evt_…`: ordered by time; pass as `after` to page on."),
            "at": { "type": "string", "format": "date-time" },
            "action": enum_schema(&names(&AuditAction::ALL, AuditAction::as_str), false),
            "resource": closed(json!({
                "kind": enum_schema(&names(&ResourceKind::ALL, ResourceKind::as_str), false),
                "id": { "type": "string" },
            })),
            "actor": described(closed(json!({
                "id": nullable_string(),
                "name": { "type": "string" },
            })), "The caller credential that made the change: a stored key's id and name (id null for a static credential or a command). Never its secret."),
            "request_id": nullable_string(),
            "changes": described(list(json!({ "type": "string" }), false), "The names of the fields the change set; never a value (a secret appears as `credentials[<username>].password` or `ssl_key`)."),
            "run": described(closed(json!({
                "database_id": { "type": "string" },
                "credential_id": { "type": "string" },
                "statement_sha256": { "type": "string" },
                "statement_length": integer(0, u64::MAX, false),
                "rows": integer(0, u64::MAX, false),
                "duration_ms": integer(0, u64::MAX, false),
                "outcome": enum_schema(&names(&RunOutcome::ALL, RunOutcome::as_str), false),
            })), "A run's facts (`query.run`, `panel.run` only); never its text, inputs or rows."),
        }))),
        "DashboardPage": page("Dashboard"),
        "QueryPage": page("Query"),
        "Query": query,
        "QueryInput": object(&["database_id", "credential_id", "query"], json!({
            "database_id": text_schema(NAME, Presence::Required),
            "credential_id": text_schema(NAME, Presence::Required),
            "query": described(text_schema(Text::Lines(QUERY_MAX), Presence::Required), "One statement (a trailing `;` and comments are fine)."),
            "limit": described(json!({ "type": ["integer", "null"], "minimum": 1 }), "The most rows the run returns (default 1,000), up to the server's maximum."),
        })),
        "RunInput": run_input,
        "TriggerInput": object(&[], json!({
            "row": described(json!({ "type": ["object", "null"] }), "The clicked row: column name → value. A mapping with a `column` takes its value from here."),
            "prompted": described(json!({ "type": ["object", "null"], "additionalProperties": { "type": ["string", "number", "boolean", "null"] } }), "What the user typed: workflow input key → value, for the mappings with `prompt_user`; no other key."),
        })),
        "DeliveryPage": page("Delivery"),
        "Delivery": delivery,
        "ReviewInput": review_input,
        "PanelRunInput": object(&[], json!({
            "inputs": described(json!({ "type": ["object", "null"], "additionalProperties": { "type": ["string", "number", "boolean"] } }), "A value for every input the panel declares, and no other."),
            "limit": { "type": ["integer", "null"], "minimum": 1 },
        })),
        "RunResult": object(&["columns", "rows", "row_count", "truncated", "duration_ms"], json!({
            "columns": list(object(&["name", "type"], json!({
                "name": { "type": "string" },
                "type": described(json!({ "type": "string" }), "The database's own type name; `masked` for a column data protection masks (docs/data-protection.md, \"Data protection\")."),
                "encoding": described(json!({ "const": "base64" }), "Present on columns whose values are bytes in base64."),
            })), false),
            "rows": list(json!({ "type": "array" }), false),
            "row_count": integer(0, u64::MAX, false),
            "truncated": { "type": "boolean" },
            "duration_ms": integer(0, u64::MAX, false),
            "error": described(closed(json!({ "detail": { "type": "string" } })), "Present when the run failed after its first rows."),
        })),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::router::Route;

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
            limit: 10,
            author: "a@example.com".to_owned(),
            by_agent: false,
            target: None,
            status: QueryStatus::Ready,
            reviews: Vec::new(),
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
            truncated: false,
            duration_ms: 2,
            error: None,
        });
        let view = serde_json::to_value(super::super::render::QueryView::from(&query)).unwrap();
        assert_eq!(
            answered(&view["run"]),
            documented(&schema["properties"]["run"]["oneOf"][1])
        );
    }

    #[test]
    fn the_document_is_the_router() {
        let document = document("");
        let paths = document["paths"].as_object().unwrap();
        let mut seen = std::collections::HashSet::new();
        for (template, item) in paths {
            if template == OPENAPI_PATH {
                continue;
            }
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
            seen.insert(format!("{:?}", std::mem::discriminant(&route)));
        }
        // One of each kind of route (the compat variants included).
        let every = [
            "/api/v1/console/databases",
            "/api/v1/console/databases/setup",
            "/api/v1/console/databases/remove/x",
            "/api/v1/console/databases/x",
            "/api/v1/console/databases/x/permissions",
            "/api/v1/console/databases/x/data-protection",
            "/api/v1/console/databases/x/check-connection/u",
            "/api/v1/console/databases/check-connection",
            "/api/v1/console/databases/x/check-connection",
            "/api/v1/console/audit",
            "/v1/dashboards",
            "/v1/dashboards/x",
            "/v1/dashboards/x/panels/p/run",
            "/api/v1/console/queries",
            "/api/v1/console/queries/q",
            "/api/v1/console/queries/q/run",
            "/api/v1/console/queries/q/reviews",
            "/v1/dashboards/x/panels/p/actions/a/trigger",
            "/api/v1/console/deliveries",
            "/api/v1/console/deliveries/d",
            "/api/v1/console/deliveries/d/retry",
        ];
        for path in every {
            let route = Route::recognize(path).unwrap();
            assert!(
                seen.contains(&format!("{:?}", std::mem::discriminant(&route))),
                "{path} is not documented"
            );
        }
        assert_eq!(paths.len(), 2 * 9 + 2 * 2 + 2 * 4 + 2 + 2 + 3 + 1 + 1);
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
