//! Hostile requests: junk JSON aimed at every known key, malformed bodies, odd content types,
//! and generated paths, queries and caller credentials.

use http::Method;
use proptest::collection::vec;
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Map, Value, json};

use crate::strategies::*;
use crate::support::*;

/// Every key the service reads in some body, to aim junk at.
#[rustfmt::skip]
pub(crate) const KNOWN_KEYS: &[&str] = &[
    "id", "api_id", "name", "adapter", "hostname", "port", "database", "ssl",
    "verify_server_hostname", "restrict_access", "review_bypass_allowed", "group",
    "slack_channel", "tunnel_id", "ai_enabled", "ai_max_rows", "connection_parameters",
    "credentials", "username", "password", "ai_allowed", "timeout", "reviews_required",
    "default_credential", "value", "ssl_ca_cert", "ssl_cert", "ssl_key", "restricted_access",
    "panels", "title", "inputs", "actions", "details", "__type__", "query", "credential_id",
    "key", "description", "label", "workflow_id", "input_mappings", "workflow_input_key",
    "column", "prompt_user", "prompt", "inserted_at", "updated_at",
];

#[rustfmt::skip]
pub(crate) fn edge_numbers() -> Vec<Value> {
    vec![
        json!(0), json!(-1), json!(1), json!(65535), json!(65536), json!(u32::MAX),
        json!(u64::from(u32::MAX) + 1), json!(i64::MIN), json!(i64::MAX), json!(u64::MAX),
        json!(0.5), json!(-0.0), json!(1.0), json!(5.0), json!(-5.0), json!(1e300),
        json!(-1e300), json!(9.0e15), json!(9.5e15), json!(f64::MAX), json!(f64::MIN_POSITIVE),
        json!(4_294_967_295.0), json!(4_294_967_296.0),
    ]
}

/// Strings that mean something somewhere (adapter names, `"enabled"`, near-base64, reserved
/// parameter names, id prefixes, placeholders).
#[rustfmt::skip]
pub(crate) const JUNK_WORDS: &[&str] = &[
    "", " ", "\u{0}", "postgres", "POSTGRES", " postgres", "mongodb", "query", "Query", "chart",
    "enabled", "ENABLED", "true", "null", "user", "USER", "database", "1", "-1", "1e999", "=",
    "====", "AAAA", "AA==", "A", "QUJD\nREVG", "not base64!", "%00", "\u{feff}", "\u{202e}",
    "crd_", "db_", "dash_", "{db}", "{crd}", "{dash}", "{pl}", "{act}", "{api}", "{user}",
];

pub(crate) fn junk_text() -> BoxedStrategy<String> {
    prop_oneof![
        2 => "\\PC{0,16}",
        1 => ".{0,8}",
        2 => select(JUNK_WORDS).prop_map(str::to_owned),
    ]
    .boxed()
}

pub(crate) fn junk_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        select(edge_numbers()),
        junk_text().prop_map(Value::String),
    ]
    .boxed()
}

pub(crate) fn junk_key() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(KNOWN_KEYS).prop_map(str::to_owned),
        1 => "\\PC{0,10}",
    ]
    .boxed()
}

/// Any JSON value: scalars of every type and edge, arrays and objects nested a few levels.
pub(crate) fn junk() -> BoxedStrategy<Value> {
    junk_leaf()
        .prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                vec(inner.clone(), 0..6).prop_map(Value::Array),
                vec((junk_key(), inner), 0..6)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
        .boxed()
}

/// The field's valid value, or junk.
pub(crate) fn valid_or_junk(valid: BoxedStrategy<Given>) -> BoxedStrategy<Value> {
    prop_oneof![
        3 => valid.prop_map(|given| given.send),
        1 => junk(),
    ]
    .boxed()
}

/// A list of `item`s, or junk.
pub(crate) fn list_or_junk(item: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    prop_oneof![
        3 => vec(item, 0..4).prop_map(Value::Array),
        1 => junk(),
    ]
    .boxed()
}

