//! The schemas of the document: of values (strings by their `Text` rule, enums by their wire
//! names, bounds from the validation constants) and the components every operation refers to.

use super::super::render::{
    AuditEventView, DashboardView, DataProtectionView, DatabaseView, DeliveryProgressView,
    DeliveryView, MeView, PageView, PermissionsView, QueryView, QueryableDatabaseView,
};
#[allow(clippy::wildcard_imports)]
use super::*;
use crate::model::TITLE_MAX;
use crate::validate::{DESCRIPTION_MAX, REASON_MAX};
use schemars::generate::SchemaSettings;

/// The largest `u32`, as JSON Schema bounds take it.
const U32_MAX: u64 = u32::MAX as u64;

// ---------------------------------------------------------------------------------------------
// Schemas of values

/// How a string field may be given.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Presence {
    /// Must be given, not null, not blank (create's required fields).
    Required,
    /// May be left out; when given, not null and not blank (update of a required field).
    NotBlank,
    /// May be null or blank, meaning unset.
    Optional,
    /// Kept as sent, `""` included; null means `""`.
    Raw,
}

pub(super) fn text_schema(rule: Text, presence: Presence) -> Value {
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

pub(super) fn enum_schema(names: &[&str], nullable: bool) -> Value {
    let mut names: Vec<Value> = names.iter().map(|n| json!(n)).collect();
    if nullable {
        names.push(Value::Null);
    }
    json!({ "enum": names })
}

pub(super) fn integer(min: u64, max: u64, nullable: bool) -> Value {
    let kind = if nullable {
        json!(["integer", "null"])
    } else {
        json!("integer")
    };
    json!({ "type": kind, "minimum": min, "maximum": max })
}

pub(super) fn boolean(nullable: bool) -> Value {
    if nullable {
        json!({ "type": ["boolean", "null"] })
    } else {
        json!({ "type": "boolean" })
    }
}

/// A secret given as base64 text of its PEM (or DER): written, never read.
pub(super) fn certificate(description: &str) -> Value {
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

/// A record's id in a path.
pub(super) fn id_param_schema(prefix: &str) -> Value {
    json!({ "type": "string", "pattern": format!("^{prefix}_[0-9a-z]{{26}}$") })
}

/// A blank string: empty or white space only (unset).
pub(super) fn blank() -> Value {
    json!({ "type": "string", "pattern": Text::blank_pattern() })
}

/// `schema` with a description.
pub(super) fn described(schema: Value, description: &str) -> Value {
    with(schema, "description", json!(description))
}

/// `schema` with one more keyword.
pub(super) fn with(mut schema: Value, key: &str, value: Value) -> Value {
    schema[key] = value;
    schema
}

pub(super) fn names<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|v| name(*v)).collect()
}

/// A body of `base` plus the `username` of the credential to check.
pub(super) fn with_username(base: &str) -> Value {
    json!({ "allOf": [
        schema_ref(base),
        object(&[], json!({
            "username": described(text_schema(NAME, Presence::NotBlank), "The username of the credential to try, as given in `credentials` (or stored). Left out: the default credential, else the first."),
        })),
    ]})
}

pub(super) fn object(required: &[&str], properties: Value) -> Value {
    json!({ "type": "object", "required": required, "properties": properties })
}

/// A closed object: exactly these keys (responses).
pub(super) fn closed(properties: Value) -> Value {
    let required: Vec<&String> = properties
        .as_object()
        .map(|p| p.keys().collect())
        .unwrap_or_default();
    json!({ "type": "object", "required": required, "properties": properties, "additionalProperties": false })
}

pub(super) fn list(items: Value, nullable: bool) -> Value {
    let kind = if nullable {
        json!(["array", "null"])
    } else {
        json!("array")
    };
    json!({ "type": kind, "items": items })
}

// ---------------------------------------------------------------------------------------------
// Components

