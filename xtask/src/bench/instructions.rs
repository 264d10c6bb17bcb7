//! `cargo xtask bench --instructions`: instructions each Rust client executes per operation, counted by callgrind.
//!
//! Wall-clock ratios on these shared machines move by a third between
//! rounds of the same run (the raw floor's p50 ranged from 28 to 57 µs in
//! one run); an instruction count does not: valgrind's callgrind counts the
//! same total for the same binary and inputs whatever else the machine is
//! doing. This mode reports what each client costs per operation, so that
//! a change to the client's hot path can be judged without noise. It is a
//! complement to the timed bench, not a replacement: it does not see
//! thread wake-ups, system calls, page faults or waiting.
//!
//! Each figure is a difference: a client program runs the operation `n`
//! and `2n` times (every other phase of the workload at zero) and the
//! per-operation count is `(count(2n) - count(n)) / n`, so start-up,
//! runtime set-up and the handshake cancel out. Only the client process is
//! counted (`--trace-children=no`): a stdio server is a child it spawns, an
//! HTTP server a process of its own. The TypeScript client is left out: a
//! JIT under callgrind measures the instrumentation more than the program.
//!
//! Connects are counted against the bench's 200-tool catalog and against
//! 2,000-tool and 20,000-tool ones, where decoding `tools/list` dominates
//! (the report gives the cost per tool between each pair of sizes, which
//! stays level when decoding is linear); echo calls also
//! against a fixture that sorts its keys, so that every content block's
//! `type` comes after its other keys; and echo calls in the 2026-07-28
//! era (the fixture serving both eras, our client told to speak the
//! stateless one with `MCP_BENCH_ERA=modern`; other clients speak the one
//! they have). The report ends
//! with the instruction targets, met or missed, as the timed report ends
//! with its ratio targets.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, bail};

use super::{ClientProgram, FIXTURE_TOOLS, HttpServer, MODERN_AT_MOST, Transport};

/// One operation the report counts: its name, how many times the smaller
/// run performs it, the workload flag that sets the count, and the fixture
/// it runs against.
struct Operation {
    name: &'static str,
    n: usize,
    flag: &'static str,
    fixture: Fixture,
}

/// How the fixture serves an operation: the size of its generated catalog,
/// whether it writes every result's keys sorted (`--sorted-keys`: a
/// content block's `type` comes last, as from a server that sorts keys),
/// and whether it also serves the 2026-07-28 era (`--era both`), which our
/// client then speaks.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Fixture {
    tools: usize,
    sorted_keys: bool,
    modern: bool,
}

impl Fixture {
    const USUAL: Fixture = Fixture {
        tools: FIXTURE_TOOLS,
        sorted_keys: false,
        modern: false,
    };

    fn args(self) -> String {
        let mut args = if self.modern {
            super::modern_fixture_args(self.tools)
        } else {
            super::fixture_args(self.tools)
        };
        if self.sorted_keys {
            args.push_str(" --sorted-keys");
        }
        args
    }
}

/// The catalog of the large connect.
const LARGE_CATALOG: usize = 2_000;

/// The catalog of the huge connect.
const HUGE_CATALOG: usize = 20_000;

/// The cost per tool between the large and the huge catalog may be at most
/// this much over the cost per tool between the usual and the large one:
/// `tools/list` decoding is linear in the catalog.
const PER_TOOL_AT_MOST: f64 = 1.25;

/// The name of the 2026-07-28 echo operation.
const MODERN_ECHO: &str = "echo, 2026-07-28";

