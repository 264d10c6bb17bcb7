//! OAuth 2.1 authorization for MCP's HTTP transports (MCP "Authorization", 2025-03-26 to 2025-11-25).
//!
//! [`OAuthProvider`] implements mcp-transport's [`AuthProvider`](mcp_transport::AuthProvider)
//! hook: on a 401 it parses the challenge, finds the protected resource
//! metadata (RFC 9728) and the authorization server metadata (RFC 8414 /
//! OpenID Connect Discovery, with the 2025-03-26 fallbacks), identifies the
//! client (pre-registered, client ID metadata document, or dynamic
//! registration), and runs the authorization code grant with PKCE S256
//! through the host's [`Interaction`], the client credentials grant, or a
//! JWT bearer grant (cross-app access, workload identity federation).
//! Where the authorization server offers DPoP (RFC 9449) with ES256, tokens
//! are bound to a key of the client's and every request carries a proof.
//! Tokens live in a [`TokenStore`] keyed by server and issuer.
//!
//! The discovery steps are plain functions, so a host can see where the
//! provider will look before anything is fetched:
//!
//! ```
//! use mcp_client_oauth::{Challenge, authorization_server_metadata_urls, protected_resource_metadata_urls};
//! use url::Url;
//!
//! // The server's 401 names its protected resource metadata and the scope it needs.
//! let server = Url::parse("https://mcp.example.com/mcp")?;
//! let challenge = Challenge::parse(
//!     r#"Bearer resource_metadata="/.well-known/oauth-protected-resource/mcp", scope="files:read""#,
//! );
//! assert_eq!(challenge.scope.as_deref(), Some("files:read"));
//! let resource: Vec<String> = protected_resource_metadata_urls(&server, &challenge)
//!     .iter()
//!     .map(Url::to_string)
//!     .collect();
//! assert_eq!(resource, [
//!     "https://mcp.example.com/.well-known/oauth-protected-resource/mcp", // named by the challenge
//!     "https://mcp.example.com/.well-known/oauth-protected-resource/mcp", // path-based
//!     "https://mcp.example.com/.well-known/oauth-protected-resource",     // root
//! ]);
//! // The metadata names the issuer; its own metadata is looked for with
//! // RFC 8414 path insertion first.
//! let issuer = Url::parse("https://auth.example.com/tenant")?;
//! let first = &authorization_server_metadata_urls(&issuer)[0];
//! assert_eq!(first.as_str(), "https://auth.example.com/.well-known/oauth-authorization-server/tenant");
//! # Ok::<(), url::ParseError>(())
//! ```
//!
//! Modules:
//! - `challenge`: `WWW-Authenticate` parsing.
//! - `discovery`: metadata discovery and resource matching.
//! - `provider`: the provider and its grants.
//! - `store`: the store trait, memory and file stores.
//! - `crypto`: randomness, PKCE, ES256 assertions.
//! - `dpop`: DPoP keys and proofs (RFC 9449).
//! - `http`: the HTTP client to authorization servers.
//!
//! **Invariant:** no token, secret, code or verifier is ever logged, shown
//! by `Debug`, or put in an error ([`Secret`]).

mod challenge;
mod crypto;
mod discovery;
mod dpop;
mod error;
mod http;
mod provider;
mod secret;
mod store;

pub use challenge::Challenge;
pub use discovery::{
    AuthorizationServerMetadata, ProtectedResourceMetadata, authorization_server_metadata_urls,
    canonical_resource, protected_resource_metadata_urls, resource_matches,
};
pub use error::OAuthError;
pub use provider::{
    Grant, IdentityAssertionGrant, Interaction, OAuthOptions, OAuthProvider, WorkloadAssertion,
};
pub use secret::Secret;
pub use store::{
    ClientRegistration, FileTokenStore, MemoryTokenStore, StoreKey, StoredCredentials, TokenStore,
    Tokens,
};