pub(super) fn components() -> Value {
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
            "DocumentETag": {
                "description": "The document's version (permissions, data protection): a digest of it as answered, which changes with every change of it. Send it back in If-Match to make a PUT conditional.",
                "schema": { "type": "string", "pattern": "^\"[0-9a-f]{32}\"$" },
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
pub(super) fn entity_tags_param(name: &str, description: &str) -> Value {
    json!({
        "name": name, "in": "header", "required": false, "description": description,
        "schema": { "type": "string", "pattern": ENTITY_TAGS_PATTERN },
    })
}

/// `*`, or one or more entity tags separated by commas (RFC 9110, section 8.8.3); an empty
/// value counts as no header.
pub(super) const ENTITY_TAGS_PATTERN: &str =
    "^(\\*|(W/)?\"[\\x21\\x23-\\x7e]*\"([ \\t]*,[ \\t]*(W/)?\"[\\x21\\x23-\\x7e]*\")*)?$";

pub(super) fn error_response(description: &str) -> Value {
    json!({ "description": description, "content": json_content(schema_ref("Error")) })
}

pub(super) fn responses() -> Value {
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

pub(super) fn schemas() -> Value {
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
            "timeout_secs": described(json!({ "type": ["integer", "null"], "minimum": 1, "maximum": 86_400 }), "A shorter timeout for this run, in seconds: the run ends at the lower of it and the credential's (or the server's) timeout, never later; the service cancels the statement on the server then (504)."),
        }),
    );
    let review_input = object(
        &["decision"],
        json!({
            "decision": { "type": "string", "enum": ["approve", "reject", "request_changes"] },
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
    let subject_kinds = names(&SubjectKind::ALL, SubjectKind::as_str);
    let access_levels = names(&AccessLevel::ALL, AccessLevel::as_str);
    let column_actions = names(&ColumnAction::ALL, ColumnAction::as_str);
    let mask_kinds = names(&crate::model::MaskKind::ALL, crate::model::MaskKind::as_str);
    let kept = json!({ "type": ["integer", "null"], "minimum": 0, "maximum": crate::model::Mask::MAX_KEPT });
    let mut schemas = json!({
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
        "DataProtectionInput": object(&["policies"], json!({
            "inherits_from": described(optional(NAME), "Another database's id (it must exist, not be this one, and make no cycle), or null."),
            "policies": described(
                list(object(&["name", "columns"], json!({
                    "name": text_schema(NAME, Presence::Required),
                    "description": optional(Text::Lines(VALUE_MAX)),
                    "exempt": described(list(object(&["subject_kind", "subject"], json!({
                        "subject_kind": enum_schema(&subject_kinds, false),
                        "subject": text_schema(NAME, Presence::Required),
                    })), true), "Users and groups who see the values: a caller exempt from every policy that applies runs as the provisioning credential (needed then), unprotected. Each subject once."),
                    "columns": { "type": "array", "minItems": 1, "items": object(&["column", "action"], json!({
                        "column": text_schema(NAME, Presence::Required),
                        "action": enum_schema(&column_actions, false),
                        "mask": described(enum_schema(&mask_kinds, false), "A masked column's mask: `full` (`****`, the default), `partial` (`keep_first`/`keep_last` characters kept around `****`), `email` (the domain kept: `****@example.com`) or `null`. Only with action `mask`."),
                        "keep_first": described(kept.clone(), "A partial mask's characters kept at the start (one of keep_first and keep_last above 0)."),
                        "keep_last": described(kept.clone(), "A partial mask's characters kept at the end."),
                    })) },
                })), true),
                "The whole new list; null means empty. Names are unique, and columns within a policy.",
            ),
            "provisioning": described(json!({ "oneOf": [{ "type": "null" }, object(&["username"], json!({
                "username": text_schema(NAME, Presence::Required),
                "password": described(json!({ "type": ["string", "null"], "writeOnly": true }), "Write-only: left out, the stored password is kept (needed when there is none)."),
                "schemas": described(json!({ "type": ["array", "null"], "items": { "type": "string", "minLength": 1 }, "uniqueItems": true }), "The schemas provisioned; empty or null: every schema the login sees but the system ones."),
                "auto_apply": json!({ "type": ["boolean", "null"] }),
            }))] }), "The login dbconsole provisions the protected roles with (docs/data-protection.md, \"Provisioning\"), or null."),
        })),
        "DashboardCreate": dashboard_input(true),
        "DashboardUpdate": dashboard_input(false),
        "QueryInput": object(&["database_id", "credential_id", "query"], json!({
            "database_id": text_schema(NAME, Presence::Required),
            "credential_id": text_schema(NAME, Presence::Required),
            "query": described(text_schema(Text::Lines(QUERY_MAX), Presence::Required), "One statement (a trailing `;` and comments are fine)."),
            "limit": described(json!({ "type": ["integer", "null"], "minimum": 1 }), "The most rows the run returns (default 1,000), up to the server's maximum."),
            "title": described(optional(Text::Line(TITLE_MAX)), "What the query is for, in a line: needed on a credential that needs reviews (its reviewers read it first); else made from the statement's start."),
            "description": described(optional(Text::Lines(DESCRIPTION_MAX)), "Why it should run: needed on a credential that needs reviews."),
        })),
        "QueryEdit": object(&[], json!({
            "title": text_schema(Text::Line(TITLE_MAX), Presence::NotBlank),
            "description": described(text_schema(Text::Lines(DESCRIPTION_MAX), Presence::Raw), "A new description (empty clears it); null or left out: unchanged."),
            "query": described(text_schema(Text::Lines(QUERY_MAX), Presence::NotBlank), "A new statement (one): a new revision, whose approvals count from none."),
        })),
        "SettingsInput": json!({ "type": "object", "additionalProperties": false, "properties": {
            "theme": described(json!({ "type": ["string", "null"], "enum": ["light", "dark", null] }), "The console's theme; null or left out: the system's."),
            "time_zone": described(json!({ "type": ["string", "null"], "enum": ["UTC", null] }), "The zone times are shown in; null or left out: the browser's."),
        } }),
        "SavedQueryCreate": saved_query_input(true),
        "SavedQueryUpdate": saved_query_input(false),
        "SavedQueryRunInput": object(&[], json!({
            "params": described(json!({ "type": ["object", "null"], "additionalProperties": { "type": ["string", "number", "boolean"] } }), "A value for each of the saved query's `${name}` parameters, and no other: bound as parameters, never pasted into the text."),
            "limit": described(json!({ "type": ["integer", "null"], "minimum": 1 }), "The most rows the run returns (default 1,000), up to the server's maximum."),
        })),
        "CommentInput": object(&["text"], json!({
            "text": text_schema(Text::Lines(REASON_MAX), Presence::Required),
        })),
        "RunInput": run_input,
        "TriggerInput": object(&[], json!({
            "row_token": described(json!({ "type": ["string", "null"] }), "The clicked row's token, from the panel run that returned it (`row_tokens`): the row's values come from it. Needed when the action passes a column on (docs/workflows.md, \"Row tokens\")."),
            "row": described(json!({ "type": ["object", "null"] }), "The clicked row as the caller claims it (column name → value): accepted only by a server started with --allow-unverified-rows, and never beside a row_token."),
            "prompted": described(json!({ "type": ["object", "null"], "additionalProperties": { "type": ["string", "number", "boolean", "null"] } }), "What the user typed: workflow input key → value, for the mappings with `prompt_user`; no other key."),
        })),
        "ReviewInput": review_input,
        "PanelRunInput": object(&[], json!({
            "inputs": described(json!({ "type": ["object", "null"], "additionalProperties": { "type": ["string", "number", "boolean", "null"] } }), "A value for every input the panel declares, and no other: one the presentation types is checked for its type, takes its default when left out, and binds NULL when optional and blank (docs/dashboards.md, \"Inputs\")."),
            "time_range": described(json!({ "type": ["object", "null"], "properties": { "from": { "type": "string", "format": "date-time" }, "to": { "type": "string", "format": "date-time" } }, "required": ["from", "to"], "additionalProperties": false }), "The dashboard's time range, bound as `${__from}` and `${__to}`: RFC 3339 times, `from` before `to`. The last 7 days (or the presentation's `time_range`) when left out."),
            "limit": { "type": ["integer", "null"], "minimum": 1 },
            "row_tokens": described(json!({ "type": ["boolean", "null"] }), "Whether each row comes with its token, for a row action's trigger: only for a panel with an action that starts a workflow, and not as CSV (docs/workflows.md, \"Row tokens\")."),
        })),
        "PanelTestRunInput": object(&["panel"], json!({
            "panel": described(panel_input.clone(), "A panel as a dashboard's body gives it; its errors are reported under `panel`, and its credential must name a stored credential that needs no review."),
            "inputs": described(json!({ "type": ["object", "null"], "additionalProperties": { "type": ["string", "number", "boolean"] } }), "A value for every input the panel declares, and no other."),
            "limit": { "type": ["integer", "null"], "minimum": 1 },
            "time_range": described(json!({ "type": ["object", "null"], "properties": { "from": { "type": "string", "format": "date-time" }, "to": { "type": "string", "format": "date-time" } }, "required": ["from", "to"], "additionalProperties": false }), "The dashboard's time range, bound as `${__from}` and `${__to}`: RFC 3339 times, `from` before `to`. The last 7 days (or the presentation's `time_range`) when left out."),
        })),
        "InputChoices": object(&["choices", "truncated"], json!({
            "choices": list(json!({ "type": "string" }), false),
            "truncated": described(json!({ "type": "boolean" }), "Whether the query gave more values than are kept (500)."),
            "error": described(json!({ "type": ["string", "null"] }), "Why the query failed after its first rows, when it did."),
        })),
        "PresentationInput": presentation_input(),
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
            "row_tokens": described(list(json!({ "type": ["string", "null"] }), false), "A panel run's row tokens, one per row in order, when asked for (`row_tokens`); in NDJSON each row's line is followed by a `{\"row_token\": …}` line."),
        })),
    });
    if let Some(schemas) = schemas.as_object_mut() {
        schemas.extend(views());
    }
    schemas
}

