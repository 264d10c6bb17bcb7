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

Era (see ERAS below):
  --era both|modern|legacy     both (default): initialize and the stateless 2026-07-28 era.
                               modern: 2026-07-28 only; initialize is -32022.
                               legacy: the handshake era only; server/discover is -32601.
  --exit-before-initialize     legacy: exit(1), after a line on stderr, on any request
                               other than initialize that comes before initialize.
                               Implies --era legacy.
  --probe-noise BYTES          legacy: write BYTES of warnings to stderr on each request
                               that comes before initialize. Implies --era legacy.
  --discover-delay-ms N        answer server/discover only after N ms.
  --discover-legacy-only       answer server/discover (also in --era legacy) with a
                               DiscoverResult whose supportedVersions are handshake ones.
  --omit-result-type           modern results carry no resultType (complete by default).
  --sorted-keys                every object in a result has its keys sorted, as a server
                               that sorts its keys writes them (a content block's type last).
  --bad-result-type            modern tools/call results carry resultType \"mystery\".
  --refuse-version             modern: answer every request but server/discover with
                               -32022, data.supported [\"2099-01-01\"] and a message
                               with an escape sequence in it.
  --end-listen-after-ms N      end each subscriptions/listen after N ms with a complete
                               result carrying the subscriptionId.

Streamable HTTP:
  --no-endpoint                sse: the GET stream never sends its `endpoint` event.
  --sse-responses              answer POSTed requests with an SSE stream (default JSON).
  --no-get-stream              answer a GET without Last-Event-ID with 405.
  --expire-session-after N     the session becomes unknown (404) after N requests.
  --close-sse-before-response  close each POST's SSE stream after its priming event;
                               the response comes on GET with Last-Event-ID.
                               Implies --sse-responses; initialize is exempt. Streams
                               are primed from 2025-11-25; before it they stay whole.
  --cut-sse-mid-event          end each POST's SSE stream halfway through the
                               response event; resuming replays it whole.
                               Implies --sse-responses; initialize is exempt; only
                               after an event with an id (from 2025-11-25).
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
  --add-tool-on-sigusr1        stdio: on each SIGUSR1 add an echo tool (signal_0001 ...) and
                               send notifications/tools/list_changed, outside any call.
  --remove-tool                offer the tool `remove_tool {name}`: it takes the tool `name`
                               (any, itself included) out of tools/list, sends
                               notifications/tools/list_changed, then answers; calls of a
                               removed tool are unknown tool errors.
  --protocol-version V         answer initialize with V whatever was asked.
  --skills                     declare the Skills extension and list two skills:
                               skill://pdf-processing (SKILL.md and references/FORMS.md,
                               served as listed) and skill://tampered (its SKILL.md served
                               with another body than its listed digest); skills/get also
                               knows skill://hidden, which the listing leaves out.
  --reference-catalog          also serve what the official conformance suites' server
                               scenarios call (the tools test_simple_text ...
                               test_error_handling, json_schema_2020_12_tool, and
                               test_tool_with_progress, test_tool_with_logging,
                               test_sampling, test_elicitation* served by the fixture's own
                               tools, the handshake era only for those that ask the client
                               or log; the resources test://static-text,
                               test://static-binary and test://template/{id}/data, the
                               prompts test_simple_prompt ..., completion/complete), and
                               accept resources/subscribe (no resource ever changes);
                               the handshake era then lists region_echo too, and
                               both eras declare completions.

Faults:
  --delay-initialize-ms N      wait N ms before answering initialize.
  --junk-stdout                stdio: print a non-JSON line before every message.
  --crlf                       stdio: end lines with CRLF.
  --stderr-flood-mib N         write N MiB to stderr at startup, then serve.
  --oversize-kib N             pad the tools/list response to at least N KiB.
  --exit-after N               exit(0) once the response to the Nth request is out.
  --close-stdout-after N       stdio: close stdout once the response to the Nth request
                               is out, and keep running (stdin EOF included) until a
                               signal ends the process: a server that outlived its
                               connection.
  --ignore-sigterm             keep running on SIGTERM; stdio: also on stdin EOF,
                               so only SIGKILL ends the process.
  --ignore-stdin-eof           stdio: keep running after stdin closes (SIGTERM ends it).
  --hang-initialize-if-exists FILE
                               never answer initialize while FILE exists (checked when it
                               arrives), so one config can hang or not from run to run.
  --fail-tools-list-after N    answer every tools/list after the first N with -32603.

