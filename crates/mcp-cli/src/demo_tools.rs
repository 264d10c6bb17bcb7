//! The demo server's tools: definitions with input schemas, argument checks and results.
//!
//! Each tool is pure apart from `current_time`, which reads the system
//! clock. Argument problems are tool errors (`isError: true`) naming the
//! argument, so a model (or a person) can correct the call (MCP
//! "Server/Tools" §Error Handling).

use std::time::{SystemTime, UNIX_EPOCH};

use mcp_proto::ProtocolVersion;
use mcp_proto::types::{
    CallToolResult, ContentBlock, ImageContent, JsonObject, Tool, ToolAnnotations, json_kind,
};
use serde_json::{Value, json};

/// A 16×16 RGB PNG (a colour gradient), base64-encoded: 488 bytes decoded.
pub(crate) const TINY_PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAABr0lEQVR42g3RURUAIQhEUSMQgQhEMIIRjGCEF8EIRjACEYxgBBvMLt9cDgylFFmRF0VRLbRCL4wCRbNoFe2iLJzCLbxCKSYzuSlM1WhGN4aBaZqWaZvSOMY1nv3AZS53has6zenOcHBN13JtVzrHuc7zH4Qs5KEI1aAFPRgBoRlaoR3K4AQ3ePGDilW8EpVa1ap61aiiMiursitZdapu1asqpWENb0SjNrWm3jSaaMzGauxGNp2m2/TaDzrW8U50alfr6l2ji87srM7uZNfpul2v/2BgAx/EoA61oT40hhjMwRrsQQ6doTv0xg+QIUeBKv8i/+i/+S9NtNBGCQcuvP89ZcqmfCqm6qRN+mRMmJpTa2pP5eRM7uTNHyzZki/FUl20RV+MBUtzaS3tpVycxV289YMt2/Kt2KqbtumbsWFrbq2tvZWbs7mbt3+QWOJJJDXVUj01UiQzWclOMnVSN/XyP/pgBz/EoR61o340jv4z52Ed9iGPztE9eucHF7v4JS71ql31q3H1hzIv67IveXWu7tW7P3jYwx/xqE/tqT+Npz/C+ViP/cin83Sf3tMHijGvkIFn+O8AAAAASUVORK5CYII=";

/// Every tool, in the order `tools/list` returns them. Output schemas
/// (2025-06-18) are declared only to clients that negotiated them.
pub(crate) fn tools(version: ProtocolVersion) -> Vec<Tool> {
    let structured = has_structured_content(version);
    let mut tools = vec![
        tool(
            "echo",
            "Echo",
            "Returns the given text unchanged.",
            json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text to return."}},
                "required": ["text"],
                "additionalProperties": false
            }),
        ),
        tool(
            "add",
            "Add two numbers",
            "Adds two numbers and returns the sum as text and as structured content.",
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "number", "description": "The first addend."},
                    "b": {"type": "number", "description": "The second addend."}
                },
                "required": ["a", "b"],
                "additionalProperties": false
            }),
        ),
        tool(
            "current_time",
            "Current time",
            "Returns the current date and time in RFC 3339 form, in UTC or at a fixed offset.",
            json!({
                "type": "object",
                "properties": {
                    "timezone": {
                        "type": "string",
                        "description": "`UTC` (the default) or a fixed offset such as `+02:00` or `-0530`."
                    }
                },
                "additionalProperties": false
            }),
        ),
        tool(
            "word_count",
            "Word count",
            "Counts the words, characters and lines of a text.",
            json!({
                "type": "object",
                "properties": {"text": {"type": "string", "description": "The text to count."}},
                "required": ["text"],
                "additionalProperties": false
            }),
        ),
        tool(
            "tiny_image",
            "Tiny image",
            "Returns a 16x16 PNG image (a colour gradient).",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        ),
    ];
    if structured {
        for tool in &mut tools {
            tool.output_schema = match tool.name.as_str() {
                "add" => Some(
                    json!({
                        "type": "object",
                        "properties": {"sum": {"type": "number"}},
                        "required": ["sum"]
                    })
                    .into(),
                ),
                "word_count" => Some(
                    json!({
                        "type": "object",
                        "properties": {
                            "words": {"type": "integer"},
                            "characters": {"type": "integer"},
                            "lines": {"type": "integer"}
                        },
                        "required": ["words", "characters", "lines"]
                    })
                    .into(),
                ),
                _ => None,
            };
        }
    }
    tools
}

