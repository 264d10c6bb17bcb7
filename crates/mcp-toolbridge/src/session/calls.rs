//! The call pipeline: what a call is aimed at, resolving it against the current catalog, validation, the permission gate and dispatch on the wire.

use super::*;

/// What a call is aimed at.
pub(crate) enum Target {
    /// A bound tool of a ready server.
    Live(Arc<BoundTool>),
    /// A bound tool from the cache.
    Deferred(Arc<BoundTool>),
    /// A raw `(server, tool)` pair from `call_mcp_tool`, against the live
    /// catalog.
    Named { server: String, tool: String },
}

impl Target {
    pub(super) fn server(&self) -> &str {
        match self {
            Target::Live(bound) | Target::Deferred(bound) => &bound.server,
            Target::Named { server, .. } => server,
        }
    }

    pub(super) fn via(&self) -> &str {
        match self {
            Target::Live(bound) | Target::Deferred(bound) => &bound.model_name,
            Target::Named { .. } => super::loader::CALL_MCP_TOOL,
        }
    }
}

/// A tool resolved against its server's current catalog.
pub(super) struct Resolved {
    pub(super) server: ReadyServer,
    pub(super) index: usize,
    /// The backend epoch the server was resolved in.
    pub(super) epoch: u64,
}

impl Resolved {
    pub(super) fn tool(&self) -> &Tool {
        &self.server.catalog.tools()[self.index]
    }
}

impl Inner {
    /// `result` within the session's budget for `server`'s `tool` (whole
    /// when the session has none), as the tool's own size hint adjusts it.
    pub(super) async fn budgeted(
        &self,
        result: ToolResult,
        server: &str,
        tool: &str,
        hint: Option<usize>,
    ) -> ToolResult {
        match &self.options.budget {
            Some(budget) => self.spills.apply(result, budget, server, tool, hint).await,
            None => result,
        }
    }

    /// Runs one call: gate, resolve, validate, authorize, dispatch.
    pub(crate) async fn run_call(self: &Arc<Self>, target: Target, call: ToolCall) -> ToolOutcome {
        let outcome = self.run_call_inner(&target, &call).await;
        match &outcome {
            ToolOutcome::Completed(result) => tracing::debug!(
                server = target.server(),
                via = target.via(),
                is_error = result.is_error,
                "MCP call completed"
            ),
            ToolOutcome::Failed { failure, .. } => tracing::debug!(
                server = target.server(),
                via = target.via(),
                %failure,
                "MCP call failed"
            ),
            _ => tracing::debug!(
                server = target.server(),
                via = target.via(),
                "MCP call cancelled"
            ),
        }
        outcome
    }

    pub(super) async fn run_call_inner(
        self: &Arc<Self>,
        target: &Target,
        call: &ToolCall,
    ) -> ToolOutcome {
        if call.cancel.is_cancelled() {
            return ToolOutcome::Cancelled;
        }
        if let Err(failure) = self.gate(target.server()) {
            return ToolOutcome::failed(failure);
        }
        let resolved = match self.resolve(target, &call.cancel).await {
            Ok(resolved) => resolved,
            Err(outcome) => return outcome,
        };
        let tool = resolved.tool();
        let cell = self.schema_cell(&resolved.server.id, resolved.server.lifetime, &tool.name);
        // Compiled outside the session lock; a caller racing here waits on
        // the cell, never on the session.
        let schema = cell.get_or_init(|| ArgumentSchema::compile(&tool.input_schema));
        let label = match target {
            Target::Named { server, tool } => format!("{tool} of server {server}"),
            // A gateway's client knows the tool by the server's own name.
            _ if call.passthrough.as_ref().is_some_and(|p| p.server_names) => tool.name.clone(),
            _ => target.via().to_owned(),
        };
        let arguments = match schema.check(&label, &call.arguments) {
            Ok(arguments) => arguments,
            Err(invalid) => return ToolOutcome::failed(CallFailure::InvalidArguments(invalid)),
        };
        if let Err(outcome) = self
            .authorize(&resolved, &arguments, call, target.via())
            .await
        {
            return outcome;
        }
        self.dispatch(&resolved, arguments, call).await
    }

    /// The session-level checks: the channel is on and the server allowed.
    pub(super) fn gate(&self, server: &str) -> Result<(), CallFailure> {
        let state = self.lock();
        if !state.enabled {
            return Err(CallFailure::Unavailable {
                server: server.to_owned(),
                reason: "MCP tools are turned off in this session".to_owned(),
            });
        }
        if !state.allows(server) {
            return Err(CallFailure::Unavailable {
                server: server.to_owned(),
                reason: "not allowed in this session".to_owned(),
            });
        }
        Ok(())
    }

