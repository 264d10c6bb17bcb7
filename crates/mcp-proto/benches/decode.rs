//! Decoding cost of the NDJSON codec plus typed results, against a plain `serde_json::Value` parse of the same bytes.
//!
//! Run with `cargo bench -p mcp-proto --bench decode`. Two workloads:
//! - one line holding a `tools/list` result with 500 realistic tools;
//! - 10,000 lines of small `tools/call` results.
//!
//! For each, the baseline is `serde_json::from_slice::<Value>` on every
//! line's bytes; the typed path pushes the whole stream through
//! [`NdjsonDecoder`] in 64 KiB reads and decodes each response's `result`
//! into [`ListToolsResult`] or [`CallToolResult`]. Both include dropping
//! what they built. Each figure is the median of interleaved runs, so that
//! a burst of load on the machine hits both sides alike. The target is a
//! typed/Value ratio of at most 1.2.
//!
//! The typed path keeps one decoder across runs, as a connection keeps one
//! for its lifetime. A fresh decoder per run would regrow its buffer from
//! nothing for the 545 KB line every time, and with glibc's allocator the
//! page faults of mapping and unmapping that buffer cost about a fifth of
//! the `tools/list` figure: a cost of the benchmark's setup, not of
//! decoding.
//!
//! Without `--bench` (as `cargo test --benches` runs it) the workloads are
//! tiny and run once: a smoke test, not a measurement.

use std::hint::black_box;
use std::time::{Duration, Instant};

use mcp_proto::codec::NdjsonDecoder;
use mcp_proto::jsonrpc::{Frame, Message};
use mcp_proto::types::{CallToolResult, ListToolsResult};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The size of one simulated pipe read.
const READ_SIZE: usize = 64 * 1024;

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (tools, calls, reps) = if full {
        (500, 10_000, 31)
    } else {
        (20, 200, 1)
    };

    let list = Workload::new(
        format!("tools/list, {tools} tools, 1 line"),
        vec![tools_list_line(tools)],
    );
    let call = Workload::new(
        format!("tools/call, {calls} lines"),
        (0..calls).map(call_result_line).collect(),
    );

    println!(
        "{:<34} {:>9} {:>10} {:>10} {:>7} {:>10} {:>10}",
        "workload", "bytes", "Value ms", "typed ms", "ratio", "codec ms", "types ms"
    );
    let mut worst: f64 = 0.0;
    for (workload, report) in [
        (&list, list.measure::<ListToolsResult>(reps)),
        (&call, call.measure::<CallToolResult>(reps)),
    ] {
        let ratio = report.typed.as_secs_f64() / report.value.as_secs_f64();
        worst = worst.max(ratio);
        println!(
            "{:<34} {:>9} {:>10.3} {:>10.3} {:>7.3} {:>10.3} {:>10.3}",
            workload.name,
            workload.stream.len(),
            ms(report.value),
            ms(report.typed),
            ratio,
            ms(report.codec_only),
            ms(report.types_only),
        );
    }
    println!(
        "\ntyped = NDJSON codec + typed decode of each result; codec ms and types ms are \
         those two parts timed alone. Medians of {reps} interleaved runs."
    );
    if full {
        let verdict = if worst <= 1.2 { "meets" } else { "MISSES" };
        println!("worst ratio {worst:.3}: {verdict} the 1.2 target");
    }
}

struct Workload {
    name: String,
    /// The lines, without their `\n`, for the baseline.
    lines: Vec<Vec<u8>>,
    /// The same lines as one NDJSON byte stream.
    stream: Vec<u8>,
}

struct Report {
    value: Duration,
    typed: Duration,
    codec_only: Duration,
    types_only: Duration,
}

impl Workload {
    fn new(name: String, lines: Vec<Vec<u8>>) -> Self {
        let mut stream = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
        for line in &lines {
            stream.extend_from_slice(line);
            stream.push(b'\n');
        }
        Workload {
            name,
            lines,
            stream,
        }
    }

    fn measure<T: DeserializeOwned>(&self, reps: usize) -> Report {
        // Check once, untimed, that both paths decode every line; this also
        // grows each decoder's buffer to its steady-state size.
        let mut typed_decoder = NdjsonDecoder::new();
        let mut codec_decoder = NdjsonDecoder::new();
        assert_eq!(self.parse_values(), self.lines.len());
        assert_eq!(self.decode_typed::<T>(&mut typed_decoder), self.lines.len());
        assert_eq!(self.decode_frames(&mut codec_decoder), self.lines.len());
        let results = self.raw_results();

        let mut value = Vec::with_capacity(reps);
        let mut typed = Vec::with_capacity(reps);
        let mut codec_only = Vec::with_capacity(reps);
        let mut types_only = Vec::with_capacity(reps);
        for _ in 0..reps {
            value.push(time(|| self.parse_values()));
            typed.push(time(|| self.decode_typed::<T>(&mut typed_decoder)));
            codec_only.push(time(|| self.decode_frames(&mut codec_decoder)));
            types_only.push(time(|| decode_results::<T>(&results)));
        }
        Report {
            value: median(value),
            typed: median(typed),
            codec_only: median(codec_only),
            types_only: median(types_only),
        }
    }

    /// The baseline: every line parsed into a `serde_json::Value`.
    fn parse_values(&self) -> usize {
        let mut n = 0;
        for line in &self.lines {
            let value: Value = serde_json::from_slice(line).expect("valid JSON");
            black_box(&value);
            n += 1;
        }
        n
    }