Hostile text (what a terminal or a model must not take raw):
  --hostile-text               add tools whose name, title and description carry terminal
                               escapes (ESC ] 0 ; … BEL, ESC [ 2 J, C1 CSI, bidi overrides):
                               `ctl<ESC>[31mred`; `hostile_error`, whose call is a JSON-RPC
                               error whose message and data carry them; `hostile_output`,
                               whose text and resource_link blocks carry them.
  --error-message-kib N        add the tool `long_error`: its call is a -32603 JSON-RPC
                               error whose message is N KiB long.
  --http-500-html-kib N        http: answer every tools/call POST with HTTP 500 and a
                               text/html body of N KiB (a Python traceback page).

Observation:
  --pid-file FILE              append the process id and a newline to FILE at startup.
  --event-log FILE             append `EVENT UNIX_NANOS PID` lines to FILE, one write each:
                               initialize-start, initialize-end, tools-list; with JSON,
                               set-level {level}, and with --reference-catalog,
                               subscribe {uri} and unsubscribe {uri}; and for the
                               modern era `EVENT UNIX_NANOS PID JSON` lines: modern-request
                               {id,method,meta}, mrtr-round {id,tool,round,requestStateMatched},
                               cancelled {requestId,inFlight}, listen-start {id,accepted},
                               listen-end {id,how}.

Late additions (faults):
  --expire-sessions N          with --expire-session-after: only the first N sessions
                               expire; later ones live on (default: every session).
  --endless-empty-pages        every tools/list page is empty and names a new
                               nextCursor, forever.
  --http-status N              http/sse: answer every request with HTTP status N and a
                               text/plain body.
  --content-type TYPE          http/sse: answer every request with 200 and a body of
                               media type TYPE.
  --redirect-cross-origin      http/sse: answer every request with 307 to the same path
                               on http://localhost:PORT (another origin).
  --redirect-loop              http/sse: answer every request with 307 to its own URL.
  --huge-headers-kib N         http/sse: add N KiB of headers to every response.
  --refuse-origin              http/sse: refuse every request with 403 and no
                               WWW-Authenticate, as for a bad Origin or Host.

ERAS
  A modern request is one, other than initialize, whose params._meta carries
  io.modelcontextprotocol/protocolVersion (over HTTP: or MCP-Protocol-Version:
  2026-07-28). It must also carry clientCapabilities (-32602 otherwise) and name
  2026-07-28 (-32022 with data.supported otherwise). Modern results carry
  resultType and _meta serverInfo; lists carry ttlMs and cacheScope. Modern tools:
  confirm and two_rounds (MRTR), region_echo (x-mcp-header), bad_header (an
  invalid x-mcp-header: clients drop it); the ask_* tools are legacy only.
  server/discover declares logging (as initialize does) and, with
  --reference-catalog, completions.
  Over HTTP a modern POST needs MCP-Protocol-Version, Mcp-Method and Mcp-Name
  (and Mcp-Param-* for x-mcp-header arguments) matching the body, else 400 with
  -32020; an unknown method is 404 with -32601; GET and DELETE are 405 in
  --era modern. In --era legacy a POST with MCP-Protocol-Version: 2026-07-28 and
  no session is a bare 400 with an empty body.
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

