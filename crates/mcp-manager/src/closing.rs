//! What the manager is closing: every connection it let go of and every task it stopped, so that `close` and `disconnect` can wait for all of them.
//!
//! A connection leaves the manager in many ways: a replaced or removed
//! server, a connection whose peer hung up, a failed listing, a stopped
//! task. Each one is closed here, on a task of its own, and recorded with
//! the server's id: [`McpManager::close`](crate::McpManager::close) and
//! [`McpManager::disconnect_all`](crate::McpManager::disconnect_all) wait
//! for every record, [`McpManager::disconnect`](crate::McpManager::disconnect)
//! for those of its server. A host that exits after `close` therefore
//! leaves no server process behind: nothing is closed on a task the host's
//! runtime may drop before it has finished.
//!
//! A stopped (aborted) task is recorded too: the connection it held is
//! handed over when the task is dropped, which happens after the abort, so
//! waiting for the task first and then for what it handed over misses
//! nothing.

use std::sync::{Arc, Mutex};

use mcp_transport::Client;
use tokio::task::JoinHandle;

/// The closes and stopped tasks in progress, by server id.
#[derive(Default)]
pub(crate) struct Closings {
    pending: Mutex<Vec<(Arc<str>, JoinHandle<()>)>>,
}

impl Closings {
    /// Closes `client` politely on a task of its own and records it. Outside
    /// a tokio runtime (a manager dropped after its runtime) the client is
    /// dropped instead, which ends the connection at once.
    pub(crate) fn close(&self, id: &Arc<str>, client: Client) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let task = runtime.spawn(async move { client.close().await });
        self.record(id, task);
    }

    /// Aborts `task` and records it, so that waiting covers the connection
    /// it hands over as it is dropped.
    pub(crate) fn stop(&self, id: &Arc<str>, task: JoinHandle<()>) {
        task.abort();
        self.record(id, task);
    }

    fn record(&self, id: &Arc<str>, task: JoinHandle<()>) {
        let mut pending = mcp_proto::sync::lock(&self.pending);
        pending.retain(|(_, task)| !task.is_finished());
        pending.push((Arc::clone(id), task));
    }

    /// Waits until every close recorded for `id` (every one, with `None`)
    /// has finished, those recorded while waiting included.
    pub(crate) async fn settle(&self, id: Option<&str>) {
        loop {
            let due: Vec<JoinHandle<()>> = {
                let mut pending = mcp_proto::sync::lock(&self.pending);
                let (due, rest) = std::mem::take(&mut *pending)
                    .into_iter()
                    .partition(|(server, _)| id.is_none_or(|id| &**server == id));
                *pending = rest;
                due.into_iter().map(|(_, task)| task).collect()
            };
            if due.is_empty() {
                return;
            }
            for task in due {
                // An aborted task ends with a cancellation error: that is
                // the end waited for.
                let _ = task.await;
            }
        }
    }
}

/// A connection a server's task owns: when the task lets go of it (it
/// ends, fails, or is dropped after an abort), the connection is closed
/// through [`Closings`].
pub(crate) struct Owned {
    client: Client,
    id: Arc<str>,
    closings: Arc<Closings>,
}

impl Owned {
    pub(crate) fn new(client: Client, id: Arc<str>, closings: Arc<Closings>) -> Owned {
        Owned {
            client,
            id,
            closings,
        }
    }

    /// The connection.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        self.closings.close(&self.id, self.client.clone());
    }
}
