//! The stateless 2026-07-28 era: per-request `_meta`, `server/discover`,
//! `resultType`, MRTR tools (`confirm`, `two_rounds`) and
//! `subscriptions/listen` (MCP 2026-07-28 "Basic", "Patterns/MRTR",
//! "Patterns/Subscriptions", "Server/Discover").
//!
//! A modern request never depends on session state: everything a retry
//! needs is in its params (`inputResponses`, `requestState`). The only
//! state is the catalog's runtime-added tools and the open subscriptions.

use std::fmt;
use std::sync::{Arc, LazyLock};

use mcp_proto::jsonrpc::{error_codes, to_raw};
use mcp_proto::server::{ClientRequest, RequestClient};
use mcp_proto::types::{
    CacheScope, DiscoverResult, ListChangedCapability, LoggingLevel, ProgressToken,
    ResourcesCapability, ServerCapabilities, SubscriptionFilter,
    SubscriptionsAcknowledgedNotificationParams, SubscriptionsListenRequestParams, meta,
};
use mcp_proto::{ErrorObject, ProtocolVersion, RawJson, RequestId, methods};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::{Reply, Route, Server, lock, text_result};
use crate::catalog::{self, fnv};
use crate::eventlog;
use crate::options::{Era, Options};
use crate::reference::mrtr;

/// The only modern version.
pub(crate) const MODERN: &str = ProtocolVersion::V2026_07_28.as_str();

/// `confirm`'s requestState: opaque to the client, and full of characters a
/// careless client would re-encode (quotes, backslashes, slashes, unicode).
pub(crate) const CONFIRM_STATE: &str =
    "confirm/v1 \"round\":1 \\ back/slash ünïcødé ✓ {\"nested\": [1, 2]} \u{1F680}";

/// `two_rounds`' first requestState.
const TWO_ROUNDS_STATE_1: &str = "two_rounds/1 «first» \"name\"?/\\";

/// How long modern list and discover results may be cached.
const TTL_MS: u64 = 60_000;

/// What a modern request's `_meta` says, read only where a handler asks:
/// an echo needs none of it.
#[derive(Debug)]
pub(crate) struct RequestMeta<'a> {
    /// The whole `_meta` object as its text, for the event log and the
    /// per-request log level.
    raw: Option<&'a RawValue>,
    /// The client as the session read it from `_meta`.
    client: Option<&'a RequestClient>,
}

impl RequestMeta<'_> {
    /// The whole `_meta` object (`{}` when there is none).
    fn value(&self) -> Value {
        self.raw
            .and_then(|raw| serde_json::from_str(raw.get()).ok())
            .unwrap_or_else(|| json!({}))
    }

    /// `io.modelcontextprotocol/logLevel`, if the request asks for one.
    fn log_level(&self) -> Option<Value> {
        self.value().get(meta::LOG_LEVEL).cloned()
    }

    /// `io.modelcontextprotocol/clientCapabilities`.
    fn capabilities(&self) -> Value {
        self.client
            .and_then(|client| serde_json::to_value(&client.capabilities).ok())
            .unwrap_or_else(|| json!({}))
    }
}

/// A modern request's params with `_meta` kept apart as its text: the
/// handlers read the rest, as they read a handshake-era request's params,
/// and `_meta` (the envelope the session already checked) is not built
/// into a map for every request.
struct SplitParams<'a> {
    params: Value,
    meta: Option<&'a RawValue>,
}

impl<'de: 'a, 'a> Deserialize<'de> for SplitParams<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Members<'a> {
            type Value = SplitParams<'a>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SplitParams<'a>, A::Error> {
                let mut params = Map::new();
                let mut meta = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key == "_meta" {
                        meta = Some(map.next_value::<&'de RawValue>()?);
                    } else {
                        let value = map.next_value::<Value>()?;
                        params.insert(key, value);
                    }
                }
                Ok(SplitParams {
                    params: Value::Object(params),
                    meta,
                })
            }
        }
        deserializer.deserialize_map(Members(std::marker::PhantomData))
    }
}

