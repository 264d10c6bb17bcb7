//! `mcpctl call SERVER TOOL [ARGS]...` (or `SERVER.TOOL`): one or more calls of a tool through mcp-toolbridge, in one session.
//!
//! The bridge does the work a host's model would get: it validates the
//! arguments against the tool's input schema, asks for approval when the
//! preset requires it (through [`TerminalApproval`]), keeps session grants,
//! applies the call deadline and converts the result. Several JSON
//! documents make several calls, in order, in the same session, so that
//! "allow this tool for this session" covers the later ones. Such a batch
//! is one person's sequence, not a model's turn: each call binds afresh,
//! so when an earlier call makes the server change its tool list
//! (`notifications/tools/list_changed`), the next one takes the new list,
//! finds its tool by name again and is checked against the schema listed
//! now; a tool no longer offered ends the batch with `unknown_tool` (2).
//!
//! Output: text blocks as text, images and audio as a note with their type
//! and size (saved to files with `--save DIR`), other blocks and
//! `structuredContent` as JSON; structured content that the text blocks
//! merely repeat is printed once, as the JSON. A server's text
//! never reaches the terminal raw: line breaks and tabs are kept, every
//! other control character (escape sequences, carriage returns,
//! backspaces, C1 controls, bidirectional overrides) is shown escaped,
//! `\x1b`, whether stdout is a terminal or not, since whoever reads a pipe
//! or a file later may be one. With `--json` the result object
//! `{"content", "structured_content"?, "is_error"}` (snake_case as every
//! `--json` field; `content` and `structured_content` hold exactly what the
//! server sent), or for a call that failed the error document of
//! [`crate::exit`] (`{"error": {...}}`); an array of them when several
//! documents were given. Error messages on stderr carry a
//! server's words bounded (mcp-toolbridge's [`CallFailure`] cuts them at
//! 1 KiB with a marker) and escaped onto one line.
//!
//! Exit status: 0 success; 1 the tool reported an error (`is_error`) or the
//! server answered the call with a JSON-RPC error; 2 bad arguments, an
//! unknown server or tool, a configuration error, or a call that was not
//! approved; 3 the server could not be reached or the connection failed;
//! 130 interrupted (Ctrl-C cancels the call on the wire and skips the calls
//! after it; before the call starts it stops connecting). With several
//! calls, the most severe status wins.
//!
//! When a background gateway (`mcpctl serve --daemon`) serves the same
//! sources with the same preset and its server is ready, the calls go
//! through it, with the same output and exit status (see
//! [`crate::daemon_client`], which also says when approvals keep a call
//! here); `--no-daemon` always connects this command's own server.

use std::io::IsTerminal;
use std::sync::Arc;

use mcp_proto::types::ContentBlock;
use mcp_toolbridge::{
    CallFailure, CancelToken, ContentMode, McpSession, ModelTool, NotApproved, PermissionPreset,
    SessionOptions, ToolCall, ToolOutcome, ToolResult, ToolSet,
};
use serde_json::{Value, json};

use crate::approval::TerminalApproval;
use crate::cli::Preset;
use crate::daemon_client::Daemon;
use crate::exit::{CliError, Exit};
use crate::output::{self, Output, Paint, line};
use crate::runtime::{self, Runtime, Select};
use crate::sources::SourceOptions;

/// What `call` was asked to do.
#[derive(Debug)]
pub(crate) struct CallRequest {
    /// The server's id.
    pub(crate) server: String,
    /// The tool's raw name.
    pub(crate) tool: String,
    /// The arguments as typed (see [`crate::arguments`]).
    pub(crate) arguments: Vec<String>,
    /// The permission preset.
    pub(crate) preset: Preset,
    /// Whether the background gateway may make the calls (no
    /// `--no-daemon`).
    pub(crate) daemon: bool,
    /// The flag that gives the server when it is one given on the command
    /// line (`--stdio 'CMD'`), for hints that name a command.
    pub(crate) flags: Option<String>,
    /// `--save DIR` (and `--force`): where binary blocks are written.
    pub(crate) save: Option<crate::save::Save>,
}