    pub(super) async fn resolve(
        &self,
        target: &Target,
        cancel: &CancelToken,
    ) -> Result<Resolved, ToolOutcome> {
        // The epoch before the backend: a replacement in between shows as
        // a changed epoch at the re-check, never as a false match.
        let epoch = self.epoch.load(Ordering::SeqCst);
        let backend = self.backend();
        match target {
            Target::Live(bound) => {
                let Some(lifetime) = bound.lifetime else {
                    return Err(ToolOutcome::failed(CallFailure::Protocol(
                        "a live tool without a catalog lifetime".into(),
                    )));
                };
                if bound.epoch != epoch {
                    return Err(ToolOutcome::failed(CallFailure::Stale {
                        server: bound.server.to_string(),
                    }));
                }
                let mut availability = backend.availability(&bound.server);
                // A server on its way back (its connection ended and a new
                // one is being set up, or it starts on use) is waited for,
                // as a deferred tool's server is; the call is not made if it
                // misses the deadline.
                let mut reconnected = false;
                if let Availability::Pending { .. } | Availability::Dormant { .. } = availability {
                    let wait = self
                        .options
                        .call_timeout
                        .map_or(self.options.connect_wait, |call| {
                            call.min(self.options.connect_wait)
                        });
                    let deadline = Instant::now() + wait;
                    availability = tokio::select! {
                        availability = backend.wait_ready(&bound.server, deadline) => availability,
                        _ = cancel.cancelled() => return Err(ToolOutcome::Cancelled),
                    };
                    if let Availability::Pending { .. } = availability {
                        return Err(ToolOutcome::failed(CallFailure::NotReady {
                            server: bound.server.to_string(),
                            waited: wait,
                        }));
                    }
                    reconnected = true;
                }
                match availability {
                    Availability::Ready(server) if server.lifetime == lifetime => {
                        let index = find_tool(&server, &bound.tool().name, Some(bound.index))
                            .ok_or_else(|| unknown_tool(&bound.model_name))?;
                        Ok(Resolved {
                            server,
                            index,
                            epoch,
                        })
                    }
                    Availability::Ready(server) => {
                        // The reconnect this call waited for is followed
                        // when it offers the identical tool: waiting for it
                        // would be pointless otherwise.
                        let same = (self.options.follow_unchanged_tools || reconnected)
                            .then(|| find_tool(&server, &bound.tool().name, None))
                            .flatten()
                            .filter(|&i| server.catalog.tools()[i] == *bound.tool());
                        match same {
                            Some(index) => Ok(Resolved {
                                server,
                                index,
                                epoch,
                            }),
                            None => Err(ToolOutcome::failed(CallFailure::Stale {
                                server: bound.server.to_string(),
                            })),
                        }
                    }
                    other => Err(ToolOutcome::failed(CallFailure::Unavailable {
                        server: bound.server.to_string(),
                        reason: other.describe(),
                    })),
                }
            }
            Target::Deferred(bound) => {
                let availability = match backend.availability(&bound.server) {
                    Availability::Pending { .. }
                    | Availability::Dormant { .. }
                    | Availability::Stopped { .. } => {
                        self.lock().watching.insert(bound.server.to_string());
                        let deadline = Instant::now() + self.options.connect_wait;
                        tokio::select! {
                            availability = backend.wait_ready(&bound.server, deadline) => availability,
                            _ = cancel.cancelled() => return Err(ToolOutcome::Cancelled),
                        }
                    }
                    other => other,
                };
                match availability {
                    Availability::Ready(server) => {
                        let index = find_tool(&server, &bound.tool().name, None)
                            .ok_or_else(|| unknown_tool(&bound.model_name))?;
                        Ok(Resolved {
                            server,
                            index,
                            epoch,
                        })
                    }
                    other => Err(ToolOutcome::failed(CallFailure::Unavailable {
                        server: bound.server.to_string(),
                        reason: other.describe(),
                    })),
                }
            }
            Target::Named { server, tool } => match backend.availability(server) {
                Availability::Ready(ready) => {
                    let index = find_tool(&ready, tool, None).ok_or_else(|| {
                        ToolOutcome::failed(CallFailure::UnknownTool {
                            name: format!("{tool}\" on server \"{server}"),
                        })
                    })?;
                    Ok(Resolved {
                        server: ready,
                        index,
                        epoch,
                    })
                }
                other => Err(ToolOutcome::failed(CallFailure::Unavailable {
                    server: server.clone(),
                    reason: format!(
                        "{}; call {} with server {server:?} first",
                        other.describe(),
                        super::loader::LOAD_MCP
                    ),
                })),
            },
        }
    }

