//! The small HTTP client for metadata, registration and token requests: hyper over mcp-transport's connector (its proxy tunnel, rustls with ring), no redirects followed, bounded bodies.

use std::time::Duration;

use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderName, HeaderValue};
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use mcp_transport::{ProxyConfig, ProxyConnector, TransportError};
use url::Url;

use crate::{OAuthError, Secret};

/// Metadata and token responses are small; anything longer is refused.
const BODY_LIMIT: usize = 1024 * 1024;

/// One answer, fully read.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) body: Bytes,
    /// The `WWW-Authenticate` header, when it is valid text.
    pub(crate) www_authenticate: Option<String>,
    /// The `DPoP-Nonce` header (RFC 9449 §8), when it is a valid nonce.
    pub(crate) dpop_nonce: Option<String>,
}

impl Response {
    pub(crate) fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The OAuth `error` code of an error body, as sent.
    pub(crate) fn oauth_error_code(&self) -> Option<String> {
        let value: serde_json::Value = serde_json::from_slice(&self.body).ok()?;
        Some(cut(value.get("error")?.as_str()?, 64))
    }

    /// The OAuth `error` (and description) of an error body, cut short.
    pub(crate) fn oauth_error(&self) -> Option<String> {
        let value: serde_json::Value = serde_json::from_slice(&self.body).ok()?;
        let error = value.get("error")?.as_str()?;
        let mut out = cut(error, 64);
        if let Some(description) = value.get("error_description").and_then(|d| d.as_str()) {
            out.push_str(": ");
            out.push_str(&cut(description, 200));
        }
        Some(out)
    }
}

/// How a request authenticates the client (RFC 6749 §2.3.1).
#[derive(Clone, Copy)]
pub(crate) enum ClientAuth<'a> {
    None,
    /// No client authentication; an MCP request's `Accept`.
    Mcp,
    Basic {
        id: &'a str,
        secret: &'a str,
    },
}

#[derive(Clone, Debug)]
pub(crate) struct HttpClient {
    client: Client<HttpsConnector<ProxyConnector>, Full<Bytes>>,
    timeout: Duration,
}

impl HttpClient {
    /// A client trusting the webpki roots plus `extra_root_certificates`
    /// (PEM) and reaching servers through `proxy`, over the MCP transport's
    /// own connector: an authorization server is reached the way the MCP
    /// server is.
    pub(crate) fn new(
        timeout: Duration,
        extra_root_certificates: &[String],
        proxy: ProxyConfig,
    ) -> Result<Self, OAuthError> {
        let roots = mcp_transport::tls_root_store(extra_root_certificates)
            .map_err(|e| OAuthError::Config(e.to_string()))?;
        let https = mcp_transport::https_connector(roots, proxy, timeout)
            .map_err(|e| OAuthError::Config(e.to_string()))?;
        Ok(HttpClient {
            client: Client::builder(TokioExecutor::new()).build(https),
            timeout,
        })
    }

    pub(crate) async fn get(&self, url: &Url) -> Result<Response, OAuthError> {
        self.send(Method::GET, url, None, ClientAuth::None, None)
            .await
    }

    pub(crate) async fn post_form(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        auth: ClientAuth<'_>,
    ) -> Result<Response, OAuthError> {
        self.post_form_with_proof(url, form, auth, None).await
    }

