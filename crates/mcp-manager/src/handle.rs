//! `ServerHandle`: what the manager hands out for talking to one connected server, bound to its connection.
//!
//! A handle is taken from [`McpManager::server`](crate::McpManager::server)
//! or [`McpManager::wait_ready`](crate::McpManager::wait_ready) and holds
//! the connection that was current then. Every request through it first
//! checks, under the manager's lock, that this connection is still the
//! server's current one (same generation, same connection, manager open);
//! a handle that outlived a reconnect, a restart, the idle timeout or a
//! disconnect is refused with [`HandleError::Stale`] (`stale_handle`)
//! before anything is sent, so it never talks to a dead connection or to
//! a different run of the server. While the request is in flight the
//! server counts as in use: the idle policy leaves a connection with calls
//! in flight alone, and the idle period starts again when the call ends.
//!
//! The typed requests delegate to [`mcp_transport::Client`]'s, which keep
//! every protocol rule; the handle adds the binding and the use, and
//! records the log level and resource subscriptions the server accepted,
//! which the manager asks of every later connection (`interest.rs`).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mcp_proto::types::{
    CallToolRequestParams, CallToolResult, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResult, GetSkillResult, JsonObject, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResult, Skill,
};
use mcp_transport::{CallOptions, Client, LoadedSkill, SkillLoadError};
use tokio::time::Instant;

use crate::core::{Calls, Core, Entry};
use crate::error::HandleError;
use crate::interest::Interest;

/// A connected server as the manager hands it out: the connection current
/// when the handle was taken, used through typed requests that keep the
/// server's idle clock and are refused once that connection is no longer
/// current ([`HandleError::Stale`], code `stale_handle`).
///
/// Cheap to clone; every clone is bound to the same connection. A handle
/// does not keep a server from being disconnected, reconfigured or closed
/// by the idle policy between requests; take a fresh one after a
/// `stale_handle` refusal.
#[derive(Clone)]
pub struct ServerHandle {
    id: Arc<str>,
    client: Client,
    binding: Option<Binding>,
}

/// What ties a handle to its manager's entry.
#[derive(Clone)]
struct Binding {
    core: Arc<Core>,
    generation: u64,
    calls: Calls,
}

impl fmt::Debug for ServerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerHandle")
            .field("id", &self.id)
            .field("managed", &self.binding.is_some())
            .field("generation", &self.binding.as_ref().map(|b| b.generation))
            .finish_non_exhaustive()
    }
}

/// One request in flight through a bound handle: counted while it lives,
/// and its end is a use of the server.
struct InFlight<'a> {
    binding: &'a Binding,
    id: &'a str,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.binding.calls.in_flight.fetch_sub(1, Ordering::SeqCst);
        let mut state = self.binding.core.lock();
        if let Some(entry) = state.entries.get_mut(self.id)
            && self.binding.current(entry)
        {
            entry.last_used = Instant::now();
        }
    }
}

impl Binding {
    /// Whether `entry` still holds the connection this binding was made for.
    fn current(&self, entry: &Entry) -> bool {
        entry.generation == self.generation
            && entry.client.is_some()
            && entry
                .calls
                .as_ref()
                .is_some_and(|calls| Arc::ptr_eq(calls, &self.calls))
    }
}

impl ServerHandle {
    /// A handle to `entry`'s current connection, if it has one.
    pub(crate) fn of(core: &Arc<Core>, entry: &Entry) -> Option<ServerHandle> {
        let client = entry.client.clone()?;
        let calls = entry.calls.clone()?;
        Some(ServerHandle {
            id: Arc::clone(&entry.id),
            client,
            binding: Some(Binding {
                core: Arc::clone(core),
                generation: entry.generation,
                calls,
            }),
        })
    }

    /// A handle over a connection no manager holds (one a host or a test
    /// built itself with [`Client::connect`]): its requests go straight to
    /// `client`, keep no idle clock and are never refused as stale.
    pub fn unmanaged(id: impl Into<Arc<str>>, client: Client) -> ServerHandle {
        ServerHandle {
            id: id.into(),
            client,
            binding: None,
        }
    }

