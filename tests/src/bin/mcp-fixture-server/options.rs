//! Command-line options: which transport to serve and which faults to inject.
//!
//! Parsed by hand (`--flag`, `--flag VALUE` or `--flag=VALUE`) so that the
//! fixture needs no argument-parsing dependency. `--help` prints [`USAGE`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};

/// The text `--help` prints; every flag the fixture understands.
pub(crate) const USAGE: &str = "\
mcp-fixture-server: an MCP server with switchable faults, for tests and benchmarks

USAGE: mcp-fixture-server [OPTIONS]

Transport:
  --transport stdio|http|sse   stdio (default): NDJSON on stdin/stdout.
                               http: Streamable HTTP at http://127.0.0.1:PORT/mcp.
                               sse: legacy HTTP+SSE, GET /sse and POST /message.
  --port N                     port for http and sse; 0 (default) picks a free one.
                               The first stdout line is `listening on URL`.

Streamable HTTP:
  --sse-responses              answer POSTed requests with an SSE stream (default JSON).
  --no-get-stream              answer a GET without Last-Event-ID with 405.
  --expire-session-after N     the session becomes unknown (404) after N requests.
  --close-sse-before-response  close each POST's SSE stream after its priming event;
                               the response comes on GET with Last-Event-ID.
                               Implies --sse-responses; initialize is exempt.
  --cut-sse-mid-event          end each POST's SSE stream halfway through the
                               response event; resuming replays it whole.
                               Implies --sse-responses; initialize is exempt.
  --retry-ms N                 the SSE `retry` field, in ms (default 100).

