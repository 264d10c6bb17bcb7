//! `mcpctl demo-server`: a small, real MCP server over stdio, the server `mcpctl` uses when nothing is configured.
//!
//! It speaks newline-delimited JSON on stdin/stdout (MCP "Transports"
//! §stdio) through `mcp_proto`'s codec and typed messages:
//!
//! - `initialize` negotiates the version (MCP "Lifecycle" §Version
//!   Negotiation): a requested version this build supports is echoed,
//!   anything else is answered with the newest handshake version and the
//!   client decides. Every other request before `initialize` is refused.
//! - `ping`, `tools/list`, `tools/call`, `resources/list`,
//!   `resources/templates/list`, `resources/read`, `prompts/list`, `prompts/get` and
//!   `completion/complete` are answered; other methods get `-32601`. A line that is not JSON gets `-32700`, JSON that is not a
//!   message gets `-32600`, both with a null id (JSON-RPC 2.0 §5.1).
//! - Batches are answered as batches under 2025-03-26, the only version
//!   that has them, and refused under the others.
//!
//! The tools live in [`crate::demo_tools`], the resources, the prompt and
//! its completion in [`crate::demo_catalog`]. The server exits when stdin
//! ends, as stdio servers should.

use std::io::{self, Read, Write};

use mcp_proto::codec::ndjson::{self, NdjsonDecoder, NdjsonError};
use mcp_proto::jsonrpc::{Request, error_codes};
use mcp_proto::types::{
    CallToolRequestParams, CompleteRequestParams, GetPromptRequestParams, Implementation,
    InitializeRequestParams, InitializeResult, ListChangedCapability, ListToolsResult,
    ReadResourceRequestParams, ResourcesCapability, ServerCapabilities,
};
use mcp_proto::{ErrorObject, Frame, Message, ProtocolVersion, methods};
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

/// One session's state: the transport-free part of the server, so tests can
/// drive it message by message.
#[derive(Debug, Default)]
pub(crate) struct DemoServer {
    /// The version answered to `initialize`; `None` before it.
    version: Option<ProtocolVersion>,
}

impl DemoServer {
    /// Handles one decoded line and appends the answer, if any, to `out`.
    pub(crate) fn handle_line(&mut self, item: Result<Frame, NdjsonError>, out: &mut Vec<u8>) {
        match item {
            Ok(Frame::Single(message)) => {
                if let Some(answer) = self.handle(message) {
                    encode_line(&answer, out);
                }
            }
            Ok(Frame::Batch(messages)) => {
                let batches_allowed = self.version.is_none_or(ProtocolVersion::accepts_batches);
                if !batches_allowed {
                    let error = ErrorObject::new(
                        error_codes::INVALID_REQUEST,
                        "JSON-RPC batches exist only in protocol version 2025-03-26",
                    );
                    encode_line(&Message::error(None, error), out);
                    return;
                }
                let answers: Vec<Message> = messages
                    .into_iter()
                    .filter_map(|message| self.handle(message))
                    .collect();
                if !answers.is_empty()
                    && let Err(error) = ndjson::encode_frame(&Frame::Batch(answers), out)
                {
                    tracing::warn!(%error, "dropping a batch of answers");
                }
            }
            Err(error) => encode_line(&Message::error(None, error.to_error_object()), out),
        }
    }

    /// Handles one message; returns the response to send, if any.
    /// Notifications (`initialized`, `cancelled`) and responses need no
    /// answer: every request is answered before the next is read, so there
    /// is never anything to cancel.
    pub(crate) fn handle(&mut self, message: Message) -> Option<Message> {
        match message {
            Message::Request(request) => {
                let id = request.id.clone();
                Some(match self.dispatch(request) {
                    Ok(message) => message,
                    Err(error) => Message::error(Some(id), error),
                })
            }
            Message::Notification(_) | Message::Response(_) | Message::Error(_) => None,
        }
    }

