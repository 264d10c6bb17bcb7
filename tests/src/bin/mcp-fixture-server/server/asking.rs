//! The tools and prompt that answer in input rounds in the 2026-07-28 era (`reference::mrtr`), served in the handshake era by asking each round's questions as requests on the session ("Client Features": elicitation, sampling, roots).
//!
//! A round's `inputRequests` are sent to the client one after the other;
//! their answers, by the round's keys, and the round's `requestState` make
//! the next round's request, as a 2026-07-28 client's retry would. A
//! question the client refuses with -32601 (it lacks the capability) is
//! left unanswered; when the client answered none of a round's questions
//! and the tool asks again, the call fails with -32021 naming the
//! capabilities those questions need, as the 2026-07-28 era answers a
//! client that did not declare them. At most [`MAX_ROUNDS`] rounds.
//!
//! `test_missing_capability` asks for a sampling the same way (the
//! handshake era's client capabilities are the session's, which a gateway
//! in front declares on behalf of all its clients), and `test_logging_tool`
//! logs as `test_tool_with_logging` does (the session's level applies).

use std::sync::Arc;

use mcp_proto::jsonrpc::error_codes;
use mcp_proto::server::RequestError;
use mcp_proto::{ErrorObject, methods};
use mcp_transport::server::PeerError;
use serde_json::{Map, Value, json};

use super::{Reply, Route, Server, text_result};
use crate::reference::mrtr;

/// The most rounds one call or prompt is answered in.
const MAX_ROUNDS: usize = 8;

/// One round of a tool or prompt: its answer to a request's params and
/// the client's declared capabilities.
type Round = fn(&Value, &Value) -> Result<Value, ErrorObject>;

impl Server {
    /// `tools/call` of `name` (with `params`) in the handshake era when it
    /// is one of the tools that answer in rounds; `None` otherwise.
    pub(super) fn call_asking(
        self: &Arc<Self>,
        route: Route,
        name: &str,
        params: &Value,
    ) -> Option<Reply> {
        if name == "test_missing_capability" {
            return Some(self.in_rounds(route, params.clone(), needs_sampling));
        }
        // One of them when it answers at all.
        let _ = mrtr::call(name, params, &json!({}))?;
        let mut params = params.clone();
        params["name"] = json!(name);
        Some(self.in_rounds(route, params, |params, capabilities| {
            let name = params["name"].as_str().unwrap_or_default();
            mrtr::call(name, params, capabilities)
                .unwrap_or_else(|| Err(ErrorObject::invalid_params("unknown tool")))
        }))
    }

    /// `prompts/get` of [`mrtr::PROMPT`] in the handshake era.
    pub(super) fn get_prompt_asking(self: &Arc<Self>, route: Route, params: &Value) -> Reply {
        self.in_rounds(route, params.clone(), |params, _| mrtr::get_prompt(params))
    }

    /// Answers `params` in rounds of `round`, asking each round's
    /// questions as requests (see the module docs).
    fn in_rounds(self: &Arc<Self>, route: Route, mut params: Value, round: Round) -> Reply {
        let capabilities = self
            .peer
            .as_ref()
            .and_then(|peer| peer.handshake())
            .and_then(|handshake| serde_json::to_value(handshake.client_capabilities).ok())
            .unwrap_or_else(|| json!({}));
        let context = self.context(&route);
        let peer = self.peer.clone();
        Reply::Later(Box::pin(async move {
            let mut refused: Option<Vec<&'static str>> = None;
            for _ in 0..MAX_ROUNDS {
                let result = round(&params, &capabilities)?;
                if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                    return Ok(result);
                }
                if let Some(needed) = refused.take() {
                    let mut error = mrtr::missing_capability(needed.first().unwrap_or(&"sampling"));
                    let required: Map<String, Value> = needed
                        .iter()
                        .map(|c| ((*c).to_owned(), json!({})))
                        .collect();
                    error.data =
                        mcp_proto::jsonrpc::to_raw(&json!({"requiredCapabilities": required})).ok();
                    return Err(error);
                }
                let requests = result
                    .get("inputRequests")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                let mut responses = Map::new();
                let mut needed = Vec::new();
                for (key, request) in &requests {
                    let (method, capability) = match request["method"].as_str() {
                        Some(methods::ELICITATION_CREATE) => {
                            (methods::ELICITATION_CREATE, "elicitation")
                        }
                        Some(methods::SAMPLING_CREATE_MESSAGE) => {
                            (methods::SAMPLING_CREATE_MESSAGE, "sampling")
                        }
                        Some(methods::ROOTS_LIST) => (methods::ROOTS_LIST, "roots"),
                        other => {
                            return Err(ErrorObject::new(
                                error_codes::INTERNAL_ERROR,
                                format!("a round asks for an unknown request {other:?}"),
                            ));
                        }
                    };
                    let asked = request.get("params");
                    let answer = match (&context, &peer) {
                        (Some(context), _) => context.request(method, asked, None).await,
                        (None, Some(peer)) => peer.request(method, asked, None).await,
                        (None, None) => Err(PeerError::Closed),
                    };
                    match answer {
                        Ok(raw) => {
                            responses.insert(key.clone(), raw.decode().unwrap_or(Value::Null));
                        }
                        Err(PeerError::Request(RequestError::Rpc(error)))
                            if error.code == error_codes::METHOD_NOT_FOUND =>
                        {
                            needed.push(capability);
                        }
                        Err(error) => {
                            return Err(ErrorObject::new(
                                error_codes::INTERNAL_ERROR,
                                format!("no answer to {method}: {error}"),
                            ));
                        }
                    }
                }
                if responses.is_empty() && !needed.is_empty() {
                    refused = Some(needed);
                }
                params["inputResponses"] = Value::Object(responses);
                match result.get("requestState") {
                    Some(state) => params["requestState"] = state.clone(),
                    None => {
                        if let Some(object) = params.as_object_mut() {
                            object.remove("requestState");
                        }
                    }
                }
            }
            Err(ErrorObject::new(
                error_codes::INTERNAL_ERROR,
                format!("still asking for input after {MAX_ROUNDS} rounds"),
            ))
        }))
    }
}

/// `test_missing_capability` in the handshake era: asks the client for a
/// sampling, and says it declared sampling once one comes back.
fn needs_sampling(params: &Value, _: &Value) -> Result<Value, ErrorObject> {
    if params.pointer("/inputResponses/probe").is_some() {
        return Ok(text_result("The client declared sampling."));
    }
    Ok(json!({
        "resultType": "input_required",
        "inputRequests": {"probe": {
            "method": methods::SAMPLING_CREATE_MESSAGE,
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Say yes."}}],
                "maxTokens": 8
            }
        }}
    }))
}