/// `mcpctl call`.
pub(crate) async fn run(
    request: CallRequest,
    options: &SourceOptions,
    output: &Output,
) -> Result<Exit, CliError> {
    // Bad JSON, an unreadable file or stdin is found before anything starts.
    let calls = crate::arguments::parse(&request.arguments)?;
    // A preset that asks goes through a session that can ask: this one,
    // when there is a terminal (see `crate::daemon_client`).
    let may_ask = preset(request.preset).requires_approval() && std::io::stdin().is_terminal();
    if request.daemon
        && !may_ask
        && let Some(daemon) = Daemon::connect(options, &[request.preset]).await
    {
        if daemon.ready(&request.server).is_some() {
            let result = call_through_daemon(&daemon, &request, calls, output).await;
            daemon.close().await;
            return result;
        }
        daemon.close().await;
    }
    let runtime = Runtime::start(options, Select::One(&request.server)).await?;
    runtime.settle(output).await;
    let result = call_all(&runtime, &request, calls, output).await;
    runtime.close().await;
    result
}

async fn call_all(
    runtime: &Runtime,
    request: &CallRequest,
    calls: crate::arguments::Parsed,
    output: &Output,
) -> Result<Exit, CliError> {
    let server = request.server.as_str();
    let source = runtime.manager.source(server);
    let source_path = source.as_ref();
    if let Some(error) = runtime.config_error(server) {
        return Err(runtime::server_error(server, error, source_path));
    }
    let status = runtime.manager.status(server).ok_or_else(|| {
        CliError::usage(format!("no server with id `{server}`"))
            .code("unknown_server")
            .server(server)
    })?;
    if !status.is_connected() {
        return Err(runtime::server_failure(server, &status, source_path));
    }

    let preset = preset(request.preset);
    let mut session_options = SessionOptions::default();
    session_options.preset = preset;
    // Scripts and `--json` get every block exactly as the server sent it;
    // people get notes for binary blocks (see `print_result`).
    session_options.content = ContentMode::Raw;
    // A person (or a script) gets the whole result: no model context to save.
    session_options.budget = None;
    let session = runtime.session(session_options);
    if preset.requires_approval() && std::io::stdin().is_terminal() {
        session.set_approval_handler(Some(TerminalApproval::new(*output)));
    }
    if find_tool(&session.bind(), server, &request.tool).is_none() {
        return Err(unknown_tool(runtime, server, &request.tool));
    }
    let schema = runtime
        .manager
        .catalog(server)
        .and_then(|catalog| {
            catalog
                .tools()
                .iter()
                .find(|t| t.name == request.tool)
                .and_then(|t| t.input_schema.to_object())
        })
        .unwrap_or_default();
    let calls = calls
        .resolve(&schema)
        .map_err(|e| schema_hint(e, request))?;
    let caller = Caller::Direct {
        runtime,
        session: &session,
    };
    call_each(&caller, request, calls, preset, output).await
}

/// `mcpctl call` through the background gateway, whose report says
/// `request.server` is ready: the same checks, calls and output as
/// [`call_all`], over the daemon's connections.
async fn call_through_daemon(
    daemon: &Daemon,
    request: &CallRequest,
    calls: crate::arguments::Parsed,
    output: &Output,
) -> Result<Exit, CliError> {
    let server = request.server.as_str();
    let listed = daemon
        .ready(server)
        .map(|s| s.tools.as_slice())
        .unwrap_or_default();
    let Some(found) = listed
        .iter()
        .find(|t| t.tool.name == request.tool && t.served.is_some())
    else {
        let known: Vec<String> = listed.iter().map(|t| t.tool.name.clone()).collect();
        return Err(crate::suggest::unknown_tool_of(
            &known,
            server,
            None,
            &request.tool,
        ));
    };
    let calls = calls
        .resolve(&found.tool.input_schema.to_object().unwrap_or_default())
        .map_err(|e| schema_hint(e, request))?;
    let caller = Caller::Daemon(daemon);
    call_each(&caller, request, calls, preset(request.preset), output).await
}

/// An argument that does not fit the tool's schema: the error, for
/// `server`, with the command that shows the schema.
fn schema_hint(error: CliError, request: &CallRequest) -> CliError {
    let (server, tool) = (request.server.as_str(), request.tool.as_str());
    let error = error.server(server);
    if error.hint.is_some() {
        error.hint(format!(
            "{} shows its input schema",
            crate::tools_cmd::schema_command(server, tool, request.flags.as_deref())
        ))
    } else {
        error
    }
}

