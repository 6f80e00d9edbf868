//! `GET /docs`: interactive API documentation. Swagger UI (the `swagger-ui-dist` package of
//! the npm registry, Apache-2.0, version in `assets/swagger-ui/VERSION`) is embedded in the
//! binary, so the page needs nothing from outside at run time; it reads the service's
//! `/openapi.json` and calls the API from the browser with the credential its *Authorize*
//! dialog is given.

use bytes::Bytes;
use dbconsole_core::{ApiError, ResponseBody};
use http::{HeaderValue, Method, Response, StatusCode, header};

/// The page and its assets, below this path.
pub const DOCS: &str = "/docs";

const BUNDLE: &[u8] = include_bytes!("../assets/swagger-ui/swagger-ui-bundle.js");
const CSS: &[u8] = include_bytes!("../assets/swagger-ui/swagger-ui.css");

const PAGE: &str = r##"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>dbconsole API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
"##;

const INIT: &str = r##"window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  docExpansion: "list",
  tryItOutEnabled: false,
  persistAuthorization: false,
});
"##;

/// The answer for a path below [`DOCS`], or `None` when the path is not one of the page's.
pub fn answer(method: &Method, path: &str) -> Option<Response<ResponseBody>> {
    let (body, content_type): (Bytes, &str) = match path {
        "/docs" | "/docs/" => (
            Bytes::from_static(PAGE.as_bytes()),
            "text/html; charset=utf-8",
        ),
        "/docs/init.js" => (
            Bytes::from_static(INIT.as_bytes()),
            "text/javascript; charset=utf-8",
        ),
        "/docs/swagger-ui-bundle.js" => {
            (Bytes::from_static(BUNDLE), "text/javascript; charset=utf-8")
        }
        "/docs/swagger-ui.css" => (Bytes::from_static(CSS), "text/css; charset=utf-8"),
        _ => return None,
    };
    if method != Method::GET && method != Method::HEAD {
        return Some(ApiError::MethodNotAllowed(vec![Method::GET, Method::HEAD]).into_response());
    }
    let mut response = Response::new(ResponseBody::full(body));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // Everything the page loads is its own: scripts and styles from /docs, calls to this server.
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
        ),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_its_assets() {
        for (path, kind) in [
            ("/docs", "text/html"),
            ("/docs/init.js", "text/javascript"),
            ("/docs/swagger-ui-bundle.js", "text/javascript"),
            ("/docs/swagger-ui.css", "text/css"),
        ] {
            let response = answer(&Method::GET, path).expect(path);
            assert_eq!(response.status(), StatusCode::OK);
            let content_type = response.headers()[header::CONTENT_TYPE].to_str().unwrap();
            assert!(content_type.starts_with(kind), "{path}: {content_type}");
        }
        assert!(BUNDLE.len() > 100_000, "the Swagger UI bundle is embedded");
        assert!(answer(&Method::GET, "/docs/other.js").is_none());
        let post = answer(&Method::POST, "/docs").unwrap();
        assert_eq!(post.status(), StatusCode::METHOD_NOT_ALLOWED);
    }
}
