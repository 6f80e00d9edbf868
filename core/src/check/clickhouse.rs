//! ClickHouse: [`ClickhouseChecker`], with the clickhouse crate over HTTP, or HTTPS when `ssl`.
//!
//! The check runs `SELECT 1` with `execute()`, which reads no rows: the crate's row-type
//! validation asks for the `RowBinaryWithNamesAndTypes` format, which old servers (18.x) do not
//! know, and the check must work on those too. The HTTP client is built here (hyper-util with
//! hyper-rustls) so that TLS follows the same rules as every other adapter and a tunnel only
//! changes where the TCP connection goes: the URL, the `Host` header and the TLS server name
//! stay the database's. Connections are not pooled: the check's connection closes with it.

use std::error::Error as StdError;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use async_trait::async_trait;
use http::Uri;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tower_service::Service;

use super::{CheckTarget, ConnectionChecker, error_chain, tls};

/// Checks ClickHouse credentials.
#[derive(Clone, Debug, Default)]
pub struct ClickhouseChecker {}

impl ClickhouseChecker {
    /// The checker.
    pub fn new() -> Self {
        Self {}
    }
}

#[async_trait]
impl ConnectionChecker for ClickhouseChecker {
    async fn check(&self, target: &CheckTarget) -> Result<(), String> {
        client(target, false)?
            .query("SELECT 1")
            .execute()
            .await
            .map_err(|error| error_chain(&error))
    }
}

/// The client the checker uses for `target` (same TLS and tunnel): `keep_alive` keeps idle
/// connections for the next query (a query runner's client), else each request has its own.
pub(crate) fn client(
    target: &CheckTarget,
    keep_alive: bool,
) -> Result<::clickhouse::Client, String> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let tcp = Via {
        http,
        via: target.connect_via,
    };
    let tls = if target.ssl {
        tls::client_config(target)?
    } else {
        tls::placeholder_config()?
    };
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp);
    let http_client = HyperClient::builder(TokioExecutor::new())
        .pool_max_idle_per_host(if keep_alive { 4 } else { 0 })
        .build(connector);
    let mut client = ::clickhouse::Client::with_http_client(http_client)
        .with_url(url(target))
        .with_user(target.username.clone())
        .with_database(target.database.clone());
    if let Some(password) = &target.password {
        client = client.with_password(String::from_utf8_lossy(password.expose()));
    }
    Ok(client)
}

fn url(target: &CheckTarget) -> String {
    let scheme = if target.ssl { "https" } else { "http" };
    let host = &target.host;
    if host.contains(':') && !host.starts_with('[') {
        format!("{scheme}://[{host}]:{}", target.port)
    } else {
        format!("{scheme}://{host}:{}", target.port)
    }
}

type BoxError = Box<dyn StdError + Send + Sync>;

/// The TCP connector: to the URL's host and port, or to the tunnel's local address.
#[derive(Clone, Debug)]
struct Via {
    http: HttpConnector,
    via: Option<SocketAddr>,
}

impl Service<Uri> for Via {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Service::<Uri>::poll_ready(&mut self.http, cx).map_err(Into::into)
    }

    fn call(&mut self, destination: Uri) -> Self::Future {
        let destination = match self.via {
            Some(via) => match Uri::try_from(format!("http://{via}")) {
                Ok(uri) => uri,
                Err(error) => return Box::pin(async move { Err(error.into()) }),
            },
            None => destination,
        };
        let connecting = self.http.call(destination);
        Box::pin(async move { connecting.await.map_err(Into::into) })
    }
}
