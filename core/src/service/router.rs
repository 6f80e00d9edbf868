//! Recognition: the route of a path in the table ([`ROUTES`]), its parameters (404 for an
//! unknown path), the methods it answers (405 with `Allow`), its metrics label and who may call
//! it. Routing is pure, and tested here without I/O.

use std::borrow::Cow;

use http::Method;
use percent_encoding::percent_decode_str;
use smallvec::SmallVec;

use super::params::Params;
use super::routes::{Endpoint, ROUTES};
use super::who::{Credentials, Mount};
use crate::auth::Caller;

/// How well a template fits a path: its literal segments as bits (see [`Shape::fits`]), then
/// the earlier in the table.
type Rank = (u64, std::cmp::Reverse<usize>);

/// The most segments a template has below its mount prefix.
const MAX_SEGMENTS: usize = 8;

/// The most segments of a path a route can have: a prefix's and a template's.
const MAX_PATH_SEGMENTS: usize = MAX_SEGMENTS + 4;

/// A path the table knows: the endpoints of its template at its mount (one per method), and
/// its parameters.
#[derive(Debug)]
pub(crate) struct Route<'p> {
    /// The rows of the template, in table order.
    pub(crate) endpoints: &'static [&'static Endpoint],
    /// The mount it was found under.
    pub(crate) mount: &'static Mount,
    /// Its parameters.
    pub(crate) params: Params<'p>,
}