    /// The typed path: codec, then each result into `T`.
    fn decode_typed<T: DeserializeOwned>(&self, decoder: &mut NdjsonDecoder) -> usize {
        let mut n = 0;
        self.for_each_response(decoder, |result| {
            let typed: T = serde_json::from_str(result.get()).expect("typed result");
            black_box(&typed);
            n += 1;
        });
        n
    }

    /// The codec alone: frames, with results left raw.
    fn decode_frames(&self, decoder: &mut NdjsonDecoder) -> usize {
        let mut n = 0;
        self.for_each_response(decoder, |result| {
            black_box(result);
            n += 1;
        });
        n
    }

    fn raw_results(&self) -> Vec<mcp_proto::RawJson> {
        let mut results = Vec::new();
        self.for_each_response(&mut NdjsonDecoder::new(), |result| {
            results.push(result.clone());
        });
        results
    }

    fn for_each_response(
        &self,
        decoder: &mut NdjsonDecoder,
        mut f: impl FnMut(&mcp_proto::RawJson),
    ) {
        for chunk in self.stream.chunks(READ_SIZE) {
            decoder.push(chunk);
            while let Some(frame) = decoder.next_frame() {
                match frame.expect("a valid frame") {
                    Frame::Single(Message::Response(response)) => f(&response.result),
                    other => panic!("unexpected frame {other:?}"),
                }
            }
        }
        assert_eq!(decoder.buffered_len(), 0, "the stream ends with a newline");
    }
}

fn decode_results<T: DeserializeOwned>(results: &[mcp_proto::RawJson]) -> usize {
    for result in results {
        let typed: T = result.decode().expect("typed result");
        black_box(&typed);
    }
    results.len()
}

fn time(f: impl FnOnce() -> usize) -> Duration {
    let start = Instant::now();
    black_box(f());
    start.elapsed()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

// ---------------------------------------------------------------------------
// Realistic, deterministic payloads.

/// A small xorshift generator: the payloads are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const WORDS: &[&str] = &[
    "the",
    "file",
    "repository",
    "returns",
    "a",
    "list",
    "of",
    "matching",
    "entries",
    "for",
    "given",
    "query",
    "with",
    "optional",
    "filters",
    "and",
    "pagination",
    "results",
    "are",
    "sorted",
    "by",
    "relevance",
    "use",
    "this",
    "tool",
    "when",
    "user",
    "asks",
    "about",
    "issues",
    "pull",
    "requests",
    "branches",
    "commits",
    "in",
    "project",
    "workspace",
    "directory",
    "path",
    "must",
    "be",
    "absolute",
    "timeout",
    "seconds",
    "default",
    "is",
];

fn sentence(rng: &mut Rng, chars: usize) -> String {
    let mut s = String::with_capacity(chars + 16);
    while s.len() < chars {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(rng.pick(WORDS));
    }
    s.push('.');
    s
}

fn tool(rng: &mut Rng, i: usize) -> Value {
    const VERBS: &[&str] = &["list", "get", "create", "update", "delete", "search", "run"];
    const NOUNS: &[&str] = &["issues", "files", "branches", "commits", "users", "jobs"];
    let name = format!("{}_{}_{i}", rng.pick(VERBS), rng.pick(NOUNS));
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for p in 0..3 + rng.below(6) {
        let prop_name = format!("{}_{p}", rng.pick(WORDS));
        let len = 30 + rng.below(50);
        let description = sentence(rng, len);
        let schema = match rng.below(5) {
            0 => json!({"type": "string", "description": description}),
            1 => {
                json!({"type": "integer", "minimum": 0, "maximum": 1000, "description": description})
            }
            2 => json!({"type": "boolean", "default": false, "description": description}),
            3 => {
                json!({"type": "string", "enum": ["open", "closed", "all"], "description": description})
            }
            _ => json!({"type": "array", "items": {"type": "string"}, "description": description}),
        };
        if p < 2 {
            required.push(Value::String(prop_name.clone()));
        }
        properties.insert(prop_name, schema);
    }
    let mut tool = json!({
        "name": name,
        "description": sentence(rng, 200),
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false
        }
    });
    if i.is_multiple_of(2) {
        tool["title"] = json!(format!("Tool number {i}"));
    }
    if i.is_multiple_of(3) {
        tool["annotations"] = json!({
            "title": format!("Tool {i}"),
            "readOnlyHint": i.is_multiple_of(2),
            "destructiveHint": false,
            "openWorldHint": true
        });
    }
    tool
}

fn tools_list_line(n: usize) -> Vec<u8> {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let tools: Vec<Value> = (0..n).map(|i| tool(&mut rng, i)).collect();
    let message = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}});
    serde_json::to_vec(&message).expect("JSON")
}

fn call_result_line(i: usize) -> Vec<u8> {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ (i as u64 + 1));
    let len = 40 + rng.below(80);
    let text = sentence(&mut rng, len);
    let mut result = json!({"content": [{"type": "text", "text": text}]});
    if i.is_multiple_of(4) {
        result["structuredContent"] = json!({"count": i, "status": "ok", "items": ["a", "b"]});
    }
    if i.is_multiple_of(10) {
        result["isError"] = json!(false);
    }
    let message = json!({"jsonrpc": "2.0", "id": i + 2, "result": result});
    serde_json::to_vec(&message).expect("JSON")
}
