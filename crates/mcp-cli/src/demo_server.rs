//! `mcpctl demo-server`: a small, real MCP server over stdio, the server `mcpctl` uses when nothing is configured.
//!
//! It speaks newline-delimited JSON on stdin/stdout (MCP "Transports"
//! §stdio) through `mcp_proto`'s codec, and leaves the protocol's lifecycle
//! to `mcp_proto::server::ServerSession` in the handshake era only: version
//! negotiation, `ping`, refusing requests before `initialize`, batches only
//! under 2025-03-26, `-32601` for methods it does not serve, and `-32700` /
//! `-32600` with a null id for lines that are not messages. What is left
//! here is the answer to each request: `tools/list`, `tools/call`,
//! `resources/list`, `resources/templates/list`, `resources/read`,
//! `prompts/list`, `prompts/get` and `completion/complete`.
//!
//! The tools live in [`crate::demo_tools`], the resources, the prompt and
//! its completion in [`crate::demo_catalog`]. The server exits when stdin
//! ends, as stdio servers should.

use std::io::{self, Read, Write};
use std::time::Instant;

use mcp_proto::codec::ndjson::{self, NdjsonDecoder, NdjsonError};
use mcp_proto::jsonrpc::{RawJson, error_codes};
use mcp_proto::server::{ClientRequest, Event, ServerOptions, ServerSession};
use mcp_proto::types::{
    CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams, Implementation,
    ListChangedCapability, ListToolsResult, ReadResourceRequestParams, ResourcesCapability,
    ServerCapabilities,
};
use mcp_proto::{ErrorObject, Frame, ProtocolVersion, methods};
use serde::Serialize;

use crate::{demo_catalog, demo_tools};

/// What the server tells clients about itself (`instructions`).
const INSTRUCTIONS: &str = "Built-in demo server of mcpctl: echo, add, current_time, word_count and tiny_image; \
two resources (demo://about, demo://tiny-image.png) and the prompt try_tool. \
No network, no files; every tool is read-only.";

/// Serves one session on stdin/stdout until stdin ends.
pub(crate) fn run() -> anyhow::Result<()> {
    let mut server = DemoServer::default();
    let mut decoder = NdjsonDecoder::new();
    let mut stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    let mut buf = vec![0; 64 * 1024];
    let mut out = Vec::new();
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(anyhow::Error::new(error).context("cannot read stdin")),
        };
        decoder.push(buf.get(..n).unwrap_or_default());
        while let Some(item) = decoder.next_frame() {
            server.handle_line(item, &mut out);
        }
        if !out.is_empty() {
            if stdout
                .write_all(&out)
                .and_then(|()| stdout.flush())
                .is_err()
            {
                // The client closed our stdout: nobody is listening any more.
                return Ok(());
            }
            out.clear();
        }
    }
    while let Some(item) = decoder.finish() {
        server.handle_line(item, &mut out);
    }
    // The client may be gone already; there is nobody to report to then.
    let _ = stdout.write_all(&out).and_then(|()| stdout.flush());
    Ok(())
}

/// One session: the protocol session and the answers, without the
/// transport, so tests can drive it line by line.
#[derive(Debug)]
pub(crate) struct DemoServer {
    session: ServerSession,
}

impl Default for DemoServer {
    fn default() -> Self {
        let options = ServerOptions::default()
            .server_info(Implementation {
                title: Some("mcpctl demo server".to_owned()),
                ..Implementation::new("mcpctl-demo", env!("CARGO_PKG_VERSION"))
            })
            .capabilities(ServerCapabilities {
                tools: Some(ListChangedCapability {
                    list_changed: Some(false),
                    ..ListChangedCapability::default()
                }),
                resources: Some(ResourcesCapability::default()),
                prompts: Some(ListChangedCapability {
                    list_changed: Some(false),
                    ..ListChangedCapability::default()
                }),
                completions: Some(serde_json::Map::new()),
                ..ServerCapabilities::default()
            })
            .instructions(Some(INSTRUCTIONS.to_owned()))
            .versions(ProtocolVersion::HANDSHAKE.to_vec());
        DemoServer {
            session: ServerSession::new(options),
        }
    }
}

