//! Fingerprints: sha256 over a canonical form of a resolved config, to tell "the same server".
//!
//! DESIGN.md (mcp-config): the fingerprint identifies the same server for
//! tool caches and for "saving an unchanged ready connection
//! preserves it". So it covers exactly what decides where and how the
//! connection is made, after `${VAR}` expansion:
//!
//! - stdio: command, args (in order), the final environment (as a set of
//!   name/value pairs: the order they were written in changes nothing) and
//!   the working directory;
//! - HTTP and SSE: the transport, the URL (normalized: `HTTPS://Example.com`
//!   and `https://example.com/` are one server) and the headers (a set,
//!   names compared ignoring case, as HTTP does), bearer token included,
//!   and the `oauth` client settings when present (client id and secret,
//!   scopes as a set, metadata document URL, the grant when it is not the
//!   default; not the login's redirect port);
//! - for every transport, the protocol era when it is pinned (`modern` or
//!   `legacy`): the same endpoint spoken to in another era can offer other
//!   tools. `auto` (or no `era`) adds nothing, so configs without the field
//!   keep the fingerprints they had before it existed.
//!
//! The id, display name, description and enabled flag do not count (a
//! rename keeps the connection), and neither does `timeout`,
//! which bounds how long the host waits, not what it connects to.
//!
//! The canonical form is JSON with sorted keys and sorted pairs, prefixed
//! with a format version so a later change of form cannot collide with this
//! one. Secret values go into the hash, so a changed token is a different
//! server; the hash does not reveal them.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::model::{OAuthGrant, ProtocolEra};
use crate::resolve::{ResolvedConfig, ResolvedTransport};
use crate::secret::Secret;

/// The fingerprint of a resolved config: 64 lowercase hex digits.
///
/// ```
/// use std::collections::HashMap;
/// use mcp_config::{fingerprint, parse_mcp_servers, resolve};
///
/// let a = parse_mcp_servers(r#"{"mcpServers": {"x": {"command": "srv", "env": {"A": "1", "B": "2"}}}}"#)?;
/// let b = parse_mcp_servers(r#"{"mcpServers": {"renamed": {"env": {"B": "2", "A": "1"}, "command": "srv"}}}"#)?;
/// let env = HashMap::new();
/// let fa = fingerprint(&resolve(a.servers().next().unwrap(), &env)?);
/// let fb = fingerprint(&resolve(b.servers().next().unwrap(), &env)?);
/// assert_eq!(fa, fb);
/// assert_eq!(fa.len(), 64);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn fingerprint(config: &ResolvedConfig) -> String {
    let canonical = canonical_form(config);
    let digest = Sha256::digest(canonical.as_bytes());
    let mut hex = String::with_capacity(64);
    for byte in digest {
        hex.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        hex.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    hex
}

