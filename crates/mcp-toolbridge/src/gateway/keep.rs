//! Kept names ([`ToolNaming::Keep`](super::ToolNaming::Keep)): every server's tools, prompts, resources and templates under the server's own names, and the refusal of a name two servers share.
//!
//! A client of a transparent gateway calls a tool, gets a prompt or reads a
//! resource by the name the server gave it ("Server/Tools", "Server/Prompts",
//! "Server/Resources"). With several servers behind the gateway two of them
//! may use the same name; such a name could reach only one of them, so it
//! is refused instead: the listing of its kind (and a request naming it)
//! is an error naming both servers and the name ([`NameCollision`]). The
//! identity of each kind is what a request names: a tool's or prompt's
//! `name`, a resource's `uri`, a template's `uriTemplate`.

use std::collections::HashMap;
use std::fmt;

use mcp_proto::ErrorObject;
use mcp_proto::jsonrpc::error_codes;
use mcp_proto::text::{NAME_LIMIT, error_text};

/// Two servers behind a gateway with kept names
/// ([`ToolNaming::Keep`](crate::ToolNaming::Keep)) that offer the same
/// name: a tool, a prompt, a resource URI or a resource template. A client
/// could reach only one of them by that name, so the gateway refuses it
/// (the listing of that kind, and a request naming it, fail with this
/// error's text); [`Gateway::check_names`](crate::Gateway::check_names)
/// finds one before serving.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NameCollision {
    /// What the name names: `tool`, `prompt`, `resource` or `resource template`.
    pub kind: &'static str,
    /// The name (a URI for resources, a URI template for templates).
    pub name: String,
    /// The first server offering it, in the manager's order.
    pub first: String,
    /// The second server offering it.
    pub second: String,
}

impl fmt::Display for NameCollision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "servers {} and {} both offer the {} {}: with kept names only one could be reached, so neither is served under it (serve one of them, or use other names)",
            error_text(&self.first, NAME_LIMIT),
            error_text(&self.second, NAME_LIMIT),
            self.kind,
            error_text(&self.name, 256),
        )
    }
}

impl std::error::Error for NameCollision {}

impl NameCollision {
    /// The JSON-RPC error a listing or request meets: an internal error
    /// (the request is fine; the gateway's configuration cannot serve it)
    /// with the collision in `data`.
    pub(super) fn to_error(&self) -> ErrorObject {
        let data = serde_json::json!({
            "kind": self.kind,
            "name": mcp_proto::text::bound(&self.name, 256),
            "servers": [self.first, self.second],
        });
        ErrorObject {
            data: serde_json::value::to_raw_value(&data).ok(),
            ..ErrorObject::new(error_codes::INTERNAL_ERROR, self.to_string())
        }
    }
}

/// The first name two servers share among `(server, name)` pairs of one
/// kind, in the pairs' order. The same server listing a name twice is the
/// server's own business, passed on as it is.
pub(super) fn collision<'a>(
    kind: &'static str,
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<NameCollision> {
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for (server, name) in pairs {
        match seen.get(name) {
            Some(first) if *first != server => {
                return Some(NameCollision {
                    kind,
                    name: name.to_owned(),
                    first: (*first).to_owned(),
                    second: server.to_owned(),
                });
            }
            Some(_) => {}
            None => {
                seen.insert(name, server);
            }
        }
    }
    None
}

/// The server offering `name` among `(server, name)` pairs of one kind:
/// `Ok(None)` when none does, an error when two do.
pub(super) fn owner<'a>(
    kind: &'static str,
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    name: &str,
) -> Result<Option<&'a str>, NameCollision> {
    let mut found: Option<&str> = None;
    for (server, listed) in pairs {
        if listed != name {
            continue;
        }
        match found {
            Some(first) if first != server => {
                return Err(NameCollision {
                    kind,
                    name: name.to_owned(),
                    first: first.to_owned(),
                    second: server.to_owned(),
                });
            }
            Some(_) => {}
            None => found = Some(server),
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_two_servers_share_is_a_collision_naming_both() {
        let pairs = [("a", "echo"), ("a", "add"), ("b", "sum"), ("b", "echo")];
        let found = collision("tool", pairs).expect("echo is shared");
        assert_eq!(
            (
                found.first.as_str(),
                found.second.as_str(),
                found.name.as_str()
            ),
            ("a", "b", "echo")
        );
        let text = found.to_string();
        assert!(
            text.contains("servers a and b") && text.contains("tool echo"),
            "{text}"
        );
        assert_eq!(
            found.to_error().data_as::<serde_json::Value>().unwrap()["servers"][1],
            "b"
        );
        assert!(collision("tool", [("a", "x"), ("a", "x"), ("b", "y")]).is_none());
    }

    #[test]
    fn the_owner_of_a_name_is_its_one_server() {
        let pairs = [("a", "echo"), ("b", "sum"), ("c", "sum")];
        assert_eq!(owner("tool", pairs, "echo").unwrap(), Some("a"));
        assert_eq!(owner("tool", pairs, "none").unwrap(), None);
        let shared = owner("tool", pairs, "sum").unwrap_err();
        assert_eq!((shared.first.as_str(), shared.second.as_str()), ("b", "c"));
    }

    #[test]
    fn a_peers_name_is_escaped_in_the_text() {
        let found = collision("prompt", [("a", "x\u{1b}[2J"), ("b", "x\u{1b}[2J")]).unwrap();
        assert!(!found.to_string().contains('\u{1b}'), "{found}");
    }
}
