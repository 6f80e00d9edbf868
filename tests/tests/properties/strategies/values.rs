//! Field values and what they read back as: [`Given`], field tables, text, numbers, flags,
//! adapters, host names and passwords.

use proptest::option::weighted;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};

/// A field value to send, and what a read must answer for it afterwards.
#[derive(Clone, Debug)]
pub(crate) struct Given {
    pub(crate) send: Value,
    pub(crate) expect: Value,
}

impl Given {
    /// Read back exactly as sent.
    pub(crate) fn same(value: impl Into<Value>) -> Self {
        let value = value.into();
        Self {
            send: value.clone(),
            expect: value,
        }
    }

    /// Read back as something else (null, a default…).
    pub(crate) fn reads_as(send: impl Into<Value>, expect: impl Into<Value>) -> Self {
        Self {
            send: send.into(),
            expect: expect.into(),
        }
    }
}

/// The fields a body sends, in order; a field not listed is left out.
pub(crate) type Fields = Vec<(&'static str, Given)>;

/// For each field a body may send, what to send in it.
pub(crate) type FieldTable = Vec<(&'static str, BoxedStrategy<Given>)>;

pub(crate) fn fields_json(fields: &Fields) -> Map<String, Value> {
    fields
        .iter()
        .map(|(key, given)| ((*key).to_owned(), given.send.clone()))
        .collect()
}

pub(crate) fn expect_of(fields: &Fields, key: &str) -> Option<Value> {
    fields
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, given)| given.expect.clone())
}

pub(crate) fn set_field(fields: &mut Fields, key: &'static str, given: Given) {
    fields.retain(|(k, _)| *k != key);
    fields.push((key, given));
}

/// Each field of `table` with probability `p`; the `required` ones always.
pub(crate) fn some_of(
    table: FieldTable,
    p: f64,
    required: &'static [&'static str],
) -> BoxedStrategy<Fields> {
    let parts: Vec<BoxedStrategy<Option<(&'static str, Given)>>> = table
        .into_iter()
        .map(|(key, strategy)| {
            let pair = strategy.prop_map(move |given| (key, given));
            if required.contains(&key) {
                pair.prop_map(Some).boxed()
            } else {
                weighted(p, pair).boxed()
            }
        })
        .collect();
    parts
        .prop_map(|parts| parts.into_iter().flatten().collect())
        .boxed()
}

/// Printable text of any script but Greek (only passwords hold Greek letters).
pub(crate) fn text() -> BoxedStrategy<String> {
    prop_oneof![
        3 => "[a-zA-Z0-9 ._@:/'-]{1,24}",
        2 => "[\\PC&&\\P{Greek}]{1,16}",
    ]
    .boxed()
}

/// Text that is not blank (it may still start or end with spaces).
pub(crate) fn non_blank_text() -> BoxedStrategy<String> {
    text()
        .prop_filter("not blank", |s| !s.trim().is_empty())
        .boxed()
}

/// Empty or whitespace-only strings: "unset" for an optional string.
pub(crate) fn blank() -> impl Strategy<Value = &'static str> {
    select(&["", " ", "   ", "\t", " \n ", "\u{a0}", "\u{3000}"][..])
}

/// A required string: non-blank, read back byte for byte.
pub(crate) fn required_text() -> BoxedStrategy<Given> {
    non_blank_text().prop_map(Given::same).boxed()
}

/// An optional string: blank or null read back as null.
pub(crate) fn optional_text() -> BoxedStrategy<Given> {
    prop_oneof![
        3 => non_blank_text().prop_map(Given::same),
        1 => blank().prop_map(|s| Given::reads_as(s, Value::Null)),
        1 => Just(Given::same(Value::Null)),
    ]
    .boxed()
}

/// A boolean whose default is false: null reads back as false.
pub(crate) fn flag() -> BoxedStrategy<Given> {
    prop_oneof![
        3 => any::<bool>().prop_map(Given::same),
        1 => Just(Given::reads_as(Value::Null, false)),
    ]
    .boxed()
}

/// A whole number in `min..=max` (the bounds more often than chance), or null read back as
/// `null_reads_as`.
pub(crate) fn whole_number(min: u64, max: u64, null_reads_as: Value) -> BoxedStrategy<Given> {
    prop_oneof![
        3 => (min..=max).prop_map(Given::same),
        1 => select(vec![min, max]).prop_map(Given::same),
        1 => Just(Given::reads_as(Value::Null, null_reads_as)),
    ]
    .boxed()
}

pub(crate) fn port() -> BoxedStrategy<Given> {
    whole_number(1, 65535, Value::Null)
}

pub(crate) fn ai_max_rows() -> BoxedStrategy<Given> {
    whole_number(1, u64::from(u32::MAX), json!(500))
}

pub(crate) fn timeout() -> BoxedStrategy<Given> {
    whole_number(1, u64::from(u32::MAX), Value::Null)
}

pub(crate) fn reviews_required() -> BoxedStrategy<Given> {
    whole_number(0, u64::from(u32::MAX), json!(0))
}

pub(crate) const ADAPTERS: [&str; 5] = ["postgres", "mysql", "clickhouse", "sqlserver", "oracle"];

pub(crate) fn adapter() -> BoxedStrategy<Given> {
    select(&ADAPTERS[..]).prop_map(Given::same).boxed()
}

/// Host names, IPv4 and IPv6 addresses, and any other non-blank text (nothing checks the
/// syntax).
pub(crate) fn hostname() -> BoxedStrategy<Given> {
    host().prop_map(Given::same).boxed()
}

/// A host name (labels that neither start nor end with `-`) or an IP address.
fn host() -> BoxedStrategy<String> {
    prop_oneof![
        3 => "[a-z0-9]([a-z0-9-]{0,14}[a-z0-9])?(\\.[a-z0-9_]([a-z0-9-]{0,10}[a-z0-9])?){0,3}",
        1 => any::<[u8; 4]>().prop_map(|ip| std::net::Ipv4Addr::from(ip).to_string()),
        1 => any::<[u16; 8]>().prop_map(|ip| std::net::Ipv6Addr::from(ip).to_string()),
    ]
    .boxed()
}

/// An optional host: blank or null read back as null.
pub(crate) fn optional_host() -> BoxedStrategy<Given> {
    prop_oneof![
        3 => host().prop_map(Given::same),
        1 => blank().prop_map(|s| Given::reads_as(s, Value::Null)),
        1 => Just(Given::same(Value::Null)),
    ]
    .boxed()
}

/// A password: Greek letters at both ends and among the rest, so that no other generated text
/// can contain it.
pub(crate) fn password_text() -> impl Strategy<Value = String> {
    "[Α-Ωα-ω][Α-Ωα-ω0-9!#$%&*+,.:;=?@^_~-]{10,22}[α-ω]"
}