const OPERATIONS: [Operation; 7] = [
    Operation {
        name: "echo call",
        n: 500,
        flag: "--calls",
        fixture: Fixture::USUAL,
    },
    Operation {
        name: "echo, keys sorted",
        n: 500,
        flag: "--calls",
        fixture: Fixture {
            tools: FIXTURE_TOOLS,
            sorted_keys: true,
            modern: false,
        },
    },
    Operation {
        name: MODERN_ECHO,
        n: 500,
        flag: "--calls",
        fixture: Fixture {
            tools: FIXTURE_TOOLS,
            sorted_keys: false,
            modern: true,
        },
    },
    Operation {
        name: "1 MiB result",
        n: 3,
        flag: "--big-calls",
        fixture: Fixture::USUAL,
    },
    Operation {
        name: "connect",
        n: 3,
        flag: "--connects",
        fixture: Fixture::USUAL,
    },
    Operation {
        name: "connect 2k tools",
        n: 2,
        flag: "--connects",
        fixture: Fixture {
            tools: LARGE_CATALOG,
            sorted_keys: false,
            modern: false,
        },
    },
    Operation {
        name: "connect 20k tools",
        n: 1,
        flag: "--connects",
        fixture: Fixture {
            tools: HUGE_CATALOG,
            sorted_keys: false,
            modern: false,
        },
    },
];

/// An instruction target: our client's count for one operation over one
/// transport must stay at or under `at_most`.
struct Target {
    label: &'static str,
    transport: Transport,
    operation: &'static str,
    at_most: f64,
}

const TARGETS: [Target; 3] = [
    Target {
        label: "stdio echo call <= 11k instructions",
        transport: Transport::Stdio,
        operation: "echo call",
        at_most: 11_000.0,
    },
    Target {
        label: "http echo call <= 35k instructions",
        transport: Transport::Http,
        operation: "echo call",
        at_most: 35_000.0,
    },
    Target {
        label: "stdio connect with 2,000 tools <= 30M instructions",
        transport: Transport::Stdio,
        operation: "connect 2k tools",
        at_most: 30_000_000.0,
    },
];

/// Every workload flag of the client protocol, at zero unless an operation
/// sets it (`--inflight` and `--big-kib` keep their meaning).
const ZERO_FLAGS: [&str; 5] = [
    "--connects",
    "--warmup",
    "--calls",
    "--throughput-calls",
    "--big-calls",
];

/// Counts every Rust client (not TypeScript) over both transports and
/// returns the report.
pub(super) fn run(clients: &[ClientProgram], fixture: &Path) -> anyhow::Result<String> {
    check_valgrind()?;
    // The Rust programs, each once: the era is the operation's to choose.
    let clients: Vec<&ClientProgram> = clients
        .iter()
        .filter(|c| c.prefix.is_empty() && !c.modern)
        .collect();
    // One HTTP fixture per kind the operations need, each stopped on drop.
    let mut servers: Vec<(Fixture, HttpServer)> = Vec::new();
    for operation in &OPERATIONS {
        if !servers.iter().any(|(kind, _)| *kind == operation.fixture) {
            let server = HttpServer::start(fixture, &operation.fixture.args())?;
            servers.push((operation.fixture, server));
        }
    }
    let mut rows = Vec::new();
    for transport in Transport::ALL {
        for operation in &OPERATIONS {
            let url = servers
                .iter()
                .find(|(kind, _)| *kind == operation.fixture)
                .map(|(_, server)| server.url.as_str())
                .context("no HTTP fixture serves this operation")?;
            let target = super::target_args(transport, fixture, url, &operation.fixture.args());
            let mut counts = Vec::new();
            for client in &clients {
                let small = count(client, transport, &target, operation, operation.n)?;
                let large = count(client, transport, &target, operation, 2 * operation.n)?;
                let per_op = large.saturating_sub(small) as f64 / operation.n as f64;
                eprintln!(
                    "instructions {:5} {:12} {:4}: {per_op:.0}",
                    transport.name(),
                    operation.name,
                    client.name
                );
                counts.push((client.name, per_op));
            }
            rows.push((transport, operation.name, counts));
        }
    }
    Ok(report(&rows))
}

fn check_valgrind() -> anyhow::Result<()> {
    let found = Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        bail!(
            "`--instructions` counts with valgrind's callgrind: install valgrind \
             (for example `apt-get install valgrind`)"
        );
    }
    Ok(())
}

