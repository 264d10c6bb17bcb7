//! The fault matrix: every fault switch of the fixture server × the transports it applies to (stdio, Streamable HTTP, legacy SSE), through `mcp-manager` as a host drives it.
//!
//! Each case asserts what a robust client must end with: the stable code
//! (or `ready`, with the catalog's truncation where it matters), the
//! discovery deadline held, no process of the case left behind after the
//! manager closed, and bounded memory for the size and pagination faults.
//! Run with `--nocapture` to print the matrix as a table.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use mcp_config::{
    HttpConfig, ResolvedConfig, ResolvedTransport, ServerConfig, StdioConfig, TransportConfig,
};
use mcp_manager::{ConnectError, ErrorCode, ManagerOptions, McpManager, TransportFactory};
use mcp_transport::{
    HttpOptions, HttpProtocol, HttpTransport, StdioOptions, StdioTransport, Transport,
};
use tokio::time::Instant;

const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture-server");

/// The initialize deadline every case runs with.
const INITIALIZE: Duration = Duration::from_millis(2500);
/// The whole discovery's deadline.
const DISCOVERY: Duration = Duration::from_secs(8);
/// What a case may take past its deadline: process start-up and teardown.
const SLACK: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Stdio,
    Http,
    Sse,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Stdio => "stdio",
            Kind::Http => "streamable-http",
            Kind::Sse => "legacy-sse",
        }
    }
}

const ALL: &[Kind] = &[Kind::Stdio, Kind::Http, Kind::Sse];
const STDIO: &[Kind] = &[Kind::Stdio];
const HTTP: &[Kind] = &[Kind::Http];
const WEB: &[Kind] = &[Kind::Http, Kind::Sse];
/// The transports of the 2026-07-28 era (legacy SSE has only the handshake era).
const MODERN: &[Kind] = &[Kind::Stdio, Kind::Http];

/// What a case must end with.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Ready with a complete catalog.
    Ready,
    /// Ready, the catalog marked truncated after at most this many
    /// `tools/list` requests.
    Truncated { max_list_calls: usize },
    /// The error with this stable code.
    Code(&'static str),
    /// The error with this stable code, whose message holds each of these
    /// words, and no raw control character.
    Saying(&'static str, &'static [&'static str]),
}

struct Case {
    name: &'static str,
    args: &'static [&'static str],
    kinds: &'static [Kind],
    expect: Expect,
    /// Whether the test process's peak memory may grow by at most this
    /// many MiB during the case.
    max_growth_mib: Option<u64>,
}

/// The message size limit of the [`Limited`] factory the size cases use.
const LIMIT: usize = 64 * 1024;

/// A host's factory that sets a smaller message size limit ([`LIMIT`]) on
/// every transport it builds, so that the size faults stay small.
struct Limited;

#[async_trait]
impl TransportFactory for Limited {
    async fn connect(
        &self,
        server: &ResolvedConfig,
        _deadline: Instant,
    ) -> Result<Box<dyn Transport>, ConnectError> {
        let failed = |error: mcp_transport::TransportError| {
            ConnectError::new(ErrorCode::Closed, "the transport failed", "transport")
                .with_source(error)
        };
        match &server.transport {
            ResolvedTransport::Stdio(stdio) => {
                let mut options = StdioOptions::new(stdio.command.clone());
                options.args = stdio.args.clone();
                options.max_message_size = LIMIT;
                Ok(Box::new(StdioTransport::spawn(options).map_err(failed)?))
            }
            ResolvedTransport::Http(http) | ResolvedTransport::Sse(http) => {
                let mut options = HttpOptions::new(http.url.clone());
                options.protocol = if matches!(server.transport, ResolvedTransport::Sse(_)) {
                    HttpProtocol::LegacySse
                } else {
                    HttpProtocol::Auto
                };
                options.max_message_size = LIMIT;
                Ok(Box::new(
                    HttpTransport::connect(options).await.map_err(failed)?,
                ))
            }
            _ => unreachable!("the matrix builds stdio, http and sse configs only"),
        }
    }
}

const fn case(
    name: &'static str,
    args: &'static [&'static str],
    kinds: &'static [Kind],
    expect: Expect,
) -> Case {
    Case {
        name,
        args,
        kinds,
        expect,
        max_growth_mib: None,
    }
}