/// An object with each of `fields` more often than not, plus a few junk keys.
pub(crate) fn hostile_object(
    fields: Vec<(&'static str, BoxedStrategy<Value>)>,
) -> BoxedStrategy<Value> {
    let present: Vec<BoxedStrategy<Option<(&'static str, Value)>>> = fields
        .into_iter()
        .map(|(key, value)| weighted(0.7, value.prop_map(move |v| (key, v))).boxed())
        .collect();
    (present, vec((junk_key(), junk()), 0..3))
        .prop_map(|(present, extra)| {
            let mut object: Map<String, Value> = extra.into_iter().collect();
            for (key, value) in present.into_iter().flatten() {
                object.insert(key.to_owned(), value);
            }
            Value::Object(object)
        })
        .boxed()
}

/// Base64 fields: real certificates, almost-base64 and junk.
pub(crate) fn base64_junk() -> BoxedStrategy<Value> {
    prop_oneof![
        pem("CERTIFICATE").prop_map(|pem| Value::from(pem.base64)),
        "[A-Za-z0-9+/=\\s_-]{0,24}".prop_map(Value::from),
        junk(),
    ]
    .boxed()
}

pub(crate) fn id_or_junk(placeholder: &'static str) -> BoxedStrategy<Value> {
    prop_oneof![Just(Value::from(placeholder)), junk()].boxed()
}

pub(crate) fn hostile_credential() -> BoxedStrategy<Value> {
    hostile_object(vec![
        ("id", id_or_junk("{crd}")),
        ("username", valid_or_junk(required_text())),
        (
            "password",
            prop_oneof![password_text().prop_map(Value::from), junk()].boxed(),
        ),
        ("hostname", valid_or_junk(optional_text())),
        ("ai_allowed", valid_or_junk(flag())),
        ("timeout", valid_or_junk(timeout())),
        ("reviews_required", valid_or_junk(reviews_required())),
        ("default_credential", valid_or_junk(flag())),
    ])
}

pub(crate) fn hostile_parameter() -> BoxedStrategy<Value> {
    let name = prop_oneof![
        parameter_name().prop_map(Value::from),
        select(&["user", "USER", "database", "Database", " ", ""][..]).prop_map(Value::from),
        junk(),
    ];
    hostile_object(vec![
        ("name", name.boxed()),
        ("value", valid_or_junk(parameter_value())),
    ])
}

pub(crate) fn hostile_database() -> BoxedStrategy<Value> {
    let mut fields: Vec<(&'static str, BoxedStrategy<Value>)> = database_fields()
        .into_iter()
        .filter(|(key, _)| *key != "connection_parameters")
        .map(|(key, valid)| (key, valid_or_junk(valid)))
        .collect();
    fields.extend([
        ("connection_parameters", list_or_junk(hostile_parameter())),
        ("credentials", list_or_junk(hostile_credential())),
        ("ssl_ca_cert", base64_junk()),
        ("ssl_cert", base64_junk()),
        ("ssl_key", base64_junk()),
        ("id", junk()),
        ("api_id", junk()),
    ]);
    hostile_object(fields)
}

pub(crate) fn hostile_setup() -> BoxedStrategy<Value> {
    let ssl = prop_oneof![
        select(&["enabled", "disabled", "", "ENABLED", "true"][..]).prop_map(Value::from),
        junk(),
    ];
    hostile_object(vec![
        (
            "id",
            prop_oneof![
                Just(Value::from("{api}")),
                text().prop_map(Value::from),
                junk()
            ]
            .boxed(),
        ),
        ("adapter", valid_or_junk(adapter())),
        ("hostname", valid_or_junk(hostname())),
        ("database", valid_or_junk(required_text())),
        ("username", valid_or_junk(required_text())),
        (
            "password",
            prop_oneof![password_text().prop_map(Value::from), junk()].boxed(),
        ),
        ("name", valid_or_junk(optional_text())),
        ("port", valid_or_junk(port())),
        ("group", valid_or_junk(optional_text())),
        ("tunnel_id", valid_or_junk(optional_text())),
        ("ssl", ssl.boxed()),
        ("ssl_ca_cert", base64_junk()),
        ("ssl_cert", base64_junk()),
        ("ssl_key", base64_junk()),
        ("reviews_required", valid_or_junk(reviews_required())),
        ("review_bypass_allowed", valid_or_junk(flag())),
    ])
}

pub(crate) fn hostile_mapping() -> BoxedStrategy<Value> {
    hostile_object(vec![
        ("workflow_input_key", valid_or_junk(required_text())),
        ("column", valid_or_junk(optional_text())),
        ("prompt_user", valid_or_junk(flag())),
        ("prompt", valid_or_junk(optional_text())),
    ])
}

pub(crate) fn hostile_action() -> BoxedStrategy<Value> {
    hostile_object(vec![
        ("id", id_or_junk("{act}")),
        ("label", valid_or_junk(optional_text())),
        ("workflow_id", valid_or_junk(optional_text())),
        ("input_mappings", list_or_junk(hostile_mapping())),
    ])
}

pub(crate) fn hostile_panel() -> BoxedStrategy<Value> {
    let details = hostile_object(vec![
        (
            "__type__",
            prop_oneof![
                select(&["query", "chart", "", "Query"][..]).prop_map(Value::from),
                junk()
            ]
            .boxed(),
        ),
        ("query", valid_or_junk(required_text())),
        (
            "credential_id",
            prop_oneof![Just(Value::from("{crd}")), junk()].boxed(),
        ),
    ]);
    let input = hostile_object(vec![
        ("key", valid_or_junk(required_text())),
        ("description", valid_or_junk(optional_text())),
    ]);
    hostile_object(vec![
        ("id", id_or_junk("{pl}")),
        ("title", valid_or_junk(required_text())),
        ("inputs", list_or_junk(input)),
        ("actions", list_or_junk(hostile_action())),
        ("details", prop_oneof![3 => details, 1 => junk()].boxed()),
    ])
}

pub(crate) fn hostile_dashboard() -> BoxedStrategy<Value> {
    hostile_object(vec![
        ("name", valid_or_junk(required_text())),
        ("restricted_access", valid_or_junk(flag())),
        ("panels", list_or_junk(hostile_panel())),
    ])
}

#[rustfmt::skip]
pub(crate) const MALFORMED_JSON: &[&str] = &[
    "", " ", "null", "[]", "\"text\"", "42", "{", "}", "{\"name\":}", "{\"port\": 1e999}",
    "{\"port\": 123456789012345678901234567890}", "{\"port\": -0}", "{\"port\": 1.5e3}",
    "{\"name\": \"\\ud800\"}", "{\"a\":1,\"a\":2}", "{\"name\": \"x\"} trailing", "\u{feff}{}",
    "{\"name\": \"x\",}", "{'name': 'x'}", "{\"name\": NaN}", "{\"name\": Infinity}",
    "{\"credentials\": [{\"username\": \"u\"},]}",
];

/// Text that is not a JSON object, or not JSON at all: fixed cases, nesting far deeper than
/// any parser allows, and any JSON value cut short.
pub(crate) fn malformed_json() -> BoxedStrategy<String> {
    prop_oneof![
        2 => select(MALFORMED_JSON).prop_map(str::to_owned),
        1 => (1usize..3000).prop_map(|n| format!("{}{}", "[".repeat(n), "]".repeat(n))),
        1 => (1usize..3000).prop_map(|n| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n))),
        1 => (1usize..3000).prop_map(|n| format!("{{\"credentials\":{}", "[".repeat(n))),
        2 => (junk(), any::<Index>()).prop_map(|(value, cut)| {
            let text = value.to_string();
            let mut end = cut.index(text.len() + 1);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text[..end].to_owned()
        }),
    ]
    .boxed()
}

/// A request body: a structured one for the endpoint, any JSON, bytes, or broken JSON.
#[derive(Clone, Debug)]
pub(crate) enum Payload {
    Json(Value),
    Bytes(Vec<u8>),
}

pub(crate) fn payload(structured: BoxedStrategy<Value>) -> BoxedStrategy<Payload> {
    prop_oneof![
        6 => structured.prop_map(Payload::Json),
        2 => junk().prop_map(Payload::Json),
        1 => vec(any::<u8>(), 0..64).prop_map(Payload::Bytes),
        2 => malformed_json().prop_map(|text| Payload::Bytes(text.into_bytes())),
    ]
    .boxed()
}

pub(crate) fn content_type() -> BoxedStrategy<Option<&'static str>> {
    let others = [
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "application/merge-patch+json",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "",
        ";",
        "application/",
        "json",
        "application/json; charset=latin1",
    ];
    prop_oneof![
        6 => Just(Some("application/json")),
        1 => Just(None),
        2 => select(others.to_vec()).prop_map(Some),
    ]
    .boxed()
}