Catalog:
  --tools N                    add N generated tools (tool_0001 ...) to tools/list.
  --page-size N                paginate tools/list with N tools per page.
  --repeat-cursor              the second page repeats the first page's nextCursor.
  --no-tools-capability        do not declare tools; tools/* is method not found.
  --instructions TEXT          the initialize result's instructions.
  --storm-tool                 offer the tool `list_changed_storm {count, ms}`: it answers at
                               once, then adds `count` echo tools (storm_0001 ...), sending
                               notifications/tools/list_changed after each, `ms` apart.
  --protocol-version V         answer initialize with V whatever was asked.

Faults:
  --delay-initialize-ms N      wait N ms before answering initialize.
  --junk-stdout                stdio: print a non-JSON line before every message.
  --crlf                       stdio: end lines with CRLF.
  --stderr-flood-mib N         write N MiB to stderr at startup, then serve.
  --oversize-kib N             pad the tools/list response to at least N KiB.
  --exit-after N               exit(0) once the response to the Nth request is out.
  --ignore-sigterm             keep running on SIGTERM; stdio: also on stdin EOF,
                               so only SIGKILL ends the process.
  --ignore-stdin-eof           stdio: keep running after stdin closes (SIGTERM ends it).
  --hang-initialize-if-exists FILE
                               never answer initialize while FILE exists (checked when it
                               arrives), so one config can hang or not from run to run.
  --fail-tools-list-after N    answer every tools/list after the first N with -32603.

Observation:
  --event-log FILE             append `EVENT UNIX_NANOS PID` lines to FILE, one write each:
                               initialize-start, initialize-end, tools-list.
";

/// Which transport the fixture serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TransportKind {
    /// NDJSON over stdin/stdout.
    Stdio,
    /// Streamable HTTP on one endpoint, `/mcp`.
    Http,
    /// The 2024-11-05 HTTP+SSE transport: `GET /sse` and `POST /message`.
    LegacySse,
}

/// Everything the command line sets. Defaults are those of [`Options::default`].
#[derive(Clone, Debug)]
pub(crate) struct Options {
    pub(crate) transport: TransportKind,
    pub(crate) port: u16,
    pub(crate) sse_responses: bool,
    pub(crate) no_get_stream: bool,
    pub(crate) expire_session_after: Option<u64>,
    pub(crate) close_sse_before_response: bool,
    pub(crate) cut_sse_mid_event: bool,
    pub(crate) retry: Duration,
    pub(crate) extra_tools: usize,
    pub(crate) page_size: Option<usize>,
    pub(crate) repeat_cursor: bool,
    pub(crate) no_tools_capability: bool,
    pub(crate) instructions: Option<String>,
    pub(crate) protocol_version: Option<String>,
    pub(crate) delay_initialize: Duration,
    pub(crate) junk_stdout: bool,
    pub(crate) crlf: bool,
    pub(crate) stderr_flood_mib: u64,
    pub(crate) oversize_kib: Option<usize>,
    pub(crate) exit_after: Option<u64>,
    pub(crate) ignore_sigterm: bool,
    pub(crate) ignore_stdin_eof: bool,
    pub(crate) storm_tool: bool,
    pub(crate) hang_initialize_if_exists: Option<PathBuf>,
    pub(crate) fail_tools_list_after: Option<u64>,
    pub(crate) event_log: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            transport: TransportKind::Stdio,
            port: 0,
            sse_responses: false,
            no_get_stream: false,
            expire_session_after: None,
            close_sse_before_response: false,
            cut_sse_mid_event: false,
            retry: Duration::from_millis(100),
            extra_tools: 0,
            page_size: None,
            repeat_cursor: false,
            no_tools_capability: false,
            instructions: None,
            protocol_version: None,
            delay_initialize: Duration::ZERO,
            junk_stdout: false,
            crlf: false,
            stderr_flood_mib: 0,
            oversize_kib: None,
            exit_after: None,
            ignore_sigterm: false,
            ignore_stdin_eof: false,
            storm_tool: false,
            hang_initialize_if_exists: None,
            fail_tools_list_after: None,
            event_log: None,
        }
    }
}

/// What the command line asks for.
// Built once per process: boxing the options would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Command {
    /// Serve with these options.
    Serve(Options),
    /// Print [`USAGE`] and exit.
    Help,
}

/// Parses the arguments that follow the program name.
pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> anyhow::Result<Command> {
    let mut options = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg, None),
        };
        let mut value = || -> anyhow::Result<String> {
            match inline.clone() {
                Some(value) => Ok(value),
                None => args.next().with_context(|| format!("{flag} needs a value")),
            }
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "--transport" => {
                options.transport = match value()?.as_str() {
                    "stdio" => TransportKind::Stdio,
                    "http" => TransportKind::Http,
                    "sse" => TransportKind::LegacySse,
                    other => bail!("unknown transport {other:?}: expected stdio, http or sse"),
                }
            }
            "--port" => options.port = number(&flag, &value()?)?,
            "--sse-responses" => options.sse_responses = true,
            "--no-get-stream" => options.no_get_stream = true,
            "--expire-session-after" => {
                options.expire_session_after = Some(number(&flag, &value()?)?)
            }
            "--close-sse-before-response" => options.close_sse_before_response = true,
            "--cut-sse-mid-event" => options.cut_sse_mid_event = true,
            "--retry-ms" => options.retry = Duration::from_millis(number(&flag, &value()?)?),
            "--tools" => options.extra_tools = number(&flag, &value()?)?,
            "--page-size" => {
                let size: usize = number(&flag, &value()?)?;
                if size == 0 {
                    bail!("--page-size must be at least 1");
                }
                options.page_size = Some(size);
            }
            "--repeat-cursor" => options.repeat_cursor = true,
            "--no-tools-capability" => options.no_tools_capability = true,
            "--instructions" => options.instructions = Some(value()?),
            "--protocol-version" => options.protocol_version = Some(value()?),
            "--delay-initialize-ms" => {
                options.delay_initialize = Duration::from_millis(number(&flag, &value()?)?);
            }
            "--junk-stdout" => options.junk_stdout = true,
            "--crlf" => options.crlf = true,
            "--stderr-flood-mib" => options.stderr_flood_mib = number(&flag, &value()?)?,
            "--oversize-kib" => options.oversize_kib = Some(number(&flag, &value()?)?),
            "--exit-after" => options.exit_after = Some(number(&flag, &value()?)?),
            "--ignore-sigterm" => options.ignore_sigterm = true,
            "--ignore-stdin-eof" => options.ignore_stdin_eof = true,
            "--storm-tool" => options.storm_tool = true,
            "--hang-initialize-if-exists" => {
                options.hang_initialize_if_exists = Some(PathBuf::from(value()?));
            }
            "--fail-tools-list-after" => {
                options.fail_tools_list_after = Some(number(&flag, &value()?)?);
            }
            "--event-log" => options.event_log = Some(PathBuf::from(value()?)),
            other => bail!("unknown argument {other:?} (see --help)"),
        }
    }
    if options.close_sse_before_response || options.cut_sse_mid_event {
        options.sse_responses = true;
    }
    if options.repeat_cursor && options.page_size.is_none() {
        bail!("--repeat-cursor needs --page-size");
    }
    Ok(Command::Serve(options))
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> anyhow::Result<T> {
    value
        .parse()
        .ok()
        .with_context(|| format!("{flag} expects a non-negative integer, got {value:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serve(args: &[&str]) -> Options {
        match parse(args.iter().map(|a| (*a).to_owned())) {
            Ok(Command::Serve(options)) => options,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn flags_take_separate_or_inline_values() {
        let options = serve(&[
            "--transport",
            "http",
            "--port=8080",
            "--tools",
            "200",
            "--crlf",
        ]);
        assert_eq!(options.transport, TransportKind::Http);
        assert_eq!(options.port, 8080);
        assert_eq!(options.extra_tools, 200);
        assert!(options.crlf);
    }

    #[test]
    fn observation_and_manager_faults_parse() {
        let options = serve(&[
            "--event-log",
            "/tmp/events",
            "--hang-initialize-if-exists=/tmp/hang",
            "--fail-tools-list-after",
            "1",
            "--storm-tool",
        ]);
        assert_eq!(options.event_log, Some(PathBuf::from("/tmp/events")));
        assert_eq!(
            options.hang_initialize_if_exists,
            Some(PathBuf::from("/tmp/hang"))
        );
        assert_eq!(options.fail_tools_list_after, Some(1));
        assert!(options.storm_tool);
        assert!(!serve(&[]).storm_tool);
    }

    #[test]
    fn resumption_faults_imply_sse_responses() {
        assert!(serve(&["--close-sse-before-response"]).sse_responses);
        assert!(serve(&["--cut-sse-mid-event"]).sse_responses);
        assert!(!serve(&[]).sse_responses);
    }

    #[test]
    fn bad_arguments_are_errors() {
        for args in [
            &["--port"][..],
            &["--port", "x"],
            &["--transport", "ws"],
            &["--frobnicate"],
            &["--page-size", "0"],
            &["--repeat-cursor"],
        ] {
            assert!(
                parse(args.iter().map(|a| (*a).to_owned())).is_err(),
                "{args:?}"
            );
        }
    }
}
