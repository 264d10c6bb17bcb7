//! Protocol versions, what each one changes for a client, and version negotiation.
//!
//! MCP spec, "Lifecycle" §Version Negotiation: the client offers the newest
//! version it supports; the server echoes it or answers with another version
//! it supports; a client that does not support the answer disconnects.
//! Behaviour that differs between versions is asked of the negotiated
//! [`ProtocolVersion`] through its methods, never by comparing strings at the
//! call site.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A published MCP protocol version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProtocolVersion {
    /// 2024-11-05: the first published version (HTTP+SSE transport).
    V2024_11_05,
    /// 2025-03-26: Streamable HTTP, batching, tool annotations, audio.
    V2025_03_26,
    /// 2025-06-18: no batching, structured content, elicitation, `title`.
    V2025_06_18,
    /// 2025-11-25: icons, URL elicitation, sampling tools, tasks; the newest
    /// handshake-based version.
    V2025_11_25,
    /// 2026-07-28: the stateless era (no `initialize`): every request
    /// carries its version, capabilities and client info in `_meta`, and
    /// `server/discover` tells what the server speaks. Never offered by
    /// the handshake.
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every version this crate knows, newest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2026_07_28,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// The versions the `initialize` handshake can negotiate, newest first.
    pub const HANDSHAKE: [ProtocolVersion; 4] = [
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// The newest version the handshake offers.
    pub const LATEST_HANDSHAKE: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// The versions of the stateless era, newest first.
    pub const MODERN: [ProtocolVersion; 1] = [ProtocolVersion::V2026_07_28];

    /// The newest stateless-era version.
    pub const LATEST_MODERN: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The version's wire form, for example `"2025-06-18"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ProtocolVersion::V2024_11_05 => "2024-11-05",
            ProtocolVersion::V2025_03_26 => "2025-03-26",
            ProtocolVersion::V2025_06_18 => "2025-06-18",
            ProtocolVersion::V2025_11_25 => "2025-11-25",
            ProtocolVersion::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire version string; `None` for a version this crate does not know.
    pub fn parse(s: &str) -> Option<ProtocolVersion> {
        ProtocolVersion::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The version a server answers `initialize` with (MCP "Lifecycle"
    /// §Version Negotiation): the requested one when it is a handshake
    /// version this crate supports, else the newest handshake version, and
    /// the client decides whether it can use that.
    pub fn answer_to(requested: &str) -> ProtocolVersion {
        match ProtocolVersion::parse(requested) {
            Some(version) if version.uses_handshake() => version,
            _ => ProtocolVersion::LATEST_HANDSHAKE,
        }
    }

    /// Whether this version uses the `initialize` handshake (everything before 2026-07-28).
    pub fn uses_handshake(self) -> bool {
        self < ProtocolVersion::V2026_07_28
    }

    /// The era this version belongs to.
    pub fn era(self) -> Era {
        if self.uses_handshake() {
            Era::Legacy
        } else {
            Era::Modern
        }
    }

    /// Whether inbound JSON-RPC batches must be accepted (2025-03-26 only;
    /// batching was added then and removed in 2025-06-18).
    pub fn accepts_batches(self) -> bool {
        self == ProtocolVersion::V2025_03_26
    }

    /// Whether HTTP requests after initialization must carry the
    /// `MCP-Protocol-Version` header (2025-06-18 and later).
    pub fn requires_protocol_version_header(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Whether the `completions` server capability exists; before 2025-03-26
    /// `completion/complete` had no capability flag.
    pub fn has_completions_capability(self) -> bool {
        self >= ProtocolVersion::V2025_03_26
    }

    /// Whether the server may send `elicitation/create` (2025-06-18 and later).
    pub fn has_elicitation(self) -> bool {
        self >= ProtocolVersion::V2025_06_18
    }

    /// Whether URL-mode elicitation exists (2025-11-25).
    pub fn has_url_elicitation(self) -> bool {
        self >= ProtocolVersion::V2025_11_25
    }

    /// Whether sampling may carry `tools`/`toolChoice` and array content (2025-11-25).
    pub fn has_sampling_tools(self) -> bool {
        self >= ProtocolVersion::V2025_11_25
    }

    /// Whether SSE streams may be closed by the server and resumed by GET
    /// with `Last-Event-ID` after `retry` (2025-11-25 polling).
    pub fn has_sse_polling(self) -> bool {
        self >= ProtocolVersion::V2025_11_25
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The two eras of MCP (2026-07-28 "Versioning" §Backward Compatibility).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// The handshake era (2024-11-05 to 2025-11-25): `initialize` first,
    /// then `notifications/initialized`; state lives in the connection.
    Legacy,
    /// The stateless era (2026-07-28 on): no handshake; every request
    /// carries its protocol version, capabilities and client info in
    /// `_meta`.
    Modern,
}

impl Era {
    /// `"legacy"` or `"modern"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which era a client speaks to a server, or how it finds out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EraPolicy {
    /// Detect it (2026-07-28 "Versioning" §Backward Compatibility): over
    /// stdio, probe with `server/discover` and fall back to `initialize` on
    /// any error that is not a recognised modern one, or on silence; over
    /// HTTP, a modern request first, and `initialize` when it is refused
    /// without a recognised modern error.
    #[default]
    Auto,
    /// The stateless era only: `server/discover`, no `initialize`.
    Modern,
    /// The handshake era only: `initialize`, never a probe.
    Legacy,
}

impl EraPolicy {
    /// `"auto"`, `"modern"` or `"legacy"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EraPolicy::Auto => "auto",
            EraPolicy::Modern => "modern",
            EraPolicy::Legacy => "legacy",
        }
    }
}

impl From<Era> for EraPolicy {
    fn from(era: Era) -> Self {
        match era {
            Era::Legacy => EraPolicy::Legacy,
            Era::Modern => EraPolicy::Modern,
        }
    }
}

/// A version string this crate does not know.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown protocol version {0:?}")]
pub struct UnknownVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = UnknownVersion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::parse(s).ok_or_else(|| UnknownVersion(s.to_owned()))
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
        ProtocolVersion::parse(&s).ok_or_else(|| serde::de::Error::custom(UnknownVersion(s.into())))
    }
}

