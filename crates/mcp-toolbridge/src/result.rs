//! What a call ends with, and the conversion of MCP results into it.
//!
//! Text and image blocks reach the model as they are. Audio, resource links,
//! embedded resources and blocks of unknown types become text holding their
//! JSON, unless the host asks for them raw ([`ContentMode::Raw`]), because
//! most model APIs accept only text and images in a tool result
//! ("results preserve text/images; other content blocks become JSON text").
//! `structuredContent` and `isError` are kept.
//!
//! Failures on the way (the connection, the protocol, a deadline) become a
//! result whose only block reads `MCP error: ...`, so the model
//! sees what happened; a cancellation is not a result at all
//! ([`ToolOutcome::Cancelled`]).

use std::fmt;
use std::time::Duration;

use mcp_proto::text::{self, ERROR_TEXT_LIMIT};
use mcp_proto::types::{CallToolResult, ContentBlock};
use mcp_transport::ClientError;
use serde_json::Value;

use crate::schema::InvalidArguments;

/// How non-text, non-image content blocks reach the host.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContentMode {
    /// Audio, resource links, embedded resources and unknown blocks become
    /// text blocks holding their JSON (the default).
    #[default]
    JsonText,
    /// Every block is kept as the server sent it.
    Raw,
}

/// The result a model sees: content blocks, the structured result and
/// whether it is an error.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolResult {
    /// The content, converted per [`ContentMode`].
    pub content: Vec<ContentBlock>,
    /// The server's `structuredContent`, unchanged.
    pub structured_content: Option<Value>,
    /// The server's `isError`, or `true` for a failure this crate wrote.
    pub is_error: bool,
}

impl ToolResult {
    /// An error result with one text block.
    pub fn error_text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![ContentBlock::text(text)],
            structured_content: None,
            is_error: true,
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![ContentBlock::text(text)],
            structured_content: None,
            is_error: false,
        }
    }

    /// The text of every text block, joined by newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(ContentBlock::as_text)
            .collect();
        texts.join("\n")
    }

    /// Converts a server's `tools/call` result.
    pub fn from_call_result(result: CallToolResult, mode: ContentMode) -> Self {
        let is_error = result.failed();
        let content = result
            .content
            .into_iter()
            .map(|block| convert_block(block, mode))
            .collect();
        ToolResult {
            content,
            structured_content: result.structured_content,
            is_error,
        }
    }
}

/// Converts one content block per `mode`.
pub(crate) fn convert_block(block: ContentBlock, mode: ContentMode) -> ContentBlock {
    match (block, mode) {
        (block @ (ContentBlock::Text(_) | ContentBlock::Image(_)), _) => block,
        (block, ContentMode::Raw) => block,
        (block, ContentMode::JsonText) => {
            // Serializing a decoded block cannot fail (string keys only); the
            // fallback keeps the model informed all the same.
            let json = serde_json::to_string(&block).unwrap_or_else(|_| {
                format!("{{\"type\":{:?}}}", block.kind().unwrap_or("unknown"))
            });
            ContentBlock::text(json)
        }
    }
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ToolOutcome {
    /// The server answered (an `isError` result included).
    Completed(ToolResult),
    /// The call was not made, or failed on the way; `result` is what the
    /// model should see.
    Failed {
        /// What went wrong.
        failure: CallFailure,
        /// The text for the model.
        result: ToolResult,
    },
    /// The caller cancelled. If the request had gone out, the server was
    /// sent `notifications/cancelled`. Nothing is owed to the model.
    Cancelled,
}

impl ToolOutcome {
    /// A failure with its model-facing text.
    pub fn failed(failure: CallFailure) -> Self {
        let result = ToolResult::error_text(failure.to_string());
        ToolOutcome::Failed { failure, result }
    }

    /// The result for the model, `None` for a cancellation.
    pub fn result(&self) -> Option<&ToolResult> {
        match self {
            ToolOutcome::Completed(result) | ToolOutcome::Failed { result, .. } => Some(result),
            ToolOutcome::Cancelled => None,
        }
    }

    /// The failure, if the call failed.
    pub fn failure(&self) -> Option<&CallFailure> {
        match self {
            ToolOutcome::Failed { failure, .. } => Some(failure),
            _ => None,
        }
    }

    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, ToolOutcome::Cancelled)
    }
}

/// The most bytes of a failure's description (a [`ClientError`]'s text,
/// made of this client's words and server text already bounded where it
/// was quoted) that [`CallFailure::from_client_error`] keeps: 4 KiB.
pub const DESCRIBED_ERROR_LIMIT: usize = 4 * ERROR_TEXT_LIMIT;