/// Calls the tool `name`; `None` when there is no such tool.
pub(crate) fn call(
    name: &str,
    arguments: Option<&JsonObject>,
    version: ProtocolVersion,
) -> Option<CallToolResult> {
    let empty = JsonObject::new();
    let args = Args {
        tool: name,
        map: arguments.unwrap_or(&empty),
    };
    let known: &[&str] = match name {
        "echo" | "word_count" => &["text"],
        "add" => &["a", "b"],
        "current_time" => &["timezone"],
        "tiny_image" => &[],
        _ => return None,
    };
    let result = args.only(known).and_then(|()| match name {
        "echo" => args.string("text").map(CallToolResult::text),
        "add" => add(&args),
        "current_time" => current_time(&args),
        "word_count" => args.string("text").map(word_count),
        _ => Ok(tiny_image()),
    });
    Some(match result {
        Ok(mut result) => {
            if !has_structured_content(version) {
                result.structured_content = None;
            }
            result
        }
        Err(message) => CallToolResult {
            is_error: Some(true),
            ..CallToolResult::text(message)
        },
    })
}

/// `structuredContent` and `outputSchema` arrived in 2025-06-18.
fn has_structured_content(version: ProtocolVersion) -> bool {
    version >= ProtocolVersion::V2025_06_18
}

fn tool(name: &str, title: &str, description: &str, schema: Value) -> Tool {
    // Every schema above is an object literal.
    let input_schema = schema.into();
    Tool {
        title: Some(title.to_owned()),
        description: Some(description.to_owned()),
        input_schema,
        annotations: Some(ToolAnnotations {
            read_only_hint: Some(true),
            open_world_hint: Some(false),
            ..ToolAnnotations::default()
        }),
        ..Tool::new(name)
    }
}

/// A call's arguments with checks that name the tool and the argument.
struct Args<'a> {
    tool: &'a str,
    map: &'a JsonObject,
}

impl Args<'_> {
    fn only(&self, known: &[&str]) -> Result<(), String> {
        match self.map.keys().find(|key| !known.contains(&key.as_str())) {
            None => Ok(()),
            Some(key) if known.is_empty() => Err(format!(
                "{}: unexpected argument `{key}`; this tool takes no arguments",
                self.tool
            )),
            Some(key) => Err(format!(
                "{}: unexpected argument `{key}`; expected {}",
                self.tool,
                known
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    fn string(&self, key: &str) -> Result<&str, String> {
        match self.map.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!(
                "{}: argument `{key}` must be a string, not {}",
                self.tool,
                json_kind(other)
            )),
            None => Err(format!(
                "{}: missing required argument `{key}` (a string)",
                self.tool
            )),
        }
    }

    fn number(&self, key: &str) -> Result<&serde_json::Number, String> {
        match self.map.get(key) {
            Some(Value::Number(n)) => Ok(n),
            Some(other) => Err(format!(
                "{}: argument `{key}` must be a number, not {}",
                self.tool,
                json_kind(other)
            )),
            None => Err(format!(
                "{}: missing required argument `{key}` (a number)",
                self.tool
            )),
        }
    }
}

fn add(args: &Args<'_>) -> Result<CallToolResult, String> {
    let (a, b) = (args.number("a")?, args.number("b")?);
    // Integers add exactly; anything else (or an overflow) in f64.
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) => a.checked_add(b).map(serde_json::Number::from),
        _ => None,
    }
    .or_else(|| {
        let (a, b) = (a.as_f64()?, b.as_f64()?);
        serde_json::Number::from_f64(a + b)
    })
    .ok_or_else(|| "add: the sum is not a finite number".to_owned())?;
    Ok(CallToolResult {
        structured_content: Some(json!({"sum": sum})),
        ..CallToolResult::text(sum.to_string())
    })
}

