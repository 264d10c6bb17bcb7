//! Data types shared by many MCP messages: implementation info, icons, `_meta`, tokens.

use serde::{Deserialize, Serialize};

use super::JsonObject;
use crate::jsonrpc::RequestId;

/// A progress token: a string or an integer, chosen by the requester and
/// unique among its active requests (MCP "Utilities/Progress").
pub type ProgressToken = RequestId;

/// An opaque pagination cursor (MCP "Utilities/Pagination"): never parsed,
/// never changed, never kept across sessions.
pub type Cursor = String;

/// Name and version of an MCP implementation (`clientInfo`, `serverInfo`).
///
/// `title`, `icons`, `websiteUrl` and `description` arrived in 2025-06-18 and
/// 2025-11-25; a 2024-11-05 peer sends only `name` and `version`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Human-readable name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A short description (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Icons for display (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// The implementation's website (2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Implementation {
    /// An implementation with a name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            ..Implementation::default()
        }
    }
}

/// An icon (2025-11-25): an `https:` or `data:` URI with optional type, sizes and theme.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// The icon's URI. Clients must not fetch URIs with other schemes.
    pub src: String,
    /// MIME type, for example `image/png`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// `"light"` or `"dark"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}