/// Who makes the calls: this run's own session, or the background gateway.
enum Caller<'a> {
    Direct {
        runtime: &'a Runtime,
        session: &'a McpSession,
    },
    Daemon(&'a Daemon),
}

impl Caller<'_> {
    /// One call of a batch (see [`rebound_call`] and [`daemon_call`]).
    async fn call(
        &self,
        server: &str,
        name: &str,
        index: usize,
        arguments: Value,
        output: &Output,
    ) -> Result<ToolOutcome, CliError> {
        match self {
            Caller::Direct { runtime, session } => {
                rebound_call(runtime, session, server, name, index, arguments, output).await
            }
            Caller::Daemon(daemon) => daemon_call(daemon, server, name, index, arguments).await,
        }
    }
}

/// The calls of a batch, in order, each result or error printed.
async fn call_each(
    caller: &Caller<'_>,
    request: &CallRequest,
    calls: Vec<Value>,
    preset: PermissionPreset,
    output: &Output,
) -> Result<Exit, CliError> {
    let server = request.server.as_str();
    let many = calls.len() > 1;
    let mut exit = Exit::Success;
    let mut results = Vec::new();
    for (index, arguments) in calls.into_iter().enumerate() {
        let outcome = match caller
            .call(server, &request.tool, index, arguments, output)
            .await
        {
            Ok(outcome) => outcome,
            Err(error) => {
                // The tool is gone (or the list would not hold still): the
                // calls after this one cannot be made either.
                exit = worse(exit, error.exit);
                if output.json {
                    results.push(error.to_json());
                } else {
                    crate::report(&error, output);
                }
                break;
            }
        };
        match &outcome {
            ToolOutcome::Completed(result) => {
                exit = worse(
                    exit,
                    if result.is_error {
                        Exit::ToolError
                    } else {
                        Exit::Success
                    },
                );
                let number = many.then_some(index + 1);
                let saved = match &request.save {
                    Some(save) => save
                        .blocks(&request.tool, number, &result.content)
                        .map_err(|e| e.server(server))?,
                    None => Vec::new(),
                };
                if output.json {
                    results.push(result_json(result));
                    for path in saved.iter().flatten() {
                        eprintln!("mcpctl: saved {}", path.display());
                    }
                } else {
                    print_result(result, output, number, &saved)?;
                }
            }
            _ => {
                let error = failure_error(&outcome, request, preset).server(server);
                exit = worse(exit, error.exit);
                if output.json {
                    results.push(error.to_json());
                } else {
                    crate::report(&error, output);
                }
                // Ctrl-C stops the whole sequence, not just this call.
                if error.exit == Exit::Interrupted {
                    break;
                }
            }
        }
    }
    if output.json && !results.is_empty() {
        let document = if many {
            Value::Array(results)
        } else {
            results.remove(0)
        };
        output
            .json(&document)
            .map_err(|e| CliError::usage(format!("cannot write to stdout: {e}")))?;
    }
    Ok(exit)
}

/// How many times one call of a batch binds again when the server's tool
/// list changed between its binding and its dispatch.
const REBIND_ATTEMPTS: usize = 4;

/// One call of a batch, bound afresh: a batch is one person's sequence,
/// not a model's turn, so a tool list change caused by an earlier call (or
/// by anything else) is followed rather than refused. Each call waits for
/// the server to settle (a refresh after `notifications/tools/list_changed`
/// finishes), takes a new binding, finds the tool by its name again and so
/// is checked against the schema the server lists now. A binding that goes
/// stale before the call is sent (the bridge refuses it, nothing sent) is
/// redone. `Err` when the tool is no longer offered, or the list kept
/// changing under every attempt.
async fn rebound_call(
    runtime: &Runtime,
    session: &McpSession,
    server: &str,
    name: &str,
    index: usize,
    arguments: Value,
    output: &Output,
) -> Result<ToolOutcome, CliError> {
    let what = format!("{server}.{name}");
    for _ in 0..REBIND_ATTEMPTS {
        runtime.settle(output).await;
        let Some(tool) = find_tool(&session.bind(), server, name) else {
            return Err(missing(runtime, server, name, index));
        };
        let outcome = call_one(&tool, index, arguments.clone(), output, &what).await;
        match &outcome {
            ToolOutcome::Failed {
                failure: CallFailure::Stale { .. },
                ..
            } => continue,
            // The call went out on a binding made before this run heard of
            // the change: the server's refusal is explained by the list it
            // has now, once this run has it too.
            ToolOutcome::Failed {
                failure: CallFailure::Server { .. },
                ..
            } if index > 0 => {
                runtime.settle(output).await;
                if find_tool(&session.bind(), server, name).is_none() {
                    return Err(missing(runtime, server, name, index));
                }
                return Ok(outcome);
            }
            _ => return Ok(outcome),
        }
    }
    Err(tools_changed(server, index, name))
}

