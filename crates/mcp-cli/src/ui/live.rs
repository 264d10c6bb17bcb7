//! Each server's log messages and resource updates for the page: kept (bounded) per server, sent live over the event stream, with the log level and resource subscriptions set from the page.
//!
//! A task follows the manager's events from launch: every
//! `ManagerEvent::Log` (MCP "Server/Utilities/Logging") and
//! `ManagerEvent::ResourceUpdated` (MCP "Server/Resources",
//! "Subscriptions") becomes a line of its server's feed, the server's
//! text escaped onto one line and cut to [`LINE_TEXT`] bytes, and the
//! last [`LINES_KEPT`] lines of each server are kept for a page that
//! opens later. Every event stream sends the feeds whole when it opens
//! (`event: logs`) and each new line as it comes (`event: log`).
//!
//! The level chosen for a server (`logging/setLevel`) and the resources
//! subscribed to (`resources/subscribe`) are asked through the manager's
//! server handle, and the manager remembers them and asks every new
//! connection of the server for them again (`McpManager::logging_level`,
//! `McpManager::subscribed_resources`), so a reconnect keeps what the page
//! shows.
//!
//! | method | path | what |
//! |---|---|---|
//! | POST | `/api/servers/{id}/log-level` | `{"level": "debug" ... "emergency"}` |
//! | POST | `/api/servers/{id}/subscribe` | `{"uri": URI}`: `resources/subscribe` |
//! | POST | `/api/servers/{id}/unsubscribe` | `{"uri": URI}`: `resources/unsubscribe` |

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use http::StatusCode;
use mcp_manager::{HandleError, ManagerEvent, McpManager};
use mcp_proto::text;
use mcp_proto::types::LoggingLevel;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use super::response::{ResponseBody, json};

/// The most lines kept per server.
pub(crate) const LINES_KEPT: usize = 200;

/// The most bytes of one line's server text.
pub(crate) const LINE_TEXT: usize = 2000;

/// The feeds.
#[derive(Debug)]
pub(crate) struct Live {
    state: Mutex<State>,
    feed: broadcast::Sender<Value>,
}

#[derive(Debug, Default)]
struct State {
    seq: u64,
    lines: HashMap<String, VecDeque<Value>>,
}

impl Live {
    /// Empty feeds.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Live {
            state: Mutex::new(State::default()),
            feed: broadcast::channel(256).0,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// New lines as they come; a receiver that lags sends the feeds whole.
    pub(crate) fn lines(&self) -> broadcast::Receiver<Value> {
        self.feed.subscribe()
    }

    /// Every server's kept lines, `{id: [line, ...]}`, and the highest
    /// sequence number among them.
    pub(crate) fn snapshot(&self) -> (Value, u64) {
        let state = self.lock();
        let feeds: serde_json::Map<String, Value> = state
            .lines
            .iter()
            .map(|(id, lines)| (id.clone(), Value::Array(lines.iter().cloned().collect())))
            .collect();
        (Value::Object(feeds), state.seq)
    }

    /// Adds a line to `id`'s feed and sends it to every page.
    fn push(&self, id: &str, mut line: Value) {
        let line = {
            let mut state = self.lock();
            state.seq += 1;
            if let Some(object) = line.as_object_mut() {
                object.insert("seq".into(), json!(state.seq));
                object.insert("id".into(), json!(id));
                object.insert("at".into(), json!(now_ms()));
            }
            let lines = state.lines.entry(id.to_owned()).or_default();
            lines.push_back(line.clone());
            while lines.len() > LINES_KEPT {
                lines.pop_front();
            }
            line
        };
        let _ = self.feed.send(line);
    }

    /// Follows the manager's `events` until it closes: log messages and
    /// resource updates into the feeds; a removed server's feed is
    /// forgotten.
    pub(crate) async fn follow(self: Arc<Self>, mut events: broadcast::Receiver<ManagerEvent>) {
        loop {
            match events.recv().await {
                Ok(ManagerEvent::Log {
                    id,
                    level,
                    logger,
                    data,
                }) => self.push(
                    &id,
                    json!({
                        "kind": "log",
                        "level": level.as_str(),
                        "logger": logger.map(|l| crate::output::line(&text::bound(&l, 200)).into_owned()),
                        "text": crate::output::line(&text::bound(
                            &crate::logs_cmd::message_text(&data), LINE_TEXT)),
                    }),
                ),
                Ok(ManagerEvent::ResourceUpdated { id, uri }) => self.push(
                    &id,
                    json!({
                        "kind": "resource_updated",
                        "uri": crate::output::line(&text::bound(&uri, LINE_TEXT)),
                    }),
                ),
                Ok(ManagerEvent::ServerRemoved { id }) => {
                    self.lock().lines.remove(&id);
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    }

    /// `POST /api/servers/{id}/log-level`.
    pub(crate) async fn set_level(
        &self,
        manager: &McpManager,
        id: &str,
        body: &[u8],
    ) -> http::Response<ResponseBody> {
        let level = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("level").cloned())
            .and_then(|level| serde_json::from_value::<LoggingLevel>(level).ok());
        let Some(level) = level else {
            return super::api::bad_request(
                "send {\"level\": L}, L one of debug, info, notice, warning, error, critical, alert, emergency",
            );
        };
        let Some(handle) = manager.server(id) else {
            return not_ready(id);
        };
        match handle.set_logging_level(level).await {
            Ok(()) => json(StatusCode::OK, &json!({"level": level.as_str()})),
            Err(failure) => refused(&failure),
        }
    }

    /// `POST /api/servers/{id}/subscribe` and `.../unsubscribe`.
    pub(crate) async fn subscribe(
        &self,
        manager: &McpManager,
        id: &str,
        body: &[u8],
        subscribe: bool,
    ) -> http::Response<ResponseBody> {
        let Some(uri) = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v.get("uri").and_then(Value::as_str).map(str::to_owned))
        else {
            return super::api::bad_request("send {\"uri\": URI}");
        };
        let Some(handle) = manager.server(id) else {
            return not_ready(id);
        };
        let result = if subscribe {
            handle.subscribe_resource(&uri).await
        } else {
            handle.unsubscribe_resource(&uri).await
        };
        match result {
            Ok(()) => json(
                StatusCode::OK,
                &json!({"uri": uri, "subscribed": subscribe}),
            ),
            Err(failure @ HandleError::TooManySubscriptions { .. }) => error(
                StatusCode::CONFLICT,
                failure.code(),
                &crate::output::line(&failure.to_string()),
            ),
            Err(failure) => refused(&failure),
        }
    }
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

fn not_ready(id: &str) -> http::Response<ResponseBody> {
    error(
        StatusCode::CONFLICT,
        "not_ready",
        &format!("`{}` is not connected", crate::output::line(id)),
    )
}

fn refused(failure: &HandleError) -> http::Response<ResponseBody> {
    error(
        StatusCode::BAD_GATEWAY,
        "refused",
        &crate::output::line(&text::bound(
            &mcp_proto::text::ErrorChain(failure).to_string(),
            text::ERROR_TEXT_LIMIT,
        )),
    )
}

fn error(status: StatusCode, code: &str, message: &str) -> http::Response<ResponseBody> {
    json(
        status,
        &json!({"error": {"code": code, "message": message, "diagnostics": []}}),
    )
}
