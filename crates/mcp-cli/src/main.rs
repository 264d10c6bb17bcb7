//! `mcpctl`: a person's front end to the MCP client runtime, with a built-in demo server.
//!
//! This binary holds no logic a library user would also need: discovery,
//! validation and the store are mcp-config's; connections, status and
//! catalogs are mcp-manager's; model names, argument validation, result
//! conversion and approvals are mcp-toolbridge's. What is here is the
//! command line, the embedded default, the terminal (tables, colour,
//! progress, the approval prompt), the settings page (`ui`) and the demo
//! server.

mod approval;
mod arguments;
mod asks;
mod call;
mod cli;
mod completions;
mod daemon_client;
mod demo_catalog;
mod demo_server;
mod demo_tools;
mod exit;
mod import_cmd;
mod inputs;
mod interrupt;
mod local_trust;
mod login;
mod logs_cmd;
mod loopback;
mod output;
mod progress;
mod prompts_cmd;
mod ready;
mod resources_cmd;
mod retry;
mod runtime;
mod save;
mod serve_cmd;
mod serve_daemon;
mod serve_http;
mod servers;
mod skills_cmd;
mod sources;
mod sources_cmd;
mod store_cmd;
mod suggest;
mod tools_cmd;
mod trust_cmd;
mod ui;
mod watch;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::FromArgMatches;

use crate::cli::{Cli, Command};
use crate::exit::{CliError, Exit};
use crate::output::{Output, Paint};
use crate::sources::SourceOptions;

fn main() -> ExitCode {
    // The same command the man page and completions are made from (with
    // each command's unused global flags hidden).
    let cli = Cli::from_arg_matches(&cli::command().get_matches()).unwrap_or_else(|e| e.exit());
    init_tracing(cli.global.verbose);
    let output = Output::new(cli.global.json);
    match run(cli, &output) {
        Ok(exit) => exit.into(),
        Err(error) => {
            report(&error, &output);
            error.exit.into()
        }
    }
}

/// Shows a command's error: on stderr for people, as the one JSON
/// document on stdout with `--json` (see [`exit`]).
pub(crate) fn report(error: &CliError, output: &Output) {
    if output.json && !output.json_printed() {
        // stdout gone: nothing else can be said there.
        let _ = output.json(&error.to_json());
    } else {
        let label = output.paint_err(Paint::Red, "error:");
        eprintln!("mcpctl: {label} {error}");
    }
}

