//! OAuth 2.1 authorization for MCP's HTTP transports (MCP "Authorization", 2025-03-26 to 2025-11-25).
//!
#![doc = include_str!("../README.md")]
//!
//! ## How it fits
//!
//! [`OAuthProvider`] is the [`AuthProvider`](mcp_transport::AuthProvider) a
//! host attaches to mcp-transport's HTTP transport, configured by
//! [`OAuthOptions`]: the [`Grant`] chooses the flow (the authorization code
//! grant through the host's [`Interaction`], client credentials, or a JWT
//! bearer grant for cross-app access and workload identity federation), a
//! [`TokenStore`] keeps the tokens ([`MemoryTokenStore`],
//! [`FileTokenStore`]), and every failure is an [`OAuthError`]. The
//! discovery steps ([`Challenge`], [`protected_resource_metadata_urls`],
//! [`authorization_server_metadata_urls`]) are public for hosts that show
//! where the provider looks, with the 2025-03-26 fallbacks.
//!
//! ## Modules
//!
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
#![cfg_attr(docsrs, feature(doc_cfg))]

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
