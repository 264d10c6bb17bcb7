//! Finding the authorization server: protected resource metadata (RFC 9728), authorization server metadata (RFC 8414, OpenID Connect Discovery), and the 2025-03-26 fallbacks.

use serde::Deserialize;
use url::Url;

use crate::OAuthError;
use crate::challenge::Challenge;
use crate::http::{HttpClient, shown};

/// RFC 9728 §2: the fields of protected resource metadata a client uses.
#[derive(Debug, Clone, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The resource identifier; must match the server (§3.3).
    pub resource: Option<String>,
    /// The authorization servers' issuer URLs.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// Scopes the resource understands.
    pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 §2 (and OpenID Connect Discovery): the fields a client uses.
#[derive(Debug, Clone, Default, Deserialize)]
#[non_exhaustive]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier.
    pub issuer: String,
    /// Where the user authorizes.
    pub authorization_endpoint: Option<String>,
    /// Where codes and credentials become tokens.
    pub token_endpoint: Option<String>,
    /// RFC 7591 dynamic client registration.
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows.
    pub scopes_supported: Option<Vec<String>>,
    /// Grant types; absent means `authorization_code` and `implicit`.
    pub grant_types_supported: Option<Vec<String>>,
    /// PKCE methods; a client refuses to go on without `S256`.
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// Absent means `client_secret_basic` (RFC 8414 §2).
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// Client ID metadata documents (URL client ids) are accepted.
    pub client_id_metadata_document_supported: Option<bool>,
    /// RFC 9207: the authorization response carries `iss`.
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// RFC 9449 §5.1: the DPoP proof algorithms the server accepts; this
    /// client binds its tokens with DPoP when `ES256` is among them.
    pub dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// What discovery found for one MCP server.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The `resource` parameter to send (RFC 8707).
    pub(crate) resource: String,
    /// `scopes_supported` of the protected resource metadata.
    pub(crate) resource_scopes: Option<Vec<String>>,
    pub(crate) metadata: AuthorizationServerMetadata,
    /// The metadata came from discovery (not the 2025-03-26 endpoint
    /// defaults), so its PKCE list is authoritative.
    pub(crate) has_metadata: bool,
}

/// Where protected resource metadata is looked for, in order: the
/// challenge's `resource_metadata`, then the path-based well-known URL,
/// then the root one (MCP 2025-11-25 "Protected Resource Metadata Discovery
/// Requirements").
pub fn protected_resource_metadata_urls(server: &Url, challenge: &Challenge) -> Vec<Url> {
    let mut out = Vec::new();
    if let Some(url) = challenge
        .resource_metadata
        .as_deref()
        .and_then(|u| server.join(u).ok())
        && matches!(url.scheme(), "http" | "https")
    {
        out.push(url);
    }
    let path = server.path().trim_end_matches('/');
    if !path.is_empty() {
        out.push(well_known(
            server,
            &format!("/.well-known/oauth-protected-resource{path}"),
        ));
    }
    out.push(well_known(server, "/.well-known/oauth-protected-resource"));
    out
}

/// Where authorization server metadata is looked for, in the order of MCP
/// 2025-11-25 "Authorization Server Metadata Discovery": for an issuer with
/// a path, RFC 8414 path insertion, then OpenID Connect path insertion,
/// then OpenID Connect path appending; without a path, RFC 8414 then
/// OpenID Connect.
pub fn authorization_server_metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        vec![
            well_known(issuer, "/.well-known/oauth-authorization-server"),
            well_known(issuer, "/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            well_known(
                issuer,
                &format!("/.well-known/oauth-authorization-server{path}"),
            ),
            well_known(issuer, &format!("/.well-known/openid-configuration{path}")),
            well_known(issuer, &format!("{path}/.well-known/openid-configuration")),
        ]
    }
}