/// Which versions a client offers and accepts in the handshake; start from
/// [`VersionPolicy::default`] and set what differs with the setter of the
/// same name.
#[derive(Clone, Debug, PartialEq, Eq, derive_setters::Setters)]
#[non_exhaustive]
pub struct VersionPolicy {
    /// The version sent in `initialize` (default: the newest handshake version).
    pub offered: ProtocolVersion,
    /// Every version the client accepts, any order (default: every version
    /// this crate knows). The handshake accepts the handshake versions among
    /// them; the stateless era uses the newest modern one.
    pub accepted: Vec<ProtocolVersion>,
}

impl Default for VersionPolicy {
    fn default() -> Self {
        VersionPolicy {
            offered: ProtocolVersion::LATEST_HANDSHAKE,
            accepted: ProtocolVersion::ALL.to_vec(),
        }
    }
}

/// The server answered `initialize` with a version the client does not support.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "server answered protocol version {answered:?}; this client offered {offered} and supports {supported}"
)]
pub struct UnsupportedVersion {
    /// What the client offered.
    pub offered: ProtocolVersion,
    /// What the server answered, verbatim.
    pub answered: String,
    /// What the client supports, comma-separated, newest first.
    pub supported: String,
}

impl VersionPolicy {
    /// Checks the server's answer (MCP "Lifecycle" §Version Negotiation).
    pub fn accept(&self, answered: &str) -> Result<ProtocolVersion, UnsupportedVersion> {
        ProtocolVersion::parse(answered)
            .filter(|v| v.uses_handshake() && self.accepted.contains(v))
            .ok_or_else(|| UnsupportedVersion {
                offered: self.offered,
                answered: answered.to_owned(),
                supported: self.supported_list(),
            })
    }