/// Every case. `{hang}` in an argument is a file that exists.
const CASES: &[Case] = &[
    case("no fault", &[], ALL, Expect::Ready),
    case(
        "--exit-before-initialize",
        &["--exit-before-initialize"],
        STDIO,
        Expect::Ready,
    ),
    case("--junk-stdout", &["--junk-stdout"], STDIO, Expect::Ready),
    case(
        "--hang-initialize-if-exists",
        &["--era", "legacy", "--hang-initialize-if-exists", "{hang}"],
        ALL,
        Expect::Code("timeout"),
    ),
    case(
        "--delay-initialize-ms 60000",
        &["--era", "legacy", "--delay-initialize-ms", "60000"],
        ALL,
        Expect::Code("timeout"),
    ),
    Case {
        max_growth_mib: Some(32),
        ..case(
            "--oversize-kib 4096 (tools/list over a 64 KiB limit)",
            &["--era", "legacy", "--oversize-kib", "4096"],
            ALL,
            Expect::Code("message_too_large"),
        )
    },
    case(
        "--instructions of 100 KB (initialize over a 64 KiB limit)",
        &["--era", "legacy", "--instructions", "{big}"],
        ALL,
        Expect::Code("message_too_large"),
    ),
    case(
        "--cut-sse-mid-event",
        &["--cut-sse-mid-event"],
        HTTP,
        Expect::Ready,
    ),
    case(
        "--close-sse-before-response",
        &["--close-sse-before-response"],
        HTTP,
        Expect::Ready,
    ),
    case(
        "--expire-session-after 1 (first session)",
        &[
            "--era",
            "legacy",
            "--expire-session-after",
            "1",
            "--expire-sessions",
            "1",
        ],
        HTTP,
        Expect::Ready,
    ),
    case(
        "--expire-session-after 1 (every session)",
        &["--era", "legacy", "--expire-session-after", "1"],
        HTTP,
        Expect::Code("session_expired"),
    ),
    case(
        "--bad-result-type",
        &["--bad-result-type"],
        ALL,
        Expect::Ready,
    ),
    Case {
        max_growth_mib: Some(64),
        ..case(
            "--endless-empty-pages",
            &["--endless-empty-pages"],
            ALL,
            Expect::Truncated { max_list_calls: 10 },
        )
    },
    case(
        "--protocol-version 2099-01-01",
        &["--era", "legacy", "--protocol-version", "2099-01-01"],
        ALL,
        Expect::Code("unsupported_version"),
    ),
    case(
        "--era modern --refuse-version (-32022 on every request)",
        &["--era", "modern", "--refuse-version"],
        MODERN,
        Expect::Saying(
            "unsupported_version",
            &[
                "refused protocol version 2026-07-28 on tools/list",
                "-32022",
                "it supports 2099-01-01",
                "not supported",
            ],
        ),
    ),
    case(
        "--http-status 500",
        &["--http-status", "500"],
        WEB,
        Expect::Code("http_status"),
    ),
    case(
        "--content-type text/plain",
        &["--content-type", "text/plain"],
        WEB,
        Expect::Code("unexpected_content_type"),
    ),
    case(
        "--redirect-cross-origin",
        &["--redirect-cross-origin"],
        WEB,
        Expect::Code("redirect_refused"),
    ),
    case(
        "--redirect-loop",
        &["--redirect-loop"],
        WEB,
        Expect::Code("redirect_loop"),
    ),
    case(
        "--huge-headers-kib 4096",
        &["--huge-headers-kib", "4096"],
        WEB,
        Expect::Code("headers_too_large"),
    ),
    case(
        "--refuse-origin",
        &["--refuse-origin"],
        WEB,
        Expect::Code("forbidden"),
    ),
    case(
        "--close-stdout-after 1 --ignore-sigterm (stdout closed, process stays)",
        &[
            "--era",
            "legacy",
            "--close-stdout-after",
            "1",
            "--ignore-sigterm",
            "--ignore-stdin-eof",
        ],
        STDIO,
        Expect::Code("closed"),
    ),
    case(
        "--hostile-text (escapes in names, descriptions, errors)",
        &["--hostile-text"],
        ALL,
        Expect::Ready,
    ),
    case(
        "--error-message-kib 10240",
        &["--error-message-kib", "10240"],
        ALL,
        Expect::Ready,
    ),
];