/// Which protocol era(s) the fixture speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Era {
    /// `initialize` (2024-11-05 .. 2025-11-25) and modern (2026-07-28) requests.
    Both,
    /// Only 2026-07-28: `initialize` is answered with -32022.
    Modern,
    /// Only the handshake era: `server/discover` is method not found.
    Legacy,
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
    pub(crate) close_stdout_after: Option<u64>,
    pub(crate) pid_file: Option<PathBuf>,
    pub(crate) ignore_sigterm: bool,
    pub(crate) ignore_stdin_eof: bool,
    pub(crate) storm_tool: bool,
    pub(crate) remove_tool: bool,
    pub(crate) add_tool_on_sigusr1: bool,
    pub(crate) hang_initialize_if_exists: Option<PathBuf>,
    pub(crate) fail_tools_list_after: Option<u64>,
    pub(crate) event_log: Option<PathBuf>,
    pub(crate) era: Era,
    pub(crate) exit_before_initialize: bool,
    pub(crate) probe_noise: usize,
    pub(crate) discover_delay: Duration,
    pub(crate) discover_legacy_only: bool,
    pub(crate) omit_result_type: bool,
    pub(crate) sorted_keys: bool,
    pub(crate) skills: bool,
    /// `--reference-catalog`: the conformance suites' tools, resources,
    /// prompts and completions beside the fixture's own.
    pub(crate) reference_catalog: bool,
    pub(crate) bad_result_type: bool,
    pub(crate) refuse_version: bool,
    pub(crate) no_endpoint: bool,
    pub(crate) end_listen_after: Option<Duration>,
    pub(crate) expire_sessions: Option<u64>,
    pub(crate) endless_empty_pages: bool,
    pub(crate) http_status: Option<u16>,
    pub(crate) content_type: Option<String>,
    pub(crate) redirect_cross_origin: bool,
    pub(crate) redirect_loop: bool,
    pub(crate) huge_headers_kib: usize,
    pub(crate) refuse_origin: bool,
    pub(crate) hostile_text: bool,
    pub(crate) error_message_kib: Option<usize>,
    pub(crate) http_500_html_kib: Option<usize>,
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
            close_stdout_after: None,
            pid_file: None,
            ignore_sigterm: false,
            ignore_stdin_eof: false,
            storm_tool: false,
            remove_tool: false,
            add_tool_on_sigusr1: false,
            hang_initialize_if_exists: None,
            fail_tools_list_after: None,
            event_log: None,
            era: Era::Both,
            exit_before_initialize: false,
            probe_noise: 0,
            discover_delay: Duration::ZERO,
            discover_legacy_only: false,
            omit_result_type: false,
            sorted_keys: false,
            skills: false,
            reference_catalog: false,
            bad_result_type: false,
            refuse_version: false,
            no_endpoint: false,
            end_listen_after: None,
            expire_sessions: None,
            endless_empty_pages: false,
            http_status: None,
            content_type: None,
            redirect_cross_origin: false,
            redirect_loop: false,
            huge_headers_kib: 0,
            refuse_origin: false,
            hostile_text: false,
            error_message_kib: None,
            http_500_html_kib: None,
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
    let mut era_given = false;
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
            "--close-stdout-after" => {
                options.close_stdout_after = Some(number(&flag, &value()?)?);
            }
            "--pid-file" => options.pid_file = Some(PathBuf::from(value()?)),
            "--ignore-sigterm" => options.ignore_sigterm = true,
            "--ignore-stdin-eof" => options.ignore_stdin_eof = true,
            "--storm-tool" => options.storm_tool = true,
            "--remove-tool" => options.remove_tool = true,
            "--add-tool-on-sigusr1" => options.add_tool_on_sigusr1 = true,
            "--hang-initialize-if-exists" => {
                options.hang_initialize_if_exists = Some(PathBuf::from(value()?));
            }
            "--fail-tools-list-after" => {
                options.fail_tools_list_after = Some(number(&flag, &value()?)?);
            }
            "--event-log" => options.event_log = Some(PathBuf::from(value()?)),
            "--era" => {
                era_given = true;
                options.era = match value()?.as_str() {
                    "both" => Era::Both,
                    "modern" => Era::Modern,
                    "legacy" => Era::Legacy,
                    other => bail!("unknown era {other:?}: expected both, modern or legacy"),
                }
            }
            "--exit-before-initialize" => options.exit_before_initialize = true,
            "--probe-noise" => options.probe_noise = number(&flag, &value()?)?,
            "--discover-delay-ms" => {
                options.discover_delay = Duration::from_millis(number(&flag, &value()?)?);
            }
            "--discover-legacy-only" => options.discover_legacy_only = true,
            "--omit-result-type" => options.omit_result_type = true,
            "--sorted-keys" => options.sorted_keys = true,
            "--skills" => options.skills = true,
            "--reference-catalog" => options.reference_catalog = true,
            "--bad-result-type" => options.bad_result_type = true,
            "--refuse-version" => options.refuse_version = true,
            "--no-endpoint" => options.no_endpoint = true,
            "--end-listen-after-ms" => {
                options.end_listen_after = Some(Duration::from_millis(number(&flag, &value()?)?));
            }
            "--expire-sessions" => options.expire_sessions = Some(number(&flag, &value()?)?),
            "--endless-empty-pages" => options.endless_empty_pages = true,
            "--http-status" => {
                let status: u16 = number(&flag, &value()?)?;
                if !(100..=999).contains(&status) {
                    bail!("--http-status must be a status code, got {status}");
                }
                options.http_status = Some(status);
            }
            "--content-type" => options.content_type = Some(value()?),
            "--redirect-cross-origin" => options.redirect_cross_origin = true,
            "--redirect-loop" => options.redirect_loop = true,
            "--huge-headers-kib" => options.huge_headers_kib = number(&flag, &value()?)?,
            "--refuse-origin" => options.refuse_origin = true,
            "--hostile-text" => options.hostile_text = true,
            "--error-message-kib" => options.error_message_kib = Some(number(&flag, &value()?)?),
            "--http-500-html-kib" => options.http_500_html_kib = Some(number(&flag, &value()?)?),
            other => bail!("unknown argument {other:?} (see --help)"),
        }
    }
    if options.close_sse_before_response || options.cut_sse_mid_event {
        options.sse_responses = true;
    }
    if options.exit_before_initialize || options.probe_noise > 0 {
        if era_given && options.era != Era::Legacy {
            bail!("--exit-before-initialize and --probe-noise need --era legacy");
        }
        options.era = Era::Legacy;
    }
    if options.discover_legacy_only && options.era == Era::Modern {
        bail!("--discover-legacy-only contradicts --era modern");
    }
    if options.close_stdout_after.is_some() {
        if options.transport != TransportKind::Stdio {
            bail!("--close-stdout-after is for --transport stdio");
        }
        if options.exit_after.is_some() {
            bail!("--close-stdout-after contradicts --exit-after");
        }
    }
    if options.repeat_cursor && options.page_size.is_none() {
        bail!("--repeat-cursor needs --page-size");
    }
    if options.http_500_html_kib.is_some() && options.transport != TransportKind::Http {
        bail!("--http-500-html-kib needs --transport http");
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
    fn process_switches_parse() {
        let options = serve(&["--close-stdout-after", "4", "--pid-file=/tmp/pids"]);
        assert_eq!(options.close_stdout_after, Some(4));
        assert_eq!(options.pid_file, Some(PathBuf::from("/tmp/pids")));
        assert_eq!(serve(&[]).close_stdout_after, None);
    }

    #[test]
    fn resumption_faults_imply_sse_responses() {
        assert!(serve(&["--close-sse-before-response"]).sse_responses);
        assert!(serve(&["--cut-sse-mid-event"]).sse_responses);
        assert!(!serve(&[]).sse_responses);
    }

    #[test]
    fn era_switches_parse() {
        assert_eq!(serve(&[]).era, Era::Both);
        let options = serve(&[
            "--era=modern",
            "--discover-delay-ms",
            "250",
            "--omit-result-type",
            "--sorted-keys",
            "--end-listen-after-ms",
            "5",
        ]);
        assert_eq!(options.era, Era::Modern);
        assert_eq!(options.discover_delay, Duration::from_millis(250));
        assert!(options.omit_result_type);
        assert!(options.sorted_keys);
        assert!(!serve(&[]).sorted_keys);
        assert_eq!(options.end_listen_after, Some(Duration::from_millis(5)));
        let legacy = serve(&["--exit-before-initialize", "--probe-noise", "6000"]);
        assert_eq!(legacy.era, Era::Legacy);
        assert!(legacy.exit_before_initialize);
        assert_eq!(legacy.probe_noise, 6000);
    }

    #[test]
    fn late_fault_switches_parse() {
        let options = serve(&[
            "--expire-sessions=1",
            "--endless-empty-pages",
            "--http-status",
            "500",
            "--content-type",
            "text/plain",
            "--redirect-cross-origin",
            "--redirect-loop",
            "--huge-headers-kib",
            "4096",
            "--refuse-origin",
        ]);
        assert_eq!(options.expire_sessions, Some(1));
        assert!(options.endless_empty_pages);
        assert_eq!(options.http_status, Some(500));
        assert_eq!(options.content_type.as_deref(), Some("text/plain"));
        assert!(options.redirect_cross_origin && options.redirect_loop && options.refuse_origin);
        assert_eq!(options.huge_headers_kib, 4096);
        assert!(parse(["--http-status".to_owned(), "42".to_owned()]).is_err());
    }

    #[test]
    fn hostile_text_switches_parse() {
        let options = serve(&[
            "--hostile-text",
            "--error-message-kib=10240",
            "--transport",
            "http",
            "--http-500-html-kib",
            "16",
        ]);
        assert!(options.hostile_text);
        assert_eq!(options.error_message_kib, Some(10240));
        assert_eq!(options.http_500_html_kib, Some(16));
        assert!(!serve(&[]).hostile_text);
        assert!(parse(["--http-500-html-kib".to_owned(), "16".to_owned()]).is_err());
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
            &["--era", "future"],
            &["--era", "modern", "--exit-before-initialize"],
            &["--era", "both", "--probe-noise", "10"],
            &["--era", "modern", "--discover-legacy-only"],
            &["--close-stdout-after", "2", "--transport", "http"],
            &["--close-stdout-after", "2", "--exit-after", "3"],
        ] {
            assert!(
                parse(args.iter().map(|a| (*a).to_owned())).is_err(),
                "{args:?}"
            );
        }
    }
}
