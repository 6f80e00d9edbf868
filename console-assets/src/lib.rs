//! # dbconsole-console-assets
//!
//! The web console of dbconsole, as `npm run build` left it in `console/dist`, embedded in the
//! binary, and [`ConsolePages`], which serves it under [`PREFIX`] (docs/console.md, "Serving"):
//!
//! - `/` and `/console` redirect to `/console/`;
//! - a file of the build is served with its type; a hashed asset (`/console/assets/…`) is cached
//!   for a year as immutable, anything else (`index.html` first) is revalidated every time;
//! - a missing asset (a path with a file extension) is a real 404;
//! - any other page route below the prefix is the app's `index.html` (the app routes itself);
//! - every page carries a strict Content-Security-Policy with a fresh nonce for the editor's
//!   style elements (handed to the app in a `<meta name="csp-nonce">`), `Referrer-Policy:
//!   same-origin`, `X-Content-Type-Options: nosniff` and `X-Frame-Options: DENY`;
//! - built without the console (no `console/dist`), every page says how to build it.
//!
//! Paths outside the prefix are not the console's: [`ConsolePages::answer`] answers `None`, and
//! the embedding program hands the request to the API. Nothing here needs Node: npm runs
//! before cargo, never from a build script.

use std::borrow::Cow;
use std::convert::Infallible;
use std::future::{Ready, ready};
use std::task::{Context, Poll};

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use rand::RngCore as _;

/// Where the console lives.
pub const PREFIX: &str = "/console/";

/// The placeholder `index.html` carries where each response's nonce goes.
const NONCE_PLACEHOLDER: &str = "__CSP_NONCE__";

#[derive(rust_embed::RustEmbed)]
#[folder = "../console/dist"]
#[allow_missing = true]
struct Built;

/// The page served when the console was not built before the binary.
const NOT_BUILT: &str = "<!doctype html>
<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dbconsole: console not built</title></head>
<body><main><h1>The console is not built</h1>
<p>This dbconsole binary was built without its web console. Build the console, then the server:</p>
<pre>cd console &amp;&amp; npm ci &amp;&amp; npm run build &amp;&amp; cd .. &amp;&amp; cargo build --release -p dbconsole-server</pre>
<p>or run <code>scripts/run</code>, which does both. The HTTP API works without it.</p>
</main></body></html>
";

/// Serves the embedded console. Cheap to clone.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConsolePages;

impl ConsolePages {
    /// The console's pages.
    pub fn new() -> Self {
        Self
    }

    /// Whether the console was built into this binary.
    pub fn is_built() -> bool {
        Built::get("index.html").is_some()
    }

    /// Whether `path` is the console's: [`ConsolePages::answer`] answers it, whatever the
    /// method.
    pub fn owns(path: &str) -> bool {
        path == "/" || path == "/console" || path.starts_with(PREFIX)
    }

    /// The answer to a request for `path` with `method`, or `None` when the path is not the
    /// console's (the API answers it).
    pub fn answer(&self, method: &Method, path: &str) -> Option<Response<Bytes>> {
        if !Self::owns(path) {
            return None;
        }
        let Some(rest) = path.strip_prefix(PREFIX) else {
            return Some(redirect(PREFIX));
        };
        if method != Method::GET && method != Method::HEAD {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "405 Method Not Allowed\n");
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return Some(response);
        }
        let response = if !Self::is_built() {
            page(Cow::Borrowed(NOT_BUILT.as_bytes()))
        } else if rest.is_empty() || rest == "index.html" {
            index()
        } else if let Some(file) = Built::get(rest).filter(|_| !rest.contains("..")) {
            let mut response = Response::new(Bytes::from(file.data.into_owned()));
            let mime = file.metadata.mimetype();
            if let Ok(value) = HeaderValue::from_str(mime) {
                response.headers_mut().insert(header::CONTENT_TYPE, value);
            }
            let cache = if rest.starts_with("assets/") {
                "public, max-age=31536000, immutable"
            } else {
                "no-cache"
            };
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
            response
        } else if looks_like_a_file(rest) {
            plain(StatusCode::NOT_FOUND, "404 Not Found\n")
        } else {
            index()
        };
        Some(secured(response))
    }
}