/// Parses a modern request's params: an object into its members and its
/// `_meta` text, anything else as it is.
fn split_params(raw: Option<&RawJson>) -> Result<SplitParams<'_>, ErrorObject> {
    let Some(raw) = raw else {
        return Ok(SplitParams {
            params: Value::Null,
            meta: None,
        });
    };
    let text = raw.get();
    let parsed = if text.trim_start().starts_with('{') {
        serde_json::from_str::<SplitParams<'_>>(text)
    } else {
        serde_json::from_str::<Value>(text).map(|params| SplitParams { params, meta: None })
    };
    parsed.map_err(|e| ErrorObject::invalid_params(e.to_string()))
}

/// The `_meta` every modern result carries, `{serverInfo}`, encoded once
/// (its keys in the order a `Value` map writes them).
static RESULT_META: LazyLock<Box<RawValue>> = LazyLock::new(|| {
    let info = serde_json::to_value(super::server_info()).unwrap_or(Value::Null);
    to_raw(&json!({ meta::SERVER_INFO: info }))
        .unwrap_or_else(|_| mcp_proto::jsonrpc::empty_object())
});

/// A result stamped as [`stamp`] does, written without building
/// the stamp into the result's map: `_meta` first, the result's members,
/// then `resultType`, the order a `Value` map of them writes.
#[derive(Serialize)]
struct Stamped<'a> {
    #[serde(rename = "_meta")]
    meta: &'a RawValue,
    #[serde(flatten)]
    members: &'a Map<String, Value>,
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
}

/// The versions `server/discover` lists.
pub(crate) fn supported_versions(era: Era, legacy_only: bool) -> Vec<&'static str> {
    let handshake = ProtocolVersion::HANDSHAKE.map(ProtocolVersion::as_str);
    match (era, legacy_only) {
        (_, true) => handshake.to_vec(),
        (Era::Modern, _) => vec![MODERN],
        _ => std::iter::once(MODERN).chain(handshake).collect(),
    }
}

/// Adds `ttlMs` and `cacheScope` to a list or read result.
fn cacheable(mut value: Value) -> Value {
    value["ttlMs"] = json!(TTL_MS);
    value["cacheScope"] = json!("public");
    value
}

/// An MRTR result asking for `requests` (key to `{method, params}`).
fn input_required(requests: Value, state: &str) -> Value {
    json!({"resultType": "input_required", "inputRequests": requests, "requestState": state})
}

fn elicit(message: &str, field: &str) -> Value {
    json!({
        "method": methods::ELICITATION_CREATE,
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": {field: {"type": "string", "title": field}},
                "required": [field]
            }
        }
    })
}

fn two_rounds_state_2(second: &str, name: &str) -> String {
    let body = format!(
        "two_rounds/2 {second} {}",
        serde_json::to_string(name).unwrap_or_default()
    );
    format!("{body} #{:016x}", fnv(&body))
}

/// `(second, name)` from a `two_rounds` second-round state, if untampered.
fn parse_state_2(state: &str) -> Option<(String, String)> {
    let (body, hash) = state.rsplit_once(" #")?;
    if format!("{:016x}", fnv(body)) != hash {
        return None;
    }
    let rest = body.strip_prefix("two_rounds/2 ")?;
    let (second, name) = rest.split_once(' ')?;
    Some((second.to_owned(), serde_json::from_str(name).ok()?))
}

/// -32021: the request needs client capabilities it did not declare.
fn missing_capabilities(meta: &RequestMeta<'_>, needed: &[&str]) -> Result<(), ErrorObject> {
    let capabilities = meta.capabilities();
    let missing: Map<String, Value> = needed
        .iter()
        .filter(|c| capabilities.get(**c).is_none())
        .map(|c| ((*c).to_owned(), json!({})))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut error = ErrorObject::new(
        error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "this tool needs the client capabilities {:?}",
            missing.keys().collect::<Vec<_>>()
        ),
    );
    error.data = to_raw(&json!({"requiredCapabilities": missing})).ok();
    Err(error)
}