/// The canonical text that is hashed. A `BTreeMap` serializes its keys in
/// order and a struct its fields in declaration order, whatever serde_json's
/// `preserve_order` feature does to `Map`; every nested collection is an
/// array sorted here.
fn canonical_form(config: &ResolvedConfig) -> String {
    let mut form: BTreeMap<&str, Part<'_>> = BTreeMap::new();
    form.insert("form", Part::Value(json!("mcp-config/fingerprint/1")));
    // Only a pinned era is written: an absent key is what every
    // fingerprint taken before the field existed hashed.
    if config.era != ProtocolEra::Auto {
        form.insert("era", Part::Value(json!(config.era.as_str())));
    }
    match &config.transport {
        ResolvedTransport::Stdio(stdio) => {
            let mut env: Vec<(&str, &str)> = stdio
                .env
                .iter()
                .map(|(name, value)| (name.as_str(), value.expose()))
                .collect();
            env.sort_unstable();
            form.insert("transport", Part::Value(json!("stdio")));
            form.insert("command", Part::Value(json!(stdio.command)));
            form.insert("args", Part::Value(json!(stdio.args)));
            form.insert("env", Part::Value(json!(env)));
            form.insert(
                "cwd",
                Part::Value(json!(stdio.cwd.as_ref().map(|cwd| cwd.to_string_lossy()))),
            );
        }
        ResolvedTransport::Http(http) | ResolvedTransport::Sse(http) => {
            let kind = match &config.transport {
                ResolvedTransport::Sse(_) => "sse",
                _ => "http",
            };
            let url = normal_url(&http.url);
            let mut headers: Vec<(String, &str)> = http
                .headers
                .iter()
                .map(|(name, value)| (name.to_ascii_lowercase(), value.expose()))
                .collect();
            headers.sort_unstable();
            form.insert("transport", Part::Value(json!(kind)));
            form.insert("url", Part::Value(json!(url)));
            form.insert("headers", Part::Value(json!(headers)));
            // Only when configured, so servers without one keep their
            // fingerprints. The redirect port is left out: it changes
            // where a login listens, not what is connected to.
            if let Some(oauth) = &http.oauth {
                let mut scopes: Vec<&str> = oauth.scopes.iter().map(String::as_str).collect();
                scopes.sort_unstable();
                scopes.dedup();
                let (assertion_file, assertion_env) = match &oauth.assertion {
                    Some(crate::AssertionSource::File(path)) => {
                        (Some(path.to_string_lossy()), None)
                    }
                    Some(crate::AssertionSource::Env(var)) => (None, Some(var.as_str())),
                    None => (None, None),
                };
                let section = OAuthForm {
                    client_id: oauth.client_id.as_deref(),
                    client_secret: oauth.client_secret.as_ref().map(Secret::expose),
                    scopes,
                    client_metadata_url: oauth.client_metadata_url.as_deref(),
                    grant: (oauth.grant != OAuthGrant::default()).then(|| oauth.grant.as_str()),
                    assertion_file,
                    assertion_env,
                };
                form.insert("oauth", Part::OAuth(section));
            }
        }
    }
    serde_json::to_string(&form).unwrap_or_else(|_| unreachable!("JSON values always serialize"))
}

/// A value of the canonical form.
#[derive(Serialize)]
#[serde(untagged)]
enum Part<'a> {
    Value(Value),
    OAuth(OAuthForm<'a>),
}

/// The `oauth` section of the canonical form, its keys in the order every
/// fingerprint on record hashed them (a struct serializes its fields in
/// declaration order, whatever `serde_json::Map` is built with).
#[derive(Serialize)]
struct OAuthForm<'a> {
    client_id: Option<&'a str>,
    client_secret: Option<&'a str>,
    scopes: Vec<&'a str>,
    client_metadata_url: Option<&'a str>,
    /// The grant decides whose credentials reach the server; only a
    /// non-default one is written, so that sections without one keep their
    /// fingerprints.
    #[serde(skip_serializing_if = "Option::is_none")]
    grant: Option<&'a str>,
    /// Where the workload's JWT is read decides whose identity reaches the
    /// server; only names, and only when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    assertion_file: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    assertion_env: Option<&'a str>,
}

