//! Routing: from method and path to a [`Route`], the methods it allows and who may call it.

use std::borrow::Cow;

use http::Method;
use percent_encoding::percent_decode_str;

use crate::model::{CredentialKind, Scope};

/// An endpoint of the API, with its path parameters (percent-decoded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    /// `…/databases`: list (GET), create (POST).
    Databases,
    /// `…/databases/setup`: setup (PUT).
    DatabaseSetup,
    /// `…/databases/remove/{api_id}`: remove by api_id (DELETE).
    DatabaseRemove(Cow<'a, str>),
    /// `…/databases/{id}`: retrieve (GET), update (PATCH), delete (DELETE).
    Database(Cow<'a, str>),
    /// `…/databases/{id}/permissions`: read (GET), replace (PUT).
    Permissions(Cow<'a, str>),
    /// `…/databases/{id}/data-protection`: read (GET), replace (PUT).
    DataProtection(Cow<'a, str>),
    /// `…/databases/{id}/check-connection/{username}` (GET).
    CheckConnection(Cow<'a, str>, Cow<'a, str>),
    /// `…/databases/check-connection` (POST): check a database described in the body, unsaved.
    CheckUnsaved,
    /// `…/databases/{id}/check-connection` (POST): check a stored database with the body's
    /// changes merged over it, unsaved.
    CheckEdited(Cow<'a, str>),
    /// `/api/v1/console/audit`: the audit trail (GET).
    Audit,
    /// `/v1/dashboards` and `/api/v1/dashboards`: list (GET), create (POST).
    Dashboards { compat: bool },
    /// `…/dashboards/{id}`: retrieve (GET), update (PUT; PATCH too on the compat routes),
    /// delete (DELETE).
    Dashboard { id: Cow<'a, str>, compat: bool },
    /// `…/dashboards/{id}/panels/{panel_id}/run` (POST): run a panel's query.
    PanelRun {
        dashboard: Cow<'a, str>,
        panel: Cow<'a, str>,
        compat: bool,
    },
    /// `…/dashboards/{id}/panels/{panel_id}/actions/{action_id}/trigger` (POST): start a row
    /// action's workflow.
    ActionTrigger {
        dashboard: Cow<'a, str>,
        panel: Cow<'a, str>,
        action: Cow<'a, str>,
        compat: bool,
    },
    /// `/api/v1/console/deliveries`: the outbox (GET).
    Deliveries,
    /// `/api/v1/console/deliveries/{id}` (GET).
    Delivery(Cow<'a, str>),
    /// `/api/v1/console/deliveries/{id}/retry` (POST): retry a dead letter.
    DeliveryRetry(Cow<'a, str>),
    /// `…/queries`: the history (GET), create (POST).
    Queries,
    /// `…/queries/{id}` (GET).
    Query(Cow<'a, str>),
    /// `…/queries/{id}/run` (POST): run a stored query, once.
    QueryRun(Cow<'a, str>),
    /// `…/queries/{id}/reviews` (POST): approve or reject a query.
    QueryReviews(Cow<'a, str>),
}

/// Which caller credentials a route takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Credentials {
    /// `x-api-key` only.
    ApiKey,
    /// `Authorization: Bearer` only.
    Bearer,
    /// Either (the `/api/v1/dashboards` compatibility routes).
    ApiKeyOrBearer,
}

impl Credentials {
    /// Whether a 401 carries `www-authenticate: Bearer`.
    pub(crate) fn takes_bearer(self) -> bool {
        !matches!(self, Credentials::ApiKey)
    }

    /// What a 401 says the route takes, and why what was presented did not do: `presented` is
    /// whether a credential the route takes was sent, `other` whether one it does not take was.
    pub(crate) fn hint(self, presented: bool, other: bool) -> &'static str {
        match (self, presented, other) {
            (Credentials::ApiKey, true, _) => "the API key (x-api-key) is not valid",
            (Credentials::ApiKey, false, true) => {
                "this route takes an API key in the x-api-key header, not an access token"
            }
            (Credentials::ApiKey, false, false) => {
                "this route takes an API key in the x-api-key header"
            }
            (Credentials::Bearer, true, _) => {
                "the access token (Authorization: Bearer) is not valid"
            }
            (Credentials::Bearer, false, true) => {
                "this route takes an access token (Authorization: Bearer <token>), not an API key"
            }
            (Credentials::Bearer, false, false) => {
                "this route takes an access token (Authorization: Bearer <token>)"
            }
            (Credentials::ApiKeyOrBearer, true, _) => "the credential is not valid",
            (Credentials::ApiKeyOrBearer, false, _) => {
                "this route takes an API key in the x-api-key header or an access token (Authorization: Bearer <token>)"
            }
        }
    }

    /// Whether a presented credential of this kind is looked at.
    pub(crate) fn accepts(self, kind: CredentialKind) -> bool {
        match self {
            Credentials::ApiKey => kind == CredentialKind::ApiKey,
            Credentials::Bearer => kind == CredentialKind::AccessToken,
            Credentials::ApiKeyOrBearer => true,
        }
    }
}

fn decode(segment: &str) -> Option<Cow<'_, str>> {
    let decoded = percent_decode_str(segment).decode_utf8().ok()?;
    (!decoded.is_empty()).then_some(decoded)
}

impl<'a> Route<'a> {
    /// The route of a path, or `None` for an unknown path.
    pub(crate) fn recognize(path: &'a str) -> Option<Route<'a>> {
        let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
        match segments.as_slice() {
            ["api", "v1", "console" | "querydesk", "databases", rest @ ..] => match rest {
                [] => Some(Route::Databases),
                ["setup"] => Some(Route::DatabaseSetup),
                ["check-connection"] => Some(Route::CheckUnsaved),
                ["remove", api_id] => Some(Route::DatabaseRemove(decode(api_id)?)),
                [id] => Some(Route::Database(decode(id)?)),
                [id, "permissions"] => Some(Route::Permissions(decode(id)?)),
                [id, "data-protection"] => Some(Route::DataProtection(decode(id)?)),
                [id, "check-connection"] => Some(Route::CheckEdited(decode(id)?)),
                [id, "check-connection", username] => {
                    Some(Route::CheckConnection(decode(id)?, decode(username)?))
                }
                _ => None,
            },
            ["api", "v1", "console" | "querydesk", "queries", rest @ ..] => match rest {
                [] => Some(Route::Queries),
                [id] => Some(Route::Query(decode(id)?)),
                [id, "run"] => Some(Route::QueryRun(decode(id)?)),
                [id, "reviews"] => Some(Route::QueryReviews(decode(id)?)),
                _ => None,
            },
            ["api", "v1", "console", "audit"] => Some(Route::Audit),
            ["api", "v1", "console", "deliveries", rest @ ..] => match rest {
                [] => Some(Route::Deliveries),
                [id] => Some(Route::Delivery(decode(id)?)),
                [id, "retry"] => Some(Route::DeliveryRetry(decode(id)?)),
                _ => None,
            },
            ["v1", "dashboards", rest @ ..] => Self::dashboards(rest, false),
            ["api", "v1", "dashboards", rest @ ..] => Self::dashboards(rest, true),
            _ => None,
        }
    }

    fn dashboards(rest: &[&'a str], compat: bool) -> Option<Route<'a>> {
        match rest {
            [] => Some(Route::Dashboards { compat }),
            [id] => Some(Route::Dashboard {
                id: decode(id)?,
                compat,
            }),
            [id, "panels", panel, "run"] => Some(Route::PanelRun {
                dashboard: decode(id)?,
                panel: decode(panel)?,
                compat,
            }),
            [id, "panels", panel, "actions", action, "trigger"] => Some(Route::ActionTrigger {
                dashboard: decode(id)?,
                panel: decode(panel)?,
                action: decode(action)?,
                compat,
            }),
            _ => None,
        }
    }

    /// The route's path template, the same for its compat paths (the `route` label of the
    /// request metrics).
    pub(crate) fn template(&self) -> &'static str {
        match self {
            Route::Databases => "/databases",
            Route::DatabaseSetup => "/databases/setup",
            Route::DatabaseRemove(_) => "/databases/remove/{api_id}",
            Route::Database(_) => "/databases/{id}",
            Route::Permissions(_) => "/databases/{id}/permissions",
            Route::DataProtection(_) => "/databases/{id}/data-protection",
            Route::CheckConnection(..) => "/databases/{id}/check-connection/{username}",
            Route::CheckUnsaved => "/databases/check-connection",
            Route::CheckEdited(_) => "/databases/{id}/check-connection",
            Route::Audit => "/audit",
            Route::Dashboards { .. } => "/dashboards",
            Route::Dashboard { .. } => "/dashboards/{id}",
            Route::PanelRun { .. } => "/dashboards/{id}/panels/{panel_id}/run",
            Route::ActionTrigger { .. } => {
                "/dashboards/{id}/panels/{panel_id}/actions/{action_id}/trigger"
            }
            Route::Deliveries => "/deliveries",
            Route::Delivery(_) => "/deliveries/{id}",
            Route::DeliveryRetry(_) => "/deliveries/{id}/retry",
            Route::Queries => "/queries",
            Route::Query(_) => "/queries/{id}",
            Route::QueryRun(_) => "/queries/{id}/run",
            Route::QueryReviews(_) => "/queries/{id}/reviews",
        }
    }

    /// The methods this route answers.
    pub(crate) fn allowed_methods(&self) -> &'static [Method] {
        match self {
            Route::Databases | Route::Dashboards { .. } | Route::Queries => {
                &[Method::GET, Method::POST]
            }
            Route::Query(_) => &[Method::GET],
            Route::QueryRun(_)
            | Route::QueryReviews(_)
            | Route::PanelRun { .. }
            | Route::ActionTrigger { .. }
            | Route::DeliveryRetry(_) => &[Method::POST],
            Route::Deliveries | Route::Delivery(_) => &[Method::GET],
            Route::DatabaseSetup => &[Method::PUT],
            Route::CheckUnsaved | Route::CheckEdited(_) => &[Method::POST],
            Route::DatabaseRemove(_) => &[Method::DELETE],
            Route::Database(_) => &[Method::GET, Method::PATCH, Method::DELETE],
            Route::CheckConnection(..) | Route::Audit => &[Method::GET],
            Route::Permissions(_) | Route::DataProtection(_) => &[Method::GET, Method::PUT],
            Route::Dashboard { compat: false, .. } => &[Method::GET, Method::PUT, Method::DELETE],
            Route::Dashboard { compat: true, .. } => {
                &[Method::GET, Method::PUT, Method::PATCH, Method::DELETE]
            }
        }
    }

    /// The caller credentials this route takes.
    pub(crate) fn credentials(&self) -> Credentials {
        match self {
            Route::Dashboards { compat: false }
            | Route::Dashboard { compat: false, .. }
            | Route::PanelRun { compat: false, .. }
            | Route::ActionTrigger { compat: false, .. } => Credentials::Bearer,
            Route::Dashboards { compat: true }
            | Route::Dashboard { compat: true, .. }
            | Route::PanelRun { compat: true, .. }
            | Route::ActionTrigger { compat: true, .. }
            | Route::Queries
            | Route::Query(_)
            | Route::QueryRun(_)
            | Route::QueryReviews(_) => Credentials::ApiKeyOrBearer,
            _ => Credentials::ApiKey,
        }
    }

    /// Whether a caller with this scope may call this route with this method.
    pub(crate) fn permits(&self, scope: Scope, method: &Method) -> bool {
        match scope {
            Scope::Full => true,
            Scope::Setup => matches!(
                (self, method),
                (Route::DatabaseSetup, &Method::PUT) | (Route::DatabaseRemove(_), &Method::DELETE)
            ),
            Scope::Query | Scope::Agent => self.runs_queries(),
        }
    }

    /// Whether the route is one of those that run queries (and need a principal).
    pub(crate) fn runs_queries(&self) -> bool {
        matches!(
            self,
            Route::Queries
                | Route::Query(_)
                | Route::QueryRun(_)
                | Route::QueryReviews(_)
                | Route::PanelRun { .. }
                | Route::ActionTrigger { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_every_route() {
        let cases = [
            ("/api/v1/console/databases", Some(Route::Databases)),
            ("/api/v1/querydesk/databases", Some(Route::Databases)),
            (
                "/api/v1/console/databases/setup",
                Some(Route::DatabaseSetup),
            ),
            (
                "/api/v1/console/databases/remove/a%20b",
                Some(Route::DatabaseRemove("a b".into())),
            ),
            (
                "/api/v1/console/databases/db_1",
                Some(Route::Database("db_1".into())),
            ),
            (
                "/api/v1/console/databases/db_1/check-connection/u%40x",
                Some(Route::CheckConnection("db_1".into(), "u@x".into())),
            ),
            (
                "/api/v1/console/databases/check-connection",
                Some(Route::CheckUnsaved),
            ),
            (
                "/api/v1/console/databases/db_1/check-connection",
                Some(Route::CheckEdited("db_1".into())),
            ),
            ("/v1/dashboards", Some(Route::Dashboards { compat: false })),
            (
                "/api/v1/console/databases/db_1/permissions",
                Some(Route::Permissions("db_1".into())),
            ),
            (
                "/api/v1/querydesk/databases/db_1/data-protection",
                Some(Route::DataProtection("db_1".into())),
            ),
            (
                "/api/v1/dashboards/dash_1",
                Some(Route::Dashboard {
                    id: "dash_1".into(),
                    compat: true,
                }),
            ),
            ("/api/v1/console/databases/", None),
            (
                "/api/v1/console/databases/remove",
                Some(Route::Database("remove".into())),
            ),
            ("/v1/dashboards/a/b", None),
            (
                "/v1/dashboards/dash_1/panels/pl%201/run",
                Some(Route::PanelRun {
                    dashboard: "dash_1".into(),
                    panel: "pl 1".into(),
                    compat: false,
                }),
            ),
            ("/api/v1/console/queries", Some(Route::Queries)),
            (
                "/api/v1/console/queries/qry_1",
                Some(Route::Query("qry_1".into())),
            ),
            (
                "/api/v1/querydesk/queries/qry_1/run",
                Some(Route::QueryRun("qry_1".into())),
            ),
            (
                "/api/v1/console/queries/qry_1/reviews",
                Some(Route::QueryReviews("qry_1".into())),
            ),
            ("/api/v1/console/queries/qry_1/run/x", None),
            ("/nope", None),
            ("", None),
        ];
        for (path, expected) in cases {
            assert_eq!(Route::recognize(path), expected, "{path}");
        }
    }

    #[test]
    fn setup_scope_reaches_only_setup_and_remove() {
        let setup = Route::DatabaseSetup;
        let remove = Route::DatabaseRemove("x".into());
        assert!(setup.permits(Scope::Setup, &Method::PUT));
        assert!(remove.permits(Scope::Setup, &Method::DELETE));
        assert!(!Route::Databases.permits(Scope::Setup, &Method::GET));
        assert!(!Route::Database("x".into()).permits(Scope::Setup, &Method::DELETE));
        assert!(Route::Databases.permits(Scope::Full, &Method::POST));
    }

    #[test]
    fn query_scopes_reach_only_the_query_routes() {
        for scope in [Scope::Query, Scope::Agent] {
            assert!(Route::Queries.permits(scope, &Method::POST));
            assert!(Route::QueryRun("q".into()).permits(scope, &Method::POST));
            assert!(!Route::Databases.permits(scope, &Method::GET));
            assert!(!Route::Dashboards { compat: false }.permits(scope, &Method::GET));
            assert!(!Route::Audit.permits(scope, &Method::GET));
        }
    }
}