/// Runs `client` under callgrind with `operation` performed `times` times
/// and returns the instructions the client executed in all.
fn count(
    client: &ClientProgram,
    transport: Transport,
    target: &[String],
    operation: &Operation,
    times: usize,
) -> anyhow::Result<u64> {
    let mut command = Command::new("valgrind");
    command
        .args([
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            "--trace-children=no",
        ])
        .arg(&client.program)
        .args(["--transport", transport.name()])
        .args(target);
    for flag in ZERO_FLAGS {
        let value = if flag == operation.flag { times } else { 0 };
        command.args([flag, &value.to_string()]);
    }
    if operation.fixture.modern {
        command.env("MCP_BENCH_ERA", "modern");
    }
    command
        .args(["--inflight", "1", "--big-kib", "1024"])
        // The client waits for stdin to close before it exits.
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let output = command
        .output()
        .with_context(|| format!("could not run {} under valgrind", client.program.display()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
        bail!(
            "{} {} under callgrind failed ({}):\n{}",
            client.name,
            transport.name(),
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    collected(&stderr).with_context(|| {
        format!(
            "callgrind printed no `Collected` total for {} {}",
            client.name,
            transport.name()
        )
    })
}

/// The total from callgrind's summary line, `==PID== Collected : N`.
fn collected(stderr: &str) -> Option<u64> {
    stderr.lines().find_map(|line| {
        let (_, rest) = line.split_once("Collected :")?;
        rest.trim().parse().ok()
    })
}

type Row<'a> = (Transport, &'static str, Vec<(&'a str, f64)>);

fn report(rows: &[Row<'_>]) -> String {
    let mut out = String::from(
        "\nInstructions per operation (callgrind; client process only; (count(2n) - count(n)) / n):\n\n",
    );
    let names: Vec<&str> = rows
        .first()
        .map(|(_, _, counts)| counts.iter().map(|(name, _)| *name).collect())
        .unwrap_or_default();
    out.push_str(&format!("{:9} {:17}", "transport", "operation"));
    for name in &names {
        out.push_str(&format!(" {name:>12}"));
    }
    out.push_str("   ours / other (lower is better)\n");
    for (transport, operation, counts) in rows {
        out.push_str(&format!("{:9} {:17}", transport.name(), operation));
        for (_, value) in counts {
            out.push_str(&format!(" {:>12}", format_count(*value)));
        }
        let ours = counts.iter().find(|(name, _)| *name == "ours").map(|c| c.1);
        let ratios: Vec<String> = counts
            .iter()
            .filter(|(name, _)| *name != "ours")
            .filter_map(|(name, value)| {
                let ours = ours?;
                (*value > 0.0).then(|| format!("{name} {:.2}x", ours / value))
            })
            .collect();
        out.push_str(&format!("   {}\n", ratios.join(", ")));
    }
    out.push('\n');
    for target in &TARGETS {
        let ours = rows
            .iter()
            .find(|(transport, operation, _)| {
                *transport == target.transport && *operation == target.operation
            })
            .and_then(|(_, _, counts)| counts.iter().find(|(name, _)| *name == "ours"))
            .map(|(_, value)| *value);
        let verdict = match ours {
            None => "n/a".to_owned(),
            Some(value) if value <= target.at_most => format!("{} met", format_count(value)),
            Some(value) => format!("{} MISSED", format_count(value)),
        };
        out.push_str(&format!("target {}: {verdict}\n", target.label));
    }
    let ours = |transport: Transport, operation: &str| {
        rows.iter()
            .find(|(t, o, _)| *t == transport && *o == operation)
            .and_then(|(_, _, counts)| counts.iter().find(|(name, _)| *name == "ours"))
            .map(|(_, value)| *value)
    };
    for transport in Transport::ALL {
        let verdict = match (ours(transport, MODERN_ECHO), ours(transport, "echo call")) {
            (Some(modern), Some(legacy)) if legacy > 0.0 => {
                let ratio = modern / legacy;
                let met = if ratio <= MODERN_AT_MOST {
                    "met"
                } else {
                    "MISSED"
                };
                format!(
                    "{ratio:.3}x ({} against {}) {met}",
                    format_count(modern),
                    format_count(legacy)
                )
            }
            _ => "n/a".to_owned(),
        };
        out.push_str(&format!(
            "target {} echo call in 2026-07-28 <= {MODERN_AT_MOST:.2}x the handshake era's: {verdict}\n",
            transport.name()
        ));
    }
    for transport in Transport::ALL {
        let sizes = (
            ours(transport, "connect"),
            ours(transport, "connect 2k tools"),
            ours(transport, "connect 20k tools"),
        );
        let verdict = match sizes {
            (Some(usual), Some(large), Some(huge)) if large > usual => {
                let low = (large - usual) / (LARGE_CATALOG - FIXTURE_TOOLS) as f64;
                let high = (huge - large) / (HUGE_CATALOG - LARGE_CATALOG) as f64;
                let met = if high <= PER_TOOL_AT_MOST * low {
                    "met"
                } else {
                    "MISSED"
                };
                format!(
                    "{} per tool from 2k to 20k tools, {} from 200 to 2k {met}",
                    format_count(high),
                    format_count(low)
                )
            }
            _ => "n/a".to_owned(),
        };
        out.push_str(&format!(
            "target {} connect linear in the catalog (per tool <= {PER_TOOL_AT_MOST:.2}x): {verdict}\n",
            transport.name()
        ));
    }
    out
}

/// A count with thousands grouped: `1,234,567`.
fn format_count(value: f64) -> String {
    let digits = format!("{:.0}", value.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_callgrinds_total() {
        let stderr = "==123== Callgrind, a call-graph generating cache profiler\n\
                      ==123== Events    : Ir\n==123== Collected : 50842187\n==123==\n";
        assert_eq!(collected(stderr), Some(50_842_187));
        assert_eq!(collected("==1== nothing here"), None);
    }

    #[test]
    fn the_report_lists_counts_and_ratios() {
        let rows = vec![(
            Transport::Stdio,
            "echo call",
            vec![("ours", 13_500.0), ("rmcp", 27_000.0), ("raw", 5_400.0)],
        )];
        let text = report(&rows);
        assert!(text.contains("stdio     echo call"), "{text}");
        assert!(text.contains("13,500"), "{text}");
        assert!(text.contains("rmcp 0.50x, raw 2.50x"), "{text}");
        assert!(
            text.contains("target stdio echo call <= 11k instructions: 13,500 MISSED"),
            "{text}"
        );
        assert!(
            text.contains("target http echo call <= 35k instructions: n/a"),
            "{text}"
        );
        let met = vec![(
            Transport::Http,
            "echo call",
            vec![("ours", 34_000.0), ("rmcp", 200_000.0)],
        )];
        let text = report(&met);
        assert!(
            text.contains("target http echo call <= 35k instructions: 34,000 met"),
            "{text}"
        );
        let eras = vec![
            (Transport::Stdio, "echo call", vec![("ours", 17_700.0)]),
            (Transport::Stdio, MODERN_ECHO, vec![("ours", 31_900.0)]),
            (Transport::Http, "echo call", vec![("ours", 50_000.0)]),
            (Transport::Http, MODERN_ECHO, vec![("ours", 54_000.0)]),
        ];
        let text = report(&eras);
        assert!(
            text.contains(
                "target stdio echo call in 2026-07-28 <= 1.10x the handshake era's: \
                 1.802x (31,900 against 17,700) MISSED"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "target http echo call in 2026-07-28 <= 1.10x the handshake era's: 1.080x"
            ),
            "{text}"
        );
        assert!(text.contains("(54,000 against 50,000) met"), "{text}");
        // A level cost per tool over stdio, a rising one over HTTP.
        let connects: Vec<Row<'_>> = [(Transport::Stdio, 201e6), (Transport::Http, 291e6)]
            .into_iter()
            .flat_map(|(transport, huge)| {
                [
                    ("connect", 3e6),
                    ("connect 2k tools", 21e6),
                    ("connect 20k tools", huge),
                ]
                .map(|(operation, count)| (transport, operation, vec![("ours", count)]))
            })
            .collect();
        let text = report(&connects);
        assert!(
            text.contains(
                "target stdio connect linear in the catalog (per tool <= 1.25x): \
                 10,000 per tool from 2k to 20k tools, 10,000 from 200 to 2k met"
            ),
            "{text}"
        );
        assert!(
            text.contains("15,000 per tool from 2k to 20k tools, 10,000 from 200 to 2k MISSED"),
            "{text}"
        );
        assert_eq!(format_count(1_234_567.4), "1,234,567");
        assert_eq!(format_count(12.0), "12");
    }
}