/// One call of a batch through the background gateway, which binds afresh
/// for each call itself: a call refused as stale (nothing sent) is made
/// again, as [`rebound_call`] does; Ctrl-C cancels it (dropping the
/// request cancels it at the gateway, which cancels it upstream).
async fn daemon_call(
    daemon: &Daemon,
    server: &str,
    name: &str,
    index: usize,
    arguments: Value,
) -> Result<ToolOutcome, CliError> {
    let Some(served) = daemon
        .ready(server)
        .and_then(|s| s.tools.iter().find(|t| t.tool.name == name))
        .and_then(|t| t.served.clone())
    else {
        return Err(tool_gone(server, name, index));
    };
    // The gateway's session keeps the call's deadline; this one only
    // guards against a daemon that never answers.
    let options = mcp_transport::CallOptions::default()
        .timeout(Some(SessionOptions::default().max_call_time));
    for _ in 0..REBIND_ATTEMPTS {
        let claim = crate::interrupt::claim();
        let result = tokio::select! {
            result = daemon.call(&served, arguments.clone(), options.clone()) => result,
            () = claim.pressed() => return Ok(ToolOutcome::Cancelled),
        };
        let outcome = match result {
            Ok(result) => match crate::daemon_client::failure(&result) {
                Some(failure) => ToolOutcome::failed(failure),
                None => ToolOutcome::Completed(ToolResult {
                    content: result.content,
                    structured_content: result.structured_content,
                    is_error: result.is_error.unwrap_or(false),
                }),
            },
            Err(mcp_transport::ClientError::Cancelled) => ToolOutcome::Cancelled,
            // The gateway no longer serves the tool (its list changed).
            Err(mcp_transport::ClientError::Rpc(rpc))
                if rpc.code == mcp_proto::jsonrpc::error_codes::INVALID_PARAMS
                    && rpc.message.starts_with("unknown tool") =>
            {
                return Err(tool_gone(server, name, index));
            }
            Err(error) => ToolOutcome::failed(CallFailure::from_client_error(&error)),
        };
        if let ToolOutcome::Failed {
            failure: CallFailure::Stale { .. },
            ..
        } = &outcome
        {
            continue;
        }
        return Ok(outcome);
    }
    Err(tools_changed(server, index, name))
}

/// A call given up because its server's tool list kept changing under it.
fn tools_changed(server: &str, index: usize, name: &str) -> CliError {
    CliError::usage(format!(
        "server `{server}` changed its tool list {REBIND_ATTEMPTS} times while call {} of `{}` was being made; it was not made",
        index + 1,
        line(name)
    ))
    .hint("run it again once the server's tools hold still")
    .code("tools_changed")
    .server(server)
}

/// The tool `name` of `server` in a binding.
fn find_tool(tools: &ToolSet, server: &str, name: &str) -> Option<Arc<dyn ModelTool>> {
    tools
        .tools()
        .iter()
        .find(|tool| tools.resolve(tool.name()) == Some((server, name)))
        .cloned()
}

/// Why a batch's tool is not in the binding: its server is no longer
/// connected (a connection failure, exit 3) or no longer offers it.
fn missing(runtime: &Runtime, server: &str, name: &str, index: usize) -> CliError {
    match runtime.manager.status(server) {
        Some(status) if !status.is_connected() => {
            let source = runtime.manager.source(server);
            runtime::server_failure(server, &status, source.as_ref())
        }
        _ => tool_gone(server, name, index),
    }
}