/// The schemas of the answers, derived from the views that render them (`service::render`),
/// so that a field added to a view is in the document with no second edit.
fn views() -> Map<String, Value> {
    // Answers are what the views serialize: a field they leave out when empty
    // (`skip_serializing_if`) is not required.
    let mut generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .with(|settings| {
            settings.definitions_path = "/components/schemas".into();
            settings.meta_schema = None;
        })
        .into_generator();
    generator.subschema_for::<PageView<DatabaseView<'static>>>();
    generator.subschema_for::<PageView<DashboardView<'static>>>();
    generator.subschema_for::<PageView<AuditEventView<'static>>>();
    generator.subschema_for::<PageView<QueryView<'static>>>();
    generator.subschema_for::<PageView<DeliveryView<'static>>>();
    generator.subschema_for::<DeliveryProgressView<'static>>();
    generator.subschema_for::<PermissionsView<'static>>();
    generator.subschema_for::<MeView<'static>>();
    generator.subschema_for::<PageView<super::super::render::MySessionView<'static>>>();
    generator.subschema_for::<PageView<super::super::render::UserView<'static>>>();
    generator.subschema_for::<PageView<super::super::render::InvitationView<'static>>>();
    generator.subschema_for::<PageView<super::super::render::PasskeyView<'static>>>();
    generator.subschema_for::<PageView<QueryableDatabaseView<'static>>>();
    generator.subschema_for::<PageView<super::super::render::SavedQueryView<'static>>>();
    generator.subschema_for::<super::super::me::SettingsView<'static>>();
    generator.subschema_for::<DataProtectionView<'static>>();
    generator.subschema_for::<crate::model::Presentation>();
    generator.take_definitions(true)
}

