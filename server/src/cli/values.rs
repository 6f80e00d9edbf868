//! The value parsers several subcommands share.

use std::fmt::Debug;
use std::str::FromStr;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use dbconsole_core::model::Secret;

/// A public URL: http(s), with a host, no query; kept without a trailing slash.
pub(super) fn public_url(value: &str) -> Result<String, String> {
    match dbconsole_core::service::browser::SessionOptions::for_public_url(value) {
        Some(_) if !value.contains('?') && !value.contains('#') => {
            Ok(value.trim_end_matches('/').to_owned())
        }
        _ => Err("expected an http(s) URL such as https://console.example.com".to_owned()),
    }
}

/// A flag's value kept as a [`Secret`]: redacted in `Debug`, wiped on drop.
pub(super) fn secret_value(value: &str) -> Result<Secret, std::convert::Infallible> {
    Ok(Secret::from(value))
}

/// Parses the name of one of `all` (the names are listed in `--help` and in errors) with the
/// type's `FromStr`: for core's wire enums, with their `ALL` and `as_str`.
pub(super) fn wire_names<T, const N: usize>(
    all: [T; N],
    name: fn(T) -> &'static str,
) -> impl TypedValueParser<Value = T>
where
    T: FromStr<Err: Debug> + Clone + Send + Sync + 'static,
{
    PossibleValuesParser::new(all.map(name)).map(|name| {
        name.parse()
            .expect("a possible value is one of the type's names")
    })
}