/// The tool of a batch left the server's list after an earlier call.
fn tool_gone(server: &str, name: &str, index: usize) -> CliError {
    let after = if index == 0 {
        "before the first call".to_owned()
    } else {
        format!("after call {index}")
    };
    CliError::usage(format!(
        "server `{server}` no longer offers tool `{}`: its tool list changed {after}; call {} was not made",
        line(name),
        index + 1
    ))
    .hint(format!("`mcpctl tools {server}` lists its tools now"))
    .code("unknown_tool")
    .server(server)
}

/// One call; Ctrl-C cancels it (the server is sent `notifications/cancelled`):
/// the press is claimed from [`crate::interrupt`] while the call runs.
/// Progress is always asked for, so that a server reporting it keeps the
/// call alive past its deadline (up to the bridge's hard limit); on a
/// terminal the reports are shown on stderr ([`crate::progress::CallMeter`]).
async fn call_one(
    tool: &Arc<dyn ModelTool>,
    index: usize,
    arguments: Value,
    output: &Output,
    what: &str,
) -> ToolOutcome {
    let cancel = CancelToken::new();
    let (sink, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let call = ToolCall::new(format!("mcpctl-{}", index + 1), arguments)
        .with_cancel(cancel.clone())
        .with_progress(sink);
    let claim = crate::interrupt::claim();
    let interrupt = tokio::spawn(async move {
        claim.pressed().await;
        cancel.cancel();
    });
    let mut meter = crate::progress::CallMeter::new(output, what);
    let outcome = tool.call(call);
    tokio::pin!(outcome);
    let outcome = loop {
        let tick = crate::progress::tick(meter.is_some());
        tokio::select! {
            outcome = &mut outcome => break outcome,
            Some(report) = reports.recv() => {
                if let Some(meter) = &mut meter {
                    meter.report(report);
                }
            }
            () = tick => {
                if let Some(meter) = &mut meter {
                    meter.redraw();
                }
            }
        }
    };
    if let Some(meter) = &mut meter {
        meter.finish();
    }
    interrupt.abort();
    outcome
}

pub(crate) fn preset(preset: Preset) -> PermissionPreset {
    match preset {
        Preset::Full => PermissionPreset::FullAccess,
        Preset::Workspace => PermissionPreset::WorkspaceWrite,
        Preset::Readonly => PermissionPreset::ReadOnly,
    }
}

fn unknown_tool(runtime: &Runtime, server: &str, tool: &str) -> CliError {
    let known: Vec<String> = runtime
        .manager
        .catalog(server)
        .map(|catalog| catalog.tool_names().map(str::to_owned).collect())
        .unwrap_or_default();
    let source = runtime.manager.source(server);
    crate::suggest::unknown_tool_of(&known, server, source.as_ref(), tool)
}

/// The error for a call that produced no result, with its exit status:
/// refused before reaching the server (bad arguments, not approved) is 2,
/// a JSON-RPC error from the server is 1 (the server got the call and
/// refused it), and so is a call that ended without a usable result
/// (`call_failed`), an interruption 130, anything on the way 3.
fn failure_error(
    outcome: &ToolOutcome,
    request: &CallRequest,
    preset: PermissionPreset,
) -> CliError {
    let (server, tool) = (request.server.as_str(), request.tool.as_str());
    let flags = request.flags.as_deref();
    let failure = match outcome {
        ToolOutcome::Failed { failure, .. } => failure,
        ToolOutcome::Cancelled => {
            let mut error = CliError::connection(format!("the call of `{tool}` was cancelled"));
            error.exit = Exit::Interrupted;
            return error;
        }
        _ => return CliError::connection(format!("the call of `{tool}` did not complete")),
    };
    match failure {
        CallFailure::InvalidArguments(invalid) => {
            let of = if flags.is_some() {
                format!("the `{}` server", adhoc_flag(server))
            } else {
                format!("`{server}`")
            };
            let mut message =
                format!("invalid arguments for tool `{tool}` of {of}; nothing was sent:");
            for problem in &invalid.problems {
                let path = if problem.path.is_empty() {
                    "(arguments)"
                } else {
                    &problem.path
                };
                message.push_str(&format!(
                    "\n  at {}: {}",
                    line(path),
                    line(&problem.message)
                ));
            }
            if invalid.more > 0 {
                message.push_str(&format!("\n  and {} more", invalid.more));
            }
            CliError::usage(message)
                .hint(format!(
                    "{} shows its input schema",
                    crate::tools_cmd::schema_command(server, tool, flags)
                ))
                .code("invalid_arguments")
        }
        CallFailure::NotApproved(NotApproved::NoHandler) => CliError::usage(format!(
            "the call was not made: preset `{}` needs approval and there is no terminal to ask on",
            preset_name(preset)
        ))
        .hint("run it in a terminal to be asked, or pass --preset full")
        .code("not_approved"),
        CallFailure::NotApproved(reason) => {
            CliError::usage(reason.to_string()).code("not_approved")
        }
        CallFailure::UnknownTool { .. } => {
            CliError::usage(line(&failure.to_string())).code("unknown_tool")
        }
        CallFailure::Stale { .. } => {
            CliError::usage(line(&failure.to_string())).code("tools_changed")
        }
        CallFailure::Server { code, message } => {
            let mut error = CliError::usage(format!(
                "server `{server}` refused the call: {} (JSON-RPC error {code})",
                line(message)
            ));
            error.exit = Exit::ToolError;
            error.code("call_refused")
        }
        // The server took the call and it ended without a usable result
        // (input rounds exhausted, an unknown `resultType`, input nobody
        // could give, a malformed result): not the connection's failure.
        CallFailure::Protocol(reason) => {
            let mut error = CliError::usage(format!(
                "the call of `{tool}` on server `{server}` failed: {}",
                line(reason)
            ));
            error.exit = Exit::ToolError;
            error.code("call_failed")
        }
        other => CliError::connection(line(&other.to_string())),
    }
}

fn preset_name(preset: PermissionPreset) -> &'static str {
    match preset {
        PermissionPreset::FullAccess => "full",
        PermissionPreset::WorkspaceWrite => "workspace",
        PermissionPreset::ReadOnly => "readonly",
        _ => "?",
    }
}