    /// Sends the call and waits for its answer, the deadline or the
    /// caller's cancellation (which withdraws the request on the wire).
    pub(super) async fn dispatch(
        &self,
        resolved: &Resolved,
        arguments: Map<String, Value>,
        call: &ToolCall,
    ) -> ToolOutcome {
        let backend = self.backend();
        let server = &resolved.server.id;
        let Some(handle) = backend.server(server) else {
            return ToolOutcome::failed(CallFailure::Unavailable {
                server: server.to_string(),
                reason: backend.availability(server).describe(),
            });
        };
        let mut params = CallToolRequestParams::new(resolved.tool().name.clone(), Some(arguments));
        let timeout = backend.call_timeout(server).or(self.options.call_timeout);
        let mut options = CallOptions::default().timeout(timeout);
        if let Some(passthrough) = &call.passthrough {
            params.meta.clone_from(&passthrough.meta);
            options.stream_paused = passthrough.stream_paused.get().cloned();
            // A gateway relaying the server's input rounds to its client:
            // the round comes back here, and the retry carries the
            // client's answers and the server's state.
            if passthrough.rounds {
                options.return_input_required = true;
                params
                    .input_responses
                    .clone_from(&passthrough.input_responses);
                params.request_state.clone_from(&passthrough.request_state);
            }
        }
        // Progress asked for: each report restarts the deadline, within
        // the session's hard limit (MCP basic/utilities/progress and the
        // lifecycle's timeouts: "enforce a maximum timeout").
        let mut progress = None;
        if let Some(sink) = &call.progress {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            options.progress = Some(tx);
            options.reset_timeout_on_progress = true;
            options.max_total_timeout = Some(timeout.map_or(self.options.max_call_time, |t| {
                t.max(self.options.max_call_time)
            }));
            progress = Some((sink, rx));
        }
        let answer = handle.call_tool_with(&params, options);
        tokio::pin!(answer);
        loop {
            let report = async {
                match &mut progress {
                    Some((_, rx)) => rx.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                // Dropping the request future sends `notifications/cancelled`.
                () = call.cancel.cancelled() => return ToolOutcome::Cancelled,
                answer = &mut answer => {
                    // Reports that arrived with the answer still reach the
                    // host, before it.
                    if let Some((sink, rx)) = &mut progress {
                        while let Ok(params) = rx.try_recv() {
                            let _ = sink.send(crate::tool::CallProgress::from_params(&params));
                        }
                    }
                    if let Some(passthrough) = &call.passthrough {
                        match &answer {
                            // Whole only for a client that gets it whole.
                            Ok(result) if passthrough.server_names => {
                                passthrough.keep(Ok(result.clone()));
                            }
                            Err(HandleError::Request(ClientError::Rpc(error))) => {
                                passthrough.keep(Err(error.clone()));
                            }
                            Err(HandleError::Request(ClientError::InputRequired {
                                round, ..
                            })) => {
                                passthrough.keep_round((**round).clone());
                            }
                            Ok(_) | Err(_) => {}
                        }
                    }
                    return match answer {
                    Ok(result) => {
                        let result = ToolResult::from_call_result(result, self.options.content);
                        let tool = resolved.tool();
                        let hint = crate::ResultBudget::hint_of(tool);
                        ToolOutcome::Completed(
                            self.budgeted(result, server, &tool.name, hint).await,
                        )
                    }
                    Err(HandleError::Request(ClientError::Cancelled)) => ToolOutcome::Cancelled,
                    Err(HandleError::Request(error)) => {
                        ToolOutcome::failed(CallFailure::from_client_error(&error))
                    }
                    // The connection was replaced between taking the
                    // handle and sending: nothing was sent.
                    Err(_) => ToolOutcome::failed(CallFailure::Unavailable {
                        server: server.to_string(),
                        reason: "its connection was replaced or closed".to_owned(),
                    }),
                    };
                }
                Some(params) = report => {
                    if let Some((sink, _)) = &progress {
                        // A host that stopped listening does not stop the call.
                        let _ = sink.send(crate::tool::CallProgress::from_params(&params));
                    }
                }
            }
        }
    }
}

pub(super) fn unknown_tool(name: &str) -> ToolOutcome {
    ToolOutcome::failed(CallFailure::UnknownTool {
        name: name.to_owned(),
    })
}

/// The index of tool `name` in a server's catalog, trying `hint` first.
pub(super) fn find_tool(server: &ReadyServer, name: &str, hint: Option<usize>) -> Option<usize> {
    let tools = server.catalog.tools();
    if let Some(i) = hint
        && tools.get(i).is_some_and(|t| t.name == name)
    {
        return Some(i);
    }
    tools.iter().position(|t| t.name == name)
}