    /// The server's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the handle's connection is still the server's current one,
    /// so that a request through it would be sent. Always true for an
    /// [`unmanaged`](ServerHandle::unmanaged) handle.
    pub fn is_current(&self) -> bool {
        self.binding.as_ref().is_none_or(|binding| {
            let state = binding.core.lock();
            !binding.core.is_closed()
                && state
                    .entries
                    .get(&*self.id)
                    .is_some_and(|entry| binding.current(entry))
        })
    }

    /// Waits until the handle's connection has closed (the manager let go
    /// of it and it ended, or the server hung up). Sends nothing.
    pub async fn wait_closed(&self) {
        self.client.wait_closed().await;
    }

    /// How many notifications the server has sent on this connection so
    /// far ([`Client::notifications_sent`]): a caller that reads it before
    /// and after a request knows whether the server said anything
    /// meanwhile, and so whether [`ServerHandle::notifications_handled`]
    /// has anything to wait for.
    pub fn notifications_sent(&self) -> u64 {
        self.client.notifications_sent()
    }

    /// Waits until the manager has handled every notification the server
    /// sent before now, at most `limit`: its log messages and resource
    /// updates are then emitted as [`ManagerEvent`](crate::ManagerEvent)s,
    /// in the order they came, ahead of anything the caller does next. A
    /// caller whose response just arrived uses it to pass on what the
    /// server said before that response ahead of it (a gateway relaying a
    /// server's log messages during a call does). The manager reads a
    /// connection's notifications between its catalog refreshes, so this
    /// can wait for a refresh to end: `false` when `limit` passed first
    /// (a connection that ended handles no more). An
    /// [`unmanaged`](ServerHandle::unmanaged) handle's notifications go to
    /// no manager: `true` at once. Sends nothing.
    pub async fn notifications_handled(&self, limit: std::time::Duration) -> bool {
        let Some(binding) = &self.binding else {
            return true;
        };
        let sent = self.client.notifications_sent();
        let counters = &binding.calls;
        if counters.noted.load(Ordering::SeqCst) >= sent {
            return true;
        }
        let caught_up = async {
            loop {
                let grew = counters.noted_grew.notified();
                tokio::pin!(grew);
                grew.as_mut().enable();
                if counters.noted.load(Ordering::SeqCst) >= sent {
                    return true;
                }
                grew.await;
            }
        };
        tokio::time::timeout(limit, caught_up)
            .await
            .unwrap_or(false)
    }