/// One cell of the matrix.
struct Outcome {
    case: &'static str,
    kind: Kind,
    code: String,
    took: Duration,
}

fn options() -> ManagerOptions {
    let mut options = ManagerOptions::default();
    options.initialize_timeout = INITIALIZE;
    options.discovery_timeout = DISCOVERY;
    options.list_page_timeout = INITIALIZE;
    options
}

/// The test process's peak resident memory so far (`VmHWM`), in KiB.
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmHWM:")
                    .and_then(|rest| rest.trim().strip_suffix("kB"))
                    .and_then(|kib| kib.trim().parse().ok())
            })
        })
        .expect("VmHWM in /proc/self/status")
}

/// Processes whose command line holds `marker` (a path unique to one case).
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == marker.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

/// Runs one cell; what it got wrong goes to `problems`, so that the whole
/// matrix is printed before the test fails.
async fn run(case: &Case, kind: Kind, dir: &Path, n: usize, problems: &mut Vec<String>) -> Outcome {
    let mut check = |ok: bool, problem: String| {
        if !ok {
            problems.push(problem);
        }
    };
    let hang = dir.join("hang");
    std::fs::write(&hang, b"").expect("the hang file");
    let log = dir.join(format!("events-{n}.log"));
    let log_arg = log.display().to_string();
    let hang_arg = hang.display().to_string();
    let mut args: Vec<String> = case
        .args
        .iter()
        .map(|a| match *a {
            "{hang}" => hang_arg.clone(),
            "{big}" => "i".repeat(100_000),
            _ => (*a).to_owned(),
        })
        .collect();
    let limited = case
        .args
        .iter()
        .any(|a| a.starts_with("--oversize") || *a == "{big}");
    args.extend(["--event-log".to_owned(), log_arg.clone()]);
    let id = format!("case{n}");
    let mut server = None;
    let config = match kind {
        Kind::Stdio => {
            let mut stdio = StdioConfig::new(FIXTURE);
            stdio.args = args;
            ServerConfig::new(&id, TransportConfig::Stdio(stdio))
        }
        Kind::Http | Kind::Sse => {
            let mode = if kind == Kind::Http { "http" } else { "sse" };
            let mut full = vec!["--transport", mode];
            full.extend(args.iter().map(String::as_str));
            let started = tests::servers::start_fixture_http(FIXTURE, &full).await;
            let http = HttpConfig::new(started.url.clone());
            server = Some(started);
            ServerConfig::new(
                &id,
                if kind == Kind::Http {
                    TransportConfig::Http(http)
                } else {
                    TransportConfig::Sse(http)
                },
            )
        }
    };
    let before = peak_kib();
    let manager = if limited {
        McpManager::builder()
            .options(options())
            .factory(Limited)
            .build()
    } else {
        McpManager::new(options())
    };
    let started = Instant::now();
    let report = manager.connect_servers([config]).await;
    let took = started.elapsed();
    let what = format!("{} over {}", case.name, kind.name());
    check(
        took <= DISCOVERY + SLACK,
        format!("{what}: took {took:?}, past the {DISCOVERY:?} deadline"),
    );
    let code = match report.error(&id) {
        Some(error) => {
            check(
                !error.message.is_empty() && !error.message.contains("could not be reached"),
                format!("{what}: {error}"),
            );
            error.code.as_str().to_owned()
        }
        None => {
            let catalog = manager.catalog(&id).expect("a ready server has a catalog");
            if catalog.is_truncated() {
                "ready (truncated)".to_owned()
            } else {
                "ready".to_owned()
            }
        }
    };
    let error = report.error(&id).map(ToString::to_string);
    match case.expect {
        Expect::Ready => check(code == "ready", format!("{what}: {error:?}")),
        Expect::Truncated { max_list_calls } => {
            check(code == "ready (truncated)", format!("{what}: {error:?}"));
            let calls = tests::tools_list_calls(&log);
            check(
                calls <= max_list_calls,
                format!("{what}: {calls} tools/list requests"),
            );
        }
        Expect::Code(expected) => check(
            code == expected,
            format!("{what}: expected {expected}, got {error:?}"),
        ),
        Expect::Saying(expected, words) => {
            check(
                code == expected,
                format!("{what}: expected {expected}, got {error:?}"),
            );
            let message = report
                .error(&id)
                .map(|e| e.message.clone())
                .unwrap_or_default();
            for word in words {
                check(
                    message.contains(word),
                    format!("{what}: the message does not say {word:?}: {message:?}"),
                );
            }
            check(
                !message.chars().any(char::is_control),
                format!("{what}: a raw control character in {message:?}"),
            );
        }
    }
    manager.close().await;
    if let Some(limit) = case.max_growth_mib {
        let grown = peak_kib().saturating_sub(before) / 1024;
        check(
            grown <= limit,
            format!("{what}: peak memory grew by {grown} MiB"),
        );
    }
    if kind == Kind::Stdio {
        // Every server process of this case (the probe's too) is gone
        // once the manager closed.
        let left = processes_with(&log_arg);
        check(
            left.is_empty(),
            format!("{what}: processes left behind: {left:?}"),
        );
    }
    if let Some(mut server) = server {
        let _ = server.child.kill().await;
    }
    Outcome {
        case: case.name,
        kind,
        code,
        took,
    }
}