impl<'p> Route<'p> {
    /// The route of a path, or `None` for an unknown path (404). Of several templates that
    /// match, the one with a literal segment where the others have a parameter wins, first
    /// segment first (`/databases/setup` over `/databases/{id}`).
    pub(crate) fn recognize(path: &'p str) -> Option<Route<'p>> {
        let Shapes {
            prefixes,
            shapes,
            by_prefix,
        }: &'static Shapes = &SHAPES;
        // The path split once, on the stack (a path of more segments than any prefix and
        // template together fits no route); below a prefix is what follows its segments.
        let mut all: SmallVec<[&'p str; MAX_PATH_SEGMENTS]> = SmallVec::new();
        for segment in path.strip_prefix('/')?.split('/') {
            if all.len() == MAX_PATH_SEGMENTS {
                return None;
            }
            all.push(segment);
        }
        // The best so far: its rank (literals, then the earlier in the table), shape, params.
        let mut best: Option<(Rank, &Shape, Params<'p>)> = None;
        for (own, by_length) in prefixes.iter().zip(by_prefix) {
            if !all.starts_with(own) {
                continue;
            }
            let segments = &all[own.len()..];
            // Only the templates of as many segments, in table order.
            let Some(candidates) = by_length.get(segments.len()) else {
                continue;
            };
            for &at in candidates {
                let shape = &shapes[at];
                // Its shape first (no allocation); its parameters only when it would win.
                let Some(literals) = shape.fits(segments) else {
                    continue;
                };
                let rank = (literals, std::cmp::Reverse(at));
                if best.as_ref().is_some_and(|(known, ..)| rank <= *known) {
                    continue;
                }
                if let Some(params) = shape.params(segments) {
                    best = Some((rank, shape, params));
                }
            }
        }
        let (_, found, params) = best?;
        Some(Route {
            endpoints: &found.endpoints,
            mount: found.mount,
            params,
        })
    }

    /// The endpoint of `method`, if the path answers it.
    pub(crate) fn endpoint(&self, method: &Method) -> Option<&'static Endpoint> {
        self.endpoints.iter().find(|e| e.method == *method).copied()
    }

    /// The methods the path answers (the `Allow` of a 405).
    pub(crate) fn allowed_methods(&self) -> Vec<Method> {
        self.endpoints.iter().map(|e| e.method.clone()).collect()
    }

    /// Its path template (the `route` label of the request metrics): the same for its
    /// compatibility paths.
    pub(crate) fn template(&self) -> &'static str {
        self.endpoints.first().map_or("unmatched", |e| e.path)
    }

    /// The credentials the path takes.
    pub(crate) fn credentials(&self) -> Credentials {
        self.mount.credentials
    }

    /// Whether `caller` may call the path with `method`: the endpoint's rule, or, for a
    /// method the path does not answer, whether the caller may learn which it does.
    pub(crate) fn permits(&self, caller: &Caller, method: &Method) -> bool {
        match self.endpoint(method) {
            Some(endpoint) => endpoint.who.permits(caller),
            None => self.endpoints.iter().any(|e| e.who.reaches(caller)),
        }
    }
}

/// One path a request may name: a template below a mount prefix, split into its segments once
/// (the first endpoint of `ROUTES` with that template and prefix gives its mount).
struct Shape {
    /// Its mount prefix, as an index into [`Shapes::prefixes`].
    prefix: usize,
    mount: &'static Mount,
    /// Each segment: its literal, or `None` for a parameter.
    segments: Vec<Option<&'static str>>,
    /// The parameters' names, in order.
    names: Vec<&'static str>,
    /// Every endpoint (one per method) with this template below this prefix.
    endpoints: Vec<&'static Endpoint>,
}

/// Every distinct mount prefix and every distinct template below each, in `ROUTES`' order.
struct Shapes {
    /// Each prefix's segments (none for the root).
    prefixes: Vec<Vec<&'static str>>,
    shapes: Vec<Shape>,
    /// For each prefix, for each number of segments, the shapes below it (ascending indexes).
    by_prefix: Vec<Vec<Vec<usize>>>,
}

static SHAPES: std::sync::LazyLock<Shapes> = std::sync::LazyLock::new(|| {
    let mut prefixes: Vec<&'static str> = Vec::new();
    let mut shapes: Vec<(&'static str, Shape)> = Vec::new();
    for endpoint in ROUTES {
        for mount in endpoint.mounts {
            let prefix = match prefixes.iter().position(|p| *p == mount.prefix) {
                Some(at) => at,
                None => {
                    prefixes.push(mount.prefix);
                    prefixes.len() - 1
                }
            };
            if let Some((_, shape)) = shapes
                .iter_mut()
                .find(|(path, s)| s.prefix == prefix && *path == endpoint.path)
            {
                shape.endpoints.push(endpoint);
                continue;
            }
            let mut segments = Vec::new();
            let mut names = Vec::new();
            for part in endpoint.path.trim_start_matches('/').split('/') {
                match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                    Some(name) => {
                        segments.push(None);
                        names.push(name);
                    }
                    None => segments.push(Some(part)),
                }
            }
            assert!(
                segments.len() <= MAX_SEGMENTS,
                "{} has more than MAX_SEGMENTS segments",
                endpoint.path
            );
            shapes.push((
                endpoint.path,
                Shape {
                    prefix,
                    mount,
                    segments,
                    names,
                    endpoints: vec![endpoint],
                },
            ));
        }
    }
    let shapes: Vec<Shape> = shapes.into_iter().map(|(_, shape)| shape).collect();
    let mut by_prefix = vec![vec![Vec::new(); MAX_SEGMENTS + 1]; prefixes.len()];
    for (at, shape) in shapes.iter().enumerate() {
        by_prefix[shape.prefix][shape.segments.len()].push(at);
    }
    Shapes {
        by_prefix,
        prefixes: prefixes
            .iter()
            .map(|prefix| {
                let segments: Vec<_> = prefix.split('/').filter(|s| !s.is_empty()).collect();
                assert!(segments.len() + MAX_SEGMENTS <= MAX_PATH_SEGMENTS);
                segments
            })
            .collect(),
        shapes,
    }
});

impl Shape {
    /// Whether a path of these `given` segments fits, without decoding anything: its literal
    /// segments as bits, the first segment highest (a match with a literal where another has a
    /// parameter, first segment first, ranks higher).
    fn fits(&self, given: &[&str]) -> Option<u64> {
        if given.len() != self.segments.len() {
            return None;
        }
        let mut literals = 0u64;
        for (at, (part, segment)) in self.segments.iter().zip(given).enumerate() {
            match part {
                None if segment.is_empty() => return None,
                None => {}
                Some(literal) if literal == segment => literals |= 1 << (63 - at.min(63)),
                Some(_) => return None,
            }
        }
        Some(literals)
    }

