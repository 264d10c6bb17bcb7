//! Tasks (2025-11-25, experimental): task-augmented requests and `tasks/*`.
//!
//! 2026-07-28 moves tasks to the `io.modelcontextprotocol/tasks` extension
//! with a different design; these types are the 2025-11-25 shape.

use serde::{Deserialize, Serialize};

use super::Meta;
use super::common::impl_result_type;
use super::de::open_string_enum;
use super::{Cursor, JsonObject, ResultType};

/// The `task` member of a task-augmented request's parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskMetadata {
    /// How long to keep the task after creation, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The value of `_meta["io.modelcontextprotocol/related-task"]`
/// ([`meta::RELATED_TASK`](super::meta::RELATED_TASK)).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedTaskMetadata {
    /// The task the message belongs to.
    pub task_id: String,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

open_string_enum! {
    /// A task's state.
    #[derive(Default)]
    pub enum TaskStatus {
        /// Being processed.
        #[default]
        Working = "working",
        /// Waiting for input (elicitation or sampling).
        InputRequired = "input_required",
        /// Finished; the result is available (terminal).
        Completed = "completed",
        /// Failed (terminal).
        Failed = "failed",
        /// Cancelled (terminal).
        Cancelled = "cancelled",
    }
}

impl TaskStatus {
    /// Whether the task can no longer change.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }
}

/// A task's state. Also the result of `tasks/get` and `tasks/cancel` and the
/// parameters of `notifications/tasks/status`, each of which is a task plus
/// `_meta`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The task's id.
    pub task_id: String,
    /// Its state.
    pub status: TaskStatus,
    /// A human-readable note on the state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When it last changed (ISO 8601).
    pub last_updated_at: String,
    /// How long it is kept, in milliseconds; `null` for unlimited (the field
    /// is required, so `None` is written as `null`).
    pub ttl: Option<u64>,
    /// Suggested polling interval in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval: Option<u64>,
    /// Metadata of the result or notification carrying the task.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `tasks/get` result.
pub type GetTaskResult = Task;

/// `tasks/cancel` result.
pub type CancelTaskResult = Task;

/// `notifications/tasks/status` parameters.
pub type TaskStatusNotificationParams = Task;

/// The answer to a task-augmented request: the task that was created.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTaskResult {
    /// The new task.
    pub task: Task,
    /// What the result holds (2026-07-28); missing means complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_type: Option<ResultType>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// Parameters of `tasks/get`, `tasks/result` and `tasks/cancel`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdParams {
    /// The task.
    pub task_id: String,
    /// Request metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `tasks/list` request parameters.
pub type ListTasksRequestParams = super::PaginatedRequestParams;

/// `tasks/list` result: one page of tasks.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// The tasks on this page.
    pub tasks: Vec<Task>,
    /// The cursor for the next page; `None` on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<Cursor>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Fields this crate does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl_result_type!(CreateTaskResult);