/// The accepted content of an ElicitResult's string `field`, or why not.
fn elicited(answer: Option<&Value>, field: &str) -> Result<Result<String, String>, ErrorObject> {
    let Some(answer) = answer else {
        return Err(ErrorObject::invalid_params(
            "the retry lacks the inputResponses this tool asked for",
        ));
    };
    let action = answer.get("action").and_then(Value::as_str).unwrap_or("");
    if action != "accept" {
        return Ok(Err(action.to_owned()));
    }
    answer
        .pointer(&format!("/content/{field}"))
        .and_then(Value::as_str)
        .map(|text| Ok(text.to_owned()))
        .ok_or_else(|| {
            ErrorObject::invalid_params(format!("an accepted ElicitResult needs content.{field}"))
        })
}

/// `resultType` ("complete" unless `--omit-result-type`; "mystery" for
/// tools/call with `--bad-result-type`; an input_required one stays) and
/// `_meta` serverInfo.
fn stamp(options: &Options, mut value: Value, tools_call: bool) -> Value {
    let Some(object) = value.as_object_mut() else {
        return value;
    };
    if !object.contains_key("resultType") {
        if tools_call && options.bad_result_type {
            object.insert("resultType".to_owned(), json!("mystery"));
        } else if !options.omit_result_type {
            object.insert("resultType".to_owned(), json!("complete"));
        }
    }
    let meta = object.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        let info = serde_json::to_value(super::server_info()).unwrap_or(Value::Null);
        meta.insert(meta::SERVER_INFO.to_owned(), info);
    }
    value
}

/// [`stamp`]'s result, encoded, written beside the result's
/// members rather than inserted among them: for a result object with
/// neither `_meta` nor `resultType` whose keys all sort between the
/// two, so that the text is the one `stamp` and encoding would write,
/// byte for byte. `None` for any other result (and with
/// `--sorted-keys`, or when `serde_json`'s maps keep insertion order),
/// which `stamp` handles.
fn stamp_encoded(options: &Options, value: &Value, tools_call: bool) -> Option<RawJson> {
    let members = value
        .as_object()
        .filter(|_| !options.sorted_keys && maps_sort_keys())?;
    if !members
        .keys()
        .all(|key| "_meta" < key.as_str() && key.as_str() < "resultType")
    {
        return None;
    }
    let result_type = if tools_call && options.bad_result_type {
        Some("mystery")
    } else {
        (!options.omit_result_type).then_some("complete")
    };
    RawJson::encode(&Stamped {
        meta: &RESULT_META,
        members,
        result_type,
    })
    .ok()
}

/// Whether `serde_json`'s maps keep their keys sorted (its default) rather
/// than in insertion order: a build of the whole workspace turns on its
/// `preserve_order` for every crate (a host in it asks for it), and then
/// [`stamp`] appends `resultType` and `_meta` after the result's members
/// instead of sorting them in, which [`stamp_encoded`] cannot mirror.
fn maps_sort_keys() -> bool {
    static SORTED: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
        let mut map = Map::new();
        map.insert("b".to_owned(), Value::Null);
        map.insert("a".to_owned(), Value::Null);
        map.keys().next().is_some_and(|key| key == "a")
    });
    *SORTED
}

