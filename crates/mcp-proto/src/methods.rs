//! MCP method names as constants.
//!
//! Each constant says which side sends the message and the protocol version
//! it arrived in (or left in). Anything else is answered with `-32601`.

// Requests.

/// Client → server: the handshake (2024-11-05 .. 2025-11-25; gone in 2026-07-28).
pub const INITIALIZE: &str = "initialize";
/// Either side: liveness check, answered with `{}` (gone in 2026-07-28).
pub const PING: &str = "ping";
/// Client → server: list tools (paginated).
pub const TOOLS_LIST: &str = "tools/list";
/// Client → server: call a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// Client → server: list resources (paginated).
pub const RESOURCES_LIST: &str = "resources/list";
/// Client → server: list resource templates (paginated).
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// Client → server: read a resource.
pub const RESOURCES_READ: &str = "resources/read";
/// Client → server: subscribe to a resource's updates (gone in 2026-07-28).
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// Client → server: end a subscription (gone in 2026-07-28).
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// Client → server: list prompts (paginated).
pub const PROMPTS_LIST: &str = "prompts/list";
/// Client → server: get a prompt.
pub const PROMPTS_GET: &str = "prompts/get";
/// Client → server: set the log level (gone in 2026-07-28).
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// Client → server: complete an argument.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// Server → client: list the client's roots.
pub const ROOTS_LIST: &str = "roots/list";
/// Server → client: sample from the client's model.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// Server → client: ask the user (2025-06-18).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// Client → server: the Skills extension's listing (`io.modelcontextprotocol/skills`).
pub const SKILLS_LIST: &str = "skills/list";
/// Client → server: the Skills extension's entry for one skill by its `SKILL.md` URI.
pub const SKILLS_GET: &str = "skills/get";
/// Client → server: a directory's children (Skills extension, `directoryRead`).
pub const RESOURCES_DIRECTORY_READ: &str = "resources/directory/read";
/// Client → server: versions and capabilities (2026-07-28).
pub const SERVER_DISCOVER: &str = "server/discover";
/// Client → server: open a notification stream (2026-07-28).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// Either side: a task's state (2025-11-25).
pub const TASKS_GET: &str = "tasks/get";
/// Either side: a task's result, waiting for a terminal state (2025-11-25).
pub const TASKS_RESULT: &str = "tasks/result";
/// Either side: list tasks (paginated, 2025-11-25).
pub const TASKS_LIST: &str = "tasks/list";
/// Either side: cancel a task (2025-11-25).
pub const TASKS_CANCEL: &str = "tasks/cancel";

// Notifications.

/// Client → server: the handshake finished (gone in 2026-07-28).
pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
/// Either side: a request was cancelled.
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
/// Either side: progress of a request that carried a progress token.
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
/// Server → client: a log record.
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
/// Server → client: the tool list changed.
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// Server → client: the resource list changed.
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// Server → client: a subscribed resource changed.
pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// Server → client: the prompt list changed.
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// Client → server: the roots changed (gone in 2026-07-28).
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// Server → client: a URL-mode elicitation finished (2025-11-25 only).
pub const NOTIFICATION_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// Server → client: a `subscriptions/listen` stream is open (2026-07-28).
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";
/// Either side: a task's state changed (2025-11-25).
pub const NOTIFICATION_TASKS_STATUS: &str = "notifications/tasks/status";

/// Requests a server may send to a client (the client's router answers
/// these and `-32601` for anything else).
pub const SERVER_TO_CLIENT_REQUESTS: [&str; 8] = [
    PING,
    ROOTS_LIST,
    SAMPLING_CREATE_MESSAGE,
    ELICITATION_CREATE,
    TASKS_GET,
    TASKS_RESULT,
    TASKS_LIST,
    TASKS_CANCEL,
];

/// Notifications a server may send to a client.
pub const SERVER_TO_CLIENT_NOTIFICATIONS: [&str; 10] = [
    NOTIFICATION_CANCELLED,
    NOTIFICATION_PROGRESS,
    NOTIFICATION_MESSAGE,
    NOTIFICATION_TOOLS_LIST_CHANGED,
    NOTIFICATION_RESOURCES_LIST_CHANGED,
    NOTIFICATION_RESOURCES_UPDATED,
    NOTIFICATION_PROMPTS_LIST_CHANGED,
    NOTIFICATION_ELICITATION_COMPLETE,
    NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
    NOTIFICATION_TASKS_STATUS,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_live_under_notifications_and_requests_do_not() {
        for m in SERVER_TO_CLIENT_NOTIFICATIONS {
            assert!(m.starts_with("notifications/"), "{m}");
        }
        for m in SERVER_TO_CLIENT_REQUESTS {
            assert!(!m.starts_with("notifications/"), "{m}");
        }
    }
}