/// A path whose last segment has an extension (`app.js`, `logo.svg`) names a file: missing, it
/// is a 404, never the app.
fn looks_like_a_file(rest: &str) -> bool {
    rest.starts_with("assets/")
        || rest
            .rsplit('/')
            .next()
            .is_some_and(|last| last.contains('.'))
}

/// `index.html` with a fresh nonce.
fn index() -> Response<Bytes> {
    match Built::get("index.html") {
        Some(file) => page(file.data),
        None => page(Cow::Borrowed(NOT_BUILT.as_bytes())),
    }
}

/// An HTML page, its nonce placeholder replaced by a fresh nonce, which its CSP allows.
fn page(html: Cow<'static, [u8]>) -> Response<Bytes> {
    let mut random = [0u8; 18];
    rand::rng().fill_bytes(&mut random);
    let nonce = base64::engine::general_purpose::STANDARD.encode(random);
    let text = String::from_utf8_lossy(&html).replace(NONCE_PLACEHOLDER, &nonce);
    let mut response = Response::new(Bytes::from(text));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(csp) = HeaderValue::from_str(&content_security_policy(&nonce)) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    response
}

/// The policy of every page: scripts and everything else only from the server itself, no
/// inline script, styles from the server and the elements carrying this response's nonce.
pub fn content_security_policy(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self'; style-src 'self' 'nonce-{nonce}'; \
         img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; \
         base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )
}

/// The headers every answer of the console carries.
fn secured(mut response: Response<Bytes>) -> Response<Bytes> {
    let headers = response.headers_mut();
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
        );
    }
    response
}

fn redirect(to: &'static str) -> Response<Bytes> {
    let mut response = Response::new(Bytes::new());
    *response.status_mut() = StatusCode::FOUND;
    response
        .headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static(to));
    secured(response)
}

fn plain(status: StatusCode, text: &'static str) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from_static(text.as_bytes()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    secured(response)
}

/// As a `tower::Service`: the console's answer, or a plain 404 for a path that is not the
/// console's (an embedding program routes those to the API first).
impl<B> tower_service::Service<Request<B>> for ConsolePages {
    type Response = Response<Bytes>;
    type Error = Infallible;
    type Future = Ready<Result<Response<Bytes>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let answer = self
            .answer(request.method(), request.uri().path())
            .unwrap_or_else(|| plain(StatusCode::NOT_FOUND, "404 Not Found\n"));
        ready(Ok(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_the_prefix_are_not_the_consoles() {
        let pages = ConsolePages::new();
        assert!(pages.answer(&Method::GET, "/api/v1/console/me").is_none());
        assert!(pages.answer(&Method::GET, "/consoles").is_none());
        assert!(pages.answer(&Method::GET, "/healthz").is_none());
        let root = pages.answer(&Method::GET, "/").expect("the root redirects");
        assert_eq!(root.status(), StatusCode::FOUND);
        assert_eq!(root.headers()[header::LOCATION], "/console/");
        let post = pages
            .answer(&Method::POST, "/console/queries")
            .expect("the console's");
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    }

    #[test]
    fn files_are_told_from_pages() {
        assert!(looks_like_a_file("assets/index-abc.js"));
        assert!(looks_like_a_file("assets/whatever"));
        assert!(looks_like_a_file("favicon.svg"));
        assert!(!looks_like_a_file("queries/qry_01"));
        assert!(!looks_like_a_file("databases"));
    }

    #[test]
    fn every_page_has_a_fresh_nonce_in_its_policy() {
        let a = page(Cow::Borrowed(
            b"<meta name=\"csp-nonce\" content=\"__CSP_NONCE__\">",
        ));
        let b = page(Cow::Borrowed(
            b"<meta name=\"csp-nonce\" content=\"__CSP_NONCE__\">",
        ));
        let nonce_of = |r: &Response<Bytes>| {
            let body = std::str::from_utf8(r.body()).unwrap().to_owned();
            let nonce = body.split('"').nth(3).unwrap().to_owned();
            let csp = r.headers()[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .to_owned();
            assert!(csp.contains(&format!("'nonce-{nonce}'")), "{csp}");
            assert!(csp.contains("script-src 'self';"), "{csp}");
            assert!(!csp.contains("unsafe"), "{csp}");
            nonce
        };
        assert_ne!(nonce_of(&a), nonce_of(&b));
    }
}