/// A presentation document as a `PUT` takes it: the deserialize form, whole (every part
/// optional), with no references into the answers' schemas (whose required lists differ).
fn presentation_input() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_deserialize()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<crate::model::Presentation>();
    schema.remove("title");
    schema.to_value()
}

/// A saved query's body: every field on a create (`sharing` defaults to `author`), any on a
/// change (each left out stays).
fn saved_query_input(creating: bool) -> Value {
    let presence = if creating {
        Presence::Required
    } else {
        Presence::NotBlank
    };
    let required: &[&str] = if creating {
        &["name", "query", "database_id", "credential_id"]
    } else {
        &[]
    };
    object(
        required,
        json!({
            "name": text_schema(Text::Line(crate::model::SAVED_NAME_MAX), presence),
            "description": described(text_schema(Text::Lines(DESCRIPTION_MAX), Presence::Raw), "What it is for (may be empty)."),
            "query": described(text_schema(Text::Lines(QUERY_MAX), presence), "One statement; `${name}` marks a parameter each run gives a value for, bound as a parameter."),
            "database_id": text_schema(NAME, presence),
            "credential_id": text_schema(NAME, presence),
            "tags": described(json!({ "type": ["array", "null"], "maxItems": crate::model::SAVED_TAGS_MAX.0, "items": { "type": "string", "minLength": 1, "maxLength": crate::model::SAVED_TAGS_MAX.1 } }), "Words to find it by (each kept once, case aside)."),
            "sharing": described(json!({ "type": ["string", "null"], "enum": ["author", "groups", "database", null] }), "Who sees it: its author alone (the default), the members of `groups` who may query its database, or everyone who may query its database."),
            "groups": described(json!({ "type": ["array", "null"], "maxItems": crate::validate::SHARED_GROUPS_MAX, "items": { "type": "string", "minLength": 1 } }), "With sharing `groups` (and only then): the groups who see it."),
        }),
    )
}