fn worse(a: Exit, b: Exit) -> Exit {
    let rank = |exit: Exit| match exit {
        Exit::Success => 0,
        Exit::ToolError => 1,
        Exit::Usage => 2,
        Exit::Connection => 3,
        Exit::Interrupted => 4,
    };
    if rank(b) > rank(a) { b } else { a }
}

/// The result object of the scripting interface.
fn result_json(result: &ToolResult) -> Value {
    let mut object = json!({"content": result.content});
    if let Some(structured) = &result.structured_content {
        object["structured_content"] = structured.clone();
    }
    object["is_error"] = Value::Bool(result.is_error);
    object
}

/// Prints a result for people: text as text (control characters but line
/// breaks and tabs escaped), binary blocks as notes, the rest as JSON.
/// `saved` holds, by block index, the file `--save` wrote a binary block
/// to.
fn print_result(
    result: &ToolResult,
    output: &Output,
    number: Option<usize>,
    saved: &[Option<std::path::PathBuf>],
) -> Result<(), CliError> {
    let mut text = String::new();
    if let Some(number) = number {
        text.push_str(&output.paint(Paint::Dim, &format!("# call {number}")));
        text.push('\n');
    }
    // Structured content the text blocks merely repeat (MCP "Tools /
    // Structured Content": a server SHOULD also send it serialized as
    // text) is printed once, as the JSON.
    let repeated = result
        .structured_content
        .as_ref()
        .is_some_and(|structured| text_repeats(&result.content, structured));
    let mut unsaved = false;
    for (index, block) in result.content.iter().enumerate().filter(|_| !repeated) {
        let kind = match block {
            ContentBlock::Image(_) => "image",
            ContentBlock::Audio(_) => "audio",
            _ => "blob",
        };
        let line = match (block, crate::save::binary(block)) {
            (ContentBlock::Text(t), _) => output::block(&t.text).into_owned(),
            (_, Some((mime, data))) => {
                let place = match saved.get(index).and_then(Option::as_ref) {
                    Some(path) => format!(", saved to {}", line(&path.display().to_string())),
                    None => {
                        unsaved = true;
                        String::new()
                    }
                };
                let mime = if mime.is_empty() {
                    "no MIME type"
                } else {
                    mime
                };
                output.paint(
                    Paint::Dim,
                    &format!("[{kind}: {}, {}{place}]", line(mime), size(data)),
                )
            }
            (other, None) => output::to_json(other).unwrap_or_default(),
        };
        text.push_str(&line);
        if !line.ends_with('\n') {
            text.push('\n');
        }
    }
    if let Some(structured) = &result.structured_content {
        if !repeated && !result.content.is_empty() {
            text.push_str(&output.paint(Paint::Dim, "structured content:"));
            text.push('\n');
        }
        text.push_str(&output::to_json(structured).unwrap_or_default());
        text.push('\n');
    }
    output
        .text(&text)
        .map_err(|e| CliError::usage(format!("cannot write to stdout: {e}")))?;
    if unsaved {
        eprintln!(
            "mcpctl: {}",
            output.paint_err(Paint::Dim, "--save DIR writes the binary contents to files")
        );
    }
    if result.is_error {
        eprintln!(
            "mcpctl: {} the tool reported an error",
            output.paint_err(Paint::Red, "error:")
        );
    }
    Ok(())
}

