//! The server's [`IssuerClient`]: how the core's OIDC verifier and sign-in talk to the issuer,
//! over HTTPS (or HTTP, for an issuer on loopback) with the machine's roots. hyper's client
//! follows no redirect, so an issuer's answer can't send the server elsewhere; no body is
//! logged (a token endpoint's answer holds tokens, its request the client secret).

use bytes::Bytes;
use dbconsole_core::auth::oidc::{IssuerAnswer, IssuerClient, IssuerError};
use http::{Request, header};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

pub use dbconsole_core::auth::oidc::{OidcAuthenticator, OidcClient, OidcLogin, OidcOptions};

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Asks the issuer over HTTPS with the machine's root certificates.
#[derive(Debug)]
pub struct HttpsIssuer {
    http: HttpsClient,
}

impl HttpsIssuer {
    /// A client with the machine's roots (an error when they can't be read).
    pub fn new() -> std::io::Result<Self> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Self {
            http: Client::builder(TokioExecutor::new()).build(connector),
        })
    }

    async fn send(&self, request: Request<Full<Bytes>>) -> Result<IssuerAnswer, IssuerError> {
        let response = self
            .http
            .request(request)
            .await
            .map_err(|error| IssuerError(error.to_string()))?;
        let status = response.status().as_u16();
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|error| IssuerError(error.to_string()))?
            .to_bytes();
        Ok(IssuerAnswer { status, body })
    }
}

#[async_trait::async_trait]
impl IssuerClient for HttpsIssuer {
    async fn get(&self, url: &str) -> Result<IssuerAnswer, IssuerError> {
        let request = Request::get(url)
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|error| IssuerError(format!("the URL: {error}")))?;
        self.send(request).await
    }

    async fn post_form(&self, url: &str, form: String) -> Result<IssuerAnswer, IssuerError> {
        let request = Request::post(url)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(form)))
            .map_err(|error| IssuerError(format!("the URL: {error}")))?;
        self.send(request).await
    }
}
