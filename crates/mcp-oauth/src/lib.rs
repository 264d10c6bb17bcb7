//! OAuth 2.1 authorization for MCP's HTTP transports (MCP "Authorization", 2025-03-26 to 2025-11-25).
//!
//! [`OAuthProvider`] implements mcp-transport's [`AuthProvider`](mcp_transport::AuthProvider)
//! hook: on a 401 it parses the challenge, finds the protected resource
//! metadata (RFC 9728) and the authorization server metadata (RFC 8414 /
//! OpenID Connect Discovery, with the 2025-03-26 fallbacks), identifies the
//! client (pre-registered, client ID metadata document, or dynamic
//! registration), and runs the authorization code grant with PKCE S256
//! through the host's [`Interaction`], or the client credentials grant.
//! Tokens live in a [`TokenStore`] keyed by server and issuer.
//!
//! Modules:
//! - `challenge`: `WWW-Authenticate` parsing.
//! - `discovery`: metadata discovery and resource matching.
//! - `provider`: the provider and its grants.
//! - `store`: the store trait, memory and file stores.
//! - `crypto`: randomness, PKCE, ES256 assertions.
//! - `http`: the HTTP client to authorization servers.
//!
//! **Invariant:** no token, secret, code or verifier is ever logged, shown
//! by `Debug`, or put in an error ([`Secret`]).

mod challenge;
mod crypto;
mod discovery;
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
pub use provider::{Grant, IdentityAssertionGrant, Interaction, OAuthOptions, OAuthProvider};
pub use secret::Secret;
pub use store::{
    ClientRegistration, FileTokenStore, MemoryTokenStore, StoreKey, StoredCredentials, TokenStore,
    Tokens,
};
