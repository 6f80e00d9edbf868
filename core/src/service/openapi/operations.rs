//! Each endpoint's OpenAPI operation: what its row of the route table does not say (summary,
//! parameters, body, answers). Its id, tags, security and `Idempotency-Key` come from the row
//! and its mount ([`super::document`]); one function here per row, named after it.

use serde_json::{Value, json};

use super::schemas::{Presence, enum_schema, id_param_schema, names, text_schema};
use super::{
    NAME, Operation, database_filter_params, error_response, filter_param, json_content, link,
    page_params, path_param, schema_ref, text_content,
};
use crate::model::{DeliveryStatus, QueryStatus};

/// What an operation's description needs of where it is mounted: the ids of its siblings
/// there (a compatibility path's end in `Compat`), for its links.
#[derive(Debug)]
pub(crate) struct Names {
    /// Whether the mount is a compatibility path.
    pub(crate) compat: bool,
}

impl Names {
    /// The operation id of `name` at this mount.
    pub(super) fn id(&self, name: &str) -> String {
        if self.compat {
            format!("{name}Compat")
        } else {
            name.to_owned()
        }
    }

    /// The links from an answer carrying a database (its id at `id_from`).
    fn database_links(&self, id_from: &str) -> Value {
        json!({
            "GetDatabase": link(&self.id("getDatabase"), &[("id", id_from)]),
            "UpdateDatabase": link(&self.id("updateDatabase"), &[("id", id_from)]),
            "DeleteDatabase": link(&self.id("deleteDatabase"), &[("id", id_from)]),
            "GetPermissions": link(&self.id("getPermissions"), &[("id", id_from)]),
            "PutPermissions": link(&self.id("putPermissions"), &[("id", id_from)]),
            "GetDataProtection": link(&self.id("getDataProtection"), &[("id", id_from)]),
            "PutDataProtection": link(&self.id("putDataProtection"), &[("id", id_from)]),
            "CheckConnection": link(
                &self.id("checkConnection"),
                &[("id", id_from), ("username", "$response.body#/credentials/0/username")],
            ),
        })
    }
}

/// An operation's description, given its base (id, tags, security) and where it is mounted.
pub(crate) type Describe = fn(Operation, &Names) -> Operation;

fn database_id() -> Value {
    path_param("id", "The database's id.", id_param_schema("db"))
}

fn dashboard_id() -> Value {
    path_param("id", "The dashboard's id.", id_param_schema("dash"))
}

fn query_id() -> Value {
    path_param(
        "id",
        "The query's id (`qry_…`).",
        json!({ "type": "string" }),
    )
}

fn delivery_id() -> Value {
    path_param(
        "id",
        "The delivery's id (`dlv_…`).",
        json!({ "type": "string" }),
    )
}

fn panel_params() -> Vec<Value> {
    vec![
        path_param("id", "The dashboard's id.", json!({ "type": "string" })),
        path_param("panel_id", "The panel's id.", json!({ "type": "string" })),
    ]
}

