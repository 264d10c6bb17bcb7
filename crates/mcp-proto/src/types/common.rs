//! Data types shared by many MCP messages: implementation info, icons, `_meta`, tokens.

use serde::{Deserialize, Serialize};

use super::JsonObject;
use super::Meta;
use super::de::open_string_enum;
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

/// The sender or recipient of a message, and the audience of annotated data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human user.
    User,
    /// The model.
    Assistant,
}

/// Hints on how a client should use or display an object (content blocks,
/// resources, resource templates).
///
/// Present since 2024-11-05; `lastModified` arrived in 2025-06-18.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Who the data is for: `["user"]`, `["assistant"]` or both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<Role>>,
    /// Importance from 0 (optional) to 1 (effectively required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    /// When the data last changed, as an ISO 8601 string (2025-06-18).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_string_enum! {
    /// What a result holds (2026-07-28 `resultType`).
    ///
    /// A result without the field is [`ResultType::Complete`]: servers before
    /// 2026-07-28 never send it (MUST, "Result"). An unrecognised value is
    /// kept in [`ResultType::Other`] so that the caller can reject it, as the
    /// spec requires, with the value in the error.
    #[derive(Default)]
    pub enum ResultType {
        /// The request finished and the result holds its final content.
        #[default]
        Complete = "complete",
        /// The server needs input first (MRTR): see [`InputRequiredResult`](super::InputRequiredResult).
        InputRequired = "input_required",
    }
}

/// The value a missing `resultType` stands for.
pub(crate) static RESULT_TYPE_COMPLETE: ResultType = ResultType::Complete;

impl ResultType {
    /// Reads only `resultType` from a raw result, skipping everything else,
    /// so that a caller can pick the type to decode the result into
    /// (for example [`CallToolResult`](super::CallToolResult) or
    /// [`InputRequiredResult`](super::InputRequiredResult)).
    pub fn peek(raw: &crate::jsonrpc::RawValue) -> Result<ResultType, serde_json::Error> {
        Self::peek_str(raw.get())
    }

    /// [`ResultType::peek`] on a result's JSON text. The top-level members
    /// are stepped over with the structural scanner (no value is decoded
    /// but `resultType`'s), so a large result costs a fast scan, not a parse;
    /// anything unusual (escaped keys, malformed text) is left to serde.
    pub fn peek_str(raw: &str) -> Result<ResultType, serde_json::Error> {
        let bytes = raw.as_bytes();
        let start = crate::scan::skip_space(bytes, 0);
        let member = crate::scan::object_member(bytes, start, b"resultType", false)
            .map(|(_, member)| member.and_then(|(s, e)| raw.get(s..e)));
        Self::from_member(raw, member)
    }

    /// The result type of `raw` given what a scan found of its
    /// `resultType` member: `Some(None)` none, `Some(Some(text))` the value's
    /// text, `None` a text the scanner could not step through (then serde
    /// reads it and says what is wrong).
    pub(crate) fn from_member(
        raw: &str,
        member: Option<Option<&str>>,
    ) -> Result<ResultType, serde_json::Error> {
        match member {
            Some(None) => return Ok(ResultType::Complete),
            // The two values a client meets, told apart by their text
            // without setting a decoder up for them.
            Some(Some("\"complete\"")) => return Ok(ResultType::Complete),
            Some(Some("\"input_required\"")) => return Ok(ResultType::InputRequired),
            Some(Some(value)) => {
                if let Ok(value) = serde_json::from_str::<ResultType>(value) {
                    return Ok(value);
                }
            }
            None => {}
        }
        Self::peek_serde(raw)
    }

    fn peek_serde(raw: &str) -> Result<ResultType, serde_json::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Probe {
            #[serde(default)]
            result_type: Option<ResultType>,
        }
        let probe: Probe = serde_json::from_str(raw)?;
        Ok(probe.result_type.unwrap_or_default())
    }
}

open_string_enum! {
    /// Who may reuse a cached result (2026-07-28 `cacheScope`).
    pub enum CacheScope {
        /// No user-specific data: any cache may serve it across authorization contexts.
        Public = "public",
        /// Only within the same authorization context.
        Private = "private",
    }
}

/// Parameters of a paginated list request (MCP "Utilities/Pagination"):
/// `tools/list`, `resources/list`, `resources/templates/list`,
/// `prompts/list` and (2025-11-25) `tasks/list`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PaginatedRequestParams {
    /// The `nextCursor` of the previous page; `None` for the first page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<Cursor>,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl PaginatedRequestParams {
    /// Parameters asking for the page after `cursor` (the first page for `None`).
    pub fn page(cursor: Option<Cursor>) -> Self {
        PaginatedRequestParams {
            cursor,
            ..PaginatedRequestParams::default()
        }
    }
}

/// Parameters that carry nothing but `_meta`: `ping`, `roots/list`, the
/// `list_changed` notifications and `notifications/initialized`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmptyParams {
    /// Request or notification metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// A result that carries no data: the answer to `ping`,
/// `resources/subscribe`, `resources/unsubscribe` and `logging/setLevel`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EmptyResult {
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// What the result holds (2026-07-28); missing means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Adds `result_type()` (missing means [`ResultType::Complete`]) to result
/// types with a `result_type: Option<ResultType>` field.
macro_rules! impl_result_type {
    ($($ty:ty),* $(,)?) => {$(
        impl $ty {
            /// What this result holds; a missing `resultType` means complete.
            pub fn result_type(&self) -> &$crate::types::ResultType {
                self.result_type
                    .as_ref()
                    .unwrap_or(&$crate::types::common::RESULT_TYPE_COMPLETE)
            }
        }
    )*};
}

/// Adds `cache_ttl()` to 2026-07-28 cacheable results (fields `ttl_ms:
/// Option<serde_json::Number>` and `cache_scope: Option<CacheScope>`).
macro_rules! impl_cacheable {
    ($($ty:ty),* $(,)?) => {$(
        impl $ty {
            /// How long the result may be cached: `ttlMs`, where a missing,
            /// negative or malformed value means zero (2026-07-28, "Caching").
            pub fn cache_ttl(&self) -> ::std::time::Duration {
                $crate::types::common::ttl_from_millis(self.ttl_ms.as_ref())
            }
        }
    )*};
}

pub(crate) use {impl_cacheable, impl_result_type};

impl_result_type!(EmptyResult);

/// Converts a `ttlMs` number to a duration, clamping missing, negative and
/// non-finite values to zero.
pub(crate) fn ttl_from_millis(ttl_ms: Option<&serde_json::Number>) -> std::time::Duration {
    let Some(n) = ttl_ms else {
        return std::time::Duration::ZERO;
    };
    if let Some(ms) = n.as_u64() {
        return std::time::Duration::from_millis(ms);
    }
    match n.as_f64() {
        Some(ms) if ms.is_finite() && ms > 0.0 => {
            std::time::Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(std::time::Duration::MAX)
        }
        _ => std::time::Duration::ZERO,
    }
}
