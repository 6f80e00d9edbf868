//! Dashboard bodies: panels with inputs, query details and row actions with input mappings.

use proptest::collection::vec;
use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Value, json};

use crate::strategies::*;
use crate::support::*;

pub(crate) fn query_details() -> BoxedStrategy<Given> {
    (non_blank_text(), "[\\PC\n\t]{1,80}")
        .prop_filter("the query is not blank", |(_, query)| {
            !query.trim().is_empty()
        })
        .prop_map(|(credential_id, query)| {
            Given::same(
                json!({"__type__": "query", "query": query, "credential_id": credential_id}),
            )
        })
        .boxed()
}

/// `{key: Given}` pairs with distinct keys as a list of objects (the key goes in `key_name`);
/// null for the whole list reads back as `[]`.
pub(crate) fn keyed_list(
    key_name: &'static str,
    item: BoxedStrategy<Given>,
    len: std::ops::Range<usize>,
) -> BoxedStrategy<Given> {
    prop_oneof![
        4 => vec((non_blank_text(), item), len)
            .prop_filter("keys are distinct", |items| distinct(items.iter().map(|(key, _)| key)))
            // An input key starting with `__` is reserved (the time range's `${__from}` and
            // `${__to}`): a valid body has none.
            .prop_filter("input keys are not reserved", move |items| {
                key_name != "key" || items.iter().all(|(key, _)| !key.starts_with("__"))
            })
            .prop_map(move |items| {
                let (send, expect) = items
                    .into_iter()
                    .map(|(key, mut given)| {
                        given.send[key_name] = key.clone().into();
                        given.expect[key_name] = key.into();
                        (given.send, given.expect)
                    })
                    .unzip::<_, _, Vec<_>, Vec<_>>();
                Given::reads_as(send, expect)
            }),
        1 => Just(Given::reads_as(Value::Null, json!([]))),
    ]
    .boxed()
}

/// A panel input without its key: the description is kept as given, null or left out read
/// back as `""`.
pub(crate) fn panel_input() -> BoxedStrategy<Given> {
    prop_oneof![
        3 => prop_oneof![text(), Just(String::new()), blank().prop_map(str::to_owned)]
            .prop_map(|d| Given::same(json!({"description": d}))),
        1 => Just(Given::reads_as(json!({"description": null}), json!({"description": ""}))),
        1 => Just(Given::reads_as(json!({}), json!({"description": ""}))),
    ]
    .boxed()
}

/// An optional member of an object: sent when given, read back as null when left out.
pub(crate) fn optional_member(object: &mut Given, key: &str, given: Option<Given>) {
    match given {
        Some(given) => {
            object.send[key] = given.send;
            object.expect[key] = given.expect;
        }
        None => object.expect[key] = Value::Null,
    }
}

/// An input mapping without its key: from a result column (`prompt_user` false, left out or
/// null), or prompting the user (`column` left out, null or blank); `prompt` optional.
pub(crate) fn input_mapping() -> BoxedStrategy<Given> {
    let not_prompting = prop_oneof![
        Just(None),
        Just(Some(Given::same(false))),
        Just(Some(Given::reads_as(Value::Null, false))),
    ];
    let by_column = (non_blank_text(), not_prompting).prop_map(|(column, prompt_user)| {
        let mut mapping = Given::reads_as(json!({"column": column}), json!({"column": column}));
        match prompt_user {
            Some(given) => {
                mapping.send["prompt_user"] = given.send;
                mapping.expect["prompt_user"] = given.expect;
            }
            None => mapping.expect["prompt_user"] = false.into(),
        }
        mapping
    });
    let no_column = prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        blank().prop_map(|b| Some(Value::from(b))),
    ];
    let by_prompt = no_column.prop_map(|column| {
        let mut mapping = Given::reads_as(
            json!({"prompt_user": true}),
            json!({"prompt_user": true, "column": null}),
        );
        if let Some(column) = column {
            mapping.send["column"] = column;
        }
        mapping
    });
    (
        prop_oneof![by_column, by_prompt],
        weighted(0.6, optional_text()),
    )
        .prop_map(|(mut mapping, prompt)| {
            optional_member(&mut mapping, "prompt", prompt);
            mapping
        })
        .boxed()
}

/// A row action of a request: which stored action it names, what it sends and reads back as
/// (without its id).
#[derive(Clone, Debug)]
pub(crate) struct ActionBody {
    pub(crate) target: Target,
    pub(crate) given: Given,
}

pub(crate) fn action() -> BoxedStrategy<ActionBody> {
    (
        target(),
        weighted(0.8, optional_text()),
        weighted(0.8, optional_text()),
        weighted(0.8, keyed_list("workflow_input_key", input_mapping(), 0..3)),
    )
        .prop_map(|(target, label, workflow_id, mappings)| {
            let mut given = Given::reads_as(json!({}), json!({}));
            optional_member(&mut given, "label", label);
            optional_member(&mut given, "workflow_id", workflow_id);
            match mappings {
                Some(mappings) => {
                    given.send["input_mappings"] = mappings.send;
                    given.expect["input_mappings"] = mappings.expect;
                }
                None => given.expect["input_mappings"] = json!([]),
            }
            ActionBody { target, given }
        })
        .boxed()
}

/// A panel of a request: which stored panel it names, its own fields, and its actions.
#[derive(Clone, Debug)]
pub(crate) struct PanelBody {
    pub(crate) target: Target,
    /// Title, inputs and details (actions aside).
    pub(crate) given: Given,
    pub(crate) actions: Vec<ActionBody>,
    /// How an empty action list is sent: `[]`, null or left out.
    pub(crate) empty_actions: Value,
}

pub(crate) fn panel() -> BoxedStrategy<PanelBody> {
    (
        target(),
        non_blank_text(),
        weighted(0.8, keyed_list("key", panel_input(), 0..3)),
        vec(action(), 0..3),
        select(vec![json!([]), Value::Null, json!("left out")]),
        query_details(),
    )
        .prop_map(|(target, title, inputs, actions, empty_actions, details)| {
            let mut given = Given::same(json!({"title": title, "details": details.send}));
            match inputs {
                Some(inputs) => {
                    given.send["inputs"] = inputs.send;
                    given.expect["inputs"] = inputs.expect;
                }
                None => given.expect["inputs"] = json!([]),
            }
            PanelBody {
                target,
                given,
                actions,
                empty_actions,
            }
        })
        .boxed()
}

/// A valid dashboard body: name and restricted_access (required on create), panels.
#[derive(Clone, Debug)]
pub(crate) struct DashboardBody {
    pub(crate) fields: Fields,
    pub(crate) panels: Option<Vec<PanelBody>>,
}

pub(crate) fn dashboard_body(create: bool) -> BoxedStrategy<DashboardBody> {
    let table: FieldTable = vec![
        ("name", required_text()),
        (
            "restricted_access",
            any::<bool>().prop_map(Given::same).boxed(),
        ),
    ];
    let required: &'static [&'static str] = if create {
        &["name", "restricted_access"]
    } else {
        &[]
    };
    (
        some_of(table, 0.5, required),
        weighted(0.6, vec(panel(), 0..4)),
    )
        .prop_map(|(fields, panels)| DashboardBody { fields, panels })
        .boxed()
}