/// The endpoints that take a body.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Endpoint {
    CreateDatabase,
    UpdateDatabase,
    UpdateDatabaseCompat,
    Setup,
    CreateDashboard,
    UpdateDashboard,
    UpdateDashboardCompat,
}

impl Endpoint {
    pub(crate) fn method_and_path(self) -> (Method, &'static str) {
        match self {
            Endpoint::CreateDatabase => (Method::POST, "/api/v1/console/databases"),
            Endpoint::UpdateDatabase => (Method::PATCH, "/api/v1/console/databases/{db}"),
            Endpoint::UpdateDatabaseCompat => (Method::PATCH, "/api/v1/querydesk/databases/{db}"),
            Endpoint::Setup => (Method::PUT, "/api/v1/console/databases/setup"),
            Endpoint::CreateDashboard => (Method::POST, "/v1/dashboards"),
            Endpoint::UpdateDashboard => (Method::PUT, "/v1/dashboards/{dash}"),
            Endpoint::UpdateDashboardCompat => (Method::PATCH, "/api/v1/dashboards/{dash}"),
        }
    }
}

/// A request with a generated body to one endpoint.
#[derive(Clone, Debug)]
pub(crate) struct HostileBody {
    pub(crate) endpoint: Endpoint,
    pub(crate) payload: Payload,
    pub(crate) content_type: Option<&'static str>,
}