impl DemoServer {
    /// Handles one decoded line and appends what it answers, if anything,
    /// to `out`. Every request is answered before the next line is read,
    /// so there is never anything left to cancel.
    pub(crate) fn handle_line(&mut self, item: Result<Frame, NdjsonError>, out: &mut Vec<u8>) {
        match item {
            Ok(frame) => self.session.handle_frame(Instant::now(), frame),
            Err(error) => self.session.handle_undecodable(error.to_error_object()),
        }
        while let Some(event) = self.session.poll_event() {
            if let Event::Request(request) = event {
                // The request was just handed out, so it is waiting for this
                // one answer: neither call can be refused.
                let _ = match answer(&request) {
                    Ok(result) => self.session.respond(&request.id, &result),
                    Err(error) => self.session.respond_error(&request.id, error),
                };
            }
        }
        while let Some(frame) = self.session.poll_transmit() {
            // The demo's answers are its own values, which always have a
            // one-line form; should one not, it is dropped and logged rather
            // than written in half.
            if let Err(error) = ndjson::encode_frame(&frame, out) {
                tracing::warn!(%error, "dropping an answer");
            }
        }
    }
}

/// The answer to one request the session handed out (MCP "Server
/// Features"); the session only hands out the methods the capabilities
/// above declare.
fn answer(request: &ClientRequest) -> Result<RawJson, ErrorObject> {
    let params = request.params.as_ref().map(|raw| raw.get()).unwrap_or("{}");
    let version = request.version;
    match request.method.as_str() {
        methods::TOOLS_LIST => {
            // One page holds every tool, so any cursor is one this
            // server never handed out (MCP "Utilities/Pagination").
            let params: serde_json::Value = serde_json::from_str(params)
                .map_err(|e| ErrorObject::invalid_params(e.to_string()))?;
            if let Some(cursor) = params.get("cursor").filter(|c| !c.is_null()) {
                return Err(ErrorObject::invalid_params(format!(
                    "invalid cursor {cursor}"
                )));
            }
            let result = ListToolsResult {
                tools: demo_tools::tools(version),
                ..ListToolsResult::default()
            };
            encode(&result)
        }
        methods::TOOLS_CALL => {
            let params: CallToolRequestParams = decode(params, "tools/call")?;
            // MCP "Server/Tools" §Error Handling: an unknown tool is a
            // protocol error; bad arguments are a tool error the model
            // can correct (`isError: true`), which `call` returns.
            let result = demo_tools::call(&params.name, params.arguments.as_ref(), version)
                .ok_or_else(|| {
                    ErrorObject::invalid_params(format!("unknown tool: {}", params.name))
                })?;
            encode(&result)
        }
        methods::RESOURCES_LIST => encode(&demo_catalog::resources()),
        methods::RESOURCES_TEMPLATES_LIST => encode(&demo_catalog::templates()),
        methods::RESOURCES_READ => {
            let params: ReadResourceRequestParams = decode(params, "resources/read")?;
            encode(&demo_catalog::read(&params.uri)?)
        }
        methods::PROMPTS_LIST => encode(&demo_catalog::prompts()),
        methods::PROMPTS_GET => {
            let params: GetPromptRequestParams = decode(params, "prompts/get")?;
            encode(&demo_catalog::get_prompt(&params, version)?)
        }
        methods::COMPLETION_COMPLETE => {
            let params: CompleteRequestParams = decode(params, "completion/complete")?;
            encode(&demo_catalog::complete(&params, version))
        }
        other => Err(ErrorObject::method_not_found(other)),
    }
}

/// A request's parameters as `T`, or "invalid params" naming the method.
fn decode<T: serde::de::DeserializeOwned>(params: &str, method: &str) -> Result<T, ErrorObject> {
    serde_json::from_str(params)
        .map_err(|e| ErrorObject::invalid_params(format!("invalid {method} params: {e}")))
}

fn encode(result: &impl Serialize) -> Result<RawJson, ErrorObject> {
    RawJson::encode(result)
        .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))
}

#[cfg(test)]
mod tests {
    use mcp_proto::codec::NdjsonDecoder;
    use serde_json::{Value, json};

    use super::*;

