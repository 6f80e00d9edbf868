//! The `?limit=N&after=<id>` query of the listing endpoints.

use super::ValidationErrors;
use super::errors::message;
use crate::model::Adapter;

/// Page size when `limit` is not given.
pub const DEFAULT_PAGE_SIZE: usize = 50;
/// The largest `limit` accepted.
pub const MAX_PAGE_SIZE: usize = 500;

/// A parsed listing query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageQuery {
    /// Only ids after this one.
    pub after: Option<String>,
    /// At most this many items.
    pub limit: usize,
}

/// Reads `limit` (1..=500, default 50) and `after` (any string) from a query string; other
/// parameters are ignored.
pub fn parse_page_query(query: Option<&str>) -> Result<PageQuery, ValidationErrors> {
    let mut page = PageQuery {
        after: None,
        limit: DEFAULT_PAGE_SIZE,
    };
    let mut errors = ValidationErrors::new();
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match key.as_ref() {
            "limit" => match value.trim().parse::<i64>() {
                Ok(n) if n < 1 => errors.add("limit", "must be greater than or equal to 1"),
                Ok(n) if n > MAX_PAGE_SIZE as i64 => errors.add(
                    "limit",
                    format!("must be less than or equal to {MAX_PAGE_SIZE}"),
                ),
                Ok(n) => page.limit = n as usize,
                Err(_) => errors.add("limit", message::INVALID),
            },
            "after" => page.after = (!value.is_empty()).then(|| value.into_owned()),
            _ => {}
        }
    }
    errors.into_result(page)
}

/// Reads the query of `GET …/audit`: the page (see [`parse_page_query`]) and `resource`, the id
/// of the record whose events to list (any string; empty means every record).
pub fn parse_audit_query(
    query: Option<&str>,
) -> Result<(PageQuery, Option<String>), ValidationErrors> {
    let page = parse_page_query(query)?;
    Ok((page, parameter(query, "resource")))
}

/// The filters of `GET …/audit` beyond `resource`, as given (an empty `database` or `actor`
/// counts as not given; an action that is not one, or a time that is not RFC 3339, empty
/// included, is 422 on its parameter).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditFilterQuery {
    /// `database=`: the database's events and its queries'.
    pub database: Option<String>,
    /// `actor=`: a key's (or session's) id, or an actor's name.
    pub actor: Option<String>,
    /// `action=`: one of the events' actions (`query.run`).
    pub action: Option<crate::model::AuditAction>,
    /// `since=`: at or after this time.
    pub since: Option<crate::model::Timestamp>,
    /// `until=`: before this time.
    pub until: Option<crate::model::Timestamp>,
}

/// The audit filters of `query`, every error at once.
pub fn parse_audit_filter(query: Option<&str>) -> Result<AuditFilterQuery, ValidationErrors> {
    let mut errors = ValidationErrors::new();
    let mut time = |name: &str| {
        let value = given_parameter(query, name)?;
        match chrono::DateTime::parse_from_rfc3339(&value) {
            Ok(at) => Some(crate::model::Timestamp::from_micros(at.timestamp_micros())),
            Err(_) => {
                errors.add(name, "must be a time in RFC 3339 (2026-11-27T10:00:00Z)");
                None
            }
        }
    };
    let since = time("since");
    let until = time("until");
    let action = match given_parameter(query, "action").map(|value| value.parse()) {
        Some(Ok(action)) => Some(action),
        Some(Err(message)) => {
            errors.add("action", message);
            None
        }
        None => None,
    };
    errors.into_result(AuditFilterQuery {
        database: parameter(query, "database"),
        actor: parameter(query, "actor"),
        action,
        since,
        until,
    })
}

/// The filters of `GET …/databases` as given (empty values count as not given, but for
/// `adapter`, which must name one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatabaseFilterQuery {
    /// `adapter=`: one of the adapters' wire names.
    pub adapter: Option<Adapter>,
    /// `group=`.
    pub group: Option<String>,
    /// `name_prefix=`.
    pub name_prefix: Option<String>,
    /// `api_id=`.
    pub api_id: Option<String>,
    /// `tunnel_id=`.
    pub tunnel_id: Option<String>,
}

/// The filter of `GET /v1/dashboards` as given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DashboardFilterQuery {
    /// `name_prefix=`.
    pub name_prefix: Option<String>,
}

/// The non-empty values of the query parameters, by name (the last one wins).
fn parameter(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(key, value)| key == name && !value.is_empty())
        .map(|(_, value)| value.into_owned())
        .last()
}

/// The value of query parameter `name` as given, empty included (the last one wins).
pub fn given_parameter(query: Option<&str>, name: &str) -> Option<String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .last()
}

/// Query parameter `name` naming one value of a wire enum (`adapter=`, `status=`): `None` when
/// absent; an empty `name=` names none either, so it is 422 on `name`, as any other value that
/// is not one.
pub fn parse_named_parameter<T>(
    query: Option<&str>,
    name: &str,
) -> Result<Option<T>, ValidationErrors>
where
    T: std::str::FromStr<Err = String>,
{
    given_parameter(query, name)
        .map(|value| {
            value
                .parse::<T>()
                .map_err(|message| ValidationErrors::single(name, message))
        })
        .transpose()
}

/// Reads the filters of a database listing; an unknown `adapter` is 422 on `adapter`.
pub fn parse_database_filter(query: Option<&str>) -> Result<DatabaseFilterQuery, ValidationErrors> {
    Ok(DatabaseFilterQuery {
        adapter: parse_named_parameter::<Adapter>(query, "adapter")?,
        group: parameter(query, "group"),
        name_prefix: parameter(query, "name_prefix"),
        api_id: parameter(query, "api_id"),
        tunnel_id: parameter(query, "tunnel_id"),
    })
}

/// Reads the filter of a dashboard listing.
pub fn parse_dashboard_filter(query: Option<&str>) -> DashboardFilterQuery {
    DashboardFilterQuery {
        name_prefix: parameter(query, "name_prefix"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bounds() {
        assert_eq!(parse_page_query(None).unwrap().limit, DEFAULT_PAGE_SIZE);
        let page = parse_page_query(Some("limit=2&after=db_x%5F&x=1")).unwrap();
        assert_eq!((page.limit, page.after.as_deref()), (2, Some("db_x_")));
        for bad in ["limit=0", "limit=501", "limit=abc", "limit="] {
            let errors = parse_page_query(Some(bad)).unwrap_err();
            assert_eq!(errors.fields().collect::<Vec<_>>(), ["limit"], "{bad}");
        }
    }
}