    /// A form POST carrying `proof` in the `DPoP` header (RFC 9449 §5).
    pub(crate) async fn post_form_with_proof(
        &self,
        url: &Url,
        form: &[(&str, &str)],
        auth: ClientAuth<'_>,
        proof: Option<&Secret>,
    ) -> Result<Response, OAuthError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        self.send(
            Method::POST,
            url,
            Some(("application/x-www-form-urlencoded", Bytes::from(body))),
            auth,
            proof,
        )
        .await
    }

    pub(crate) async fn post_json(
        &self,
        url: &Url,
        body: &serde_json::Value,
    ) -> Result<Response, OAuthError> {
        self.post_json_as(url, body, ClientAuth::None).await
    }

    /// An unauthenticated MCP request (a JSON-RPC POST accepting JSON or an
    /// event stream), to read the server's challenge.
    pub(crate) async fn probe_mcp(
        &self,
        url: &Url,
        body: &serde_json::Value,
    ) -> Result<Response, OAuthError> {
        self.post_json_as(url, body, ClientAuth::Mcp).await
    }

    async fn post_json_as(
        &self,
        url: &Url,
        body: &serde_json::Value,
        auth: ClientAuth<'_>,
    ) -> Result<Response, OAuthError> {
        let body = Bytes::from(body.to_string());
        self.send(
            Method::POST,
            url,
            Some(("application/json", body)),
            auth,
            None,
        )
        .await
    }

    async fn send(
        &self,
        method: Method,
        url: &Url,
        body: Option<(&'static str, Bytes)>,
        auth: ClientAuth<'_>,
        proof: Option<&Secret>,
    ) -> Result<Response, OAuthError> {
        let shown = shown(url);
        let fail = |message: String| OAuthError::Http {
            url: shown.clone(),
            message,
        };
        let uri: http::Uri = url
            .as_str()
            .parse()
            .map_err(|_| fail("not a valid HTTP URI".to_owned()))?;
        let (content_type, body) = match body {
            Some((t, b)) => (Some(t), b),
            None => (None, Bytes::new()),
        };
        let mut request = Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        let accept = if matches!(auth, ClientAuth::Mcp) {
            "application/json, text/event-stream"
        } else {
            "application/json"
        };
        headers.insert(ACCEPT, HeaderValue::from_static(accept));
        if let Some(t) = content_type {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(t));
        }
        if let ClientAuth::Basic { id, secret } = auth {
            // RFC 6749 §2.3.1: both halves are form-urlencoded first.
            let pair = format!("{}:{}", form_encode(id), form_encode(secret));
            let encoded = base64::engine::general_purpose::STANDARD.encode(pair);
            let mut value = HeaderValue::from_str(&format!("Basic {encoded}"))
                .map_err(|_| fail("invalid client credentials".to_owned()))?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        if let Some(proof) = proof {
            let mut value = HeaderValue::from_str(proof.expose())
                .map_err(|_| fail("invalid DPoP proof".to_owned()))?;
            value.set_sensitive(true);
            headers.insert(HeaderName::from_static("dpop"), value);
        }
        let response = tokio::time::timeout(self.timeout, self.client.request(request))
            .await
            .map_err(|_| fail("timed out".to_owned()))?
            .map_err(|e| match ProxyConnector::proxy_failure(&e) {
                Some(TransportError::Proxy {
                    proxy,
                    status,
                    message,
                }) => OAuthError::Proxy {
                    url: shown.clone(),
                    proxy,
                    status,
                    message,
                },
                _ => fail(error_chain(&e)),
            })?;
        let status = response.status().as_u16();
        let www_authenticate = response
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let dpop_nonce = response
            .headers()
            .get(crate::dpop::NONCE_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(crate::dpop::valid_nonce);
        let mut body = response.into_body();
        let mut out = BytesMut::new();
        loop {
            let frame = tokio::time::timeout(self.timeout, body.frame())
                .await
                .map_err(|_| fail("timed out reading the body".to_owned()))?;
            let Some(frame) = frame else { break };
            let frame = frame.map_err(|e| fail(error_chain(&e)))?;
            if let Ok(data) = frame.into_data() {
                if out.len() + data.len() > BODY_LIMIT {
                    return Err(fail(format!("body longer than {BODY_LIMIT} bytes")));
                }
                out.extend_from_slice(&data);
            }
        }
        Ok(Response {
            status,
            body: out.freeze(),
            www_authenticate,
            dpop_nonce,
        })
    }
}

/// A URL as errors show it: without query or fragment (which may hold a
/// code or state).
pub(crate) fn shown(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}

fn form_encode(value: &str) -> String {
    url::form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

fn cut(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}
