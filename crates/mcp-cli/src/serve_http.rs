//! `mcpctl serve --http`: the gateway over Streamable HTTP on 127.0.0.1, for clients of both eras, behind a per-launch bearer token.
//!
//! The serving is mcp-transport's ([`mcp_transport::server::http`]): one
//! endpoint, `/mcp`, handshake-era sessions with `Mcp-Session-Id` (each
//! its own gateway connection; DELETE ends one and cancels its calls
//! upstream), 2026-07-28 requests each standing alone (closing the
//! response stream cancels the call), answers as JSON or as an SSE stream
//! when progress comes first, and the bounds (request bodies of 4 MiB, at
//! most 256 sessions, requests in flight, the bounded accept loop with
//! its header-read timeout and connection cap). This module wires the
//! gateway ([`Gateway`] is an `HttpApp`) to it with the policy every
//! listener of mcpctl has ([`LoopbackPolicy`]): `Host` must name the
//! listener and a present `Origin` must be its own (403 otherwise: no DNS
//! rebinding, no web page can drive it), and every request needs
//! `Authorization: Bearer <token>` with the token printed at launch, or a
//! path of `/mcp/<token>` for a client that can be given only a URL (401
//! otherwise).

use std::sync::Arc;

use mcp_toolbridge::Gateway;
use mcp_transport::server::{
    HttpServer, HttpServerOptions, Listener, ListenerOptions, LoopbackPolicy,
};
use tokio::net::TcpListener;

/// The MCP endpoint's path.
pub(crate) const ENDPOINT: &str = "/mcp";

/// Serves `gateway` on `listener` (bound to 127.0.0.1) until the future is
/// dropped, every request carrying `token`.
pub(crate) async fn serve(gateway: Gateway, listener: TcpListener, token: &str) {
    let port = listener.local_addr().map_or(0, |address| address.port());
    let policy = LoopbackPolicy::new(port).bearer_token(token, "mcpctl serve");
    let server = HttpServer::new(
        Arc::new(gateway),
        Arc::new(policy),
        HttpServerOptions::default().endpoint(ENDPOINT),
    );
    server
        .serve(Listener::new(listener, ListenerOptions::default()))
        .await;
}