/// Why a call produced no server answer. The `Display` text is what the
/// model reads.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallFailure {
    /// No tool by this name in the session's catalog.
    UnknownTool {
        /// The name the model used.
        name: String,
    },
    /// The arguments do not match the input schema; nothing was sent.
    InvalidArguments(InvalidArguments),
    /// The call needed approval and did not get it; nothing was sent.
    NotApproved(NotApproved),
    /// The server cannot take calls now (not ready, disabled, not allowed
    /// in this session, or the MCP channel is off); nothing was sent.
    Unavailable {
        /// The server's id.
        server: String,
        /// Why, in a few words (its status, for example `connecting`).
        reason: String,
    },
    /// The server was reconnecting and did not become ready before the
    /// call's deadline ([`SessionOptions::connect_wait`](crate::SessionOptions::connect_wait));
    /// nothing was sent.
    NotReady {
        /// The server's id.
        server: String,
        /// How long the call waited.
        waited: Duration,
    },
    /// The tool's catalog changed between the prompt and the call (refresh,
    /// reconnect, configuration change); nothing was sent.
    Stale {
        /// The server's id.
        server: String,
    },
    /// The call deadline passed; the server was sent `notifications/cancelled`.
    Timeout(Duration),
    /// The connection failed (closed, session expired, not delivered).
    Connection(String),
    /// The server answered with a JSON-RPC error.
    Server {
        /// The JSON-RPC error code.
        code: i64,
        /// The server's message, bounded to
        /// [`ERROR_TEXT_LIMIT`] bytes and escaped onto one line.
        message: String,
    },
    /// A protocol problem: a malformed result, or a call the session refused.
    Protocol(String),
}

impl CallFailure {
    /// The failure of a client call that did not return a result.
    /// [`ClientError::Cancelled`] should be turned into
    /// [`ToolOutcome::Cancelled`] by the caller before this.
    ///
    /// The server's words reach the model bounded, with a cut marker, and
    /// escaped onto one line ([`text::error_text`]), so that a server
    /// cannot fill the model's context with a 10 MiB message: a JSON-RPC
    /// error's message to [`ERROR_TEXT_LIMIT`] bytes, and the description
    /// of any other failure (which quotes a server at most
    /// [`ERROR_TEXT_LIMIT`] bytes at a time, an HTTP error body for
    /// example, but may quote a malformed result's values) to
    /// [`DESCRIBED_ERROR_LIMIT`] bytes.
    pub fn from_client_error(error: &ClientError) -> Self {
        let bounded = |text: &str, limit| text::error_text(text, limit).into_owned();
        match error {
            ClientError::Rpc(e) => CallFailure::Server {
                code: e.code,
                message: bounded(&e.message, ERROR_TEXT_LIMIT),
            },
            ClientError::Timeout(d) => CallFailure::Timeout(*d),
            ClientError::Closed { .. }
            | ClientError::SessionExpired
            | ClientError::Handshake(..)
            | ClientError::Undelivered { .. } => {
                let chain = text::ErrorChain(error).to_string();
                CallFailure::Connection(bounded(&chain, DESCRIBED_ERROR_LIMIT))
            }
            ClientError::Cancelled => CallFailure::Protocol("the request was cancelled".into()),
            other => {
                let chain = text::ErrorChain(other).to_string();
                CallFailure::Protocol(bounded(&chain, DESCRIBED_ERROR_LIMIT))
            }
        }
    }
}

impl fmt::Display for CallFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallFailure::UnknownTool { name } => write!(
                f,
                "MCP error: there is no tool named {name:?}; it may have been removed or renamed"
            ),
            CallFailure::InvalidArguments(e) => e.fmt(f),
            CallFailure::NotApproved(e) => e.fmt(f),
            CallFailure::Unavailable { server, reason } => {
                write!(
                    f,
                    "MCP error: server {server:?} is unavailable ({reason}); the call was not made"
                )
            }
            CallFailure::NotReady { server, waited } => write!(
                f,
                "MCP error: server {server:?} is reconnecting and was not ready within {} s; the call was not made",
                waited.as_secs_f64()
            ),
            CallFailure::Stale { server } => write!(
                f,
                "MCP error: the tools of server {server:?} changed since this turn began; the call was not made. The updated tools are available next turn"
            ),
            CallFailure::Timeout(d) => write!(
                f,
                "MCP error: the call did not finish within {} s and was cancelled; it may have had effects",
                d.as_secs_f64()
            ),
            CallFailure::Connection(reason) => write!(f, "MCP error: {reason}"),
            CallFailure::Server { code, message } => write!(f, "MCP error {code}: {message}"),
            CallFailure::Protocol(reason) => write!(f, "MCP error: {reason}"),
        }
    }
}

/// Why a call that needed approval was not made.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotApproved {
    /// The user denied it.
    Denied,
    /// The session has no approval handler.
    NoHandler,
    /// The handler did not decide in time.
    Timeout(Duration),
    /// The tool's catalog lifetime ended, or its server was disabled,
    /// removed or disallowed, while the approval was pending.
    Revoked,
    /// The handler answered "allow for this session" to a request that did
    /// not offer it.
    InvalidDecision,
}