/// Whether `content` is only text that says what `structured` says: one
/// text block (or several, joined) holding the same JSON value.
fn text_repeats(content: &[ContentBlock], structured: &Value) -> bool {
    let mut joined = String::new();
    for block in content {
        match block {
            ContentBlock::Text(text) => joined.push_str(&text.text),
            _ => return false,
        }
    }
    !content.is_empty()
        && serde_json::from_str::<Value>(joined.trim()).is_ok_and(|value| &value == structured)
}

/// The decoded size of base64 data, for people.
fn size(base64: &str) -> String {
    let data = base64.trim_end_matches('=').len();
    let bytes = data * 3 / 4;
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

/// `SERVER TOOL ARGS...` or `SERVER.TOOL ARGS...`: the target and the
/// arguments. `SERVER.TOOL` is read when the word after it is missing or
/// is an argument (`-`, JSON, `key=value`); the id is cut at its first dot.
/// With `default` (the one server given on the command line, `--stdio` or
/// `--url`), `TOOL ARGS...` alone calls that server's tool; naming it
/// (`stdio get-sum`, `stdio.get-sum`) works too.
pub(crate) fn target(
    server: String,
    tool: Option<String>,
    mut arguments: Vec<String>,
    default: Option<&str>,
) -> Result<(String, String, Vec<String>), CliError> {
    let is_argument =
        |word: &str| word == "-" || word.trim_start().starts_with(['{', '[']) || word.contains('=');
    if let Some(id) = default {
        let named = server == id
            || server
                .strip_prefix(id)
                .is_some_and(|rest| rest.starts_with('.'));
        if !named {
            if is_argument(&server) {
                return Err(CliError::usage(format!(
                    "which tool of the `{}` server? `{}` is an argument",
                    adhoc_flag(id),
                    line(&server)
                ))
                .hint("`mcpctl call --stdio 'CMD' TOOL [ARGS]`; `mcpctl tools --stdio 'CMD'` lists its tools")
                .code("invalid_arguments")
                .server(id));
            }
            if let Some(first) = tool {
                arguments.insert(0, first);
            }
            return Ok((id.to_owned(), server, arguments));
        }
    }
    match tool {
        Some(tool) if !is_argument(&tool) => Ok((server, tool, arguments)),
        tool => {
            let Some((id, name)) = server
                .split_once('.')
                .filter(|(id, name)| !id.is_empty() && !name.is_empty())
            else {
                return Err(
                    CliError::usage(format!("which tool of `{}`?", line(&server)))
                        .hint(
                            "`mcpctl call SERVER TOOL [ARGS]` or `mcpctl call SERVER.TOOL [ARGS]`",
                        )
                        .code("invalid_arguments"),
                );
            };
            if let Some(first) = tool {
                arguments.insert(0, first);
            }
            Ok((id.to_owned(), name.to_owned(), arguments))
        }
    }
}

/// The flag that gives the command-line server `id`.
fn adhoc_flag(id: &str) -> &'static str {
    if id.starts_with("url") {
        "--url"
    } else {
        "--stdio"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(size("iVBORw0KGgo="), "8 bytes");
        assert_eq!(size(&"A".repeat(4096)), "3.0 KiB");
    }
}