fn word_count(text: &str) -> CallToolResult {
    let words = text.split_whitespace().count();
    let characters = text.chars().count();
    let lines = text.lines().count();
    CallToolResult {
        structured_content: Some(json!({"words": words, "characters": characters, "lines": lines})),
        ..CallToolResult::text(format!(
            "{words} words, {characters} characters, {lines} lines"
        ))
    }
}

fn current_time(args: &Args<'_>) -> Result<CallToolResult, String> {
    let offset_minutes = match args.map.get("timezone") {
        None | Some(Value::Null) => 0,
        Some(_) => {
            let zone = args.string("timezone")?;
            parse_offset(zone).ok_or_else(|| {
                format!(
                    "current_time: unknown timezone `{zone}`; use `UTC` or a fixed offset such as `+02:00` \
                     (the demo server has no timezone database)"
                )
            })?
        }
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| "current_time: the system clock is before 1970".to_owned())?;
    let seconds = i64::try_from(now.as_secs())
        .map_err(|_| "current_time: the system clock is out of range".to_owned())?;
    Ok(CallToolResult::text(rfc3339(seconds, offset_minutes)))
}

fn tiny_image() -> CallToolResult {
    CallToolResult {
        content: vec![
            ContentBlock::Image(ImageContent {
                data: TINY_PNG_BASE64.to_owned(),
                mime_type: "image/png".to_owned(),
                ..ImageContent::default()
            }),
            ContentBlock::text("a 16x16 PNG colour gradient"),
        ],
        ..CallToolResult::default()
    }
}

/// `UTC`, `Z`, `GMT`, or `±HH`, `±HHMM`, `±HH:MM` (at most 14 hours, as
/// real offsets are), in minutes east of UTC.
fn parse_offset(zone: &str) -> Option<i64> {
    let zone = zone.trim();
    if ["utc", "z", "gmt", "etc/utc"].contains(&zone.to_ascii_lowercase().as_str()) {
        return Some(0);
    }
    let (sign, rest) = match zone.as_bytes().first()? {
        b'+' => (1, zone.get(1..)?),
        b'-' => (-1, zone.get(1..)?),
        _ => return None,
    };
    let digits: String = rest.chars().filter(|c| *c != ':').collect();
    if !digits.bytes().all(|b| b.is_ascii_digit()) || rest.matches(':').count() > 1 {
        return None;
    }
    let (hours, minutes) = match digits.len() {
        1 | 2 => (digits.parse::<i64>().ok()?, 0),
        4 => (
            digits.get(..2)?.parse::<i64>().ok()?,
            digits.get(2..)?.parse::<i64>().ok()?,
        ),
        _ => return None,
    };
    (minutes < 60 && hours * 60 + minutes <= 14 * 60).then_some(sign * (hours * 60 + minutes))
}