impl fmt::Display for NotApproved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self {
            NotApproved::Denied => "the user denied it".to_owned(),
            NotApproved::NoHandler => "it needs approval and nobody can approve it".to_owned(),
            NotApproved::Timeout(d) => {
                format!("no approval came within {} s", d.as_secs_f64())
            }
            NotApproved::Revoked => {
                "the server's tools changed while it waited for approval".to_owned()
            }
            NotApproved::InvalidDecision => {
                "the approval answer was not one this request offered".to_owned()
            }
        };
        write!(f, "The call was not made: {why}.")
    }
}

#[cfg(test)]
mod tests {
    use mcp_proto::jsonrpc::ErrorObject;
    use serde_json::json;

    use super::*;

    fn call_result(value: Value) -> CallToolResult {
        serde_json::from_value(value).unwrap()
    }

    fn every_kind() -> CallToolResult {
        call_result(json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
                {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "bee"}},
                {"type": "hologram", "depth": 3}
            ],
            "structuredContent": {"sum": 3},
            "isError": true
        }))
    }

    #[test]
    fn text_and_images_are_kept_others_become_json_text() {
        let result = ToolResult::from_call_result(every_kind(), ContentMode::JsonText);
        assert!(result.is_error);
        assert_eq!(result.structured_content, Some(json!({"sum": 3})));
        let kinds: Vec<_> = result.content.iter().map(|b| b.kind().unwrap()).collect();
        assert_eq!(kinds, ["text", "image", "text", "text", "text", "text"]);
        let audio: Value = serde_json::from_str(result.content[2].as_text().unwrap()).unwrap();
        assert_eq!(
            audio,
            json!({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"})
        );
        let link: Value = serde_json::from_str(result.content[3].as_text().unwrap()).unwrap();
        assert_eq!(link["uri"], "file:///a.txt");
        let embedded: Value = serde_json::from_str(result.content[4].as_text().unwrap()).unwrap();
        assert_eq!(embedded["resource"]["text"], "bee");
        let unknown: Value = serde_json::from_str(result.content[5].as_text().unwrap()).unwrap();
        assert_eq!(unknown, json!({"type": "hologram", "depth": 3}));
    }

    #[test]
    fn raw_mode_keeps_every_block() {
        let original = every_kind();
        let result = ToolResult::from_call_result(original.clone(), ContentMode::Raw);
        assert_eq!(result.content, original.content);
    }

    #[test]
    fn client_errors_become_mcp_error_text() {
        let cases = [
            (
                ClientError::Rpc(ErrorObject::invalid_params("missing b")),
                "MCP error -32602: missing b",
            ),
            (
                ClientError::Timeout(Duration::from_secs(60)),
                "MCP error: the call did not finish within 60 s",
            ),
            (
                ClientError::Closed {
                    reason: "server exited".into(),
                    source: None,
                },
                "MCP error: connection closed: server exited",
            ),
        ];
        for (error, expected) in cases {
            let outcome = ToolOutcome::failed(CallFailure::from_client_error(&error));
            let result = outcome.result().unwrap();
            assert!(result.is_error);
            assert!(
                result.joined_text().starts_with(expected),
                "{}",
                result.joined_text()
            );
        }
    }

    #[test]
    fn server_text_reaches_the_model_bounded_and_escaped() {
        let huge = format!("boom\x1b[2J\n{}", "y".repeat(10 * 1024 * 1024));
        let traceback = format!("HTTP 500: <html>{}</html>", "Traceback ".repeat(1700));
        for (error, limit) in [
            (
                ClientError::Rpc(ErrorObject::new(-32603, huge.clone())),
                ERROR_TEXT_LIMIT,
            ),
            (
                ClientError::Undelivered {
                    reason: traceback,
                    source: None,
                },
                DESCRIBED_ERROR_LIMIT,
            ),
        ] {
            let failure = CallFailure::from_client_error(&error);
            let text = ToolOutcome::failed(failure).result().unwrap().joined_text();
            assert!(
                text.len() < limit + 128,
                "{} bytes: {}",
                text.len(),
                &text[..80]
            );
            assert!(text.contains(" more bytes]"), "{text}");
            assert!(!text.contains('\x1b'), "{text}");
        }
        let failure = CallFailure::from_client_error(&ClientError::Rpc(ErrorObject::new(1, huge)));
        let CallFailure::Server { message, .. } = failure else {
            panic!("{failure:?}")
        };
        assert!(
            message.starts_with(r"boom\x1b[2J\nyyy"),
            "{}",
            &message[..20]
        );
    }

    #[test]
    fn cancellation_has_no_result() {
        assert!(ToolOutcome::Cancelled.result().is_none());
        assert!(ToolOutcome::Cancelled.is_cancelled());
    }
}