pub(crate) fn hostile_body() -> BoxedStrategy<HostileBody> {
    let database = hostile_database();
    let dashboard = hostile_dashboard();
    let aimed = prop_oneof![
        (Just(Endpoint::CreateDatabase), payload(database.clone())),
        (Just(Endpoint::UpdateDatabase), payload(database.clone())),
        (Just(Endpoint::UpdateDatabaseCompat), payload(database)),
        (Just(Endpoint::Setup), payload(hostile_setup())),
        (Just(Endpoint::CreateDashboard), payload(dashboard.clone())),
        (Just(Endpoint::UpdateDashboard), payload(dashboard.clone())),
        (Just(Endpoint::UpdateDashboardCompat), payload(dashboard)),
    ];
    (aimed, content_type())
        .prop_map(|((endpoint, payload), content_type)| HostileBody {
            endpoint,
            payload,
            content_type,
        })
        .boxed()
}

/// The caller credentials a request presents.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Caller {
    Both,
    ApiKey,
    Bearer,
    Nobody,
    WrongKey,
}

/// A request to a generated path and query.
#[derive(Clone, Debug)]
pub(crate) struct HostilePath {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) caller: Caller,
    pub(crate) body: Option<Value>,
}

pub(crate) const PATH_PREFIXES: &[&str] = &[
    "",
    "/api",
    "/api/v1",
    "/api/v1/console/databases",
    "/api/v1/querydesk/databases",
    "/api/v1/console/databases/{db}",
    "/api/v1/console/databases/{db}/check-connection",
    "/api/v1/console/databases/remove",
    "/api/v1/console/databases/remove/{api}",
    "/api/v1/console/databases/{db}/check-connection/{user}",
    "/api/v1/console/databases/{db}/permissions",
    "/api/v1/console/databases/{db}/data-protection",
    "/v1/dashboards",
    "/api/v1/dashboards",
    "/v1/dashboards/{dash}",
    "/healthz",
];

/// Path segments that mean something to the router, or break percent-decoding.
#[rustfmt::skip]
pub(crate) const PATH_WORDS: &[&str] = &[
    "setup", "remove", "check-connection", "permissions", "data-protection", "healthz", "..",
    ".", "", "%2F", "%00", "%FF", "%E2%82", "%C0%AF", "%F0%9F%98%80", "%zz", "%", "%%", "%2",
    "db_", "dash_", "crd_", "{db}", "{crd}", "{dash}", "{pl}", "{act}", "{api}", "{user}",
];

pub(crate) fn path_segment() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(PATH_WORDS).prop_map(str::to_owned),
        2 => "[A-Za-z0-9._~!$&'()*+,;=:@-]{1,12}",
        2 => "\\PC{1,8}".prop_map(|s| percent_encode(&s)),
    ]
    .boxed()
}

/// `limit` and `after` values: in and out of range, not numbers, overflowing, badly encoded.
#[rustfmt::skip]
pub(crate) const QUERY_WORDS: &[&str] = &[
    "", "0", "1", "-1", "50", "500", "501", "abc", "1e3", "%205", "+1", "5.0", "0x10",
    "99999999999999999999999", "-99999999999999999999", "%FF", "%", "{db}", "{dash}", "db_",
    "dash_zzzz",
];

pub(crate) fn query_value() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(QUERY_WORDS).prop_map(str::to_owned),
        1 => "[0-9]{1,25}",
        1 => "\\PC{1,8}".prop_map(|s| percent_encode(&s)),
    ]
    .boxed()
}

pub(crate) fn query() -> BoxedStrategy<String> {
    let keys = ["limit", "after", "limit", "x", "", "LIMIT", "limit%00"];
    vec((select(keys.to_vec()), query_value()), 0..4)
        .prop_map(|pairs| {
            pairs
                .iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect::<Vec<_>>()
                .join("&")
        })
        .boxed()
}

pub(crate) fn hostile_path() -> BoxedStrategy<HostilePath> {
    let methods = [
        Method::GET,
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::HEAD,
        Method::OPTIONS,
    ];
    let callers = [
        Caller::Both,
        Caller::Both,
        Caller::ApiKey,
        Caller::Bearer,
        Caller::Nobody,
        Caller::WrongKey,
    ];
    (
        select(methods.to_vec()),
        select(PATH_PREFIXES),
        prop_oneof![Just(Vec::new()), vec(path_segment(), 1..4)],
        weighted(0.6, query()),
        select(callers.to_vec()),
        weighted(0.3, junk()),
    )
        .prop_map(|(method, prefix, segments, query, caller, body)| {
            let mut path = prefix.to_owned();
            for segment in segments {
                path.push('/');
                path.push_str(&segment);
            }
            if path.is_empty() {
                path.push('/');
            }
            if let Some(query) = query {
                path.push('?');
                path.push_str(&query);
            }
            HostilePath {
                method,
                path,
                caller,
                body,
            }
        })
        .boxed()
}
