//! Cases of the HTTP suite: dashboards (README, *Endpoints*, and the dashboard rules of *Decisions where the spec is silent*).
//!
//! Every case drives the service over HTTP with the access token (`Api::dash`), except the
//! compatibility-route cases, which also use the API key.

use std::sync::Arc;

use dbconsole_core::Storage;
use http::{Method, header};
use serde_json::{Value, json};

use crate::{ACCESS_TOKEN, API_KEY, Api, DASHBOARDS, TestResponse, minimal_dashboard};

/// Path prefix of the compatibility dashboard routes.
const COMPAT: &str = "/api/v1/dashboards";

/// A query panel with this title and query, no inputs and no actions.
fn panel(title: &str, query: &str) -> Value {
    json!({
        "title": title,
        "details": {"__type__": "query", "query": query, "credential_id": "crd_reader"}
    })
}

/// A dashboard body with one panel that uses every field.
fn full_dashboard() -> Value {
    json!({
        "name": "Support",
        "restricted_access": true,
        "panels": [{
            "title": "Recent orders",
            "inputs": [{"key": "customer", "description": "Customer id"}],
            "actions": [{
                "label": "Refund",
                "workflow_id": "wf_refund",
                "input_mappings": [
                    {"workflow_input_key": "order_id", "column": "id"},
                    {"workflow_input_key": "reason", "prompt_user": true, "prompt": "Why?"},
                    {"workflow_input_key": "note", "prompt_user": true}
                ]
            }],
            "details": {
                "__type__": "query",
                "query": "select * from orders",
                "credential_id": "crd_reader"
            }
        }]
    })
}

/// The minimal dashboard with these panels.
fn with_panels(panels: Value) -> Value {
    let mut body = minimal_dashboard();
    body["panels"] = panels;
    body
}

/// The keys of a JSON object, sorted.
fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap_or_else(|| panic!("not an object: {value}"))
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

/// Asserts `<prefix>_<26 lowercase base32 characters>`.
#[track_caller]
fn assert_id(id: &Value, prefix: &str) {
    let id = id
        .as_str()
        .unwrap_or_else(|| panic!("id is not a string: {id}"));
    let rest = id
        .strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .unwrap_or_else(|| panic!("{id} does not start with {prefix}_"));
    assert_eq!(rest.len(), 26, "{id}");
    assert!(
        rest.bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()),
        "{id}"
    );
}

fn path(id: &Value) -> String {
    format!("{DASHBOARDS}/{}", id.as_str().expect("id is a string"))
}

/// Creates with `body`, expecting 422; returns the answer.
async fn create_invalid(api: &Api, body: &Value) -> TestResponse {
    api.dash(Method::POST, DASHBOARDS, Some(body))
        .await
        .expect(422)
}

/// Creates a dashboard whose only panel is `panel`, expecting 422 with exactly
/// `{"errors":{"panels":[<errors>]}}`.
async fn assert_panel_errors(api: &Api, panel: Value, errors: Value) {
    let response = create_invalid(api, &with_panels(json!([panel]))).await;
    assert_eq!(
        response.json(),
        json!({"errors": {"panels": [errors]}}),
        "panel: {panel}"
    );
}

/// A panel with one action that has these input mappings.
fn panel_with_mappings(mappings: Value) -> Value {
    let mut body = panel("P", "select 1");
    body["actions"] = json!([{"label": "Go", "workflow_id": "wf", "input_mappings": mappings}]);
    body
}

/// The ids of the panels of a dashboard, in order.
fn panel_ids(dashboard: &Value) -> Vec<String> {
    dashboard["panels"]
        .as_array()
        .expect("panels is a list")
        .iter()
        .map(|p| p["id"].as_str().expect("panel id").to_owned())
        .collect()
}

/// A create answers 200 with exactly `id, name, restricted_access, panels`; panels absent is
/// `[]`; the id is `dash_` and 26 lowercase characters.
pub async fn dashboard_create_minimal_shape(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_dashboard(&minimal_dashboard()).await;
    assert_eq!(
        keys(&created),
        ["id", "name", "panels", "restricted_access"]
    );
    assert_id(&created["id"], "dash");
    assert_eq!(created["name"], "Ops");
    assert_eq!(created["restricted_access"], false);
    assert_eq!(created["panels"], json!([]));
}

/// Panel, action, mapping and details carry exactly their documented keys; ids are `pl_` and
/// `act_`; omitted mapping fields come back null (prompt_user false).
pub async fn dashboard_create_full_shape(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_dashboard(&full_dashboard()).await;
    assert_eq!(created["restricted_access"], true);
    let panel = &created["panels"][0];
    assert_eq!(keys(panel), ["actions", "details", "id", "inputs", "title"]);
    assert_id(&panel["id"], "pl");
    assert_eq!(panel["title"], "Recent orders");
    assert_eq!(
        panel["inputs"],
        json!([{"key": "customer", "description": "Customer id"}])
    );
    assert_eq!(
        panel["details"],
        json!({"__type__": "query", "query": "select * from orders", "credential_id": "crd_reader"})
    );
    let action = &panel["actions"][0];
    assert_eq!(
        keys(action),
        ["id", "input_mappings", "label", "workflow_id"]
    );
    assert_id(&action["id"], "act");
    assert_eq!(action["label"], "Refund");
    assert_eq!(action["workflow_id"], "wf_refund");
    assert_eq!(
        action["input_mappings"],
        json!([
            {"workflow_input_key": "order_id", "column": "id", "prompt_user": false, "prompt": null},
            {"workflow_input_key": "reason", "column": null, "prompt_user": true, "prompt": "Why?"},
            {"workflow_input_key": "note", "column": null, "prompt_user": true, "prompt": null}
        ])
    );
}

/// Retrieve answers 200 with the same object create answered.
pub async fn dashboard_retrieve_equals_create(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_dashboard(&full_dashboard()).await;
    let fetched = api
        .dash(Method::GET, &path(&created["id"]), None)
        .await
        .expect(200);
    assert_eq!(fetched.json(), created);
}