/// Does the metadata's `resource` identify `server`? Same origin, and the
/// resource's path is the server's path or a parent of it on a segment
/// boundary (metadata found at the root well-known URL names the origin).
pub fn resource_matches(server: &Url, resource: &str) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.scheme() != server.scheme()
        || resource.host_str().map(str::to_ascii_lowercase)
            != server.host_str().map(str::to_ascii_lowercase)
        || resource.port_or_known_default() != server.port_or_known_default()
        || resource.fragment().is_some()
    {
        return false;
    }
    let want = server.path().trim_end_matches('/');
    let have = resource.path().trim_end_matches('/');
    want == have || have.is_empty() || want.starts_with(&format!("{have}/"))
}

/// The canonical URI of an MCP server for the `resource` parameter (MCP
/// "Canonical Server URI"): no fragment, no query, no trailing slash.
pub fn canonical_resource(server: &Url) -> String {
    let mut url = server.clone();
    url.set_fragment(None);
    url.set_query(None);
    let text = url.to_string();
    text.strip_suffix('/').map(str::to_owned).unwrap_or(text)
}

/// Runs discovery for `server` after a refusal that carried `challenge`.
pub(crate) async fn discover(
    http: &HttpClient,
    server: &Url,
    challenge: &Challenge,
) -> Result<Discovered, OAuthError> {
    match find_protected_resource_metadata(http, server, challenge).await? {
        Some(prm) => {
            let resource = match &prm.resource {
                Some(resource) if !resource_matches(server, resource) => {
                    return Err(OAuthError::ResourceMismatch {
                        expected: canonical_resource(server),
                        found: resource.clone(),
                    });
                }
                Some(resource) => resource.clone(),
                None => canonical_resource(server),
            };
            let issuer_text =
                prm.authorization_servers
                    .first()
                    .ok_or_else(|| OAuthError::Metadata {
                        url: canonical_resource(server),
                        message: "protected resource metadata lists no authorization server"
                            .to_owned(),
                    })?;
            let issuer = Url::parse(issuer_text).map_err(|_| OAuthError::Metadata {
                url: canonical_resource(server),
                message: "authorization server is not a URL".to_owned(),
            })?;
            let metadata = find_authorization_server_metadata(http, &issuer)
                .await?
                .ok_or_else(|| OAuthError::NoMetadata {
                    issuer: issuer_text.clone(),
                })?;
            Ok(Discovered {
                resource,
                resource_scopes: prm.scopes_supported,
                metadata,
                has_metadata: true,
            })
        }
        None => legacy_discovery(http, server).await,
    }
}

async fn find_protected_resource_metadata(
    http: &HttpClient,
    server: &Url,
    challenge: &Challenge,
) -> Result<Option<ProtectedResourceMetadata>, OAuthError> {
    for url in protected_resource_metadata_urls(server, challenge) {
        if let Some(prm) = fetch_json::<ProtectedResourceMetadata>(http, &url).await? {
            tracing::debug!(url = %shown(&url), "found protected resource metadata");
            return Ok(Some(prm));
        }
    }
    Ok(None)
}

async fn find_authorization_server_metadata(
    http: &HttpClient,
    issuer: &Url,
) -> Result<Option<AuthorizationServerMetadata>, OAuthError> {
    let expected = issuer.as_str().trim_end_matches('/');
    for url in authorization_server_metadata_urls(issuer) {
        if let Some(metadata) = fetch_json::<AuthorizationServerMetadata>(http, &url).await? {
            // RFC 8414 §3.3: the issuer must be the one the URL was made from.
            if metadata.issuer.trim_end_matches('/') != expected {
                return Err(OAuthError::Metadata {
                    url: shown(&url),
                    message: format!("issuer {:?} is not {expected:?}", metadata.issuer),
                });
            }
            return Ok(Some(metadata));
        }
    }
    Ok(None)
}