/// The URL in its WHATWG normal form (`HTTPS://Example.COM` is
/// `https://example.com/`), so that spelling alone never changes a
/// fingerprint; as written when it does not parse, or without the `http`
/// feature (a build that connects no HTTP server).
fn normal_url(url: &str) -> String {
    #[cfg(feature = "http")]
    return url::Url::parse(url).map_or_else(|_| url.to_owned(), String::from);
    #[cfg(not(feature = "http"))]
    url.to_owned()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::format::parse_store_server;
    use crate::resolve::resolve;

    fn fp(server: &str) -> String {
        let env = HashMap::from([("TOKEN".to_owned(), "t".to_owned())]);
        fingerprint(&resolve(&parse_store_server(server).unwrap(), &env).unwrap())
    }

    // Needs the URL checks (or normal form) of the `http` feature.
    #[cfg(feature = "http")]
    #[test]
    fn identity_fields_do_not_count() {
        let base = fp(r#"{"id": "a", "transport": {"type": "http", "url": "https://e.com/mcp"}}"#);
        assert_eq!(
            base,
            fp(
                r#"{"id": "b", "name": "B", "enabled": false, "description": "d", "timeout": 5,
                   "transport": {"type": "http", "url": "HTTPS://E.com:443/mcp"}}"#
            )
        );
        assert_ne!(
            base,
            fp(r#"{"id": "a", "transport": {"type": "sse", "url": "https://e.com/mcp"}}"#)
        );
    }

    #[test]
    fn header_order_and_case_do_not_count_but_values_do() {
        let a = fp(
            r#"{"id": "a", "transport": {"type": "http", "url": "https://e.com/",
            "headers": [{"key": "X-A", "value": "1"}, {"key": "X-B", "value": "2"}]}}"#,
        );
        let b = fp(
            r#"{"id": "a", "transport": {"type": "http", "url": "https://e.com/",
            "headers": [{"key": "x-b", "value": "2"}, {"key": "x-a", "value": "1"}]}}"#,
        );
        let c = fp(
            r#"{"id": "a", "transport": {"type": "http", "url": "https://e.com/",
            "headers": [{"key": "X-A", "value": "1"}, {"key": "X-B", "value": "3"}]}}"#,
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn a_pinned_era_counts_and_auto_does_not() {
        for transport in [
            r#"{"type": "stdio", "command": "c"}"#,
            r#"{"type": "http", "url": "https://e.com/mcp"}"#,
        ] {
            let with = |era: &str| fp(&format!(r#"{{"id": "a", {era} "transport": {transport}}}"#));
            let absent = with("");
            assert_eq!(absent, with(r#""era": "auto","#), "{transport}");
            assert_eq!(absent, with(r#""era": null,"#), "{transport}");
            let modern = with(r#""era": "modern","#);
            let legacy = with(r#""era": "legacy","#);
            assert_ne!(absent, modern, "{transport}");
            assert_ne!(absent, legacy, "{transport}");
            assert_ne!(modern, legacy, "{transport}");
        }
    }

    #[test]
    fn fingerprints_without_an_era_are_unchanged() {
        // Taken before `era` existed: caches keyed by these stay valid.
        assert_eq!(
            fp(r#"{"id": "a", "transport": {"type": "stdio", "command": "c", "args": ["x"]}}"#),
            STDIO_BEFORE_ERA
        );
        assert_eq!(
            fp(
                r#"{"id": "a", "transport": {"type": "http", "url": "https://e.com/mcp",
                   "oauth": {"clientId": "c"}}}"#
            ),
            HTTP_BEFORE_ERA
        );
    }

    #[test]
    fn oauth_sections_keep_their_fingerprints() {
        // Taken when the section was hashed in the order it was written in:
        // the form does not depend on how serde_json builds its maps.
        assert_eq!(
            fp(
                r#"{"id": "a", "transport": {"type": "http", "url": "https://e.com/mcp",
                   "oauth": {"clientId": "c", "scopes": ["b", "a"], "grant": "jwt_bearer",
                             "clientMetadataUrl": "https://e.com/client.json",
                             "assertionEnv": "JWT"}}}"#
            ),
            OAUTH_FULL
        );
    }

    const OAUTH_FULL: &str = "42cb4502005ecc4ffda042a917cbd984025bdd7e9fca009375fe6e506b6db814";
    const STDIO_BEFORE_ERA: &str =
        "5e2f8702343fb96f98c2b49b67143c8c60ee1a04ad57e58c81fb7ef4c6adbe70";
    const HTTP_BEFORE_ERA: &str =
        "e2b3de9a9d991d448eee0502904b11f0d0cf81953fa986d630c9ac9e5821d3c5";

    #[test]
    fn canonical_form_is_sorted_and_versioned() {
        let env = HashMap::from([("TOKEN".to_owned(), "t".to_owned())]);
        let config = parse_store_server(
            r#"{"id": "a", "transport": {"type": "stdio", "command": "c", "args": ["2", "1"],
                "env": [{"key": "B", "value": "2"}, {"key": "A", "value": "1"}]}}"#,
        )
        .unwrap();
        assert_eq!(
            canonical_form(&resolve(&config, &env).unwrap()),
            r#"{"args":["2","1"],"command":"c","cwd":null,"env":[["A","1"],["B","2"]],"form":"mcp-config/fingerprint/1","transport":"stdio"}"#
        );
        let pinned = parse_store_server(
            r#"{"id": "a", "era": "legacy", "transport": {"type": "stdio", "command": "c"}}"#,
        )
        .unwrap();
        assert_eq!(
            canonical_form(&resolve(&pinned, &env).unwrap()),
            r#"{"args":[],"command":"c","cwd":null,"env":[],"era":"legacy","form":"mcp-config/fingerprint/1","transport":"stdio"}"#
        );
    }
}
