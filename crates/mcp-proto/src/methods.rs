//! MCP method names as constants.
//!
//! One constant per request and notification a client sends or receives, for
//! protocol versions 2024-11-05 through 2026-07-28.

/// `initialize` (client → server, legacy handshake).
pub const INITIALIZE: &str = "initialize";
/// `ping` (either direction; removed in 2026-07-28).
pub const PING: &str = "ping";
/// `tools/list`.
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub const TOOLS_CALL: &str = "tools/call";
/// `resources/list`.
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`.
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe`.
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe`.
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `prompts/list`.
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub const PROMPTS_GET: &str = "prompts/get";
/// `logging/setLevel`.
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// `completion/complete`.
pub const COMPLETION_COMPLETE: &str = "completion/complete";
/// `roots/list` (server → client).
pub const ROOTS_LIST: &str = "roots/list";
/// `sampling/createMessage` (server → client).
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `elicitation/create` (server → client, 2025-06-18).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `server/discover` (2026-07-28).
pub const SERVER_DISCOVER: &str = "server/discover";
/// `subscriptions/listen` (2026-07-28).
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// `tasks/get` (2025-11-25, experimental).
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/result` (2025-11-25, experimental).
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list` (2025-11-25, experimental).
pub const TASKS_LIST: &str = "tasks/list";
/// `tasks/cancel` (2025-11-25, experimental).
pub const TASKS_CANCEL: &str = "tasks/cancel";

/// `notifications/initialized` (client → server).
pub const NOTIFICATION_INITIALIZED: &str = "notifications/initialized";
/// `notifications/cancelled` (either direction).
pub const NOTIFICATION_CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress` (either direction).
pub const NOTIFICATION_PROGRESS: &str = "notifications/progress";
/// `notifications/message` (server log message).
pub const NOTIFICATION_MESSAGE: &str = "notifications/message";
/// `notifications/tools/list_changed`.
pub const NOTIFICATION_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/resources/list_changed`.
pub const NOTIFICATION_RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// `notifications/resources/updated`.
pub const NOTIFICATION_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// `notifications/prompts/list_changed`.
pub const NOTIFICATION_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/roots/list_changed` (client → server).
pub const NOTIFICATION_ROOTS_LIST_CHANGED: &str = "notifications/roots/list_changed";
/// `notifications/elicitation/complete` (2025-11-25, URL mode).
pub const NOTIFICATION_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// `notifications/tasks/status` (2025-11-25, experimental).
pub const NOTIFICATION_TASKS_STATUS: &str = "notifications/tasks/status";
/// `notifications/subscriptions/acknowledged` (2026-07-28).
pub const NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED: &str =
    "notifications/subscriptions/acknowledged";