impl Server {
    /// Answers a modern request (the session checked its `_meta`) or
    /// `server/discover`: logs it, dispatches, and stamps the result
    /// (`resultType`, `_meta` serverInfo).
    pub(super) fn dispatch_modern(self: &Arc<Self>, request: ClientRequest) -> Reply {
        let options = &self.fixture.options;
        let id = request.id.clone();
        let method = request.method.as_str();
        if options.era == Era::Legacy && !options.discover_legacy_only {
            // A handshake-era server does not know the method.
            return Reply::Now(Err(ErrorObject::method_not_found(method)));
        }
        let SplitParams {
            params,
            meta: raw_meta,
        } = match split_params(request.params.as_ref()) {
            Ok(split) => split,
            Err(error) => return Reply::Now(Err(error)),
        };
        let meta = RequestMeta {
            raw: raw_meta,
            client: request.client.as_deref(),
        };
        if options.event_log.is_some() {
            eventlog::record_with(
                options.event_log.as_deref(),
                "modern-request",
                &json!({"id": id, "method": method, "meta": meta.value()}),
            );
        }
        let tools_offered = !options.no_tools_capability;
        let reply = match method {
            methods::SERVER_DISCOVER => {
                let supported = supported_versions(options.era, options.discover_legacy_only);
                let result = self.discover(&supported);
                let delay = options.discover_delay;
                if delay.is_zero() {
                    Reply::Now(result)
                } else {
                    Reply::Later(Box::pin(async move {
                        tokio::time::sleep(delay).await;
                        result
                    }))
                }
            }
            methods::TOOLS_LIST if tools_offered => {
                Reply::Now(self.list_tools(&params, true).map(cacheable))
            }
            methods::TOOLS_CALL if tools_offered => {
                let token = request.progress_token.clone();
                self.call_tool_modern(id, params, token, &meta)
            }
            methods::RESOURCES_LIST => Reply::Now(Ok(cacheable(self.fixture.resources()))),
            methods::RESOURCES_TEMPLATES_LIST => {
                Reply::Now(Ok(cacheable(self.fixture.resource_templates())))
            }
            // 2026-07-28: an unknown resource is -32602, not -32002.
            methods::RESOURCES_READ => Reply::Now(
                self.fixture
                    .read_resource(&params)
                    .map(cacheable)
                    .map_err(|mut e| {
                        e.code = error_codes::INVALID_PARAMS;
                        e
                    }),
            ),
            methods::SKILLS_LIST if self.fixture.options.skills => {
                Reply::Now(Ok(cacheable(catalog::skills())))
            }
            methods::SKILLS_GET if self.fixture.options.skills => {
                Reply::Now(catalog::skill(&params).map(cacheable))
            }
            methods::PROMPTS_LIST => Reply::Now(Ok(cacheable(self.fixture.prompts()))),
            methods::PROMPTS_GET
                if options.reference_catalog
                    && params.get("name").and_then(Value::as_str) == Some(mrtr::PROMPT) =>
            {
                Reply::Now(mrtr::get_prompt(&params))
            }
            methods::PROMPTS_GET => Reply::Now(self.fixture.get_prompt(&params)),
            methods::COMPLETION_COMPLETE if options.reference_catalog => {
                Reply::Now(crate::reference::complete(&params))
            }
            methods::SUBSCRIPTIONS_LISTEN => self.listen(id, params),
            _ => Reply::Now(Err(ErrorObject::method_not_found(method))),
        };
        let tools_call = method == methods::TOOLS_CALL;
        if let Reply::Now(Ok(value)) = &reply
            && let Some(stamped) = stamp_encoded(&self.fixture.options, value, tools_call)
        {
            return Reply::Encoded(stamped);
        }
        let stamp = {
            let this = Arc::clone(self);
            move |result: Result<Value, ErrorObject>| {
                result.map(|v| stamp(&this.fixture.options, v, tools_call))
            }
        };
        match reply {
            Reply::Now(result) => Reply::Now(stamp(result)),
            Reply::Later(future) => Reply::Later(Box::pin(async move { stamp(future.await) })),
            Reply::Encoded(raw) => {
                Reply::Now(stamp(raw.decode().map_err(|e| {
                    ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string())
                })))
            }
        }
    }

    fn discover(&self, supported: &[&str]) -> Result<Value, ErrorObject> {
        let options = &self.fixture.options;
        let result = DiscoverResult {
            supported_versions: supported.iter().map(|v| (*v).to_owned()).collect(),
            capabilities: ServerCapabilities {
                tools: (!options.no_tools_capability).then(|| ListChangedCapability {
                    list_changed: Some(true),
                    ..ListChangedCapability::default()
                }),
                resources: Some(ResourcesCapability {
                    subscribe: Some(true),
                    list_changed: Some(true),
                    ..ResourcesCapability::default()
                }),
                prompts: Some(ListChangedCapability {
                    list_changed: Some(true),
                    ..ListChangedCapability::default()
                }),
                // What the handshake declares where 2026-07-28 has it too
                // ("Utilities/Logging", deprecated but present, and
                // "Utilities/Completion"), so that both eras offer the same.
                logging: Some(Default::default()),
                extensions: options.skills.then(catalog::skills_extension),
                completions: options.reference_catalog.then(Default::default),
                ..ServerCapabilities::default()
            },
            instructions: Some(options.instructions.clone().unwrap_or_else(|| {
                "A test double: see mcp-fixture-server --help for its tools.".to_owned()
            })),
            ttl_ms: Some(TTL_MS.into()),
            cache_scope: Some(CacheScope::Public),
            ..DiscoverResult::default()
        };
        serde_json::to_value(result)
            .map_err(|e| ErrorObject::new(error_codes::INTERNAL_ERROR, e.to_string()))
    }

    /// `test_logging_tool` called with `io.modelcontextprotocol/logLevel`
    /// in its `_meta` (2026-07-28 "Utilities/Logging" §Per-request log
    /// level): the reference catalog's log messages at or above `level`, on
    /// the request's own stream before its result; -32602 when `level` is
    /// not a log level.
    fn log_at(self: &Arc<Self>, route: &Route, level: &Value) -> Result<Value, ErrorObject> {
        let least = serde_json::from_value::<LoggingLevel>(level.clone()).map_err(|_| {
            ErrorObject::invalid_params(format!(
                "{} must be a log level (debug ... emergency), got {level}",
                meta::LOG_LEVEL
            ))
        })?;
        let messages: Vec<Value> = crate::reference::log_messages()
            .into_iter()
            .filter(|message| {
                serde_json::from_value::<LoggingLevel>(message["level"].clone())
                    .is_ok_and(|l| l >= least)
            })
            .collect();
        if !messages.is_empty() {
            self.open_request_stream(route);
        }
        let sent = messages.len();
        for message in messages {
            self.notify(route.clone(), methods::NOTIFICATION_MESSAGE, message);
        }
        Ok(text_result(&format!(
            "logged {sent} messages at {} or above",
            least.as_str()
        )))
    }

    fn call_tool_modern(
        self: &Arc<Self>,
        id: RequestId,
        params: Value,
        token: Option<ProgressToken>,
        meta: &RequestMeta<'_>,
    ) -> Reply {
        let name = params.get("name").and_then(Value::as_str).unwrap_or("");
        let args = || params.get("arguments").cloned().unwrap_or(json!({}));
        let route = Route::Related(id.clone());
        if self.fixture.options.reference_catalog
            && name == "test_logging_tool"
            && let Some(level) = meta.log_level()
        {
            return Reply::Now(self.log_at(&route, &level));
        }
        if self.fixture.options.reference_catalog && name == crate::reference::RECONNECTION {
            // No stream to end early: SSE polling is a session's.
            return Reply::Now(Ok(text_result("Reconnection test completed")));
        }
        if self.fixture.options.reference_catalog && name == "test_tool_with_logging" {
            // As `test_logging_tool`: only at a level the request asks for.
            return Reply::Now(match meta.log_level() {
                Some(level) => self.log_at(&route, &level),
                None => Ok(text_result(
                    "Nothing was logged: no log level was asked for.",
                )),
            });
        }
        if self.fixture.options.reference_catalog {
            let capabilities = meta.capabilities();
            if let Some(result) = mrtr::call(name, &params, &capabilities)
                .or_else(|| mrtr::ask_in_rounds(name, &params, &capabilities))
            {
                return Reply::Now(result);
            }
        }
        let result = match name {
            "confirm" => self.confirm(&id, &params, meta),
            "two_rounds" => self.two_rounds(&id, &params, meta),
            "region_echo" => Ok(catalog::region_echo(&args())),
            "bad_header" => Ok(text_result(
                "bad_header was called: a client should drop it",
            )),
            "add_tool" => Ok(self.add_tool(route, &args(), true)),
            catalog::STORM_TOOL => return self.call_tool(id, params, token, true),
            other if catalog::asks_client(other) => Err(ErrorObject::invalid_params(format!(
                "unknown tool: {other} (the 2026-07-28 era sends no requests to clients)"
            ))),
            _ => return self.call_tool(id, params, token, true),
        };
        Reply::Now(result)
    }

    fn log_round(&self, id: &RequestId, tool: &str, round: u32, matched: Option<bool>) {
        eventlog::record_with(
            self.fixture.options.event_log.as_deref(),
            "mrtr-round",
            &json!({"id": id, "tool": tool, "round": round, "requestStateMatched": matched}),
        );
    }

    /// `confirm`: one elicitation round, then a result built from the answer.
    fn confirm(
        &self,
        id: &RequestId,
        params: &Value,
        meta: &RequestMeta<'_>,
    ) -> Result<Value, ErrorObject> {
        missing_capabilities(meta, &["elicitation"])?;
        let state = params.get("requestState");
        let responses = params.get("inputResponses");
        if state.is_none() && responses.is_none() {
            self.log_round(id, "confirm", 1, None);
            let message = params
                .pointer("/arguments/message")
                .and_then(Value::as_str)
                .unwrap_or("Please confirm with an answer.");
            return Ok(input_required(
                json!({"answer": elicit(message, "answer")}),
                CONFIRM_STATE,
            ));
        }
        let matched = state.and_then(Value::as_str) == Some(CONFIRM_STATE);
        self.log_round(id, "confirm", 2, Some(matched));
        if !matched {
            return Err(ErrorObject::invalid_params(
                "requestState is missing or was changed: echo it byte for byte",
            ));
        }
        Ok(
            match elicited(responses.and_then(|r| r.get("answer")), "answer")? {
                Ok(answer) => json!({
                    "content": [{"type": "text", "text": format!("confirmed: {answer}")}],
                    "structuredContent": {"answer": answer}
                }),
                Err(action) => text_result(&format!("not confirmed: the user chose {action}")),
            },
        )
    }

    /// `two_rounds`: an elicitation, then sampling (or roots), then a result.
    fn two_rounds(
        &self,
        id: &RequestId,
        params: &Value,
        meta: &RequestMeta<'_>,
    ) -> Result<Value, ErrorObject> {
        let second = match params.pointer("/arguments/second").and_then(Value::as_str) {
            None | Some("sampling") => "sampling",
            Some("roots") => "roots",
            Some(other) => {
                return Err(ErrorObject::invalid_params(format!(
                    "`second` must be sampling or roots, not {other:?}"
                )));
            }
        };
        missing_capabilities(meta, &["elicitation", second])?;
        let responses = params.get("inputResponses");
        let Some(state) = params.get("requestState") else {
            self.log_round(id, "two_rounds", 1, None);
            return Ok(input_required(
                json!({"first": elicit("What is your name?", "name")}),
                TWO_ROUNDS_STATE_1,
            ));
        };
        let state = state.as_str().unwrap_or("");
        if state == TWO_ROUNDS_STATE_1 {
            self.log_round(id, "two_rounds", 2, Some(true));
            let name = match elicited(responses.and_then(|r| r.get("first")), "name")? {
                Ok(name) => name,
                Err(action) => {
                    return Ok(text_result(&format!("stopped: the user chose {action}")));
                }
            };
            let request = if second == "roots" {
                json!({"method": methods::ROOTS_LIST, "params": {}})
            } else {
                json!({
                    "method": methods::SAMPLING_CREATE_MESSAGE,
                    "params": {
                        "messages": [{"role": "user", "content": {"type": "text",
                            "text": format!("Write a one-line greeting for {name}.")}}],
                        "maxTokens": 64
                    }
                })
            };
            return Ok(input_required(
                json!({"second": request}),
                &two_rounds_state_2(second, &name),
            ));
        }
        let parsed = parse_state_2(state).filter(|(s, _)| s == second);
        self.log_round(id, "two_rounds", 3, Some(parsed.is_some()));
        let Some((_, name)) = parsed else {
            return Err(ErrorObject::invalid_params(
                "requestState is unknown or was changed: echo it byte for byte",
            ));
        };
        let Some(answer) = responses.and_then(|r| r.get("second")) else {
            return Err(ErrorObject::invalid_params(
                "the retry lacks inputResponses.second",
            ));
        };
        let summary = if second == "roots" {
            let roots = answer.get("roots").and_then(Value::as_array);
            format!("{} roots", roots.map_or(0, Vec::len))
        } else {
            let text = answer
                .pointer("/content/text")
                .and_then(Value::as_str)
                .unwrap_or("");
            format!("the model said {text:?}")
        };
        Ok(text_result(&format!("name: {name}; {second}: {summary}")))
    }

    /// `subscriptions/listen`: acknowledges the filter it honours, then
    /// stays open (until cancelled, or `--end-listen-after-ms`).
    fn listen(self: &Arc<Self>, id: RequestId, params: Value) -> Reply {
        let params: SubscriptionsListenRequestParams = match serde_json::from_value(params) {
            Ok(params) => params,
            Err(e) => {
                return Reply::Now(Err(ErrorObject::invalid_params(format!(
                    "invalid subscriptions/listen params: {e}"
                ))));
            }
        };
        let asked = params.notifications;
        let yes = |flag: Option<bool>| (flag == Some(true)).then_some(true);
        let accepted = SubscriptionFilter {
            tools_list_changed: yes(asked.tools_list_changed)
                .filter(|_| !self.fixture.options.no_tools_capability),
            prompts_list_changed: yes(asked.prompts_list_changed),
            resources_list_changed: yes(asked.resources_list_changed),
            resource_subscriptions: asked
                .resource_subscriptions
                .map(|uris| {
                    // The resources it has: its README, and with
                    // `--reference-catalog` those that catalog reads.
                    let reference = self.fixture.options.reference_catalog;
                    uris.into_iter()
                        .filter(|uri| {
                            uri == catalog::README_URI
                                || (reference && crate::reference::read(uri).is_some())
                        })
                        .collect::<Vec<_>>()
                })
                .filter(|uris| !uris.is_empty()),
            ..SubscriptionFilter::default()
        };
        let subscription_meta = json!({meta::SUBSCRIPTION_ID: id});
        let ack = SubscriptionsAcknowledgedNotificationParams {
            notifications: accepted.clone(),
            meta: subscription_meta.as_object().map(Into::into),
            ..SubscriptionsAcknowledgedNotificationParams::default()
        };
        {
            // Held while acknowledging, so that no list change reaches the
            // subscription before its acknowledgment.
            let mut subscriptions = lock(&self.subscriptions);
            self.notify(
                Route::Related(id.clone()),
                methods::NOTIFICATION_SUBSCRIPTIONS_ACKNOWLEDGED,
                serde_json::to_value(&ack).unwrap_or_default(),
            );
            subscriptions.insert(id.clone(), accepted.clone());
        }
        let event_log = self.fixture.options.event_log.clone();
        eventlog::record_with(
            event_log.as_deref(),
            "listen-start",
            &json!({"id": id, "accepted": accepted}),
        );
        let guard = ListenGuard {
            server: Arc::clone(self),
            id: Some(id),
        };
        let end = self.fixture.options.end_listen_after;
        Reply::Later(Box::pin(async move {
            match end {
                Some(after) => tokio::time::sleep(after).await,
                None => std::future::pending::<()>().await,
            }
            guard.end("graceful");
            Ok(json!({"_meta": subscription_meta}))
        }))
    }

    /// Sends `method` to every subscription whose filter `wants` it.
    pub(super) fn broadcast(
        self: &Arc<Self>,
        method: &str,
        wants: impl Fn(&SubscriptionFilter) -> bool,
    ) {
        let subscriptions = lock(&self.subscriptions);
        for (id, _) in subscriptions.iter().filter(|(_, f)| wants(f)) {
            self.notify(
                Route::Related(id.clone()),
                method,
                json!({"_meta": {meta::SUBSCRIPTION_ID: id}}),
            );
        }
    }
}