    /// Feeds `lines` (one JSON text each, or raw junk) to a fresh server
    /// and returns every answer as JSON.
    fn exchange(lines: &[&str]) -> Vec<Value> {
        let mut server = DemoServer::default();
        let mut decoder = NdjsonDecoder::new();
        let mut out = Vec::new();
        for line in lines {
            decoder.push(line.as_bytes());
            decoder.push(b"\n");
            while let Some(item) = decoder.next_frame() {
                server.handle_line(item, &mut out);
            }
        }
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;

    #[test]
    fn negotiates_the_version() {
        let answers = exchange(&[INIT]);
        assert_eq!(answers[0]["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(answers[0]["result"]["serverInfo"]["name"], "mcpctl-demo");
        assert!(answers[0]["result"]["capabilities"]["tools"].is_object());

        let future = INIT.replace("2025-06-18", "2099-01-01");
        let answers = exchange(&[&future]);
        assert_eq!(
            answers[0]["result"]["protocolVersion"],
            ProtocolVersion::LATEST_HANDSHAKE.as_str()
        );
    }

    #[test]
    fn refuses_requests_before_initialize_but_answers_ping() {
        let answers = exchange(&[
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":"b","method":"ping"}"#,
        ]);
        assert_eq!(answers[0]["id"], "a");
        assert_eq!(answers[0]["error"]["code"], error_codes::INVALID_REQUEST);
        assert_eq!(
            answers[1],
            json!({"jsonrpc": "2.0", "id": "b", "result": {}})
        );
    }

    #[test]
    fn answers_bad_input_with_errors() {
        let answers = exchange(&[
            "this is not json",
            r#"{"not":"a message"}"#,
            INIT,
            r#"{"jsonrpc":"2.0","id":2,"method":"tasks/list"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
            r#"[{"jsonrpc":"2.0","id":6,"method":"ping"}]"#,
        ]);
        let codes: Vec<(Value, Value)> = answers
            .iter()
            .map(|a| (a["id"].clone(), a["error"]["code"].clone()))
            .collect();
        assert_eq!(
            codes,
            vec![
                (Value::Null, json!(error_codes::PARSE_ERROR)),
                (Value::Null, json!(error_codes::INVALID_REQUEST)),
                (json!(1), Value::Null),
                (json!(2), json!(error_codes::METHOD_NOT_FOUND)),
                (json!(3), json!(error_codes::INVALID_PARAMS)),
                (json!(4), json!(error_codes::INVALID_PARAMS)),
                (json!(5), json!(error_codes::INVALID_REQUEST)),
                (Value::Null, json!(error_codes::INVALID_REQUEST)),
            ]
        );
    }

    #[test]
    fn answers_batches_under_2025_03_26() {
        let init = INIT.replace("2025-06-18", "2025-03-26");
        let answers = exchange(&[
            &init,
            r#"[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":3,"method":"ping"}]"#,
        ]);
        assert_eq!(answers[1][0]["id"], 2);
        assert_eq!(answers[1][1]["id"], 3);
    }

    #[test]
    fn lists_and_reads_resources_and_gets_and_completes_the_prompt() {
        let answers = exchange(&[
            INIT,
            r#"{"jsonrpc":"2.0","id":2,"method":"resources/list"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"demo://tiny-image.png"}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"demo://nope"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"try_tool","arguments":{"tool":"echo"}}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"try_tool","arguments":{"tool":"rm"}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"try_tool"},"argument":{"name":"tool","value":"e"}}}"#,
        ]);
        let capabilities = &answers[0]["result"]["capabilities"];
        assert!(capabilities["resources"].is_object(), "{capabilities}");
        assert!(capabilities["prompts"].is_object(), "{capabilities}");
        assert!(capabilities["completions"].is_object(), "{capabilities}");
        assert_eq!(answers[1]["result"]["resources"][0]["uri"], "demo://about");
        assert_eq!(
            answers[2]["result"]["contents"][0]["blob"],
            demo_tools::TINY_PNG_BASE64
        );
        assert_eq!(answers[3]["error"]["code"], error_codes::RESOURCE_NOT_FOUND);
        let text = answers[4]["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap();
        assert!(text.contains("`echo`"), "{text}");
        assert_eq!(answers[5]["error"]["code"], error_codes::INVALID_PARAMS);
        assert_eq!(
            answers[6]["result"]["completion"]["values"],
            json!(["echo"])
        );
    }

    #[test]
    fn lists_and_calls_tools() {
        let answers = exchange(&[
            INIT,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"cursor":"x"}}"#,
        ]);
        let names: Vec<&str> = answers[1]["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["echo", "add", "current_time", "word_count", "tiny_image"]
        );
        assert_eq!(
            answers[2]["result"],
            json!({"content": [{"type": "text", "text": "hi"}]})
        );
        assert_eq!(answers[3]["error"]["code"], error_codes::INVALID_PARAMS);
    }
}