    /// The parameters of `given` (which [`Shape::fits`]), percent-decoded: `None` when one is
    /// empty once decoded or not UTF-8.
    fn params<'p>(&self, given: &[&'p str]) -> Option<Params<'p>> {
        let mut params = Params::default();
        let mut names = self.names.iter();
        for (part, segment) in self.segments.iter().zip(given) {
            if part.is_none() {
                // A segment without `%` is its own decoding (and a `&str`, so UTF-8).
                let decoded = if segment.contains('%') {
                    percent_decode_str(segment).decode_utf8().ok()?
                } else {
                    Cow::Borrowed(*segment)
                };
                if decoded.is_empty() {
                    return None;
                }
                params.push(names.next()?, decoded)?;
            }
        }
        Some(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CredentialKind, Principal, Scope};
    use crate::service::params::MAX_PARAMS;

    fn found(path: &str) -> Option<(&'static str, Vec<(&'static str, String)>)> {
        Route::recognize(path).map(|route| {
            let params = route
                .params
                .iter()
                .map(|(n, v)| (*n, v.to_string()))
                .collect();
            (route.template(), params)
        })
    }

    #[test]
    fn recognizes_every_route() {
        let p = |pairs: &[(&'static str, &str)]| {
            pairs
                .iter()
                .map(|(n, v)| (*n, (*v).to_owned()))
                .collect::<Vec<_>>()
        };
        let cases = [
            ("/api/v1/console/databases", Some(("/databases", p(&[])))),
            ("/api/v1/querydesk/databases", Some(("/databases", p(&[])))),
            (
                "/api/v1/console/databases/setup",
                Some(("/databases/setup", p(&[]))),
            ),
            (
                "/api/v1/console/databases/remove/a%20b",
                Some(("/databases/remove/{api_id}", p(&[("api_id", "a b")]))),
            ),
            (
                "/api/v1/console/databases/db_1",
                Some(("/databases/{id}", p(&[("id", "db_1")]))),
            ),
            (
                "/api/v1/console/databases/db_1/check-connection/u%40x",
                Some((
                    "/databases/{id}/check-connection/{username}",
                    p(&[("id", "db_1"), ("username", "u@x")]),
                )),
            ),
            (
                "/api/v1/console/databases/check-connection",
                Some(("/databases/check-connection", p(&[]))),
            ),
            (
                "/api/v1/console/databases/db_1/check-connection",
                Some(("/databases/{id}/check-connection", p(&[("id", "db_1")]))),
            ),
            ("/v1/dashboards", Some(("/dashboards", p(&[])))),
            (
                "/api/v1/console/databases/db_1/permissions",
                Some(("/databases/{id}/permissions", p(&[("id", "db_1")]))),
            ),
            (
                "/api/v1/querydesk/databases/db_1/data-protection",
                Some(("/databases/{id}/data-protection", p(&[("id", "db_1")]))),
            ),
            (
                "/api/v1/dashboards/dash_1",
                Some(("/dashboards/{id}", p(&[("id", "dash_1")]))),
            ),
            ("/api/v1/console/databases/", None),
            (
                "/api/v1/console/databases/remove",
                Some(("/databases/{id}", p(&[("id", "remove")]))),
            ),
            (
                "/api/v1/console/databases/remove/permissions",
                Some((
                    "/databases/remove/{api_id}",
                    p(&[("api_id", "permissions")]),
                )),
            ),
            ("/v1/dashboards/a/b", None),
            (
                "/v1/dashboards/dash_1/panels/pl%201/run",
                Some((
                    "/dashboards/{id}/panels/{panel_id}/run",
                    p(&[("id", "dash_1"), ("panel_id", "pl 1")]),
                )),
            ),
            ("/api/v1/console/queries", Some(("/queries", p(&[])))),
            (
                "/api/v1/console/queries/qry_1",
                Some(("/queries/{id}", p(&[("id", "qry_1")]))),
            ),
            (
                "/api/v1/querydesk/queries/qry_1/run",
                Some(("/queries/{id}/run", p(&[("id", "qry_1")]))),
            ),
            (
                "/api/v1/console/queries/qry_1/reviews",
                Some(("/queries/{id}/reviews", p(&[("id", "qry_1")]))),
            ),
            ("/api/v1/console/queries/qry_1/run/x", None),
            ("/api/v1/querydesk/audit", None),
            ("/api/v1/querydesk/deliveries", None),
            (
                "/api/v1/console/deliveries/d_1/retry",
                Some(("/deliveries/{id}/retry", p(&[("id", "d_1")]))),
            ),
            ("/openapi.json", Some(("/openapi.json", p(&[])))),
            ("/api/v1/openapi.json", None),
            ("/nope", None),
            ("", None),
        ];
        for (path, expected) in cases {
            assert_eq!(found(path), expected, "{path}");
        }
    }

    #[test]
    fn a_path_allows_the_methods_of_its_rows_at_its_mount() {
        let methods = |path: &str| Route::recognize(path).unwrap().allowed_methods();
        assert_eq!(
            methods("/api/v1/console/databases"),
            [Method::GET, Method::POST]
        );
        assert_eq!(methods("/api/v1/console/databases/setup"), [Method::PUT]);
        assert_eq!(
            methods("/api/v1/console/databases/x"),
            [Method::GET, Method::PATCH, Method::DELETE]
        );
        assert_eq!(
            methods("/v1/dashboards/x"),
            [Method::GET, Method::PUT, Method::DELETE]
        );
        assert_eq!(
            methods("/api/v1/dashboards/x"),
            [Method::GET, Method::PUT, Method::PATCH, Method::DELETE]
        );
        assert_eq!(methods("/openapi.json"), [Method::GET]);
    }

    #[test]
    fn credentials_come_from_the_mount() {
        let credentials = |path: &str| Route::recognize(path).unwrap().credentials();
        assert_eq!(
            credentials("/api/v1/console/databases"),
            Credentials::API_KEY
        );
        assert_eq!(credentials("/v1/dashboards"), Credentials::BEARER);
        assert_eq!(credentials("/api/v1/dashboards"), Credentials::EITHER);
        assert_eq!(
            credentials("/api/v1/querydesk/queries"),
            Credentials::EITHER
        );
        assert_eq!(credentials("/openapi.json"), Credentials::NONE);
        assert!(!Credentials::NONE.required());
        assert!(Credentials::EITHER.accepts(CredentialKind::ApiKey));
        assert!(!Credentials::BEARER.accepts(CredentialKind::ApiKey));
    }

    fn caller(scope: Scope) -> Caller {
        let mut caller = Caller::vouched(Principal::member("ann"));
        caller.scope = scope;
        caller
    }

    #[test]
    fn setup_scope_reaches_only_setup_and_remove() {
        let setup = Route::recognize("/api/v1/console/databases/setup").unwrap();
        let remove = Route::recognize("/api/v1/console/databases/remove/x").unwrap();
        let list = Route::recognize("/api/v1/console/databases").unwrap();
        let one = Route::recognize("/api/v1/console/databases/x").unwrap();
        let scope = caller(Scope::Setup);
        assert!(setup.permits(&scope, &Method::PUT));
        assert!(remove.permits(&scope, &Method::DELETE));
        assert!(!setup.permits(&scope, &Method::GET), "403 before 405");
        assert!(!list.permits(&scope, &Method::GET));
        assert!(!one.permits(&scope, &Method::DELETE));
        assert!(list.permits(&caller(Scope::Full), &Method::POST));
    }

    #[test]
    fn query_scopes_reach_only_the_query_routes() {
        for (scope, person) in [(Scope::Query, true), (Scope::Agent, false)] {
            let scope = caller(scope);
            let permits = |path: &str, method: Method| {
                Route::recognize(path).unwrap().permits(&scope, &method)
            };
            assert!(permits("/api/v1/console/queries", Method::POST));
            assert!(permits("/api/v1/console/queries/q/run", Method::POST));
            assert!(
                permits("/api/v1/console/queries/q", Method::DELETE),
                "405, not 403"
            );
            assert!(permits("/v1/dashboards/d/panels/p/run", Method::POST));
            assert!(!permits("/api/v1/console/databases", Method::GET));
            // Dashboards are viewed by principals and made and changed by people, never agents
            // (each handler decides which dashboard).
            assert!(permits("/v1/dashboards", Method::GET));
            assert!(permits("/v1/dashboards/d", Method::GET));
            assert!(permits("/v1/dashboards/d/presentation", Method::GET));
            assert_eq!(permits("/v1/dashboards", Method::POST), person);
            assert_eq!(permits("/v1/dashboards/d", Method::PUT), person);
            assert_eq!(permits("/v1/dashboards/d", Method::DELETE), person);
            assert_eq!(
                permits("/v1/dashboards/d/presentation", Method::PUT),
                person
            );
            assert!(permits("/api/v1/console/me/deliveries/dlv_1", Method::GET));
            assert!(!permits("/api/v1/console/deliveries/dlv_1", Method::GET));
            assert!(!permits("/api/v1/console/audit", Method::GET));
        }
    }

    #[test]
    fn every_row_is_reachable_and_names_its_parameters_once() {
        for endpoint in ROUTES {
            for mount in endpoint.mounts {
                let path: String = endpoint
                    .path
                    .split('/')
                    .map(|part| if part.starts_with('{') { "x" } else { part })
                    .collect::<Vec<_>>()
                    .join("/");
                let full = format!("{}{path}", mount.prefix);
                let route = Route::recognize(&full).unwrap_or_else(|| panic!("{full}"));
                assert_eq!(route.template(), endpoint.path, "{full}");
                let row = route.endpoint(&endpoint.method).expect("its method");
                assert!(std::ptr::eq(row, endpoint), "{} {full}", endpoint.method);
            }
            let mut names: Vec<&str> = endpoint
                .path
                .split('/')
                .filter(|p| p.starts_with('{'))
                .collect();
            let count = names.len();
            assert!(
                count <= MAX_PARAMS,
                "{}: its parameters would not fit without an allocation",
                endpoint.path
            );
            names.dedup();
            assert_eq!(names.len(), count, "{}", endpoint.path);
        }
    }
}