/// Removes a subscription when its listen ends: gracefully, or when its
/// task is aborted (`notifications/cancelled`, a closed HTTP stream).
struct ListenGuard {
    server: Arc<Server>,
    id: Option<RequestId>,
}

impl ListenGuard {
    fn end(mut self, how: &str) {
        self.finish(how);
    }

    fn finish(&mut self, how: &str) {
        if let Some(id) = self.id.take() {
            // A cancel may have removed it already (and logged it).
            if lock(&self.server.subscriptions).remove(&id).is_none() {
                return;
            }
            eventlog::record_with(
                self.server.fixture.options.event_log.as_deref(),
                "listen-end",
                &json!({"id": id, "how": how}),
            );
        }
    }
}

impl Drop for ListenGuard {
    fn drop(&mut self) {
        self.finish("cancelled");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_written_beside_the_members_is_the_stamp_inserted_among_them() {
        let mut options = Options::default();
        let results = [
            json!({"content": [{"type": "text", "text": "hello"}]}),
            json!({"content": [], "isError": true}),
            json!({}),
            json!({"prompts": [{"name": "a\"b"}], "nextCursor": "page:2", "cacheScope": "public"}),
        ];
        for (omit, bad) in [(false, false), (true, false), (false, true)] {
            options.omit_result_type = omit;
            options.bad_result_type = bad;
            for value in &results {
                for tools_call in [true, false] {
                    let written = stamp_encoded(&options, value, tools_call);
                    if !maps_sort_keys() {
                        // Maps in insertion order: `stamp` alone writes.
                        assert!(written.is_none(), "{value}");
                        continue;
                    }
                    let written = written.unwrap_or_else(|| panic!("{value} is written beside"));
                    let inserted =
                        serde_json::to_string(&stamp(&options, value.clone(), tools_call)).unwrap();
                    assert_eq!(written.get(), inserted, "{value}");
                }
            }
        }
        // Results whose keys sort around the stamp's go through `stamp`.
        options = Options::default();
        for value in [
            json!({"_meta": {"a": 1}, "content": []}),
            json!({"resultType": "input_required", "inputRequests": {}}),
            json!({"structuredContent": {}, "content": []}),
            json!({"tools": [], "ttlMs": 60000}),
            json!({"Upper": 1}),
        ] {
            assert!(stamp_encoded(&options, &value, true).is_none(), "{value}");
        }
        options.sorted_keys = true;
        assert!(stamp_encoded(&options, &results[0], true).is_none());
    }

    #[test]
    fn params_are_read_without_their_meta() {
        let raw = RawJson::from_text(
            r#"{"name":"echo","_meta":{"io.modelcontextprotocol/logLevel":"info"},"arguments":{"text":"hi"}}"#,
        )
        .unwrap();
        let split = split_params(Some(&raw)).unwrap();
        assert_eq!(
            split.params,
            json!({"name": "echo", "arguments": {"text": "hi"}})
        );
        let meta = RequestMeta {
            raw: split.meta,
            client: None,
        };
        assert_eq!(meta.log_level(), Some(json!("info")));
        assert_eq!(meta.capabilities(), json!({}));
        // Params that are not an object are kept as they are.
        let raw = RawJson::from_text("[1]").unwrap();
        assert_eq!(split_params(Some(&raw)).unwrap().params, json!([1]));
        assert_eq!(split_params(None).unwrap().params, Value::Null);
    }

    #[test]
    fn two_rounds_state_detects_tampering() {
        let state = two_rounds_state_2("sampling", "Ada \"the\" ✓");
        assert_eq!(
            parse_state_2(&state),
            Some(("sampling".to_owned(), "Ada \"the\" ✓".to_owned()))
        );
        let tampered = state.replace("Ada", "Bob");
        assert_eq!(parse_state_2(&tampered), None);
    }
}