    fn dispatch(&mut self, request: Request) -> Result<Message, ErrorObject> {
        let Request { id, method, params } = request;
        let params = params.as_ref().map(|raw| raw.get()).unwrap_or("{}");
        match method.as_str() {
            methods::PING => respond(id, &serde_json::json!({})),
            methods::INITIALIZE => {
                let params: InitializeRequestParams =
                    serde_json::from_str(params).map_err(|e| {
                        ErrorObject::invalid_params(format!("invalid initialize params: {e}"))
                    })?;
                if self.version.is_some() {
                    return Err(ErrorObject::new(
                        error_codes::INVALID_REQUEST,
                        "initialize was already received on this session",
                    ));
                }
                let version = ProtocolVersion::answer_to(&params.protocol_version);
                self.version = Some(version);
                respond(id, &initialize_result(version))
            }
            _ if self.version.is_none() => Err(ErrorObject::new(
                error_codes::INVALID_REQUEST,
                format!("{method} before initialize: the server is not initialized"),
            )),
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
                    tools: demo_tools::tools(self.negotiated()),
                    ..ListToolsResult::default()
                };
                respond(id, &result)
            }
            methods::TOOLS_CALL => {
                let params: CallToolRequestParams = serde_json::from_str(params).map_err(|e| {
                    ErrorObject::invalid_params(format!("invalid tools/call params: {e}"))
                })?;
                // MCP "Server/Tools" §Error Handling: an unknown tool is a
                // protocol error; bad arguments are a tool error the model
                // can correct (`isError: true`), which `call` returns.
                let result =
                    demo_tools::call(&params.name, params.arguments.as_ref(), self.negotiated())
                        .ok_or_else(|| {
                            ErrorObject::invalid_params(format!("unknown tool: {}", params.name))
                        })?;
                respond(id, &result)
            }
            methods::RESOURCES_LIST => respond(id, &demo_catalog::resources()),
            methods::RESOURCES_TEMPLATES_LIST => respond(id, &demo_catalog::templates()),
            methods::RESOURCES_READ => {
                let params: ReadResourceRequestParams = decode(params, "resources/read")?;
                respond(id, &demo_catalog::read(&params.uri)?)
            }
            methods::PROMPTS_LIST => respond(id, &demo_catalog::prompts()),
            methods::PROMPTS_GET => {
                let params: GetPromptRequestParams = decode(params, "prompts/get")?;
                respond(id, &demo_catalog::get_prompt(&params, self.negotiated())?)
            }
            methods::COMPLETION_COMPLETE => {
                let params: CompleteRequestParams = decode(params, "completion/complete")?;
                respond(id, &demo_catalog::complete(&params, self.negotiated()))
            }
            _ => Err(ErrorObject::method_not_found(&method)),
        }
    }

    fn negotiated(&self) -> ProtocolVersion {
        self.version.unwrap_or(ProtocolVersion::LATEST_HANDSHAKE)
    }
}

fn initialize_result(version: ProtocolVersion) -> InitializeResult {
    InitializeResult {
        protocol_version: version.as_str().to_owned(),
        capabilities: ServerCapabilities {
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
        },
        server_info: Implementation {
            title: Some("mcpctl demo server".to_owned()),
            ..Implementation::new("mcpctl-demo", env!("CARGO_PKG_VERSION"))
        },
        instructions: Some(INSTRUCTIONS.to_owned()),
        ..InitializeResult::default()
    }
}

/// A request's parameters as `T`, or "invalid params" naming the method.
fn decode<T: serde::de::DeserializeOwned>(params: &str, method: &str) -> Result<T, ErrorObject> {
    serde_json::from_str(params)
        .map_err(|e| ErrorObject::invalid_params(format!("invalid {method} params: {e}")))
}

fn respond(id: mcp_proto::RequestId, result: &impl Serialize) -> Result<Message, ErrorObject> {
    Message::response(id, result)
        .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))
}

/// Appends `message` as one line. The demo's answers are its own values,
/// which always have a one-line form; should one not, it is dropped and
/// logged rather than written in half.
fn encode_line(message: &Message, out: &mut Vec<u8>) {
    if let Err(error) = ndjson::encode(message, out) {
        tracing::warn!(%error, "dropping an answer");
    }
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