fn run(cli: Cli, output: &Output) -> Result<Exit, CliError> {
    let global = cli.global;
    let adhoc = match &cli.command {
        Command::Servers { adhoc, .. }
        | Command::Tools { adhoc, .. }
        | Command::Call { adhoc, .. }
        | Command::Retry { adhoc, .. }
        | Command::Watch { adhoc, .. }
        | Command::Resources { adhoc, .. }
        | Command::Read { adhoc, .. }
        | Command::Skills { adhoc, .. }
        | Command::Skill { adhoc, .. }
        | Command::Prompts { adhoc, .. }
        | Command::Prompt { adhoc, .. }
        | Command::Complete { adhoc, .. }
        | Command::Logs { adhoc, .. } => adhoc.clone(),
        _ => cli::AdHocArgs::default(),
    };
    // The commands that connect servers for the person declare roots,
    // sampling and elicitation, and answer them (on a terminal; `ui` in
    // its page, with these roots).
    let asks = matches!(
        cli.command,
        Command::Servers { .. }
            | Command::Tools { .. }
            | Command::Call { .. }
            | Command::Retry { .. }
            | Command::Watch { .. }
            | Command::Resources { .. }
            | Command::Read { .. }
            | Command::Skills { .. }
            | Command::Skill { .. }
            | Command::Prompts { .. }
            | Command::Prompt { .. }
            | Command::Complete { .. }
            | Command::Logs { .. }
            | Command::Ui(_)
    )
    .then(|| asks::AskOptions::new(global.roots.clone(), global.json));
    let sources = SourceOptions {
        adhoc,
        configs: global.configs,
        project: global.project,
        no_project: global.no_project,
        // The commands that start servers for the person ask; listings do not.
        ask: matches!(
            cli.command,
            Command::Tools { .. }
                | Command::Call { .. }
                | Command::Resources { .. }
                | Command::Read { .. }
                | Command::Skills { .. }
                | Command::Skill { .. }
                | Command::Prompts { .. }
                | Command::Prompt { .. }
                | Command::Complete { .. }
                | Command::Watch { .. }
                | Command::Retry { .. }
                | Command::Logs { .. }
        ),
        no_host_configs: global.no_host_configs,
        timeout: global.timeout,
        asks,
        gateway_asks: None,
    };
    match cli.command {
        Command::Completions { shell } => completions::completions(shell),
        Command::DynamicComplete { shell, line } => {
            // The scripts pass the line in the environment, out of `ps`.
            let line = std::env::var(completions::LINE_ENV)
                .ok()
                .filter(|from_env| !from_env.is_empty())
                .unwrap_or_else(|| line.join(" "));
            completions::dynamic(shell, &line)
        }
        Command::Man { out } => completions::man(out.as_deref()),
        Command::DemoServer => demo_server::run()
            .map(|()| Exit::Success)
            .map_err(|e| CliError::connection(format!("demo server: {e:#}"))),
        Command::Add(args) => store_cmd::add(*args, global.timeout, output),
        Command::Remove { name } => store_cmd::remove(&name, &sources, output),
        Command::Enable { name } => store_cmd::set_enabled(&name, true, &sources, output),
        Command::Disable { name } => store_cmd::set_enabled(&name, false, &sources, output),
        Command::Servers { allow_failures, .. } => {
            block_on(servers::run(&sources, allow_failures, output))
        }
        Command::Sources => sources_cmd::run(&sources, output),
        Command::Import { host } => import_cmd::run(host, &sources, output),
        Command::Tools {
            server,
            tool,
            allow_failures,
            schema,
            no_daemon,
            ..
        } => {
            let (server, tool) = tools_cmd::target(server, tool);
            block_on(tools_cmd::run(
                server.as_deref(),
                tool.as_deref(),
                allow_failures,
                schema,
                &sources,
                output,
                !no_daemon,
            ))
        }
        Command::Call {
            server,
            tool,
            arguments,
            no_daemon,
            save,
            force,
            ..
        } => {
            // The one server given on the command line is the default.
            let adhoc = crate::sources::adhoc_ids(&sources.adhoc);
            let default = match adhoc.as_slice() {
                [only] => Some(only.as_str()),
                _ => None,
            };
            let (server, tool, arguments) = call::target(server, tool, arguments, default)?;
            let request = call::CallRequest {
                flags: crate::sources::adhoc_flags(&sources.adhoc, &server),
                server,
                tool,
                arguments,
                preset: global.preset,
                daemon: !no_daemon,
                save: save.map(|dir| save::Save { dir, force }),
            };
            block_on(call::run(request, &sources, output))
        }
        Command::Skills {
            server,
            allow_failures,
            ..
        } => block_on(skills_cmd::list(
            server.as_deref(),
            allow_failures,
            &sources,
            output,
        )),
        Command::Skill { server, uri, .. } => {
            block_on(skills_cmd::load(&server, &uri, &sources, output))
        }
        Command::Resources {
            server,
            allow_failures,
            ..
        } => block_on(resources_cmd::list(
            server.as_deref(),
            allow_failures,
            &sources,
            output,
        )),
        Command::Read {
            server,
            uri,
            output: file,
            follow,
            ..
        } => block_on(resources_cmd::read(
            &server,
            &uri,
            file.as_deref(),
            follow,
            &sources,
            output,
        )),
        Command::Prompts {
            server,
            allow_failures,
            ..
        } => block_on(prompts_cmd::list(
            server.as_deref(),
            allow_failures,
            &sources,
            output,
        )),
        Command::Prompt {
            server,
            name,
            arguments,
            ..
        } => block_on(prompts_cmd::get(
            &server, &name, &arguments, &sources, output,
        )),
        Command::Complete {
            server,
            prompt,
            argument,
            prefix,
            context,
            ..
        } => block_on(prompts_cmd::complete(
            prompts_cmd::CompleteRequest {
                server: &server,
                prompt: &prompt,
                argument: &argument,
                prefix: &prefix,
                context: &context,
            },
            &sources,
            output,
        )),
        Command::Retry { server, .. } => block_on(retry::run(&server, &sources, output)),
        Command::Watch { follow, .. } => block_on(watch::run(&sources, output, follow)),
        Command::Logs {
            server,
            level,
            follow,
            ..
        } => block_on(logs_cmd::run(
            server.as_deref(),
            level,
            follow,
            &sources,
            output,
        )),
        Command::Login { server } => block_on(login::login(
            &server,
            global
                .timeout
                .unwrap_or(std::time::Duration::from_secs(300)),
            &sources,
            output,
        )),
        Command::Logout { server } => block_on(login::logout(&server, &sources, output)),
        Command::Ui(args) => block_on(ui::run(args, &sources)),
        Command::Serve {
            lazy,
            http,
            port,
            daemon,
            stop,
            no_daemon,
            in_background,
            names,
        } => {
            let listen = if http {
                serve_cmd::Listen::Http {
                    port: port.unwrap_or(0),
                }
            } else if daemon {
                serve_cmd::Listen::StartDaemon
            } else if stop {
                serve_cmd::Listen::StopDaemon
            } else if in_background {
                serve_cmd::Listen::Background
            } else {
                serve_cmd::Listen::Stdio { own: no_daemon }
            };
            // A gateway on stdio or the Unix socket runs on one worker
            // thread: a message read then wakes the task that handles it
            // on the thread that read it, with no second worker woken to
            // look for work (a futex wake-up each way of every call,
            // and a core taken from the host and the servers).
            let workers = match listen {
                serve_cmd::Listen::Stdio { .. } | serve_cmd::Listen::Background => 1,
                _ => 2,
            };
            block_on_with(
                workers,
                serve_cmd::run(&sources, global.preset, lazy, listen, names, output),
            )
        }
        Command::Trust { server: None, .. } => trust_cmd::list(output),
        Command::Trust {
            server: Some(server),
            ..
        } => block_on(trust_cmd::trust(&server, &sources, output)),
        Command::Untrust { server } => trust_cmd::untrust(&server, &sources, output),
    }
}

/// Runs an async command on a runtime made for it, under the Ctrl-C rule
/// of [`interrupt`]; the synchronous commands (the store's, the demo
/// server) never start one.
fn block_on<F: std::future::Future<Output = Result<Exit, CliError>>>(
    command: F,
) -> Result<Exit, CliError> {
    block_on_with(2, command)
}

/// [`block_on`] on a runtime of `workers` worker threads.
fn block_on_with<F: std::future::Future<Output = Result<Exit, CliError>>>(
    workers: usize,
    command: F,
) -> Result<Exit, CliError> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(|e| CliError::usage(format!("cannot start the async runtime: {e}")))?;
    interrupt::run(runtime, command)
}

/// `-v` sends tracing logs to stderr: info, then debug, then trace. Without
/// it nothing is logged, so stderr holds only mcpctl's own messages.
fn init_tracing(verbose: u8) {
    let level = match verbose {
        0 => return,
        1 => tracing::Level::INFO,
        2 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let ansi = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .with_target(true)
        .init();
}