/// A run: 200 streamed in the format `Accept` names, and the statuses only runs answer.
fn run(op: Operation) -> Operation {
    let text =
        |description: &str| json!({ "schema": { "type": "string" }, "example": description });
    op.response(
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

// Databases

pub(crate) fn list_databases(op: Operation, _: &Names) -> Operation {
    op.summary("List databases, ordered by id; the filters given all apply")
        .params(database_filter_params())
        .ok(json_content(schema_ref("DatabasePage")))
        .errors(&[401, 403, 422, 503])
}

pub(crate) fn create_database(op: Operation, names: &Names) -> Operation {
    op.summary("Create a database")
        .body(schema_ref("DatabaseCreate"))
        .ok_with_links(
            json_content(schema_ref("Database")),
            names.database_links("$response.body#/id"),
        )
        .versioned()
        .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
}

pub(crate) fn setup_database(op: Operation, names: &Names) -> Operation {
    let mut links = names.database_links("$response.body#/id");
    links["RemoveDatabase"] = link(
        &names.id("removeDatabase"),
        &[("api_id", "$response.body#/api_id")],
    );
    op.summary("Create or update the database whose api_id is the body's id (declarative)")
        .body(schema_ref("DatabaseSetup"))
        .ok_with_links(json_content(schema_ref("Database")), links)
        .versioned()
        .conditional()
        .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
}

pub(crate) fn remove_database(op: Operation, _: &Names) -> Operation {
    op.summary("Delete the database with this api_id; answers the deleted database")
        .params(vec![path_param(
            "api_id",
            "The database's api_id (the id given to setup).",
            text_schema(NAME, Presence::Required),
        )])
        .ok(json_content(schema_ref("Database")))
        .conditional()
        .errors(&[401, 403, 404, 422, 503])
}

pub(crate) fn get_database(op: Operation, _: &Names) -> Operation {
    op.summary("Retrieve a database")
        .params(vec![database_id()])
        .ok(json_content(schema_ref("Database")))
        .versioned()
        .cacheable()
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn update_database(op: Operation, _: &Names) -> Operation {
    op.summary("Update a database: fields left out stay")
        .params(vec![database_id()])
        .body(schema_ref("DatabaseUpdate"))
        .ok(json_content(schema_ref("Database")))
        .versioned()
        .conditional()
        .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
}

pub(crate) fn delete_database(op: Operation, _: &Names) -> Operation {
    op.summary(
        "Delete a database with its credentials and access control; answers the deleted database",
    )
    .params(vec![database_id()])
    .ok(json_content(schema_ref("Database")))
    .conditional()
    .errors(&[401, 403, 404, 422, 503])
}

pub(crate) fn check_connection(op: Operation, _: &Names) -> Operation {
    op.summary("Open a real connection with this credential: `ok`, or the driver's error in one line (secrets scrubbed)")
        .params(vec![
            database_id(),
            path_param("username", "The credential's username.", text_schema(NAME, Presence::Required)),
        ])
        .ok(text_content("ok"))
        .errors(&[401, 403, 503])
        .response(404, json!({ "description": "No such database or username.", "content": text_content("not found") }))
}

pub(crate) fn check_unsaved(op: Operation, _: &Names) -> Operation {
    op.summary("Check a database before saving it: the body of a create plus `username`, the credential to try (left out: the default one). The same real connection as the stored check; nothing is stored")
        .body(schema_ref("DatabaseCheck"))
        .ok(text_content("ok"))
        .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
}

pub(crate) fn check_edited(op: Operation, _: &Names) -> Operation {
    op.summary("Check a stored database with changes not saved: the body of an update (merged over the stored database) plus `username`, the credential to try (left out: the default one); nothing is stored")
        .params(vec![database_id()])
        .body(schema_ref("DatabaseEditCheck"))
        .ok(text_content("ok"))
        .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
}

pub(crate) fn get_permissions(op: Operation, _: &Names) -> Operation {
    op.summary("Who may use the database")
        .params(vec![database_id()])
        .ok(json_content(schema_ref("Permissions")))
        .document_versioned()
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn put_permissions(op: Operation, _: &Names) -> Operation {
    op.summary("Replace the permissions")
        .params(vec![database_id()])
        .body(schema_ref("PermissionsInput"))
        .ok(json_content(schema_ref("Permissions")))
        .document_versioned()
        .conditional()
        .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
}

pub(crate) fn get_data_protection(op: Operation, _: &Names) -> Operation {
    op.summary("The database's data protection policies and what it inherits")
        .params(vec![database_id()])
        .ok(json_content(schema_ref("DataProtection")))
        .document_versioned()
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn put_data_protection(op: Operation, _: &Names) -> Operation {
    op.summary("Replace the policies and inherits_from")
        .params(vec![database_id()])
        .body(schema_ref("DataProtectionInput"))
        .ok(json_content(schema_ref("DataProtection")))
        .document_versioned()
        .conditional()
        .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
}

pub(crate) fn get_data_protection_status(op: Operation, _: &Names) -> Operation {
    op.summary("Whether each credential may run under the database's data protection: verified, or refused with what to change (its role is checked as a run checks it)")
        .params(vec![database_id()])
        .ok(json_content(json!({
            "type": "object",
            "required": ["database_id", "protected", "credentials"],
            "properties": {
                "database_id": { "type": "string" },
                "protected": { "type": "boolean" },
                "credentials": { "type": "array", "items": {
                    "type": "object",
                    "required": ["credential_id", "username", "status"],
                    "properties": {
                        "credential_id": { "type": "string" },
                        "username": { "type": "string" },
                        "status": { "type": "string", "enum": ["verified", "out_of_date", "refused", "unreachable", "unsupported"] },
                        "problems": { "description": "What to change: the run's refusal (422 errors, with `unmatched` policy columns), or the driver's message." },
                        "managed": { "type": "boolean", "description": "Whether dbconsole provisions this login (the document names a provisioning credential)." },
                        "plan": { "type": "array", "description": "What applying the plan would change for this login (`out_of_date` when it verifies but this is not empty).", "items": {
                            "type": "object", "required": ["sql", "reason"],
                            "properties": { "sql": { "type": "string" }, "reason": { "type": "string" } },
                        } },
                    },
                } },
                "provisioning": { "description": "Null without a provisioning credential; else its username and whether the plan is empty (`empty`, `unmatched`, `notes`), or `error` when it could not be computed. A document with `auto_apply` is applied before the check." },
            },
        })))
        .errors(&[401, 403, 404, 503])
}

fn plan_schema() -> Value {
    json!({
        "type": "object",
        "required": ["database_id", "provisioning_username", "empty", "roles", "unmatched", "notes"],
        "properties": {
            "database_id": { "type": "string" },
            "provisioning_username": { "type": "string" },
            "empty": { "type": "boolean", "description": "Nothing to do: every login is as the policies make it." },
            "applied": { "type": "integer", "description": "After an apply: how many statements it ran." },
            "roles": { "type": "array", "items": {
                "type": "object",
                "required": ["role", "steps"],
                "properties": {
                    "role": { "type": "string", "description": "A credential's login." },
                    "steps": { "type": "array", "items": {
                        "type": "object",
                        "required": ["sql", "reason"],
                        "properties": { "sql": { "type": "string" }, "reason": { "type": "string" } },
                    } },
                },
            } },
            "unmatched": { "type": "array", "items": { "type": "string" }, "description": "Policy columns that match no column of a table." },
            "notes": { "type": "array", "items": { "type": "string" }, "description": "What the plan can't change with the provisioning login's rights." },
        },
    })
}

pub(crate) fn get_data_protection_plan(op: Operation, _: &Names) -> Operation {
    op.summary("The provisioning plan: the statements, each with its reason, that give each credential's login what the policies allow (read as the provisioning credential; PostgreSQL)")
        .params(vec![database_id()])
        .ok(json_content(plan_schema()))
        .errors(&[401, 403, 404, 422, 503])
        .response(502, error_response("The provisioning login could not connect (its message, scrubbed of secrets)."))
        .response(504, error_response("Provisioning did not finish within its time (an apply cut short is rolled back)."))
}

pub(crate) fn apply_data_protection(op: Operation, _: &Names) -> Operation {
    op.summary("Apply the provisioning plan: in one transaction, serialized across nodes, the plan computed again; answers the plan applied")
        .params(vec![database_id()])
        .ok(json_content(plan_schema()))
        .errors(&[401, 403, 404, 422, 503])
        .response(502, error_response("The provisioning login could not connect (its message, scrubbed of secrets)."))
        .response(504, error_response("Provisioning did not finish within its time (an apply cut short is rolled back)."))
}

pub(crate) fn get_data_protection_catalog(op: Operation, _: &Names) -> Operation {
    op.summary("The columns the provisioning credential sees in the schemas provisioned (the console's column picker)")
        .params(vec![database_id()])
        .ok(json_content(json!({
            "type": "object",
            "required": ["database_id", "columns"],
            "properties": {
                "database_id": { "type": "string" },
                "columns": { "type": "array", "items": {
                    "type": "object",
                    "required": ["schema", "table", "column", "type"],
                    "properties": {
                        "schema": { "type": "string" }, "table": { "type": "string" },
                        "column": { "type": "string" }, "type": { "type": "string" },
                    },
                } },
            },
        })))
        .errors(&[401, 403, 404, 422, 503])
        .response(502, error_response("The provisioning login could not connect (its message, scrubbed of secrets)."))
        .response(504, error_response("Provisioning did not finish within its time (an apply cut short is rolled back)."))
}

pub(crate) fn check_provisioning_connection(op: Operation, _: &Names) -> Operation {
    op.summary("Open a real connection as the provisioning credential: `ok`, or the driver's error in one line (secrets scrubbed)")
        .params(vec![database_id()])
        .ok(text_content("ok"))
        .errors(&[401, 403, 404, 422, 503])
}

// Queries

pub(crate) fn sign_in(op: Operation, _: &Names) -> Operation {
    op.summary("Sign a browser in with a user-bound key: sets the session cookie (needs the x-dbconsole-request header and the console's Origin)")
        .body(json!({ "type": "object", "required": ["key"], "properties": { "key": { "type": "string" } } }))
        .ok(json_content(schema_ref("Me")))
        .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
}

pub(crate) fn exchange_sign_in_link(op: Operation, _: &Names) -> Operation {
    op.summary("Sign a browser in with a one-time sign-in link's token (single use, 15 minutes): sets the session cookie")
        .body(json!({ "type": "object", "required": ["token"], "properties": { "token": { "type": "string" } } }))
        .ok(json_content(schema_ref("Me")))
        .errors(&[400, 401, 403, 408, 413, 415, 503])
}

pub(crate) fn enroll_invitation(op: Operation, _: &Names) -> Operation {
    op.summary("Enroll with an invitation link's token (single use, 7 days): makes the user's record with the invitation's groups and role and sets the session cookie")
        .body(json!({ "type": "object", "required": ["token"], "properties": { "token": { "type": "string" } } }))
        .ok(json_content(schema_ref("Me")))
        .errors(&[400, 401, 403, 408, 413, 415, 503])
}

fn user_name_param() -> Value {
    json!({
        "name": "name", "in": "path", "required": true,
        "description": "The user name (compared in its normal form: case and width aside).",
        "schema": { "type": "string" },
    })
}

pub(crate) fn list_users(op: Operation, _: &Names) -> Operation {
    op.summary("List the people who use the console, by name; search keeps those whose name, display name or a group holds it")
        .params(vec![filter_param("search", "Only users whose name, display name or a group holds this (case aside).")])
        .ok(json_content(schema_ref("UserPage")))
        .errors(&[401, 403, 503])
}

pub(crate) fn get_user(op: Operation, _: &Names) -> Operation {
    op.summary("Get a user")
        .params(vec![user_name_param()])
        .ok(json_content(schema_ref("User")))
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn update_user(op: Operation, _: &Names) -> Operation {
    op.summary("Change a user's display name, groups or role, or deactivate them (their sessions and links end, their keys and tokens are refused) or make them active again; left-out fields stay")
        .params(vec![user_name_param()])
        .body(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "display_name": { "type": ["string", "null"], "maxLength": 200, "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$" },
                "groups": { "type": "array", "items": { "type": "string", "maxLength": 200, "allOf": [{ "pattern": "\\S" }, { "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$" }] } },
                "role": { "type": "string", "enum": ["super-admin", "member"] },
                "active": { "type": "boolean" },
            },
        }))
        .ok(json_content(schema_ref("User")))
        .errors(&[400, 401, 403, 404, 409, 413, 415, 422, 503])
}

pub(crate) fn create_recovery_link(op: Operation, _: &Names) -> Operation {
    op.summary("A one-time sign-in link for an active user (24 hours), to hand over so they can enroll a new passkey; shown once")
        .params(vec![user_name_param()])
        .response(201, json!({ "description": "The link, shown once.", "content": json_content(json!({
            "type": "object",
            "required": ["user", "expires_at", "link"],
            "properties": {
                "user": { "type": "string" },
                "expires_at": { "type": "string", "format": "date-time" },
                "link": { "type": "string" },
            },
        })) }))
        .errors(&[401, 403, 404, 409, 503])
}

pub(crate) fn list_invitations(op: Operation, _: &Names) -> Operation {
    op.summary("The pending invitations, newest first (never their tokens)")
        .ok(json_content(schema_ref("InvitationPage")))
        .errors(&[401, 403, 503])
}

pub(crate) fn create_invitation(op: Operation, _: &Names) -> Operation {
    op.summary("Invite a person: a one-time link (7 days) to hand over, shown once; 409 when they are already a user or invited")
        .body(json!({
            "type": "object",
            "required": ["user"],
            "additionalProperties": false,
            "properties": {
                "user": { "type": "string", "maxLength": 200, "allOf": [{ "pattern": "\\S" }, { "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$" }] },
                "groups": { "type": "array", "items": { "type": "string", "maxLength": 200, "allOf": [{ "pattern": "\\S" }, { "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$" }] } },
                "role": { "type": "string", "enum": ["super-admin", "member"] },
            },
        }))
        .response(201, json!({ "description": "The invitation, with its link (shown once).", "content": json_content(json!({
            "type": "object",
            "required": ["id", "user", "groups", "role", "created_at", "expires_at", "link"],
            "properties": {
                "id": { "type": "string" },
                "user": { "type": "string" },
                "groups": { "type": "array", "items": { "type": "string" } },
                "role": { "type": "string", "enum": ["super-admin", "member"] },
                "created_at": { "type": "string", "format": "date-time" },
                "expires_at": { "type": "string", "format": "date-time" },
                "link": { "type": "string" },
            },
        })) }))
        .errors(&[400, 401, 403, 409, 413, 415, 422, 503])
}

pub(crate) fn revoke_invitation(op: Operation, _: &Names) -> Operation {
    op.summary("Revoke a pending invitation")
        .params(vec![json!({
            "name": "id", "in": "path", "required": true,
            "description": "The invitation's id (`ses_…`).",
            "schema": { "type": "string" },
        })])
        .response(204, json!({ "description": "Revoked." }))
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn start_sign_in(op: Operation, _: &Names) -> Operation {
    op.summary("Start a passkey sign-in: the options navigator.credentials.get takes (any passkey of this console, user verification required), the ceremony sealed in a cookie; 501 without a public URL with a host name")
        .ok(json_content(json!({ "type": "object", "description": "WebAuthn PublicKeyCredentialRequestOptions as JSON, under `publicKey`." })))
        .errors(&[403, 409, 503])
}

pub(crate) fn finish_sign_in(op: Operation, _: &Names) -> Operation {
    op.summary("Finish a passkey sign-in with the browser's assertion: sets the session cookie")
        .body(json!({ "type": "object", "required": ["credential"], "properties": { "credential": { "type": "object", "description": "The PublicKeyCredential, as its toJSON() gives it." } } }))
        .ok(json_content(schema_ref("Me")))
        .errors(&[400, 401, 403, 409, 413, 415, 422, 503])
}

pub(crate) fn start_registration(op: Operation, _: &Names) -> Operation {
    op.summary("Start enrolling a passkey (from a session signed in with an invitation, a link, a passkey or OIDC): the options navigator.credentials.create takes, the ceremony sealed in a cookie")
        .ok(json_content(json!({ "type": "object", "description": "WebAuthn PublicKeyCredentialCreationOptions as JSON, under `publicKey`." })))
        .errors(&[401, 403, 409, 503])
}

pub(crate) fn finish_registration(op: Operation, _: &Names) -> Operation {
    op.summary("Finish enrolling a passkey: the browser's new credential, stored under the name given")
        .body(json!({ "type": "object", "required": ["name", "credential"], "properties": {
            "name": { "type": "string" },
            "credential": { "type": "object", "description": "The PublicKeyCredential, as its toJSON() gives it." },
        } }))
        .response(201, json!({ "description": "Enrolled.", "content": json_content(schema_ref("Passkey")) }))
        .errors(&[400, 401, 403, 409, 413, 415, 422, 503])
}

pub(crate) fn list_my_passkeys(op: Operation, _: &Names) -> Operation {
    op.summary("The caller's passkeys (never a key)")
        .ok(json_content(schema_ref("PasskeyPage")))
        .errors(&[401, 403, 503])
}

pub(crate) fn remove_my_passkey(op: Operation, _: &Names) -> Operation {
    op.summary("Remove one of the caller's passkeys")
        .params(vec![json!({
            "name": "id", "in": "path", "required": true,
            "description": "The passkey's credential id (base64url).",
            "schema": { "type": "string" },
        })])
        .response(204, json!({ "description": "Removed." }))
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn get_my_door(op: Operation, _: &Names) -> Operation {
    let session = json!({
        "type": "object",
        "required": ["id", "user", "database_id", "credential_id", "username", "client_address", "application_name", "opened_at"],
        "properties": {
            "id": { "type": "string" },
            "user": { "type": "string" },
            "database_id": { "type": "string" },
            "credential_id": { "type": "string" },
            "username": { "type": "string" },
            "client_address": { "type": "string" },
            "application_name": { "type": "string" },
            "opened_at": { "type": "string", "format": "date-time" },
            "password_id": { "type": ["string", "null"] },
        },
    });
    op.summary("The PostgreSQL wire door: where it is, the caller's door passwords (never the passwords) and open door sessions on this node")
        .ok(json_content(json!({
            "type": "object",
            "required": ["address", "max_password_lifetime_days", "passwords", "sessions"],
            "properties": {
                "address": { "type": ["string", "null"] },
                "max_password_lifetime_days": { "type": "integer", "minimum": 1 },
                "passwords": { "type": "array", "items": {
                    "type": "object",
                    "required": ["id", "created_at", "expires_at"],
                    "properties": {
                        "id": { "type": "string" },
                        "created_at": { "type": "string", "format": "date-time" },
                        "expires_at": { "type": "string", "format": "date-time" },
                    },
                } },
                "sessions": { "type": "array", "items": session },
            },
        })))
        .errors(&[401, 403, 503])
}

pub(crate) fn create_door_password(op: Operation, _: &Names) -> Operation {
    op.summary("Mint a door password (from the console, signed in): shown once, stored as a digest")
        .body(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "lifetime_days": {
                    "type": "integer", "minimum": 1, "maximum": 90,
                    "description": "Days it lasts: 1 to the server's --door-password-max-days (90 unless set); 30 when left out.",
                },
            },
        }))
        .response(
            201,
            json!({ "description": "The password (shown once).", "content": json_content(json!({
            "type": "object",
            "required": ["id", "password", "expires_at"],
            "properties": {
                "id": { "type": "string" },
                "password": { "type": "string" },
                "expires_at": { "type": "string", "format": "date-time" },
            },
        })) }),
        )
        .errors(&[400, 401, 403, 409, 413, 415, 422, 503])
}

pub(crate) fn revoke_door_password(op: Operation, _: &Names) -> Operation {
    op.summary("Revoke one of the caller's door passwords: the door sessions it opened end")
        .params(vec![json!({
            "name": "id", "in": "path", "required": true,
            "description": "The password's id (`ses_…`).",
            "schema": { "type": "string" },
        })])
        .response(204, json!({ "description": "Revoked." }))
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn end_door_session(op: Operation, _: &Names) -> Operation {
    op.summary("End one of the caller's open door sessions on this node: what it runs is cancelled")
        .params(vec![json!({
            "name": "id", "in": "path", "required": true,
            "description": "The door session's id (`door_…`).",
            "schema": { "type": "string" },
        })])
        .response(204, json!({ "description": "Ended." }))
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn sign_out(op: Operation, _: &Names) -> Operation {
    op.summary("Sign the browser out: ends its session and clears the cookie")
        .response(
            204,
            json!({ "description": "Signed out (or was not signed in)." }),
        )
        .errors(&[403, 503])
}

pub(crate) fn get_oidc(op: Operation, _: &Names) -> Operation {
    op.summary("How a browser may sign in (for the sign-in page): through the OIDC issuer, with a passkey")
        .ok(json_content(json!({
            "type": "object",
            "required": ["enabled", "passkeys"],
            "properties": {
                "enabled": { "type": "boolean", "description": "Whether the OIDC issuer's sign-in is on." },
                "passkeys": { "type": "boolean", "description": "Whether passkeys are on (the console has a public URL with a host name)." },
            },
        })))
}

pub(crate) fn start_oidc(op: Operation, _: &Names) -> Operation {
    op.summary("Start signing a browser in through the OIDC issuer: a redirect to its authorization endpoint (PKCE S256, state and nonce sealed in a cookie scoped to the flow)")
        .params(vec![filter_param(
            "return_to",
            "Where the browser lands once signed in: a path below /console/ (anything else: /console/).",
        )])
        .response(
            302,
            json!({ "description": "To the issuer's authorization endpoint, with the flow's cookie." }),
        )
        .errors(&[404, 503])
}

pub(crate) fn oidc_callback(op: Operation, _: &Names) -> Operation {
    op.summary("Where the issuer sends the browser back: the code is exchanged, the ID token checked, a session started (the browser's previous one ends), and the browser sent to its return path")
        .params(vec![
            filter_param("code", "The issuer's authorization code."),
            filter_param("state", "The flow's state, as the start sent it."),
            filter_param("error", "The issuer's error, when it refused."),
        ])
        .response(
            302,
            json!({ "description": "Signed in: to the return path, with the session cookie." }),
        )
        .response(
            400,
            json!({ "description": "The sign-in did not complete, and why (a text page).", "content": text_content("The sign-in did not complete: …") }),
        )
        .errors(&[404, 503])
}

pub(crate) fn get_me(op: Operation, _: &Names) -> Operation {
    op.summary("Who the caller is and what its credential lets it do")
        .ok(json_content(schema_ref("Me")))
        .errors(&[401, 503])
}

pub(crate) fn get_my_settings(op: Operation, _: &Names) -> Operation {
    op.summary("The caller's own settings: the console's theme and the time zone it shows times in")
        .ok(json_content(schema_ref("Settings")))
        .errors(&[401, 403, 503])
}

pub(crate) fn put_my_settings(op: Operation, _: &Names) -> Operation {
    op.summary("Replace the caller's own settings (kept in their user record; 409 without one)")
        .body(schema_ref("SettingsInput"))
        .ok(json_content(schema_ref("Settings")))
        .errors(&[400, 401, 403, 408, 409, 413, 415, 422, 503])
}

pub(crate) fn list_my_databases(op: Operation, _: &Names) -> Operation {
    op.summary("The databases the caller may query, with the credentials it may run as (all of them, by id: no paging)")
        .ok(json_content(schema_ref("QueryableDatabasePage")))
        .errors(&[401, 403, 503])
}

pub(crate) fn get_my_schema(op: Operation, _: &Names) -> Operation {
    op.summary("The tables and columns the caller sees as a credential (its database's default one when not named): read as the credential, read-only, under data protection; kept a minute; 422 for a credential that needs reviews; an unreachable database answers no tables and why")
        .params(vec![
            database_id(),
            json!({
                "name": "credential_id", "in": "query", "required": false,
                "description": "The credential to read the catalog as (default: the database's default credential).",
                "schema": { "type": "string" },
            }),
        ])
        .ok(json_content(json!({
            "type": "object",
            "required": ["tables", "truncated"],
            "properties": {
                "tables": { "type": "array", "items": {
                    "type": "object",
                    "required": ["schema", "table", "columns"],
                    "properties": {
                        "schema": { "type": "string" },
                        "table": { "type": "string" },
                        "columns": { "type": "array", "items": {
                            "type": "object",
                            "required": ["name", "type", "nullable", "masked"],
                            "properties": {
                                "name": { "type": "string" },
                                "type": { "type": "string" },
                                "nullable": { "type": "boolean" },
                                "masked": { "type": "boolean", "description": "Masked by the database's data protection (a hidden column is not listed)." },
                            },
                        } },
                    },
                } },
                "truncated": { "type": ["boolean", "null"] },
                "unavailable": { "type": "string", "description": "Why the catalog could not be read (the database could not be reached, or its runner is not built in): no tables then." },
            },
        })))
        .errors(&[401, 403, 404, 422, 503])
}

pub(crate) fn list_queries(op: Operation, _: &Names) -> Operation {
    let mut params = page_params();
    for (name, description) in [
        ("database_id", "Only the queries of this database."),
        ("author", "Only the queries of this author (exactly)."),
    ] {
        params.push(filter_param(name, description));
    }
    params.push(json!({
        "name": "status", "in": "query", "required": false,
        "description": "Only the queries in this status; another value is 422.",
        "schema": enum_schema(&names(&QueryStatus::ALL, QueryStatus::as_str), false),
    }));
    params.push(json!({
        "name": "reviewer", "in": "query", "required": false,
        "description": "`me`: only the queries the caller can act on as a reviewer (not their own, not yet reviewed by them, not run, on a database where they may review); another value is 422.",
        "schema": { "type": "string", "enum": ["me"] },
    }));
    op.summary("The query history, newest first (what the caller may see)")
        .params(params)
        .ok(json_content(schema_ref("QueryPage")))
        .errors(&[401, 403, 422, 503])
}

pub(crate) fn create_query(op: Operation, names: &Names) -> Operation {
    let id_from = "$response.body#/id";
    let links = json!({
        "GetQuery": link(&names.id("getQuery"), &[("id", id_from)]),
        "RunQuery": link(&names.id("runQuery"), &[("id", id_from)]),
        "ReviewQuery": link(&names.id("reviewQuery"), &[("id", id_from)]),
    });
    op.summary("Store a query (one statement) to run once")
        .body(schema_ref("QueryInput"))
        .ok_with_links(json_content(schema_ref("Query")), links)
        .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
}

pub(crate) fn get_query(op: Operation, _: &Names) -> Operation {
    op.summary("A query, with the outcome of its run")
        .params(vec![query_id()])
        .ok(json_content(schema_ref("Query")))
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn update_query(op: Operation, _: &Names) -> Operation {
    op.summary("Its author changes a query before it runs: its title, description or statement (a new statement, or any change once changes were requested, is a new revision whose approvals count from none; docs/queries.md, \"Reviews\")")
        .params(vec![query_id()])
        .body(schema_ref("QueryEdit"))
        .ok(json_content(schema_ref("Query")))
        .errors(&[400, 401, 403, 404, 408, 409, 413, 415, 422, 503])
}

pub(crate) fn run_query(op: Operation, _: &Names) -> Operation {
    run(op.summary("Run a query, once: its rows, streamed"))
        .params(vec![query_id()])
        .optional_body(schema_ref("RunInput"))
        .errors(&[400, 401, 403, 404, 408, 409, 413, 415, 422, 503])
}

pub(crate) fn create_download(op: Operation, _: &Names) -> Operation {
    op.summary("A URL where the query's one run downloads as CSV, once, within a minute (for browsers: a navigation can't carry a header)")
        .params(vec![query_id()])
        .ok(json_content(json!({
            "type": "object", "required": ["url"],
            "properties": { "url": { "type": "string", "description": "/api/v1/console/downloads/csv?ticket=…" } },
        })))
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn download_csv(op: Operation, _: &Names) -> Operation {
    let op = op.summary("The query's one run as a CSV attachment: the ticket is the credential (sealed by the server; one minute; the query runs once)")
        .params(vec![json!({
            "name": "ticket", "in": "query", "required": false,
            "description": "The ticket of a URL from createDownload.",
            "schema": { "type": "string" },
        })])
        .response(200, json!({
            "description": "The rows as CSV (RFC 4180, CRLF), streamed as an attachment.",
            "content": { "text/csv": { "schema": { "type": "string" } } },
        }))
        .response(410, error_response("The link ended, was used, or is not a link."))
        .response(502, error_response("The database could not be reached or logged into (its message, scrubbed of secrets)."))
        .response(504, error_response("The statement ran past its timeout and was ended on the server."));
    op.errors(&[403, 404, 409, 422, 503])
}

pub(crate) fn review_query(op: Operation, _: &Names) -> Operation {
    op.summary(
        "Approve or reject a query, or ask its author for changes (docs/queries.md, \"Reviews\")",
    )
    .params(vec![query_id()])
    .body(schema_ref("ReviewInput"))
    .ok(json_content(schema_ref("Query")))
    .errors(&[400, 401, 403, 404, 408, 409, 413, 415, 422, 503])
}

pub(crate) fn comment_on_query(op: Operation, _: &Names) -> Operation {
    op.summary("Comment on a query: its author, or someone who may review it (docs/queries.md, \"Reviews\")")
        .params(vec![query_id()])
        .body(schema_ref("CommentInput"))
        .response(201, json!({
            "description": "The query, with the comment at the end of its thread.",
            "content": { "application/json": { "schema": schema_ref("Query") } },
        }))
        .errors(&[400, 401, 403, 404, 408, 409, 413, 415, 422, 503])
}

// Saved queries

fn saved_query_id() -> Value {
    path_param(
        "id",
        "The saved query's id (`sq_…`).",
        json!({ "type": "string" }),
    )
}

pub(crate) fn list_saved_queries(op: Operation, _: &Names) -> Operation {
    op.summary("The saved queries the caller sees (theirs, and those shared with them), by name")
        .params(vec![
            filter_param("search", "Only those with each word of this in the name, description, statement or tags (case aside)."),
            filter_param("tag", "Only those with this tag (case aside)."),
        ])
        .ok(json_content(schema_ref("SavedQueryPage")))
        .errors(&[401, 403, 503])
}

pub(crate) fn create_saved_query(op: Operation, _: &Names) -> Operation {
    op.summary("Save a query under a name, shared with its author alone, named groups, or everyone who may query its database (docs/queries.md, \"Saved queries\")")
        .body(schema_ref("SavedQueryCreate"))
        .response(201, json!({
            "description": "Saved.",
            "content": { "application/json": { "schema": schema_ref("SavedQuery") } },
        }))
        .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
}

pub(crate) fn get_saved_query(op: Operation, _: &Names) -> Operation {
    op.summary("A saved query (404 unless it is shared with the caller)")
        .params(vec![saved_query_id()])
        .ok(json_content(schema_ref("SavedQuery")))
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn update_saved_query(op: Operation, _: &Names) -> Operation {
    op.summary("Its author renames, describes, shares or changes a saved query (each field left out stays)")
        .params(vec![saved_query_id()])
        .body(schema_ref("SavedQueryUpdate"))
        .ok(json_content(schema_ref("SavedQuery")))
        .errors(&[400, 401, 403, 404, 408, 409, 413, 415, 422, 503])
}

pub(crate) fn delete_saved_query(op: Operation, _: &Names) -> Operation {
    op.summary("Its author (or a super admin) deletes a saved query; its runs stay in the history")
        .params(vec![saved_query_id()])
        .ok(json_content(schema_ref("SavedQuery")))
        .errors(&[401, 403, 404, 409, 503])
}

pub(crate) fn create_saved_query_run(op: Operation, _: &Names) -> Operation {
    op.summary("A run of a saved query, stored as a new query holding its parameters' values (awaiting reviews where its credential needs them); run it with runQuery")
        .params(vec![saved_query_id()])
        .optional_body(schema_ref("SavedQueryRunInput"))
        .ok(json_content(schema_ref("Query")))
        .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
}

// The audit trail and the outbox

pub(crate) fn list_audit(op: Operation, _: &Names) -> Operation {
    let mut params = page_params();
    params.push(json!({
        "name": "resource", "in": "query", "required": false,
        "description": "Only the events of this record (`db_…`, `dash_…`, `key_…`).",
        "schema": { "type": "string" },
    }));
    params.push(filter_param(
        "database",
        "Only the events of this database and of its queries.",
    ));
    params.push(filter_param(
        "actor",
        "Only the events of this actor: a key's or session's id, or its name, exactly.",
    ));
    params.push(json!({
        "name": "action", "in": "query", "required": false,
        "description": "Only the events of this action; another value is 422.",
        "schema": enum_schema(&names(&crate::model::AuditAction::ALL, crate::model::AuditAction::as_str), false),
    }));
    for (name, description) in [
        (
            "since",
            "Only the events at or after this time (RFC 3339); another value is 422.",
        ),
        (
            "until",
            "Only the events before this time (RFC 3339); another value is 422.",
        ),
    ] {
        params.push(json!({
            "name": name, "in": "query", "required": false, "description": description,
            "schema": { "type": "string", "format": "date-time" },
        }));
    }
    op.summary("The audit trail: one event per change, newest first; filtered on the server by record, database, actor, action and time")
        .params(params)
        .ok(json_content(schema_ref("AuditEventPage")))
        .errors(&[401, 403, 422, 503])
}

pub(crate) fn list_deliveries(op: Operation, _: &Names) -> Operation {
    let mut params = page_params();
    params.push(json!({
        "name": "status", "in": "query", "required": false,
        "description": "Only the deliveries in this status; another value is 422.",
        "schema": enum_schema(&names(&DeliveryStatus::ALL, DeliveryStatus::as_str), false),
    }));
    op.summary("The outbox, newest first")
        .params(params)
        .ok(json_content(schema_ref("DeliveryPage")))
        .errors(&[401, 403, 422, 503])
}

pub(crate) fn get_delivery(op: Operation, _: &Names) -> Operation {
    op.summary("A delivery of the outbox")
        .params(vec![delivery_id()])
        .ok(json_content(schema_ref("Delivery")))
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn get_my_delivery(op: Operation, _: &Names) -> Operation {
    op.summary("How a workflow run the caller started is doing: status, attempts, next try, last error; never its payload (404 for anyone else's)")
        .params(vec![delivery_id()])
        .ok(json_content(schema_ref("DeliveryProgress")))
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn list_my_sessions(op: Operation, _: &Names) -> Operation {
    op.summary("The caller's live browser sessions (any device), newest first, the current one marked; never a secret")
        .ok(json_content(schema_ref("MySessionPage")))
        .errors(&[401, 403, 503])
}

pub(crate) fn end_my_session(op: Operation, _: &Names) -> Operation {
    op.summary("End one of the caller's own browser sessions (another device's, or this one); 404 for anyone else's")
        .params(vec![json!({
            "name": "id", "in": "path", "required": true,
            "description": "The session's id (`ses_…`).",
            "schema": { "type": "string" },
        })])
        .response(204, json!({ "description": "Ended." }))
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn retry_delivery(op: Operation, _: &Names) -> Operation {
    op.summary("Retry a dead letter: pending again, with every attempt")
        .params(vec![delivery_id()])
        .response(202, json!({ "description": "Pending again.", "content": json_content(schema_ref("Delivery")) }))
        .errors(&[401, 403, 404, 409, 503])
}

// Dashboards

pub(crate) fn list_dashboards(op: Operation, _: &Names) -> Operation {
    let mut params = page_params();
    params.push(filter_param(
        "name_prefix",
        "Only dashboards whose name starts with this (case counts).",
    ));
    op.summary("List dashboards, ordered by id; name_prefix filters")
        .params(params)
        .ok(json_content(schema_ref("DashboardPage")))
        .errors(&[401, 403, 422, 503])
}

pub(crate) fn create_dashboard(op: Operation, names: &Names) -> Operation {
    let id_from = "$response.body#/id";
    let mut links = json!({
        "GetDashboard": link(&names.id("getDashboard"), &[("id", id_from)]),
        "UpdateDashboard": link(&names.id("updateDashboard"), &[("id", id_from)]),
        "DeleteDashboard": link(&names.id("deleteDashboard"), &[("id", id_from)]),
    });
    if names.compat {
        links["PatchDashboard"] = link(&names.id("patchDashboard"), &[("id", id_from)]);
    }
    op.summary("Create a dashboard")
        .body(schema_ref("DashboardCreate"))
        .ok_with_links(json_content(schema_ref("Dashboard")), links)
        .versioned()
        .errors(&[400, 401, 403, 408, 413, 415, 422, 503])
}

pub(crate) fn get_dashboard(op: Operation, _: &Names) -> Operation {
    op.summary("Retrieve a dashboard")
        .params(vec![dashboard_id()])
        .ok(json_content(schema_ref("Dashboard")))
        .versioned()
        .cacheable()
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn update_dashboard(op: Operation, _: &Names) -> Operation {
    op.summary(
        "Update a dashboard: fields left out stay; `panels`, when given, is the whole new list",
    )
    .params(vec![dashboard_id()])
    .body(schema_ref("DashboardUpdate"))
    .ok(json_content(schema_ref("Dashboard")))
    .versioned()
    .conditional()
    .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
}

pub(crate) fn delete_dashboard(op: Operation, _: &Names) -> Operation {
    op.summary("Delete a dashboard; answers the deleted dashboard")
        .params(vec![dashboard_id()])
        .ok(json_content(schema_ref("Dashboard")))
        .conditional()
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn get_presentation(op: Operation, _: &Names) -> Operation {
    op.summary("A dashboard's presentation document: each panel's display and place on the grid, each input's type, the default time range, its editors and viewers (docs/dashboards.md); its ETag is its own")
        .params(vec![dashboard_id()])
        .ok(json_content(schema_ref("Presentation")))
        .versioned()
        .errors(&[401, 403, 404, 503])
}

pub(crate) fn put_presentation(op: Operation, _: &Names) -> Operation {
    op.summary("Replace a dashboard's presentation document, whole (its editors, a super admin or a full-scope caller): every panel and input it names must be the dashboard's; If-Match compares its own ETag")
        .params(vec![dashboard_id()])
        .body(schema_ref("PresentationInput"))
        .ok(json_content(schema_ref("Presentation")))
        .versioned()
        .conditional()
        .errors(&[400, 401, 403, 404, 408, 409, 413, 415, 422, 503])
}

pub(crate) fn input_choices(op: Operation, _: &Names) -> Operation {
    let mut params = vec![dashboard_id()];
    params.push(path_param(
        "key",
        "The input's key.",
        json!({ "type": "string" }),
    ));
    op.summary("A choice input's values: its fixed list, or its query's first column (each once, at most 500), run read-only as its credential for whoever may query its database; audited as a panel run")
        .params(params)
        .ok(json_content(schema_ref("InputChoices")))
        .errors(&[401, 403, 404, 422, 503])
}

pub(crate) fn run_panel(op: Operation, _: &Names) -> Operation {
    run(op.summary("Run a panel's query with its inputs as bind parameters: its rows, streamed"))
        .params(panel_params())
        .body(schema_ref("PanelRunInput"))
        .errors(&[400, 401, 403, 404, 408, 409, 413, 415, 422, 503])
}

pub(crate) fn create_panel_download(op: Operation, _: &Names) -> Operation {
    op.summary("A URL where the panel's result (with these inputs) downloads as CSV within a minute, for a browser (docs/console.md, \"The screens\"); refused as the panel's run would be")
        .params(panel_params())
        .body(schema_ref("PanelRunInput"))
        .ok(json_content(json!({
            "type": "object", "required": ["url"],
            "properties": { "url": { "type": "string" } },
        })))
        .errors(&[400, 401, 403, 404, 408, 413, 415, 422, 503])
}

pub(crate) fn test_run_panel(op: Operation, _: &Names) -> Operation {
    run(op.summary("Run a panel that is not saved, as its editor, under every rule of a saved panel's run (read-only, a credential without reviews, access, data protection): its rows, streamed; audited on its database"))
        .body(schema_ref("PanelTestRunInput"))
        .errors(&[400, 401, 403, 408, 409, 413, 415, 422, 503])
}

pub(crate) fn trigger_action(op: Operation, _: &Names) -> Operation {
    let mut params = panel_params();
    params.push(path_param(
        "action_id",
        "The action's id.",
        json!({ "type": "string" }),
    ));
    op.summary("Start a row action's workflow with the clicked row and the prompted values: the delivery it put in the outbox (docs/workflows.md, \"Workflows and notifications\")")
        .params(params)
        .body(schema_ref("TriggerInput"))
        .response(202, json!({ "description": "Stored in the outbox; delivered after this answer.", "content": json_content(schema_ref("Delivery")) }))
        .errors(&[400, 401, 403, 404, 408, 409, 413, 415, 422, 503])
}

// The document itself

pub(crate) fn openapi_document(op: Operation, _: &Names) -> Operation {
    op.summary("This document").response(
        200,
        json!({ "description": "The OpenAPI 3.1 document.", "content": json_content(json!({ "type": "object" })) }),
    )
}
