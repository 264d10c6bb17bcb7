//! The endpoints that answered the era probe as handshake-era servers, remembered for the life of the process.
//!
//! MCP 2026-07-28 "Versioning" §Backward Compatibility: "The era
//! determination is a property of the server, not of an individual
//! request. Clients SHOULD cache the result for the lifetime of the server
//! process (stdio) or origin (HTTP) [...], re-probing if the cached
//! assumption later fails." Against a handshake-era server the Auto probe
//! (`server/discover`) costs a round trip on every connect that the answer
//! `initialize` gets does not need: a transport for an endpoint listed here
//! answers the probe itself, as undelivered, and the session goes straight
//! to `initialize`.
//!
//! An endpoint is listed only once both halves were seen on one
//! connection: its server refused the probe as a handshake-era server does
//! (400, 404 or 405 without a 2026-07-28 JSON-RPC error) and then
//! completed the `initialize` handshake. A transport that skips the probe
//! takes the endpoint off the list until its own handshake succeeds. A
//! server that moved to the 2026-07-28 era since and names its versions in
//! a -32022 to `initialize` (as that version asks of it) is switched to at
//! once (the 400 carrying that error is delivered as its answer); one that
//! refuses otherwise fails that one connect, and the next one probes it
//! again. Endpoints are told apart by their whole URL, not
//! just the origin, so two MCP endpoints of one host do not share an
//! answer. The list is bounded ([`CAPACITY`]); past it, it starts over.

use std::collections::HashSet;
use std::sync::Mutex;

use mcp_proto::sync::lock;

/// The most endpoints remembered at once.
const CAPACITY: usize = 256;

static HANDSHAKE_ERA: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Takes `endpoint` off the list; whether it was on it.
pub(crate) fn take(endpoint: &str) -> bool {
    lock(&HANDSHAKE_ERA)
        .as_mut()
        .is_some_and(|known| known.remove(endpoint))
}

/// Puts `endpoint` on the list.
pub(crate) fn remember(endpoint: &str) {
    let mut known = lock(&HANDSHAKE_ERA);
    let known = known.get_or_insert_with(HashSet::new);
    if known.len() >= CAPACITY && !known.contains(endpoint) {
        known.clear();
    }
    known.insert(endpoint.to_owned());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_taken_once_and_the_list_stays_bounded() {
        let endpoint = "http://127.0.0.1:9/eras-test";
        assert!(!take(endpoint));
        remember(endpoint);
        assert!(take(endpoint));
        assert!(!take(endpoint));
        for n in 0..CAPACITY + 1 {
            remember(&format!("http://127.0.0.1:9/eras-test-{n}"));
        }
        assert!(
            lock(&HANDSHAKE_ERA)
                .as_ref()
                .is_some_and(|k| k.len() <= CAPACITY)
        );
    }
}
