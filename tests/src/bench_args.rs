//! The command line every benchmark client program shares (`mcp-bench-client`, `mcp-bench-raw`, and the rmcp client in `bench/`, which compiles this file too), as `cargo xtask bench` passes it.

use anyhow::{Context, bail};

/// Which transport a benchmark client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A child process over stdio.
    Stdio,
    /// Streamable HTTP.
    Http,
}

/// What to run and how much of it.
#[derive(Debug)]
pub struct Args {
    /// The transport.
    pub transport: Kind,
    /// The server program (stdio).
    pub server: String,
    /// Its arguments (stdio).
    pub server_args: Vec<String>,
    /// The MCP endpoint (HTTP).
    pub url: String,
    /// Cold connects to time.
    pub connects: usize,
    /// Untimed calls first.
    pub warmup: usize,
    /// Sequential calls for latency.
    pub calls: usize,
    /// Calls for the throughput phase.
    pub throughput_calls: usize,
    /// Calls in flight during the throughput phase.
    pub inflight: usize,
    /// Calls returning a large result.
    pub big_calls: usize,
    /// The size of that result, in KiB.
    pub big_kib: usize,
}

/// A JSON array of numbers, for the one result line each client prints.
pub fn json_list(values: &[u128]) -> String {
    // One buffer for the whole list: a string per number cost the harness
    // about 600 instructions per timed call, which callgrind counted
    // against the client measured.
    use std::fmt::Write as _;
    let mut out = String::with_capacity(2 + values.len() * 8);
    out.push('[');
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{value}");
    }
    out.push(']');
    out
}

/// Parses `--flag value` pairs; unknown flags are errors.
pub fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        transport: Kind::Stdio,
        server: String::new(),
        server_args: Vec::new(),
        url: String::new(),
        connects: 20,
        warmup: 100,
        calls: 2000,
        throughput_calls: 20_000,
        inflight: 32,
        big_calls: 50,
        big_kib: 1024,
    };
    let mut argv = std::env::args().skip(1);
    while let Some(flag) = argv.next() {
        let value = argv
            .next()
            .with_context(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<usize>()
                .with_context(|| format!("{flag}: not a number"))
        };
        match flag.as_str() {
            "--transport" => {
                args.transport = match value.as_str() {
                    "stdio" => Kind::Stdio,
                    "http" => Kind::Http,
                    other => bail!("unknown transport {other}"),
                }
            }
            "--server" => args.server = value,
            "--server-args" => {
                args.server_args = value.split_whitespace().map(str::to_owned).collect();
            }
            "--url" => args.url = value,
            "--connects" => args.connects = number()?,
            "--warmup" => args.warmup = number()?,
            "--calls" => args.calls = number()?,
            "--throughput-calls" => args.throughput_calls = number()?,
            "--inflight" => args.inflight = number()?,
            "--big-calls" => args.big_calls = number()?,
            "--big-kib" => args.big_kib = number()?,
            other => bail!("unknown flag {other}"),
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::json_list;

    #[test]
    fn lists_are_json_arrays_of_the_numbers() {
        assert_eq!(json_list(&[]), "[]");
        assert_eq!(json_list(&[7]), "[7]");
        let values = [0, 12, u128::MAX];
        let parsed: Vec<u128> = serde_json::from_str(&json_list(&values)).unwrap();
        assert_eq!(parsed, values);
    }
}
