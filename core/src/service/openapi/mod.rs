//! The OpenAPI 3.1 document of the service, served at `GET {base}/openapi.json`.
//!
//! It is built from the code's own values, so it cannot drift from them: the paths, methods,
//! operation ids, security and idempotency from the router's table (one operation per row and
//! mount; a test holds every path of the document against `Route::recognize`), the enums from
//! their wire names, the string rules from `validate::Text`, the bounds from the validation
//! constants. Cross-field rules
//! that JSON Schema states only in part (unique usernames, parameter names, input keys and
//! workflow input keys; one default credential; a CA certificate stored for
//! `verify_server_hostname`) are written into the descriptions and answered with 422.

pub(super) mod operations;
mod schemas;

use serde_json::{Map, Value, json};

pub(crate) use operations::{Describe, Names};
use schemas::{components, enum_schema, error_response, names};

use super::who::{Credentials, Mount};
use crate::model::{AccessLevel, Adapter, ColumnAction, SubjectKind};
use crate::validate::{
    CERTIFICATE_MAX, DEFAULT_AI_MAX_ROWS, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, NAME_MAX, PASSWORD_MAX,
    QUERY_MAX, Text, VALUE_MAX,
};

const NAME: Text = Text::Line(NAME_MAX);

/// Which caller credentials an operation takes (the security requirement).
#[derive(Clone, Copy)]
enum Auth {
    None,
    ApiKey,
    Bearer,
    Either,
}

impl Auth {
    fn of(credentials: Credentials) -> Self {
        match credentials {
            Credentials::NONE => Auth::None,
            Credentials::API_KEY => Auth::ApiKey,
            Credentials::BEARER => Auth::Bearer,
            _ => Auth::Either,
        }
    }

    fn requirement(self) -> Value {
        match self {
            Auth::None => json!([]),
            Auth::ApiKey => json!([{ "apiKey": [] }]),
            Auth::Bearer => json!([{ "bearer": [] }]),
            Auth::Either => json!([{ "apiKey": [] }, { "bearer": [] }]),
        }
    }
}

/// The tag of an endpoint's family, from the first segment of its path.
fn family(path: &str) -> Option<&'static str> {
    match path.trim_start_matches('/').split('/').next() {
        Some("databases") => Some("databases"),
        Some("queries") => Some("queries"),
        Some("dashboards") => Some("dashboards"),
        Some("deliveries") => Some("outbox"),
        Some("audit") => Some("audit"),
        _ => None,
    }
}

/// What the document reads of a row of the route table.
#[derive(Debug)]
pub(crate) struct Documented<'a> {
    /// Its method.
    pub(crate) method: &'a http::Method,
    /// Where it is mounted.
    pub(crate) mounts: &'a [Mount],
    /// Its path below a mount.
    pub(crate) path: &'a str,
    /// Its operation id.
    pub(crate) operation: &'a str,
    /// The rest of its operation.
    pub(crate) describe: Describe,
    /// Whether it takes an `Idempotency-Key`.
    pub(crate) idempotent: bool,
}

/// The whole document, for a service mounted at `base_path` (`""` for the root): one
/// operation per row of the route table and mount, its id, tags, security and
/// `Idempotency-Key` from the row, the rest from the row's [`operations`] function.
pub(crate) fn document<'a>(base_path: &str, rows: impl Iterator<Item = Documented<'a>>) -> Value {
    let mut paths = Map::new();
    for endpoint in rows {
        for mount in endpoint.mounts {
            let names = Names {
                compat: mount.compat,
            };
            let mut tags: Vec<&str> = family(endpoint.path).into_iter().collect();
            if mount.compat {
                tags.push("compat");
            }
            let base = Operation::new(
                &names.id(endpoint.operation),
                json!(tags),
                Auth::of(mount.credentials),
            );
            let mut operation = (endpoint.describe)(base, &names);
            if endpoint.idempotent {
                operation = operation.idempotent();
            }
            let item = paths
                .entry(format!("{}{}", mount.prefix, endpoint.path))
                .or_insert_with(|| json!({}));
            item[endpoint.method.as_str().to_ascii_lowercase()] = operation.build();
        }
    }
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
            { "name": "audit", "description": "The audit trail: one event per change (x-api-key)." },
            { "name": "compat", "description": "The same operations under the paths the Terraform provider uses." },
        ],
    });
    if !base_path.is_empty() {
        document["servers"] = json!([{ "url": base_path }]);
    }
    document
}

// ---------------------------------------------------------------------------------------------
// Operations

/// An operation being built.
#[derive(Debug)]
pub(crate) struct Operation {
    value: Value,
}

impl Operation {
    fn new(id: &str, tags: Value, auth: Auth) -> Self {
        let mut value = json!({ "operationId": id });
        if tags.as_array().is_some_and(|tags| !tags.is_empty()) {
            value["tags"] = tags;
        }
        value["security"] = auth.requirement();
        value["responses"] = json!({});
        Operation { value }
    }

    fn summary(mut self, summary: &str) -> Self {
        self.value["summary"] = json!(summary);
        self
    }

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

    /// The 200 answer carries the document's `ETag` (a digest: permissions, data protection).
    fn document_versioned(mut self) -> Self {
        self.value["responses"]["200"]["headers"] =
            json!({ "ETag": { "$ref": "#/components/headers/DocumentETag" } });
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