    /// Checks that the connection is current, records the use and counts
    /// the request in flight until the returned guard drops.
    fn begin<E>(&self) -> Result<Option<InFlight<'_>>, HandleError<E>> {
        let Some(binding) = &self.binding else {
            return Ok(None);
        };
        let mut state = binding.core.lock();
        let entry = state
            .entries
            .get_mut(&*self.id)
            .filter(|entry| !binding.core.is_closed() && binding.current(entry));
        let Some(entry) = entry else {
            return Err(HandleError::Stale {
                id: self.id.to_string(),
            });
        };
        entry.last_used = Instant::now();
        binding.calls.in_flight.fetch_add(1, Ordering::SeqCst);
        Ok(Some(InFlight {
            binding,
            id: &self.id,
        }))
    }

    /// `ping` (MCP "Basic/Utilities/Ping").
    pub async fn ping(&self) -> Result<(), HandleError> {
        let _call = self.begin()?;
        Ok(self.client.ping().await?)
    }

    /// `tools/call` of `name` with `arguments` (MCP "Server/Tools",
    /// "Calling Tools").
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
    ) -> Result<CallToolResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.call_tool(name, arguments).await?)
    }

    /// `tools/call` with full parameters and per-call options.
    pub async fn call_tool_with(
        &self,
        params: &CallToolRequestParams,
        options: CallOptions,
    ) -> Result<CallToolResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.call_tool_with(params, options).await?)
    }

    /// One page of `tools/list` (MCP "Server/Tools", "Listing Tools").
    pub async fn list_tools(&self, cursor: Option<String>) -> Result<ListToolsResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.list_tools(cursor).await?)
    }

    /// `tools/list` with full parameters and per-call options.
    pub async fn list_tools_with(
        &self,
        params: &PaginatedRequestParams,
        options: CallOptions,
    ) -> Result<ListToolsResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.list_tools_with(params, options).await?)
    }

    /// One page of `resources/list` (MCP "Server/Resources", "Listing
    /// Resources").
    pub async fn list_resources(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.list_resources(cursor).await?)
    }

    /// `resources/list` with full parameters and per-call options.
    pub async fn list_resources_with(
        &self,
        params: &PaginatedRequestParams,
        options: CallOptions,
    ) -> Result<ListResourcesResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.list_resources_with(params, options).await?)
    }

    /// One page of `resources/templates/list` (MCP "Server/Resources",
    /// "Resource Templates").
    pub async fn list_resource_templates(
        &self,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.list_resource_templates(cursor).await?)
    }

    /// `resources/templates/list` with full parameters and per-call options.
    pub async fn list_resource_templates_with(
        &self,
        params: &PaginatedRequestParams,
        options: CallOptions,
    ) -> Result<ListResourceTemplatesResult, HandleError> {
        let _call = self.begin()?;
        Ok(self
            .client
            .list_resource_templates_with(params, options)
            .await?)
    }

    /// `resources/read` of one URI (MCP "Server/Resources", "Reading
    /// Resources").
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.read_resource(uri).await?)
    }

    /// `resources/read` with full parameters and per-call options.
    pub async fn read_resource_with(
        &self,
        params: &ReadResourceRequestParams,
        options: CallOptions,
    ) -> Result<ReadResourceResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.read_resource_with(params, options).await?)
    }

    /// `resources/subscribe` (MCP "Server/Resources", "Subscriptions"):
    /// the server sends `notifications/resources/updated` for `uri`, which
    /// the manager delivers as [`ManagerEvent::ResourceUpdated`](crate::ManagerEvent::ResourceUpdated).
    /// Refused locally when the server did not declare
    /// `resources.subscribe`. Once the server accepts it, the manager
    /// remembers the subscription and asks every later connection of the
    /// server for it again (after a restart, a reconnect, a new session)
    /// before reporting the server `ready`, until
    /// [`ServerHandle::unsubscribe_resource`] or the server's removal; at
    /// most [`ManagerOptions::max_subscriptions`](crate::ManagerOptions::max_subscriptions)
    /// per server, beyond which a new URI is refused before it is sent
    /// ([`HandleError::TooManySubscriptions`]). An unmanaged handle
    /// remembers nothing.
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), HandleError> {
        let _call = self.begin()?;
        let limit = self.subscription_limit();
        if self.remember(|interest| {
            interest.subscriptions.len() >= limit && !interest.subscriptions.contains(uri)
        }) == Some(true)
        {
            return Err(HandleError::TooManySubscriptions {
                id: self.id.to_string(),
                limit,
            });
        }
        self.client.subscribe_resource(uri).await?;
        self.remember(|interest| {
            // Subscriptions that raced past the check still end at the limit.
            if interest.subscriptions.len() < limit {
                interest.subscriptions.insert(uri.to_owned());
            }
        });
        Ok(())
    }

    /// `resources/unsubscribe`: ends a [`ServerHandle::subscribe_resource`];
    /// once the server accepts it, later connections are no longer asked
    /// for it.
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), HandleError> {
        let _call = self.begin()?;
        self.client.unsubscribe_resource(uri).await?;
        self.remember(|interest| interest.subscriptions.remove(uri));
        Ok(())
    }

    /// `logging/setLevel` (MCP "Server/Utilities/Logging"): the least
    /// severe `notifications/message` the server should send from now on,
    /// delivered as [`ManagerEvent::Log`](crate::ManagerEvent::Log).
    /// Refused locally when the server did not declare `logging`. Once the
    /// server accepts it, the manager remembers the level and sets it again
    /// on every later connection of the server (after a restart, a
    /// reconnect, a new session) before reporting the server `ready`. An
    /// unmanaged handle remembers nothing.
    pub async fn set_logging_level(&self, level: LoggingLevel) -> Result<(), HandleError> {
        let _call = self.begin()?;
        self.client.set_logging_level(level).await?;
        self.remember(|interest| interest.level = Some(level));
        Ok(())
    }

    /// Runs `f` on what the manager remembers for this server (its entry's
    /// [`Interest`]); `None` for an unmanaged handle or a removed server.
    fn remember<R>(&self, f: impl FnOnce(&mut Interest) -> R) -> Option<R> {
        let binding = self.binding.as_ref()?;
        let mut state = binding.core.lock();
        let entry = state.entries.get_mut(&*self.id)?;
        Some(f(&mut entry.interest))
    }

    /// The most subscriptions remembered per server.
    fn subscription_limit(&self) -> usize {
        self.binding
            .as_ref()
            .map_or(usize::MAX, |binding| binding.core.options.max_subscriptions)
    }

    /// One page of `prompts/list` (MCP "Server/Prompts", "Listing Prompts").
    pub async fn list_prompts(
        &self,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.list_prompts(cursor).await?)
    }

    /// `prompts/list` with full parameters and per-call options.
    pub async fn list_prompts_with(
        &self,
        params: &PaginatedRequestParams,
        options: CallOptions,
    ) -> Result<ListPromptsResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.list_prompts_with(params, options).await?)
    }

    /// `prompts/get` (MCP "Server/Prompts", "Getting a Prompt") with string
    /// arguments.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Option<std::collections::BTreeMap<String, String>>,
    ) -> Result<GetPromptResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.get_prompt(name, arguments).await?)
    }

    /// `prompts/get` with full parameters and per-call options.
    pub async fn get_prompt_with(
        &self,
        params: &GetPromptRequestParams,
        options: CallOptions,
    ) -> Result<GetPromptResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.get_prompt_with(params, options).await?)
    }

    /// `completion/complete` (MCP "Server/Utilities/Completion").
    pub async fn complete(
        &self,
        params: &CompleteRequestParams,
    ) -> Result<CompleteResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.complete(params).await?)
    }

    /// `completion/complete` with per-call options.
    pub async fn complete_with(
        &self,
        params: &CompleteRequestParams,
        options: CallOptions,
    ) -> Result<CompleteResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.complete_with(params, options).await?)
    }

    /// `skills/get` of one skill's URI (the Skills extension), as
    /// [`Client::get_skill`].
    pub async fn get_skill(&self, uri: &str) -> Result<GetSkillResult, HandleError> {
        let _call = self.begin()?;
        Ok(self.client.get_skill(uri).await?)
    }

    /// A skill's `SKILL.md`, read and verified against its entry, as
    /// [`Client::load_skill_with`].
    pub async fn load_skill_with(
        &self,
        entry: &Skill,
        options: CallOptions,
    ) -> Result<LoadedSkill, HandleError<SkillLoadError>> {
        let _call = self.begin()?;
        Ok(self.client.load_skill_with(entry, options).await?)
    }

    /// One file a loaded skill lists, read and verified, as
    /// [`Client::read_skill_file_with`].
    pub async fn read_skill_file_with(
        &self,
        skill: &LoadedSkill,
        file: &str,
        options: CallOptions,
    ) -> Result<ReadResourceResult, HandleError<SkillLoadError>> {
        let _call = self.begin()?;
        Ok(self
            .client
            .read_skill_file_with(skill, file, options)
            .await?)
    }
}