    /// The best version both sides support, given the server's list
    /// (from an initialize error's `data.supported`).
    pub fn best_mutual<'a>(
        &self,
        server_supported: impl IntoIterator<Item = &'a str>,
    ) -> Option<ProtocolVersion> {
        self.best_in_era(server_supported, Era::Legacy)
    }

    /// The newest stateless-era version the client accepts, if any.
    pub fn preferred_modern(&self) -> Option<ProtocolVersion> {
        self.accepted
            .iter()
            .copied()
            .filter(|v| !v.uses_handshake())
            .max()
    }

    /// The best stateless-era version both sides support, given the
    /// server's list (`supportedVersions`, or a -32022 error's
    /// `data.supported`).
    pub fn best_mutual_modern<'a>(
        &self,
        server_supported: impl IntoIterator<Item = &'a str>,
    ) -> Option<ProtocolVersion> {
        self.best_in_era(server_supported, Era::Modern)
    }

    /// The newest version of `era` in both the server's list and ours.
    fn best_in_era<'a>(
        &self,
        server_supported: impl IntoIterator<Item = &'a str>,
        era: Era,
    ) -> Option<ProtocolVersion> {
        server_supported
            .into_iter()
            .filter_map(ProtocolVersion::parse)
            .filter(|v| v.era() == era && self.accepted.contains(v))
            .max()
    }

    /// Every version the client accepts, newest first, comma-separated.
    pub fn supported_list(&self) -> String {
        let mut versions = self.accepted.clone();
        versions.sort_by(|a, b| b.cmp(a));
        versions
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_known_version() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(serde_json::from_str::<ProtocolVersion>(&json).unwrap(), v);
        }
        assert_eq!(ProtocolVersion::parse("2099-01-01"), None);
    }

    #[test]
    fn offers_newest_handshake_version() {
        assert_eq!(VersionPolicy::default().offered.as_str(), "2025-11-25");
    }

    #[test]
    fn accepts_any_supported_answer_and_names_both_on_refusal() {
        let policy = VersionPolicy::default();
        assert_eq!(
            policy.accept("2024-11-05"),
            Ok(ProtocolVersion::V2024_11_05)
        );
        let err = policy.accept("1999-01-01").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("1999-01-01") && text.contains("2025-11-25"),
            "{text}"
        );
        // The stateless era is not negotiated by the handshake.
        assert!(policy.accept("2026-07-28").is_err());
    }

    #[test]
    fn modern_versions_are_chosen_apart_from_the_handshake() {
        let policy = VersionPolicy::default();
        assert_eq!(
            policy.preferred_modern(),
            Some(ProtocolVersion::V2026_07_28)
        );
        assert_eq!(
            policy.best_mutual_modern(["2025-11-25", "2026-07-28"]),
            Some(ProtocolVersion::V2026_07_28)
        );
        assert_eq!(policy.best_mutual_modern(["2025-11-25"]), None);
        assert_eq!(
            policy.best_mutual(["2026-07-28", "2025-06-18"]),
            Some(ProtocolVersion::V2025_06_18)
        );
        let legacy_only = VersionPolicy {
            offered: ProtocolVersion::V2025_11_25,
            accepted: ProtocolVersion::HANDSHAKE.to_vec(),
        };
        assert_eq!(legacy_only.preferred_modern(), None);
        assert_eq!(ProtocolVersion::V2026_07_28.era(), Era::Modern);
        assert_eq!(ProtocolVersion::V2024_11_05.era(), Era::Legacy);
    }

    #[test]
    fn batches_only_in_2025_03_26() {
        let batching: Vec<_> = ProtocolVersion::ALL
            .into_iter()
            .filter(|v| v.accepts_batches())
            .collect();
        assert_eq!(batching, vec![ProtocolVersion::V2025_03_26]);
    }

    #[test]
    fn best_mutual_picks_newest_shared() {
        let policy = VersionPolicy::default();
        assert_eq!(
            policy.best_mutual(["2024-11-05", "2025-06-18", "2030-01-01"]),
            Some(ProtocolVersion::V2025_06_18)
        );
        assert_eq!(policy.best_mutual(["2030-01-01"]), None);
    }
}
