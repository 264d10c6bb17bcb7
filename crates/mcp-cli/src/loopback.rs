//! What every listener mcpctl opens on 127.0.0.1 checks: the `Host` and `Origin` of each request and a per-launch secret, compared in constant time.
//!
//! A listener bound to loopback is still reachable from a web page the
//! person has open: a DNS name rebound to 127.0.0.1 carries that name in
//! `Host`, and a cross-site request carries the page's `Origin`. Both are
//! refused here, which with a secret the page cannot know keeps browsers
//! out of `mcpctl ui` and `mcpctl serve --http`.

use http::HeaderMap;

/// Refuses a request that is not addressed to this listener: `Host` must
/// be `127.0.0.1:PORT` or `localhost:PORT` (a rebound DNS name fails here),
/// and an `Origin`, when present, must be `http://` one of the same (a
/// cross-site request fails here). The error is the refusal's text. The
/// check is mcp-transport's loopback policy, which `serve --http` uses whole.
pub(crate) fn check_host_and_origin(port: u16, headers: &HeaderMap) -> Result<(), &'static str> {
    mcp_transport::server::http::check_host_and_origin(port, headers)
}

/// Whether `given` is the launch's secret, compared without stopping at
/// the first difference.
pub(crate) fn same_secret(given: &str, secret: &str) -> bool {
    mcp_transport::server::http::same_secret(given, secret)
}

/// A fresh secret: 128 random bits from the operating system, as hex.
pub(crate) fn new_secret() -> String {
    mcp_transport::server::http::new_secret()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_hex_and_compare_whole() {
        let a = new_secret();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, new_secret());
        assert!(same_secret(&a, &a.clone()));
        assert!(!same_secret(&a[..31], &a));
        assert!(!same_secret("", &a));
    }
}