/// MCP 2025-03-26 "Server Metadata Discovery": the authorization base URL
/// is the server URL with its path dropped; metadata at its RFC 8414
/// well-known URL, else the default endpoints `/authorize`, `/token`,
/// `/register`.
async fn legacy_discovery(http: &HttpClient, server: &Url) -> Result<Discovered, OAuthError> {
    let base = well_known(server, "/");
    let url = well_known(server, "/.well-known/oauth-authorization-server");
    let (metadata, has_metadata) =
        match fetch_json::<AuthorizationServerMetadata>(http, &url).await? {
            Some(metadata) => (metadata, true),
            None => {
                let endpoint = |path: &str| Some(well_known(server, path).to_string());
                (
                    AuthorizationServerMetadata {
                        issuer: canonical_resource(&base),
                        authorization_endpoint: endpoint("/authorize"),
                        token_endpoint: endpoint("/token"),
                        registration_endpoint: endpoint("/register"),
                        ..Default::default()
                    },
                    false,
                )
            }
        };
    Ok(Discovered {
        resource: canonical_resource(server),
        resource_scopes: None,
        metadata,
        has_metadata,
    })
}

/// GETs a JSON document: `Some` on a 2xx that parses, `None` on an HTTP
/// error status or a network failure (the next candidate is tried), an
/// error on a 2xx that is not the expected document, and the proxy's
/// error when the proxy failed (every candidate is on the same origin,
/// which the proxy would refuse again; the host must hear of the proxy,
/// not of missing metadata).
async fn fetch_json<T: serde::de::DeserializeOwned>(
    http: &HttpClient,
    url: &Url,
) -> Result<Option<T>, OAuthError> {
    let response = match http.get(url).await {
        Ok(response) => response,
        Err(error @ OAuthError::Proxy { .. }) => return Err(error),
        Err(error) => {
            tracing::debug!(%error, "metadata request failed");
            return Ok(None);
        }
    };
    if !response.is_success() {
        return Ok(None);
    }
    serde_json::from_slice(&response.body)
        .map(Some)
        .map_err(|e| OAuthError::Metadata {
            url: shown(url),
            message: e.to_string(),
        })
}

/// `path` on the origin of `base`.
fn well_known(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(path);
    url.set_query(None);
    url.set_fragment(None);
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(list: Vec<Url>) -> Vec<String> {
        list.into_iter().map(|u| u.to_string()).collect()
    }

    #[test]
    fn candidate_orders() {
        let server = Url::parse("https://h.example/mcp").unwrap();
        assert_eq!(
            urls(protected_resource_metadata_urls(
                &server,
                &Challenge::default()
            )),
            [
                "https://h.example/.well-known/oauth-protected-resource/mcp",
                "https://h.example/.well-known/oauth-protected-resource",
            ]
        );
        let challenge = Challenge::parse(r#"Bearer resource_metadata="/custom.json""#);
        assert_eq!(
            protected_resource_metadata_urls(&server, &challenge)[0].as_str(),
            "https://h.example/custom.json"
        );
        let issuer = Url::parse("https://as.example/tenant1").unwrap();
        assert_eq!(
            urls(authorization_server_metadata_urls(&issuer)),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration",
            ]
        );
        let issuer = Url::parse("https://as.example/").unwrap();
        assert_eq!(
            urls(authorization_server_metadata_urls(&issuer)),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn resource_matching() {
        let server = Url::parse("http://localhost:3000/mcp").unwrap();
        assert!(resource_matches(&server, "http://localhost:3000/mcp"));
        assert!(resource_matches(&server, "http://LOCALHOST:3000/mcp/"));
        assert!(resource_matches(&server, "http://localhost:3000"));
        assert!(!resource_matches(&server, "http://localhost:3000/mc"));
        assert!(!resource_matches(
            &server,
            "http://localhost:3000/mcp/other"
        ));
        assert!(!resource_matches(&server, "https://evil.example.com/mcp"));
        assert!(!resource_matches(&server, "http://localhost:3001/mcp"));
        assert_eq!(canonical_resource(&server), "http://localhost:3000/mcp");
        assert_eq!(
            canonical_resource(&Url::parse("HTTPS://H.example/#x").unwrap()),
            "https://h.example"
        );
    }
}