fn print_matrix(outcomes: &[Outcome]) {
    let mut table =
        String::from("| case | stdio | streamable-http | legacy-sse |\n|---|---|---|---|\n");
    for case in CASES {
        let cell = |kind: Kind| {
            outcomes
                .iter()
                .find(|o| o.case == case.name && o.kind == kind)
                .map_or("n/a".to_owned(), |o| {
                    format!("{} ({} ms)", o.code, o.took.as_millis())
                })
        };
        let _ = writeln!(
            table,
            "| `{}` | {} | {} | {} |",
            case.name,
            cell(Kind::Stdio),
            cell(Kind::Http),
            cell(Kind::Sse)
        );
    }
    println!("{table}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_on_every_transport_ends_with_its_code() {
    let dir = tempfile::tempdir().expect("a scratch dir");
    let mut outcomes = Vec::new();
    let mut problems = Vec::new();
    let mut n = 0;
    for case in CASES {
        for &kind in case.kinds {
            n += 1;
            outcomes.push(run(case, kind, dir.path(), n, &mut problems).await);
        }
    }
    print_matrix(&outcomes);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_nobody_listens_on_is_unreachable() {
    let port = tests::servers::free_port();
    let mut codes = Vec::new();
    for (kind, path) in [(Kind::Http, "/mcp"), (Kind::Sse, "/sse")] {
        let http = HttpConfig::new(format!("http://127.0.0.1:{port}{path}"));
        let transport = if kind == Kind::Http {
            TransportConfig::Http(http)
        } else {
            TransportConfig::Sse(http)
        };
        let manager = McpManager::new(options());
        let report = manager
            .connect_servers([ServerConfig::new("gone", transport)])
            .await;
        let error = report.error("gone").expect("nobody listens");
        assert_eq!(error.code.as_str(), "unreachable", "{error}");
        assert!(error.message.contains("could not be reached"), "{error}");
        codes.push(format!(
            "| no listener | {} | {} |",
            kind.name(),
            error.code
        ));
        manager.close().await;
    }
    println!("{}", codes.join("\n"));
}

/// A legacy SSE server that never sends its `endpoint` event meets one
/// deadline, the manager's initialize deadline, and so one code every time
/// (the transport's own endpoint deadline used to fall on the same instant
/// and win about half the runs, as `protocol`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_sse_server_without_an_endpoint_times_out_every_time() {
    let server =
        tests::servers::start_fixture_http(FIXTURE, &["--transport", "sse", "--no-endpoint"]).await;
    let mut options = options();
    options.initialize_timeout = Duration::from_millis(300);
    let mut seen = Vec::new();
    for _ in 0..8 {
        let manager = McpManager::new(options.clone());
        let started = Instant::now();
        let report = manager
            .connect_servers([ServerConfig::new(
                "quiet",
                TransportConfig::Sse(HttpConfig::new(server.url.clone())),
            )])
            .await;
        let took = started.elapsed();
        let error = report.error("quiet").expect("no endpoint, no connection");
        seen.push(format!("{} ({error}, {took:?})", error.code));
        assert!(took < Duration::from_secs(3), "{seen:#?}");
        manager.close().await;
    }
    assert!(
        seen.iter()
            .all(|s| s.starts_with("timeout (initialize did not finish within 300 ms")),
        "{seen:#?}"
    );
}
