//! The demo server's resources, its prompt and the completion of the prompt's argument, so that `mcpctl resources`, `read`, `prompts`, `prompt` and `complete` show something on a fresh machine.
//!
//! Two resources (MCP "Server/Resources"): `demo://about`, a short text,
//! and `demo://tiny-image.png`, the PNG `tiny_image` returns, as a base64
//! blob. One resource template, `demo://greeting/{name}`, a greeting for
//! any name. One prompt (MCP "Server/Prompts"), `try_tool`, whose required
//! argument `tool` names a demo tool. `completion/complete` (MCP
//! "Server/Utilities/Completion") suggests the tool names that start with
//! what is typed for the prompt, and a few names for the template.

use mcp_proto::jsonrpc::error_codes;
use mcp_proto::types::{CompleteRequestParams, GetPromptRequestParams, Reference};
use mcp_proto::{ErrorObject, ProtocolVersion};
use serde_json::{Value, json};

use crate::demo_tools;

/// The text resource.
pub(crate) const ABOUT_URI: &str = "demo://about";
/// The binary resource.
pub(crate) const IMAGE_URI: &str = "demo://tiny-image.png";
/// The prompt.
pub(crate) const PROMPT: &str = "try_tool";
/// The resource template.
pub(crate) const GREETING_TEMPLATE: &str = "demo://greeting/{name}";
const GREETING_PREFIX: &str = "demo://greeting/";
/// The names the template's `name` completes to.
const NAMES: [&str; 5] = ["Ada", "Alan", "Barbara", "Grace", "Linus"];
/// The longest name a greeting repeats.
const NAME_LIMIT: usize = 64;

const ABOUT_TEXT: &str = "mcpctl's built-in demo server.\n\
It runs on this machine over stdio, with no network and no files.\n\
Tools: echo, add, current_time, word_count, tiny_image.\n\
Try: mcpctl call demo echo text=hello\n";

/// The `resources/list` result: both resources, one page.
pub(crate) fn resources() -> Value {
    json!({"resources": [
        {
            "uri": ABOUT_URI,
            "name": "about",
            "title": "About the demo server",
            "description": "What this server is and what to try.",
            "mimeType": "text/plain",
            "size": ABOUT_TEXT.len()
        },
        {
            "uri": IMAGE_URI,
            "name": "tiny-image.png",
            "title": "A tiny image",
            "description": "The 16x16 PNG colour gradient `tiny_image` returns.",
            "mimeType": "image/png"
        }
    ]})
}

/// The `resources/templates/list` result: the greeting, one page.
pub(crate) fn templates() -> Value {
    json!({"resourceTemplates": [{
        "uriTemplate": GREETING_TEMPLATE,
        "name": "greeting",
        "title": "A greeting",
        "description": "A one-line greeting for `name` (completion suggests a few).",
        "mimeType": "text/plain"
    }]})
}

/// The `resources/read` result for `uri`; any other URI is
/// "resource not found" (-32002) with the URI in `data`.
pub(crate) fn read(uri: &str) -> Result<Value, ErrorObject> {
    match uri {
        ABOUT_URI => Ok(json!({"contents": [
            {"uri": ABOUT_URI, "mimeType": "text/plain", "text": ABOUT_TEXT}
        ]})),
        IMAGE_URI => Ok(json!({"contents": [
            {"uri": IMAGE_URI, "mimeType": "image/png", "blob": demo_tools::TINY_PNG_BASE64}
        ]})),
        _ if uri.starts_with(GREETING_PREFIX) && uri.len() > GREETING_PREFIX.len() => {
            let name = mcp_proto::text::bound(&uri[GREETING_PREFIX.len()..], NAME_LIMIT);
            Ok(json!({"contents": [
                {"uri": uri, "mimeType": "text/plain", "text": format!("Hello, {name}!\n")}
            ]}))
        }
        _ => {
            let mut error = ErrorObject::new(error_codes::RESOURCE_NOT_FOUND, "resource not found");
            error.data = mcp_proto::jsonrpc::to_raw(&json!({"uri": uri})).ok();
            Err(error)
        }
    }
}

/// The `prompts/list` result.
pub(crate) fn prompts() -> Value {
    json!({"prompts": [{
        "name": PROMPT,
        "title": "Try a demo tool",
        "description": "Asks the model to call one of the demo tools and explain what it returned.",
        "arguments": [{"name": "tool", "description": "The tool to try (echo, add, ...).", "required": true}]
    }]})
}

/// The `prompts/get` result; an unknown prompt, a missing `tool` or one
/// that is not a demo tool is "invalid params".
pub(crate) fn get_prompt(
    params: &GetPromptRequestParams,
    version: ProtocolVersion,
) -> Result<Value, ErrorObject> {
    if params.name != PROMPT {
        return Err(ErrorObject::invalid_params(format!(
            "unknown prompt: {}",
            params.name
        )));
    }
    let tool = params
        .arguments
        .as_ref()
        .and_then(|arguments| arguments.get("tool"))
        .ok_or_else(|| ErrorObject::invalid_params("try_tool needs the argument `tool`"))?;
    let names = tool_names(version);
    if !names.contains(tool) {
        return Err(ErrorObject::invalid_params(format!(
            "`{tool}` is not a demo tool; one of: {}",
            names.join(", ")
        )));
    }
    Ok(json!({
        "description": "Try a demo tool",
        "messages": [{
            "role": "user",
            "content": {"type": "text", "text": format!(
                "Call the demo server's `{tool}` tool once with arguments of your choice, \
                 then explain in one sentence what it returned."
            )}
        }]
    }))
}

/// The `completion/complete` result: for `try_tool`'s `tool`, the tool
/// names starting with the typed value; for the greeting's `name`, the
/// names starting with it; nothing for anything else.
pub(crate) fn complete(params: &CompleteRequestParams, version: ProtocolVersion) -> Value {
    let values: Vec<String> = match &params.reference {
        Reference::Prompt(prompt) if prompt.name == PROMPT && params.argument.name == "tool" => {
            tool_names(version)
                .into_iter()
                .filter(|name| name.starts_with(&params.argument.value))
                .collect()
        }
        Reference::Resource(template)
            if template.uri == GREETING_TEMPLATE && params.argument.name == "name" =>
        {
            NAMES
                .iter()
                .filter(|name| name.starts_with(&params.argument.value))
                .map(|name| (*name).to_owned())
                .collect()
        }
        _ => Vec::new(),
    };
    json!({"completion": {"values": values, "total": values.len(), "hasMore": false}})
}

fn tool_names(version: ProtocolVersion) -> Vec<String> {
    demo_tools::tools(version)
        .into_iter()
        .map(|tool| tool.name)
        .collect()
}