/// `YYYY-MM-DDTHH:MM:SS±HH:MM` (or `Z`) for a Unix time at an offset.
fn rfc3339(unix_seconds: i64, offset_minutes: i64) -> String {
    let local = unix_seconds + offset_minutes * 60;
    let (days, secs) = (local.div_euclid(86_400), local.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    let time = format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    );
    if offset_minutes == 0 {
        return format!("{time}Z");
    }
    let sign = if offset_minutes < 0 { '-' } else { '+' };
    let abs = offset_minutes.abs();
    format!("{time}{sign}{:02}:{:02}", abs / 60, abs % 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(tool: &str, args: Value, expected: Value) {
        let Value::Object(args) = args else { panic!() };
        let result = call(tool, Some(&args), ProtocolVersion::LATEST_HANDSHAKE).unwrap();
        assert_eq!(serde_json::to_value(result).unwrap(), expected, "{tool}");
    }

    #[test]
    fn results() {
        check(
            "echo",
            json!({"text": "hi"}),
            json!({"content": [{"type": "text", "text": "hi"}]}),
        );
        check(
            "add",
            json!({"a": 2, "b": 3}),
            json!({"content": [{"type": "text", "text": "5"}], "structuredContent": {"sum": 5}}),
        );
        check(
            "add",
            json!({"a": 0.5, "b": 0.25}),
            json!({"content": [{"type": "text", "text": "0.75"}], "structuredContent": {"sum": 0.75}}),
        );
        check(
            "add",
            json!({"a": i64::MAX, "b": 1}),
            json!({"content": [{"type": "text", "text": "9.223372036854776e+18"}], "structuredContent": {"sum": 9.223372036854776e18}}),
        );
        check(
            "word_count",
            json!({"text": "one two\nthree"}),
            json!({"content": [{"type": "text", "text": "3 words, 13 characters, 2 lines"}],
                   "structuredContent": {"words": 3, "characters": 13, "lines": 2}}),
        );
    }

    #[test]
    fn argument_errors_are_tool_errors() {
        for (tool, args, needle) in [
            ("echo", json!({}), "missing required argument `text`"),
            (
                "echo",
                json!({"text": 1}),
                "`text` must be a string, not a number",
            ),
            (
                "echo",
                json!({"text": "a", "x": 1}),
                "unexpected argument `x`",
            ),
            (
                "add",
                json!({"a": "1", "b": 2}),
                "`a` must be a number, not a string",
            ),
            (
                "current_time",
                json!({"timezone": "Mars/Olympus"}),
                "unknown timezone",
            ),
            ("tiny_image", json!({"x": 1}), "takes no arguments"),
        ] {
            let Value::Object(args) = args else { panic!() };
            let result = call(tool, Some(&args), ProtocolVersion::LATEST_HANDSHAKE).unwrap();
            assert!(result.failed(), "{tool}");
            let text = result.content[0].as_text().unwrap();
            assert!(text.contains(needle), "{tool}: {text}");
        }
        assert!(call("nope", None, ProtocolVersion::LATEST_HANDSHAKE).is_none());
    }

    #[test]
    fn structured_content_only_from_2025_06_18() {
        let args = json!({"a": 1, "b": 1});
        let Value::Object(args) = args else { panic!() };
        let old = call("add", Some(&args), ProtocolVersion::V2025_03_26).unwrap();
        assert_eq!(old.structured_content, None);
        assert!(
            tools(ProtocolVersion::V2025_03_26)
                .iter()
                .all(|t| t.output_schema.is_none())
        );
        assert!(
            tools(ProtocolVersion::V2025_06_18)
                .iter()
                .any(|t| t.output_schema.is_some())
        );
    }

    #[test]
    fn time_formatting() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400, 0), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000, 120), "2023-11-15T00:13:20+02:00");
        assert_eq!(rfc3339(1_700_000_000, -330), "2023-11-14T16:43:20-05:30");
        assert_eq!(parse_offset("UTC"), Some(0));
        assert_eq!(parse_offset("+02:00"), Some(120));
        assert_eq!(parse_offset("-0530"), Some(-330));
        assert_eq!(parse_offset("+5"), Some(300));
        assert_eq!(parse_offset("+15:00"), None);
        assert_eq!(parse_offset("+02:60"), None);
        assert_eq!(parse_offset("Europe/Paris"), None);
        assert_eq!(parse_offset("+0:2:00"), None);
    }

    #[test]
    fn the_image_is_a_png() {
        let result = call("tiny_image", None, ProtocolVersion::LATEST_HANDSHAKE).unwrap();
        let ContentBlock::Image(image) = &result.content[0] else {
            panic!("{result:?}")
        };
        assert_eq!(image.mime_type, "image/png");
        // The base64 of the PNG signature and the start of the IHDR chunk.
        assert!(image.data.starts_with("iVBORw0KGgoAAAANSUhEUgAAABAAAAAQ"));
    }
}