/// A read after each write answers what was written, whichever of the two dashboard paths the
/// read and the write take (the server caches reads: every write must reach them).
pub async fn dashboard_retrieve_after_each_write_answers_the_write(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_dashboard(&full_dashboard()).await;
    let compat = format!("/api{}", path(&created["id"]));
    let read = |path: String| {
        let api = &api;
        async move { api.dash(Method::GET, &path, None).await }
    };
    assert_eq!(read(compat.clone()).await.expect(200).json(), created);
    let renamed = api
        .dash(
            Method::PUT,
            &path(&created["id"]),
            Some(&json!({"name": "Renamed"})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(renamed["name"], "Renamed");
    assert_eq!(read(compat.clone()).await.expect(200).json(), renamed);
    assert_eq!(read(path(&created["id"])).await.expect(200).json(), renamed);
    let patched = api
        .dash(
            Method::PATCH,
            &compat,
            Some(&json!({"restricted_access": true})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(read(path(&created["id"])).await.expect(200).json(), patched);
    api.dash(Method::DELETE, &path(&created["id"]), None)
        .await
        .expect(200);
    read(compat).await.expect(404);
}

/// Dashboard strings are bounded and refuse control characters, a query keeps its line breaks
/// and tabs, and a panel or action `id` that is not a string is "is invalid" (docs/api.md,
/// *Limits*). A refused body changes nothing.
pub async fn dashboard_strings_are_bounded_and_ids_typed(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let long = |n: usize| "x".repeat(n);
    let too_long = |n: usize| json!([format!("should be at most {n} character(s)")]);
    let control = json!(["must not contain control characters"]);
    let response = create_invalid(
        &api,
        &json!({"name": long(256), "restricted_access": false}),
    )
    .await;
    assert_eq!(response.json(), json!({"errors": {"name": too_long(255)}}));
    let response = create_invalid(
        &api,
        &json!({"name": "a\u{1b}b", "restricted_access": false}),
    )
    .await;
    assert_eq!(response.json(), json!({"errors": {"name": control}}));
    assert_panel_errors(
        &api,
        panel(&long(256), "select 1"),
        json!({"title": too_long(255)}),
    )
    .await;
    assert_panel_errors(
        &api,
        panel("P", "select 1\u{0}"),
        json!({"details": {"query": control}}),
    )
    .await;
    assert_panel_errors(
        &api,
        panel("P", &long(100_001)),
        json!({"details": {"query": too_long(100_000)}}),
    )
    .await;
    let mut with_input = panel("P", "select 1");
    with_input["inputs"] = json!([{"key": "k", "description": long(4097)}]);
    assert_panel_errors(
        &api,
        with_input,
        json!({"inputs": [{"description": too_long(4096)}]}),
    )
    .await;
    let mut typed = panel("P", "select 1");
    typed["id"] = json!(7);
    typed["actions"] = json!([{"id": false, "label": "a\nb"}]);
    assert_panel_errors(
        &api,
        typed,
        json!({"id": ["is invalid"], "actions": [{"id": ["is invalid"], "label": control}]}),
    )
    .await;

    let query = "select *\r\n\tfrom orders\n where id = {{id}}";
    let created = api
        .create_dashboard(&with_panels(json!([panel("P", query)])))
        .await;
    assert_eq!(created["panels"][0]["details"]["query"], query);
    let mut typed = created["panels"][0].clone();
    typed["id"] = json!(["pl_x"]);
    let response = api
        .dash(
            Method::PUT,
            &path(&created["id"]),
            Some(&json!({"panels": [typed]})),
        )
        .await
        .expect(422);
    assert_eq!(
        response.json(),
        json!({"errors": {"panels": [{"id": ["is invalid"]}]}})
    );
    let fetched = api
        .dash(Method::GET, &path(&created["id"]), None)
        .await
        .expect(200);
    assert_eq!(fetched.json(), created);
}

/// Ids differ between dashboards, panels and actions, and dashboards made later sort later.
pub async fn dashboard_ids_unique_and_sortable(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let mut body = full_dashboard();
    body["panels"] = json!([body["panels"][0].clone(), body["panels"][0].clone()]);
    let first = api.create_dashboard(&body).await;
    let second = api.create_dashboard(&body).await;
    let (a, b) = (
        first["id"].as_str().unwrap(),
        second["id"].as_str().unwrap(),
    );
    assert!(a < b, "{a} should sort before {b}");
    let mut all = Vec::new();
    for dashboard in [&first, &second] {
        for panel in dashboard["panels"].as_array().unwrap() {
            all.push(panel["id"].as_str().unwrap().to_owned());
            all.push(panel["actions"][0]["id"].as_str().unwrap().to_owned());
        }
    }
    let count = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), count, "ids repeat");
}

/// The query text is stored byte for byte: lines, tabs, unicode, leading and trailing spaces.
pub async fn dashboard_query_stored_byte_for_byte(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let queries = [
        "  select *\n  from orders\r\n\twhere name = 'Zoë ✓ 東京'  \n-- done   ",
        "select 1   ",
        "\n\nselect $1::text || '\\n'",
    ];
    for query in queries {
        let created = api
            .create_dashboard(&with_panels(json!([panel("Q", query)])))
            .await;
        assert_eq!(created["panels"][0]["details"]["query"], query);
        let fetched = api
            .dash(Method::GET, &path(&created["id"]), None)
            .await
            .expect(200)
            .json();
        assert_eq!(fetched["panels"][0]["details"]["query"], query);
    }
}

/// `inputs`, `actions`, `input_mappings` and `panels` null mean `[]`, as do absent ones.
pub async fn dashboard_null_lists_mean_empty(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let mut with_nulls = panel("Nulls", "select 1");
    with_nulls["inputs"] = Value::Null;
    with_nulls["actions"] = Value::Null;
    let mut action_nulls = panel("Action nulls", "select 2");
    action_nulls["actions"] = json!([{"label": "Go", "input_mappings": null}]);
    let created = api
        .create_dashboard(&with_panels(json!([
            with_nulls,
            panel("Absent", "select 3"),
            action_nulls
        ])))
        .await;
    let panels = created["panels"].as_array().unwrap();
    for panel in &panels[..2] {
        assert_eq!(panel["inputs"], json!([]), "{panel}");
        assert_eq!(panel["actions"], json!([]), "{panel}");
    }
    assert_eq!(panels[2]["actions"][0]["input_mappings"], json!([]));
    assert_eq!(panels[2]["actions"][0]["workflow_id"], Value::Null);
    let mut null_panels = minimal_dashboard();
    null_panels["panels"] = Value::Null;
    let created = api.create_dashboard(&null_panels).await;
    assert_eq!(created["panels"], json!([]));
}

/// An input description `""` is kept as `""`; null or absent becomes `""`.
pub async fn dashboard_input_description_kept(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let mut body = panel("Inputs", "select 1");
    body["inputs"] = json!([
        {"key": "a", "description": ""},
        {"key": "b", "description": null},
        {"key": "c"},
        {"key": "d", "description": "  padded  "}
    ]);
    let created = api.create_dashboard(&with_panels(json!([body]))).await;
    assert_eq!(
        created["panels"][0]["inputs"],
        json!([
            {"key": "a", "description": ""},
            {"key": "b", "description": ""},
            {"key": "c", "description": ""},
            {"key": "d", "description": "  padded  "}
        ])
    );
}

/// `name` absent, null, empty or blank: 422 `can't be blank`; not a string: `is invalid`.
pub async fn dashboard_name_required(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let blank = json!({"errors": {"name": ["can't be blank"]}});
    for name in [
        None,
        Some(json!(null)),
        Some(json!("")),
        Some(json!(" \t\n ")),
    ] {
        let mut body = json!({"restricted_access": false});
        if let Some(name) = name {
            body["name"] = name;
        }
        assert_eq!(create_invalid(&api, &body).await.json(), blank, "{body}");
    }
    let body = json!({"name": 7, "restricted_access": false});
    assert_eq!(
        create_invalid(&api, &body).await.json(),
        json!({"errors": {"name": ["is invalid"]}})
    );
}

/// `restricted_access` absent or null: 422 `can't be blank`; not a boolean: `is invalid`.
pub async fn dashboard_restricted_access_required(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let blank = json!({"errors": {"restricted_access": ["can't be blank"]}});
    assert_eq!(
        create_invalid(&api, &json!({"name": "Ops"})).await.json(),
        blank
    );
    assert_eq!(
        create_invalid(&api, &json!({"name": "Ops", "restricted_access": null}))
            .await
            .json(),
        blank
    );
    for value in [json!("true"), json!(1), json!([]), json!({})] {
        let body = json!({"name": "Ops", "restricted_access": value});
        assert_eq!(
            create_invalid(&api, &body).await.json(),
            json!({"errors": {"restricted_access": ["is invalid"]}}),
            "{body}"
        );
    }
    let listed = api.dash(Method::GET, DASHBOARDS, None).await.expect(200);
    assert_eq!(listed.json()["data"], json!([]), "a 422 stored nothing");
}

/// Every field error is reported at once, each at its own field.
pub async fn dashboard_errors_reported_together(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let body = json!({"name": "", "panels": [{"title": "", "details": null}]});
    assert_eq!(
        create_invalid(&api, &body).await.json(),
        json!({"errors": {
            "name": ["can't be blank"],
            "restricted_access": ["can't be blank"],
            "panels": [{"title": ["can't be blank"], "details": ["can't be blank"]}]
        }})
    );
}

/// A panel title absent, null or blank is 422 at the panel's position.
pub async fn dashboard_panel_title_required(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for title in [None, Some(json!(null)), Some(json!("")), Some(json!("   "))] {
        let mut second = panel("x", "select 1");
        match title {
            Some(title) => second["title"] = title,
            None => {
                second.as_object_mut().unwrap().remove("title");
            }
        }
        let body = with_panels(json!([panel("ok", "select 1"), second]));
        assert_eq!(
            create_invalid(&api, &body).await.json(),
            json!({"errors": {"panels": [{}, {"title": ["can't be blank"]}]}}),
            "{body}"
        );
    }
}

/// `details` absent or null is 422 `can't be blank`; not an object is `is invalid`.
pub async fn dashboard_panel_details_required(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    assert_panel_errors(
        &api,
        json!({"title": "T"}),
        json!({"details": ["can't be blank"]}),
    )
    .await;
    assert_panel_errors(
        &api,
        json!({"title": "T", "details": null}),
        json!({"details": ["can't be blank"]}),
    )
    .await;
    assert_panel_errors(
        &api,
        json!({"title": "T", "details": "select 1"}),
        json!({"details": ["is invalid"]}),
    )
    .await;
}

/// `__type__` other than `"query"` is 422 (never 500); absent or blank is `can't be blank`.
pub async fn dashboard_panel_type_must_be_query(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let details = |kind: Value| {
        let mut panel = panel("T", "select 1");
        panel["details"]["__type__"] = kind;
        panel
    };
    for kind in ["chart", "QUERY", "query ", "markdown"] {
        assert_panel_errors(
            &api,
            details(json!(kind)),
            json!({"details": {"__type__": ["must be one of: query"]}}),
        )
        .await;
    }
    for kind in [json!(null), json!(""), json!("  ")] {
        assert_panel_errors(
            &api,
            details(kind),
            json!({"details": {"__type__": ["can't be blank"]}}),
        )
        .await;
    }
    let mut absent = panel("T", "select 1");
    absent["details"]
        .as_object_mut()
        .unwrap()
        .remove("__type__");
    assert_panel_errors(
        &api,
        absent,
        json!({"details": {"__type__": ["can't be blank"]}}),
    )
    .await;
    assert_panel_errors(
        &api,
        details(json!(1)),
        json!({"details": {"__type__": ["is invalid"]}}),
    )
    .await;
}

/// A blank or absent query is 422 `can't be blank` inside `details`.
pub async fn dashboard_query_required(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for query in [json!(""), json!(" \n\t "), json!(null)] {
        assert_panel_errors(
            &api,
            panel("T", "x").tap(|p| p["details"]["query"] = query.clone()),
            json!({"details": {"query": ["can't be blank"]}}),
        )
        .await;
    }
    let mut absent = panel("T", "x");
    absent["details"].as_object_mut().unwrap().remove("query");
    assert_panel_errors(
        &api,
        absent,
        json!({"details": {"query": ["can't be blank"]}}),
    )
    .await;
}

/// A blank credential_id is 422; any non-blank string is accepted as it is.
pub async fn dashboard_credential_id_any_nonblank(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for credential_id in [json!(""), json!("  "), json!(null)] {
        assert_panel_errors(
            &api,
            panel("T", "select 1").tap(|p| p["details"]["credential_id"] = credential_id.clone()),
            json!({"details": {"credential_id": ["can't be blank"]}}),
        )
        .await;
    }
    for credential_id in [
        "not-a-real-credential",
        "crd_doesnotexist",
        "42",
        "ünï côdé",
    ] {
        let body =
            with_panels(json!([panel("T", "select 1")
                .tap(|p| p["details"]["credential_id"] = json!(credential_id))]));
        let created = api.create_dashboard(&body).await;
        assert_eq!(
            created["panels"][0]["details"]["credential_id"],
            credential_id
        );
    }
}

/// Input keys must be non-blank and unique within the panel; the repeat is the later item.
pub async fn dashboard_input_keys_unique(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let inputs = |items: Value| panel("T", "select 1").tap(|p| p["inputs"] = items.clone());
    assert_panel_errors(
        &api,
        inputs(json!([{"key": "a"}, {"key": "b"}, {"key": "a", "description": "again"}])),
        json!({"inputs": [{}, {}, {"key": ["has already been taken"]}]}),
    )
    .await;
    assert_panel_errors(
        &api,
        inputs(json!([{"key": "a"}, {"key": ""}, {"description": "no key"}])),
        json!({"inputs": [{}, {"key": ["can't be blank"]}, {"key": ["can't be blank"]}]}),
    )
    .await;
}

/// With prompt_user false (or omitted) a mapping needs a column.
pub async fn dashboard_mapping_needs_column(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for mapping in [
        json!({"workflow_input_key": "k"}),
        json!({"workflow_input_key": "k", "prompt_user": false}),
        json!({"workflow_input_key": "k", "column": null}),
        json!({"workflow_input_key": "k", "column": "", "prompt": "Ask?"}),
    ] {
        assert_panel_errors(
            &api,
            panel_with_mappings(json!([mapping])),
            json!({"actions": [{"input_mappings": [{"column": ["can't be blank"]}]}]}),
        )
        .await;
    }
}

/// With prompt_user true a column must be absent or null; the prompt is optional.
pub async fn dashboard_mapping_prompting_takes_no_column(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    assert_panel_errors(
        &api,
        panel_with_mappings(json!([
            {"workflow_input_key": "k", "prompt_user": true, "column": "id"}
        ])),
        json!({"actions": [{"input_mappings": [
            {"column": ["must be empty when prompt_user is true"]}
        ]}]}),
    )
    .await;
    let created = api
        .create_dashboard(&with_panels(json!([panel_with_mappings(json!([
            {"workflow_input_key": "a", "prompt_user": true, "column": null},
            {"workflow_input_key": "b", "prompt_user": true, "prompt": "B?"},
            {"workflow_input_key": "c", "prompt_user": false, "column": "c", "prompt": "unused"}
        ]))])))
        .await;
    assert_eq!(
        created["panels"][0]["actions"][0]["input_mappings"],
        json!([
            {"workflow_input_key": "a", "column": null, "prompt_user": true, "prompt": null},
            {"workflow_input_key": "b", "column": null, "prompt_user": true, "prompt": "B?"},
            {"workflow_input_key": "c", "column": "c", "prompt_user": false, "prompt": "unused"}
        ])
    );
}

/// workflow_input_key is required and unique within an action (the later item errs); the same
/// key in two actions is fine.
pub async fn dashboard_mapping_keys_unique(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    assert_panel_errors(
        &api,
        panel_with_mappings(json!([
            {"workflow_input_key": "id", "column": "a"},
            {"workflow_input_key": "id", "column": "b"},
            {"column": "c"}
        ])),
        json!({"actions": [{"input_mappings": [
            {},
            {"workflow_input_key": ["has already been taken"]},
            {"workflow_input_key": ["can't be blank"]}
        ]}]}),
    )
    .await;
    let mut twice = panel("T", "select 1");
    twice["actions"] = json!([
        {"label": "A", "input_mappings": [{"workflow_input_key": "id", "column": "a"}]},
        {"label": "B", "input_mappings": [{"workflow_input_key": "id", "column": "a"}]}
    ]);
    api.create_dashboard(&with_panels(json!([twice]))).await;
}

/// Errors deep in a list sit at their exact position, `{}` for every valid item before them.
pub async fn dashboard_nested_error_positions(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let body = with_panels(json!([
        panel("first", "select 1"),
        panel_with_mappings(json!([
            {"workflow_input_key": "a", "column": "a"},
            {"workflow_input_key": "b"}
        ]))
    ]));
    assert_eq!(
        create_invalid(&api, &body).await.json(),
        json!({"errors": {"panels": [{}, {"actions": [{"input_mappings": [
            {},
            {"column": ["can't be blank"]}
        ]}]}]}})
    );
    let mut second_action = panel("p", "select 1");
    second_action["actions"] = json!([
        {"label": "ok"},
        {"label": "bad", "input_mappings": [{"workflow_input_key": "k"}]}
    ]);
    assert_eq!(
        create_invalid(&api, &with_panels(json!([second_action])))
            .await
            .json(),
        json!({"errors": {"panels": [{"actions": [
            {},
            {"input_mappings": [{"column": ["can't be blank"]}]}
        ]}]}})
    );
}

/// List fields of the wrong JSON type are `is invalid`.
pub async fn dashboard_wrong_list_types_invalid(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for panels in [json!("panels"), json!({}), json!([1])] {
        assert_eq!(
            create_invalid(&api, &with_panels(panels.clone()))
                .await
                .json(),
            json!({"errors": {"panels": ["is invalid"]}}),
            "{panels}"
        );
    }
    assert_panel_errors(
        &api,
        panel("T", "select 1").tap(|p| p["inputs"] = json!("a")),
        json!({"inputs": ["is invalid"]}),
    )
    .await;
    assert_panel_errors(
        &api,
        panel("T", "select 1").tap(|p| p["actions"] = json!([null])),
        json!({"actions": ["is invalid"]}),
    )
    .await;
}

/// An action with neither label nor workflow_id is stored and returned as it is.
pub async fn dashboard_hidden_action_stored(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let mut body = panel("T", "select 1");
    body["actions"] = json!([
        {},
        {"label": "", "workflow_id": null, "input_mappings": []},
        {"label": "Shown"}
    ]);
    let created = api.create_dashboard(&with_panels(json!([body]))).await;
    let actions = created["panels"][0]["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 3);
    for action in &actions[..2] {
        assert_id(&action["id"], "act");
        assert_eq!(action["label"], Value::Null);
        assert_eq!(action["workflow_id"], Value::Null);
        assert_eq!(action["input_mappings"], json!([]));
    }
    let fetched = api
        .dash(Method::GET, &path(&created["id"]), None)
        .await
        .expect(200);
    assert_eq!(fetched.json(), created);
}

/// Unknown fields are ignored, as are panel and action ids sent on create (the provider sends
/// `"id": ""`).
pub async fn dashboard_create_ignores_unknown_fields_and_ids(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let mut body = full_dashboard();
    body["id"] = json!("");
    body["agent_id"] = json!("agent");
    body["archived_at"] = json!("2020-01-01T00:00:00Z");
    body["panels"][0]["id"] = json!("pl_01aaaaaaaaaaaaaaaaaaaaaaaa");
    body["panels"][0]["extra"] = json!(true);
    body["panels"][0]["actions"][0]["id"] = json!("");
    let created = api.create_dashboard(&body).await;
    assert_eq!(
        keys(&created),
        ["id", "name", "panels", "restricted_access"]
    );
    assert_id(&created["id"], "dash");
    let panel = &created["panels"][0];
    assert_id(&panel["id"], "pl");
    assert_ne!(panel["id"], "pl_01aaaaaaaaaaaaaaaaaaaaaaaa");
    assert_eq!(keys(panel), ["actions", "details", "id", "inputs", "title"]);
    assert_id(&panel["actions"][0]["id"], "act");
}

/// Fields left out of an update stay unchanged; omitting panels returns the stored panels.
pub async fn dashboard_update_keeps_left_out_fields(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_dashboard(&full_dashboard()).await;
    let updated = api
        .dash(
            Method::PUT,
            &path(&created["id"]),
            Some(&json!({"name": "Renamed"})),
        )
        .await
        .expect(200)
        .json();
    let mut expected = created.clone();
    expected["name"] = json!("Renamed");
    assert_eq!(updated, expected);
    let updated = api
        .dash(
            Method::PUT,
            &path(&created["id"]),
            Some(&json!({"restricted_access": false})),
        )
        .await
        .expect(200)
        .json();
    expected["restricted_access"] = json!(false);
    assert_eq!(updated, expected);
    let unchanged = api
        .dash(Method::PUT, &path(&created["id"]), Some(&json!({})))
        .await
        .expect(200)
        .json();
    assert_eq!(unchanged, expected);
    let fetched = api.dash(Method::GET, &path(&created["id"]), None).await;
    assert_eq!(fetched.expect(200).json(), expected);
}

/// Given panels replace the list in order; a stored panel id is kept, a new panel gets a new
/// id, left-out panels are gone.
pub async fn dashboard_update_replaces_panels_in_order(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api
        .create_dashboard(&with_panels(json!([
            panel("one", "select 1"),
            panel("two", "select 2"),
            panel("three", "select 3")
        ])))
        .await;
    let ids = panel_ids(&created);
    let mut third = panel("three, renamed", "select 33");
    third["id"] = json!(ids[2]);
    let mut first = panel("one", "select 1");
    first["id"] = json!(ids[0]);
    let body = json!({"panels": [third, panel("new", "select 4"), first]});
    let updated = api
        .dash(Method::PUT, &path(&created["id"]), Some(&body))
        .await
        .expect(200)
        .json();
    let new_ids = panel_ids(&updated);
    assert_eq!(new_ids.len(), 3);
    assert_eq!(new_ids[0], ids[2]);
    assert_eq!(new_ids[2], ids[0]);
    assert_id(&json!(new_ids[1]), "pl");
    assert!(!ids.contains(&new_ids[1]), "a new panel got an old id");
    let titles: Vec<&Value> = updated["panels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["title"])
        .collect();
    assert_eq!(
        titles,
        [&json!("three, renamed"), &json!("new"), &json!("one")]
    );
    assert_eq!(updated["panels"][0]["details"]["query"], "select 33");
    assert_eq!(updated["name"], created["name"]);
    let fetched = api.dash(Method::GET, &path(&created["id"]), None).await;
    assert_eq!(fetched.expect(200).json(), updated);
}

/// A panel given whole replaces the stored one: its inputs are those sent; a stored panel whose
/// body leaves `actions` out keeps its actions (see `dashboard_terraform_update_keeps_actions`).
pub async fn dashboard_update_panel_is_given_whole(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_dashboard(&full_dashboard()).await;
    let id = created["panels"][0]["id"].clone();
    let body = json!({"panels": [{"id": id, "title": "Bare", "details": {
        "__type__": "query", "query": "select 2", "credential_id": "crd_other"
    }}]});
    let updated = api
        .dash(Method::PUT, &path(&created["id"]), Some(&body))
        .await
        .expect(200)
        .json();
    assert_eq!(
        updated["panels"],
        json!([{"id": id, "title": "Bare", "inputs": [], "actions": created["panels"][0]["actions"], "details": {
            "__type__": "query", "query": "select 2", "credential_id": "crd_other"
        }}])
    );
}

/// Actions keep stored ids (also when moved to another panel of the same dashboard); new ones
/// get new ids; left-out ones are deleted.
pub async fn dashboard_update_action_ids(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let mut p1 = panel("p1", "select 1");
    p1["actions"] = json!([{"label": "a"}, {"label": "b"}]);
    let mut p2 = panel("p2", "select 2");
    p2["actions"] = json!([{"label": "c"}]);
    let created = api.create_dashboard(&with_panels(json!([p1, p2]))).await;
    let action =
        |panel: usize, index: usize| created["panels"][panel]["actions"][index]["id"].clone();
    let (a, b, c) = (action(0, 0), action(0, 1), action(1, 0));
    let mut new_p1 = panel("p1", "select 1");
    new_p1["id"] = created["panels"][0]["id"].clone();
    new_p1["actions"] =
        json!([{"id": b, "label": "b2"}, {"label": "fresh"}, {"id": c, "label": "c moved"}]);
    let body = json!({"panels": [new_p1]});
    let updated = api
        .dash(Method::PUT, &path(&created["id"]), Some(&body))
        .await
        .expect(200)
        .json();
    let actions = updated["panels"][0]["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 3);
    assert_eq!(actions[0]["id"], b);
    assert_eq!(actions[0]["label"], "b2");
    assert_eq!(actions[2]["id"], c);
    assert_eq!(actions[2]["label"], "c moved");
    assert_id(&actions[1]["id"], "act");
    for old in [&a, &b, &c] {
        assert_ne!(&actions[1]["id"], old);
    }
    assert_eq!(
        updated["panels"].as_array().unwrap().len(),
        1,
        "p2 is deleted"
    );
    let fetched = api.dash(Method::GET, &path(&created["id"]), None).await;
    assert_eq!(fetched.expect(200).json(), updated);
}

/// An unknown id, or a panel or action id of another dashboard, gets a new id; the other
/// dashboard is untouched. The same stored id given twice is kept once.
pub async fn dashboard_update_foreign_ids_get_new_ids(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let other = api.create_dashboard(&full_dashboard()).await;
    let mine = api
        .create_dashboard(&with_panels(json!([panel("mine", "select 1")])))
        .await;
    let mine_panel = mine["panels"][0]["id"].clone();
    let foreign_panel = other["panels"][0]["id"].clone();
    let foreign_action = other["panels"][0]["actions"][0]["id"].clone();
    let mut stolen = panel("stolen", "select 2");
    stolen["id"] = foreign_panel.clone();
    stolen["actions"] =
        json!([{"id": foreign_action, "label": "x"}, {"id": "act_nope", "label": "y"}]);
    let mut unknown = panel("unknown", "select 3");
    unknown["id"] = json!("pl_01hzzzzzzzzzzzzzzzzzzzzzzz");
    let mut kept = panel("kept", "select 1");
    kept["id"] = mine_panel.clone();
    let mut again = panel("again", "select 1");
    again["id"] = mine_panel.clone();
    let body = json!({"panels": [kept, stolen, unknown, again]});
    let updated = api
        .dash(Method::PUT, &path(&mine["id"]), Some(&body))
        .await
        .expect(200)
        .json();
    let ids = panel_ids(&updated);
    assert_eq!(ids[0], mine_panel.as_str().unwrap());
    for id in &ids[1..] {
        assert_id(&json!(id), "pl");
        assert_ne!(id, foreign_panel.as_str().unwrap());
        assert_ne!(id, "pl_01hzzzzzzzzzzzzzzzzzzzzzzz");
        assert_ne!(id, mine_panel.as_str().unwrap());
    }
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 4, "panel ids repeat: {ids:?}");
    for action in updated["panels"][1]["actions"].as_array().unwrap() {
        assert_id(&action["id"], "act");
        assert_ne!(action["id"], foreign_action);
        assert_ne!(action["id"], "act_nope");
    }
    let fetched_other = api.dash(Method::GET, &path(&other["id"]), None).await;
    assert_eq!(fetched_other.expect(200).json(), other);
}

/// An empty panels list, or null, clears the panels.
pub async fn dashboard_update_empty_panels_clear(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for panels in [json!([]), json!(null)] {
        let created = api.create_dashboard(&full_dashboard()).await;
        let body = json!({"panels": panels});
        let updated = api
            .dash(Method::PUT, &path(&created["id"]), Some(&body))
            .await
            .expect(200)
            .json();
        assert_eq!(updated["panels"], json!([]), "{body}");
        assert_eq!(updated["name"], "Support");
        let fetched = api.dash(Method::GET, &path(&created["id"]), None).await;
        assert_eq!(fetched.expect(200).json()["panels"], json!([]));
    }
}

/// A 422 on update answers the errors and changes nothing.
pub async fn dashboard_update_invalid_changes_nothing(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_dashboard(&full_dashboard()).await;
    let cases = [
        (
            json!({"name": "New name", "panels": [{"title": "T", "details": {"__type__": "chart"}}]}),
            json!({"panels": [{"details": {
                "__type__": ["must be one of: query"],
                "query": ["can't be blank"],
                "credential_id": ["can't be blank"]
            }}]}),
        ),
        (json!({"name": ""}), json!({"name": ["can't be blank"]})),
        (json!({"name": null}), json!({"name": ["can't be blank"]})),
        (
            json!({"restricted_access": null, "name": "x"}),
            json!({"restricted_access": ["can't be blank"]}),
        ),
        (
            json!({"restricted_access": "no"}),
            json!({"restricted_access": ["is invalid"]}),
        ),
        (
            json!({"panels": [panel("ok", "select 1"), {"title": "", "details": {"__type__": "query", "query": "q", "credential_id": "c"}}]}),
            json!({"panels": [{}, {"title": ["can't be blank"]}]}),
        ),
    ];
    for (body, errors) in cases {
        let response = api
            .dash(Method::PUT, &path(&created["id"]), Some(&body))
            .await
            .expect(422);
        assert_eq!(response.json(), json!({"errors": errors}), "{body}");
        let fetched = api.dash(Method::GET, &path(&created["id"]), None).await;
        assert_eq!(fetched.expect(200).json(), created, "{body}");
    }
}

/// Retrieve, update and delete of a missing dashboard: 404 `Not Found`.
pub async fn dashboard_missing_is_404(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    api.create_dashboard(&minimal_dashboard()).await;
    let not_found = json!({"errors": {"detail": "Not Found"}});
    for id in ["dash_01aaaaaaaaaaaaaaaaaaaaaaaa", "nope", "db_x"] {
        let path = format!("{DASHBOARDS}/{id}");
        for (method, body) in [
            (Method::GET, None),
            (Method::PUT, Some(json!({"name": "x"}))),
            (Method::DELETE, None),
        ] {
            let response = api.dash(method.clone(), &path, body.as_ref()).await;
            let response = response.expect(404);
            assert_eq!(response.json(), not_found, "{method} {path}");
            assert_eq!(response.header("content-type"), Some("application/json"));
        }
    }
}

/// Delete answers 200 with the deleted dashboard; afterwards it is gone from retrieve, update,
/// delete and the listing; other dashboards stay.
pub async fn dashboard_delete_returns_deleted(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_dashboard(&full_dashboard()).await;
    let other = api.create_dashboard(&minimal_dashboard()).await;
    let deleted = api
        .dash(Method::DELETE, &path(&created["id"]), None)
        .await
        .expect(200);
    assert_eq!(deleted.json(), created);
    api.dash(Method::GET, &path(&created["id"]), None)
        .await
        .expect(404);
    api.dash(
        Method::PUT,
        &path(&created["id"]),
        Some(&json!({"name": "x"})),
    )
    .await
    .expect(404);
    api.dash(Method::DELETE, &path(&created["id"]), None)
        .await
        .expect(404);
    let listed = api.dash(Method::GET, DASHBOARDS, None).await.expect(200);
    assert_eq!(listed.json(), json!({"data": [other], "next": null}));
}

/// Listing pages by `limit` and `after`, ordered by id, with `next` null exactly at the end;
/// items are what retrieve answers.
pub async fn dashboard_list_pages(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let empty = api.dash(Method::GET, DASHBOARDS, None).await.expect(200);
    assert_eq!(empty.json(), json!({"data": [], "next": null}));
    let mut created = Vec::new();
    for name in ["a", "b", "c"] {
        let mut body = full_dashboard();
        body["name"] = json!(name);
        created.push(api.create_dashboard(&body).await);
    }
    let all = api.dash(Method::GET, DASHBOARDS, None).await.expect(200);
    assert_eq!(all.json(), json!({"data": created, "next": null}));
    let first = api
        .dash(Method::GET, &format!("{DASHBOARDS}?limit=2"), None)
        .await
        .expect(200)
        .json();
    assert_eq!(first["data"], json!([created[0], created[1]]));
    assert_eq!(first["next"], created[1]["id"]);
    let next = first["next"].as_str().unwrap();
    let second = api
        .dash(
            Method::GET,
            &format!("{DASHBOARDS}?limit=2&after={next}"),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(second, json!({"data": [created[2]], "next": null}));
    let exact = api
        .dash(Method::GET, &format!("{DASHBOARDS}?limit=3"), None)
        .await
        .expect(200)
        .json();
    assert_eq!(
        exact["next"],
        Value::Null,
        "nothing follows a full last page"
    );
    let one = api
        .dash(
            Method::GET,
            &format!("{DASHBOARDS}?limit=1&after={next}"),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(one, json!({"data": [created[2]], "next": null}));
}

/// `after` is any string: ids sort after or before it.
pub async fn dashboard_list_after_any_string(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_dashboard(&minimal_dashboard()).await;
    for (after, expected) in [
        ("zzz", json!([])),
        ("dash_", json!([created])),
        ("a%20b", json!([created])),
        ("not-an-id", json!([])),
    ] {
        let listed = api
            .dash(Method::GET, &format!("{DASHBOARDS}?after={after}"), None)
            .await
            .expect(200)
            .json();
        assert_eq!(listed, json!({"data": expected, "next": null}), "{after}");
    }
}

/// `limit` outside 1..=500 or not a number: 422 on `limit`.
pub async fn dashboard_list_bad_limit(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    api.create_dashboard(&minimal_dashboard()).await;
    for (limit, message) in [
        ("0", "must be greater than or equal to 1"),
        ("-3", "must be greater than or equal to 1"),
        ("abc", "is invalid"),
        ("1.5", "is invalid"),
        ("", "is invalid"),
    ] {
        let response = api
            .dash(Method::GET, &format!("{DASHBOARDS}?limit={limit}"), None)
            .await
            .expect(422);
        assert_eq!(
            response.json(),
            json!({"errors": {"limit": [message]}}),
            "limit={limit}"
        );
    }
    let response = api
        .dash(Method::GET, &format!("{DASHBOARDS}?limit=501"), None)
        .await
        .expect(422);
    assert_eq!(keys(&response.json()["errors"]), ["limit"]);
    for limit in ["1", "500"] {
        api.dash(Method::GET, &format!("{DASHBOARDS}?limit={limit}"), None)
            .await
            .expect(200);
    }
}

/// The `/api/v1/dashboards` routes take the API key as well as the Bearer token, answer the
/// same objects, and take PATCH as update.
pub async fn dashboard_compat_routes(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api
        .db(Method::POST, COMPAT, Some(&full_dashboard()))
        .await
        .expect(200)
        .json();
    assert_id(&created["id"], "dash");
    let id = created["id"].as_str().unwrap();
    let compat_path = format!("{COMPAT}/{id}");
    let by_key = api.db(Method::GET, &compat_path, None).await;
    assert_eq!(by_key.expect(200).json(), created);
    let by_token = api.dash(Method::GET, &compat_path, None).await.expect(200);
    assert_eq!(by_token.json(), created);
    let v1 = api.dash(Method::GET, &path(&created["id"]), None).await;
    assert_eq!(v1.expect(200).json(), created);

    let patched = api
        .db(
            Method::PATCH,
            &compat_path,
            Some(&json!({"name": "Patched"})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(patched["name"], "Patched");
    assert_eq!(patched["panels"], created["panels"]);
    let put = api
        .dash(
            Method::PUT,
            &compat_path,
            Some(&json!({"restricted_access": false})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(put["name"], "Patched");
    assert_eq!(put["restricted_access"], false);
    let patched_by_token = api
        .dash(Method::PATCH, &compat_path, Some(&json!({"name": "Again"})))
        .await
        .expect(200)
        .json();
    assert_eq!(patched_by_token["name"], "Again");

    let listed = api.db(Method::GET, COMPAT, None).await.expect(200);
    assert_eq!(listed.json()["data"][0]["id"], created["id"]);
    let invalid = api
        .db(Method::PATCH, &compat_path, Some(&json!({"name": " "})))
        .await
        .expect(422);
    assert_eq!(
        invalid.json(),
        json!({"errors": {"name": ["can't be blank"]}})
    );
    let deleted = api.db(Method::DELETE, &compat_path, None).await;
    assert_eq!(deleted.expect(200).json()["name"], "Again");
    api.db(Method::GET, &compat_path, None).await.expect(404);
}

/// The DevHub Terraform provider's update (PATCH on the compatibility path with the API key,
/// its Go model marshalled: every panel with its `id`, `title`, `inputs` and `details`, never an
/// `actions` key) keeps the row actions of the panels it names by id, so an apply doesn't erase
/// those made in the console; a new panel starts with none, and `null` or `[]` still empty them.
pub async fn dashboard_terraform_update_keeps_actions(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api
        .db(Method::POST, COMPAT, Some(&full_dashboard()))
        .await
        .expect(200)
        .json();
    let id = created["id"].as_str().unwrap();
    let stored = &created["panels"][0];
    let compat_path = format!("{COMPAT}/{id}");
    let provider_panel = |panel_id: &Value, title: &str| {
        json!({
            "id": panel_id,
            "title": title,
            "inputs": [{"key": "customer", "description": "Customer id"}],
            "details": {"__type__": "query", "query": "select * from orders where customer = ${customer}", "credential_id": "crd_reader"},
        })
    };
    let applied = api
        .db(
            Method::PATCH,
            &compat_path,
            Some(&json!({
                "id": id,
                "name": "Support",
                "restricted_access": true,
                "panels": [provider_panel(&stored["id"], "Recent orders, by customer"), provider_panel(&json!(""), "New")],
            })),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(applied["panels"][0]["id"], stored["id"]);
    assert_eq!(applied["panels"][0]["title"], "Recent orders, by customer");
    assert_eq!(
        applied["panels"][0]["actions"], stored["actions"],
        "the stored actions, ids and all"
    );
    assert_eq!(applied["panels"][1]["actions"], json!([]));
    let read = api.db(Method::GET, &compat_path, None).await.expect(200);
    assert_eq!(read.json(), applied);
    for empty in [json!(null), json!([])] {
        let mut panel = provider_panel(&stored["id"], "Recent orders");
        panel["actions"] = empty.clone();
        let emptied = api
            .db(
                Method::PATCH,
                &compat_path,
                Some(&json!({"panels": [panel]})),
            )
            .await
            .expect(200)
            .json();
        assert_eq!(emptied["panels"][0]["actions"], json!([]), "{empty}");
    }
}

/// On `/v1/dashboards/{id}` PATCH is 405 (allow: GET, PUT, DELETE) and changes nothing.
pub async fn dashboard_patch_on_v1_is_405(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_dashboard(&full_dashboard()).await;
    let response = api
        .dash(
            Method::PATCH,
            &path(&created["id"]),
            Some(&json!({"name": "Patched"})),
        )
        .await
        .expect(405);
    let allow = response.header("allow").expect("allow header").to_owned();
    let mut methods: Vec<&str> = allow.split(',').map(str::trim).collect();
    methods.sort_unstable();
    assert_eq!(methods, ["DELETE", "GET", "PUT"]);
    let fetched = api.dash(Method::GET, &path(&created["id"]), None).await;
    assert_eq!(fetched.expect(200).json(), created);
}

/// The compat routes refuse a wrong API key and a wrong token alike, with `www-authenticate`.
pub async fn dashboard_compat_routes_reject_wrong_credentials(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    let created = api.create_dashboard(&minimal_dashboard()).await;
    let compat_path = format!("{COMPAT}/{}", created["id"].as_str().unwrap());
    let attempts = [
        ("x-api-key", "wrong".to_owned()),
        ("x-api-key", ACCESS_TOKEN.to_owned()),
        (header::AUTHORIZATION.as_str(), "Bearer wrong".to_owned()),
        (header::AUTHORIZATION.as_str(), format!("Bearer {API_KEY}x")),
    ];
    for (name, value) in attempts {
        let request = Api::request(Method::GET, &compat_path, None)
            .header(name, value.as_str())
            .body(http_body_util::Full::default())
            .expect("valid request");
        let response = api.send(request).await.expect(401);
        crate::assert_unauthorized_body(&response);
        assert_eq!(response.header("www-authenticate"), Some("Bearer"));
    }
}

/// Small extension so a body can be tweaked inline.
trait Tap: Sized {
    fn tap(self, f: impl FnOnce(&mut Self)) -> Self;
}

impl Tap for Value {
    fn tap(mut self, f: impl FnOnce(&mut Self)) -> Self {
        f(&mut self);
        self
    }
}

/// Every case of this module, as tests over the store `$storage` makes.
#[macro_export]
macro_rules! dashboard_tests {
    ($storage:expr) => {
        $crate::suite_cases!(
            dashboards,
            $storage,
            [
                dashboard_create_minimal_shape,
                dashboard_create_full_shape,
                dashboard_retrieve_equals_create,
                dashboard_retrieve_after_each_write_answers_the_write,
                dashboard_strings_are_bounded_and_ids_typed,
                dashboard_ids_unique_and_sortable,
                dashboard_query_stored_byte_for_byte,
                dashboard_null_lists_mean_empty,
                dashboard_input_description_kept,
                dashboard_name_required,
                dashboard_restricted_access_required,
                dashboard_errors_reported_together,
                dashboard_panel_title_required,
                dashboard_panel_details_required,
                dashboard_panel_type_must_be_query,
                dashboard_query_required,
                dashboard_credential_id_any_nonblank,
                dashboard_input_keys_unique,
                dashboard_mapping_needs_column,
                dashboard_mapping_prompting_takes_no_column,
                dashboard_mapping_keys_unique,
                dashboard_nested_error_positions,
                dashboard_wrong_list_types_invalid,
                dashboard_hidden_action_stored,
                dashboard_create_ignores_unknown_fields_and_ids,
                dashboard_update_keeps_left_out_fields,
                dashboard_update_replaces_panels_in_order,
                dashboard_update_panel_is_given_whole,
                dashboard_update_action_ids,
                dashboard_update_foreign_ids_get_new_ids,
                dashboard_update_empty_panels_clear,
                dashboard_update_invalid_changes_nothing,
                dashboard_missing_is_404,
                dashboard_delete_returns_deleted,
                dashboard_list_pages,
                dashboard_list_after_any_string,
                dashboard_list_bad_limit,
                dashboard_list_name_prefix,
                dashboard_compat_routes,
                dashboard_patch_on_v1_is_405,
                dashboard_terraform_update_keeps_actions,
                dashboard_compat_routes_reject_wrong_credentials,
            ]
        );
    };
}

/// `?name_prefix=` keeps exactly the dashboards whose name starts with it (case counts), in id
/// order, paged, on both paths.
pub async fn dashboard_list_name_prefix(storage: Arc<dyn Storage>) {
    let api = Api::new(storage);
    for name in ["Ops", "Ops EU", "ops", "Sales", "Opsx"] {
        let body = json!({"name": name, "restricted_access": false});
        api.dash(Method::POST, DASHBOARDS, Some(&body))
            .await
            .expect(200);
    }
    for base in [DASHBOARDS, "/api/v1/dashboards"] {
        let names = api.listed_names(base, "name_prefix=Ops").await;
        assert_eq!(names, ["Ops", "Ops EU", "Opsx"], "{base}");
    }
    let lower = api
        .dash(Method::GET, &format!("{DASHBOARDS}?name_prefix=ops"), None)
        .await
        .expect(200)
        .json();
    assert_eq!(lower["data"].as_array().expect("data").len(), 1);
}
