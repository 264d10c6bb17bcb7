//! Proptest strategies for every message type, for this crate and downstream crates.
//!
//! Every strategy produces *valid* values: values the spec allows, that
//! encode to JSON and decode back to an equal value. In particular:
//! - unknown fields in `extra` have keys starting with `x_`, which no known
//!   field does, so they never collide with a field on the wire;
//! - open string enums produce every known value and `Other("x_...")`;
//! - floats are multiples of a power of two small enough to survive the
//!   JSON text round trip exactly;
//! - `Unknown` content blocks have a `type` starting with `x_`.
//!
//! Beyond single values there are whole typed requests
//! ([`arb_call_tool_request`], [`arb_read_resource_request`],
//! [`arb_get_prompt_request`], any of them: [`arb_client_request`]) and
//! whole client sessions ([`arb_client_session`]): `initialize`,
//! `notifications/initialized`, then requests with unique ids,
//! notifications and cancellations of earlier requests, as MCP "Basic /
//! Lifecycle" and "Utilities / Cancellation" allow a client to send them.
//!
//! [`proptest`](mod@proptest) itself is re-exported, so a downstream crate's property
//! tests need no dependency of their own that must match this one's.
//!
//! ```
//! use mcp_proto::strategies::{arb_client_session, proptest};
//! use proptest::strategy::{Strategy, ValueTree};
//! use proptest::test_runner::TestRunner;
//!
//! let mut runner = TestRunner::deterministic();
//! let session = arb_client_session().new_tree(&mut runner).unwrap().current();
//! assert_eq!(session[0].method(), Some("initialize"));
//! assert_eq!(session[1].method(), Some("notifications/initialized"));
//! ```

#![cfg_attr(docsrs, doc(cfg(feature = "proptest")))]

pub use proptest;

use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use serde_json::{Number, Value};

use crate::jsonrpc::{ErrorObject, Message, RawJson, RawValue, RequestId};
use crate::jsonrpc::{ErrorResponse, Notification, Request, Response};
use crate::methods;
use crate::types::*;

// ---------------------------------------------------------------------------
// JSON-RPC

/// A request id: an integer or a string.
pub fn arb_request_id() -> impl Strategy<Value = RequestId> {
    prop_oneof![
        any::<i64>().prop_map(RequestId::Number),
        arb_string().prop_map(RequestId::String),
    ]
}

/// A method name: one of the spec's, or any other string.
pub fn arb_method() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(vec![
            methods::INITIALIZE,
            methods::PING,
            methods::TOOLS_LIST,
            methods::TOOLS_CALL,
            methods::RESOURCES_READ,
            methods::SAMPLING_CREATE_MESSAGE,
            methods::ELICITATION_CREATE,
            methods::NOTIFICATION_PROGRESS,
            methods::NOTIFICATION_CANCELLED,
        ])
        .prop_map(str::to_owned),
        1 => arb_string(),
    ]
}

/// A raw JSON payload holding an object (MCP params and results are objects).
pub fn arb_raw_object() -> impl Strategy<Value = Box<RawValue>> {
    arb_json_object(2).prop_map(|o| to_raw_value(&Value::Object(o)))
}

/// A JSON-RPC error object.
pub fn arb_error_object() -> impl Strategy<Value = ErrorObject> {
    (
        any::<i64>(),
        arb_string(),
        option::of(arb_json_value(2).prop_map(|v| to_raw_value(&v))),
    )
        .prop_map(|(code, message, data)| ErrorObject {
            code,
            message,
            data,
        })
}

/// Any JSON-RPC message: request, notification, response or error response.
pub fn arb_message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (arb_request_id(), arb_method(), option::of(arb_raw_object())).prop_map(
            |(id, method, params)| Message::Request(Request {
                id,
                method,
                params: params.map(Into::into)
            })
        ),
        (arb_method(), option::of(arb_raw_object())).prop_map(|(method, params)| {
            Message::Notification(Notification {
                method,
                params: params.map(Into::into),
            })
        }),
        (arb_request_id(), arb_raw_object()).prop_map(|(id, result)| Message::Response(Response {
            id,
            result: result.into()
        })),
        (option::of(arb_request_id()), arb_error_object())
            .prop_map(|(id, error)| Message::Error(ErrorResponse { id, error })),
    ]
}

// ---------------------------------------------------------------------------
// JSON building blocks

/// A string: mostly plain, sometimes with quotes, escapes, control
/// characters and non-ASCII text.
pub fn arb_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z0-9 _./:-]{0,16}",
        1 => "(?s).{0,8}",
    ]
}

/// A float that survives a trip through JSON text exactly.
pub fn arb_f64() -> impl Strategy<Value = f64> {
    (-1_000_000i64..1_000_000).prop_map(|k| k as f64 / 64.0)
}

/// A float in `0..=1` (priorities), exact through JSON.
pub fn arb_unit_f64() -> impl Strategy<Value = f64> {
    (0u32..=1024).prop_map(|k| f64::from(k) / 1024.0)
}

/// Any JSON value, nested at most `depth` levels.
pub fn arb_json_value(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        arb_f64().prop_map(Value::from),
        arb_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map(arb_string(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// A JSON object whose values nest at most `depth` levels.
pub fn arb_json_object(depth: u32) -> impl Strategy<Value = JsonObject> {
    btree_map(arb_string(), arb_json_value(depth), 0..4).prop_map(|m| m.into_iter().collect())
}

/// Unknown fields for `extra`: keys start with `x_`, so they never collide
/// with a known field.
pub fn arb_extra() -> impl Strategy<Value = JsonObject> {
    btree_map("x_[a-zA-Z0-9_]{0,6}", arb_json_value(1), 0..3).prop_map(|m| m.into_iter().collect())
}

/// An optional `_meta` object, with reserved and custom keys.
pub fn arb_meta() -> impl Strategy<Value = Option<crate::types::Meta>> {
    let key = prop_oneof![
        Just(meta::PROGRESS_TOKEN.to_owned()),
        Just(meta::RELATED_TASK.to_owned()),
        "[a-z]{1,8}",
        "com\\.example/[a-z]{1,6}",
    ];
    option::of(
        btree_map(key, arb_json_value(1), 0..3)
            .prop_map(|m| m.into_iter().collect::<JsonObject>().into()),
    )
}

fn arb_opt_string() -> impl Strategy<Value = Option<String>> {
    option::of(arb_string())
}

fn arb_number() -> impl Strategy<Value = Number> {
    any::<u32>().prop_map(Number::from)
}

fn arb_other(prefix: &'static str) -> impl Strategy<Value = String> {
    "[a-z]{1,6}".prop_map(move |s| format!("{prefix}{s}"))
}

fn to_raw_value(value: &Value) -> Box<RawValue> {
    // Serializing a `Value` cannot fail.
    serde_json::value::to_raw_value(value).expect("a JSON value serializes")
}

// ---------------------------------------------------------------------------
// Common types

/// An icon (2025-11-25).
pub fn arb_icon() -> impl Strategy<Value = Icon> {
    (
        "https://[a-z]{1,8}\\.example/[a-z]{1,8}\\.png",
        arb_opt_string(),
        option::of(vec(
            prop_oneof![Just("any".to_owned()), "[1-9][0-9]{0,2}x[1-9][0-9]{0,2}"],
            0..3,
        )),
        option::of(prop_oneof![
            Just("light".to_owned()),
            Just("dark".to_owned())
        ]),
        arb_extra(),
    )
        .prop_map(|(src, mime_type, sizes, theme, extra)| Icon {
            src,
            mime_type,
            sizes,
            theme,
            extra,
        })
        .boxed()
}

fn arb_icons() -> impl Strategy<Value = Option<Vec<Icon>>> {
    option::of(vec(arb_icon(), 0..3))
}

/// Name and version of an implementation, with the 2025 optional fields.
pub fn arb_implementation() -> impl Strategy<Value = Implementation> {
    (
        arb_string(),
        arb_string(),
        arb_opt_string(),
        arb_opt_string(),
        arb_icons(),
        arb_opt_string(),
        arb_extra(),
    )
        .prop_map(
            |(name, version, title, description, icons, website_url, extra)| Implementation {
                name,
                version,
                title,
                description,
                icons,
                website_url,
                extra,
            },
        )
        .boxed()
}

/// A role.
pub fn arb_role() -> impl Strategy<Value = Role> {
    prop_oneof![Just(Role::User), Just(Role::Assistant)]
}

/// Content annotations.
pub fn arb_annotations() -> impl Strategy<Value = Annotations> {
    (
        option::of(vec(arb_role(), 0..3)),
        option::of(arb_unit_f64()),
        option::of(Just("2025-01-12T15:00:58Z".to_owned())),
        arb_extra(),
    )
        .prop_map(|(audience, priority, last_modified, extra)| Annotations {
            audience,
            priority,
            last_modified,
            extra,
        })
        .boxed()
}

/// A `resultType`, known or not.
pub fn arb_result_type() -> impl Strategy<Value = ResultType> {
    prop_oneof![
        Just(ResultType::Complete),
        Just(ResultType::InputRequired),
        arb_other("x_").prop_map(ResultType::Other),
    ]
}

/// A `cacheScope`, known or not.
pub fn arb_cache_scope() -> impl Strategy<Value = CacheScope> {
    prop_oneof![
        Just(CacheScope::Public),
        Just(CacheScope::Private),
        arb_other("x_").prop_map(CacheScope::Other),
    ]
}

/// Paginated list request parameters.
pub fn arb_paginated_request_params() -> impl Strategy<Value = PaginatedRequestParams> {
    (arb_opt_string(), arb_meta(), arb_extra()).prop_map(|(cursor, meta, extra)| {
        PaginatedRequestParams {
            cursor,
            meta,
            extra,
        }
    })
}

/// Parameters with only `_meta`.
pub fn arb_empty_params() -> impl Strategy<Value = EmptyParams> {
    (arb_meta(), arb_extra()).prop_map(|(meta, extra)| EmptyParams { meta, extra })
}

/// An empty result.
pub fn arb_empty_result() -> impl Strategy<Value = EmptyResult> {
    (arb_meta(), option::of(arb_result_type()), arb_extra()).prop_map(
        |(meta, result_type, extra)| EmptyResult {
            meta,
            result_type,
            extra,
        },
    )
}

// ---------------------------------------------------------------------------
// Lifecycle

fn arb_opt_object() -> impl Strategy<Value = Option<JsonObject>> {
    option::of(arb_json_object(1))
}

/// Client capabilities.
pub fn arb_client_capabilities() -> impl Strategy<Value = ClientCapabilities> {
    let roots = option::of((option::of(any::<bool>()), arb_extra()).prop_map(
        |(list_changed, extra)| RootsCapability {
            list_changed,
            extra,
        },
    ));
    let sampling = option::of((arb_opt_object(), arb_opt_object(), arb_extra()).prop_map(
        |(context, tools, extra)| SamplingCapability {
            context,
            tools,
            extra,
        },
    ));
    let elicitation = option::of(
        (arb_opt_object(), arb_opt_object(), arb_extra())
            .prop_map(|(form, url, extra)| ElicitationCapability { form, url, extra }),
    );
    (
        arb_opt_object(),
        roots,
        sampling,
        elicitation,
        arb_opt_object(),
        arb_opt_object(),
        arb_extra(),
    )
        .prop_map(
            |(experimental, roots, sampling, elicitation, tasks, extensions, extra)| {
                ClientCapabilities {
                    experimental,
                    roots,
                    sampling,
                    elicitation,
                    tasks,
                    extensions,
                    extra,
                }
            },
        )
        .boxed()
}

fn arb_list_changed_capability() -> impl Strategy<Value = ListChangedCapability> {
    (option::of(any::<bool>()), arb_extra()).prop_map(|(list_changed, extra)| {
        ListChangedCapability {
            list_changed,
            extra,
        }
    })
}

/// Server capabilities.
pub fn arb_server_capabilities() -> impl Strategy<Value = ServerCapabilities> {
    let resources = option::of(
        (
            option::of(any::<bool>()),
            option::of(any::<bool>()),
            arb_extra(),
        )
            .prop_map(|(subscribe, list_changed, extra)| ResourcesCapability {
                subscribe,
                list_changed,
                extra,
            }),
    );
    (
        arb_opt_object(),
        arb_opt_object(),
        arb_opt_object(),
        option::of(arb_list_changed_capability()),
        resources,
        option::of(arb_list_changed_capability()),
        arb_opt_object(),
        arb_opt_object(),
        arb_extra(),
    )
        .prop_map(
            |(
                experimental,
                logging,
                completions,
                prompts,
                resources,
                tools,
                tasks,
                extensions,
                extra,
            )| ServerCapabilities {
                experimental,
                logging,
                completions,
                prompts,
                resources,
                tools,
                tasks,
                extensions,
                extra,
            },
        )
        .boxed()
}

fn arb_protocol_version_string() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(crate::ProtocolVersion::ALL.to_vec())
            .prop_map(|v| v.as_str().to_owned()),
        "20[0-9]{2}-[01][0-9]-[0-3][0-9]",
    ]
}

/// `initialize` request parameters.
pub fn arb_initialize_request_params() -> impl Strategy<Value = InitializeRequestParams> {
    (
        arb_protocol_version_string(),
        arb_client_capabilities(),
        arb_implementation(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(protocol_version, capabilities, client_info, meta, extra)| InitializeRequestParams {
                protocol_version,
                capabilities,
                client_info,
                meta,
                extra,
            },
        )
}

/// `initialize` result.
pub fn arb_initialize_result() -> impl Strategy<Value = InitializeResult> {
    (
        arb_protocol_version_string(),
        arb_server_capabilities(),
        arb_implementation(),
        arb_opt_string(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(protocol_version, capabilities, server_info, instructions, meta, extra)| {
                InitializeResult {
                    protocol_version,
                    capabilities,
                    server_info,
                    instructions,
                    meta,
                    extra,
                }
            },
        )
}

// ---------------------------------------------------------------------------
// Progress and cancellation

/// `notifications/progress` parameters.
pub fn arb_progress_notification_params() -> impl Strategy<Value = ProgressNotificationParams> {
    (
        arb_request_id(),
        arb_f64(),
        option::of(arb_f64()),
        arb_opt_string(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(|(progress_token, progress, total, message, meta, extra)| {
            ProgressNotificationParams {
                progress_token,
                progress,
                total,
                message,
                meta,
                extra,
            }
        })
}

/// `notifications/cancelled` parameters.
pub fn arb_cancelled_notification_params() -> impl Strategy<Value = CancelledNotificationParams> {
    (
        option::of(arb_request_id()),
        arb_opt_string(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(request_id, reason, meta, extra)| CancelledNotificationParams {
                request_id,
                reason,
                meta,
                extra,
            },
        )
}

// ---------------------------------------------------------------------------
// Content

/// A text block.
pub fn arb_text_content() -> impl Strategy<Value = TextContent> {
    (
        arb_string(),
        option::of(arb_annotations()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(|(text, annotations, meta, extra)| TextContent {
            text,
            annotations,
            meta,
            extra,
        })
        .boxed()
}

fn arb_media() -> impl Strategy<
    Value = (
        String,
        String,
        Option<Annotations>,
        Option<crate::types::Meta>,
        JsonObject,
    ),
> {
    (
        "[A-Za-z0-9+/]{0,16}={0,2}",
        "(image|audio)/[a-z]{2,5}",
        option::of(arb_annotations()),
        arb_meta(),
        arb_extra(),
    )
}

/// An image block.
pub fn arb_image_content() -> impl Strategy<Value = ImageContent> {
    arb_media()
        .prop_map(|(data, mime_type, annotations, meta, extra)| ImageContent {
            data,
            mime_type,
            annotations,
            meta,
            extra,
        })
        .boxed()
}

/// An audio block.
pub fn arb_audio_content() -> impl Strategy<Value = AudioContent> {
    arb_media()
        .prop_map(|(data, mime_type, annotations, meta, extra)| AudioContent {
            data,
            mime_type,
            annotations,
            meta,
            extra,
        })
        .boxed()
}

/// A resource link block.
pub fn arb_resource_link() -> impl Strategy<Value = ResourceLink> {
    arb_resource().prop_map(ResourceLink::from)
}

/// Text or blob resource contents.
pub fn arb_resource_contents() -> impl Strategy<Value = ResourceContents> {
    (
        "(file|https)://[a-z]{1,8}/[a-z]{0,8}",
        arb_opt_string(),
        prop_oneof![
            arb_string().prop_map(Ok),
            "[A-Za-z0-9+/]{0,16}".prop_map(Err)
        ],
        arb_meta(),
        arb_extra(),
    )
        .prop_map(|(uri, mime_type, body, meta, extra)| match body {
            Ok(text) => ResourceContents::Text(TextResourceContents {
                uri,
                mime_type,
                text,
                meta,
                extra,
            }),
            Err(blob) => ResourceContents::Blob(BlobResourceContents {
                uri,
                mime_type,
                blob,
                meta,
                extra,
            }),
        })
        .boxed()
}

/// An embedded resource block.
pub fn arb_embedded_resource() -> impl Strategy<Value = EmbeddedResource> {
    (
        arb_resource_contents(),
        option::of(arb_annotations()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(|(resource, annotations, meta, extra)| EmbeddedResource {
            resource,
            annotations,
            meta,
            extra,
        })
        .boxed()
}

/// A JSON object of an unknown content type (`type` starting with `x_`).
pub fn arb_unknown_block() -> impl Strategy<Value = Value> {
    (arb_other("x_"), arb_json_object(1)).prop_map(|(kind, fields)| {
        let mut object = JsonObject::new();
        object.insert("type".to_owned(), Value::String(kind));
        for (k, v) in fields {
            if k != "type" {
                object.insert(k, v);
            }
        }
        Value::Object(object)
    })
}

/// Any content block, including unknown ones.
pub fn arb_content_block() -> impl Strategy<Value = ContentBlock> {
    prop_oneof![
        4 => arb_text_content().prop_map(ContentBlock::Text),
        1 => arb_image_content().prop_map(ContentBlock::Image),
        1 => arb_audio_content().prop_map(ContentBlock::Audio),
        1 => arb_resource_link().prop_map(ContentBlock::ResourceLink),
        1 => arb_embedded_resource().prop_map(ContentBlock::Resource),
        1 => arb_unknown_block().prop_map(ContentBlock::Unknown),
    ]
    .boxed()
}

/// A tool use block (2025-11-25).
pub fn arb_tool_use_content() -> impl Strategy<Value = ToolUseContent> {
    (
        arb_string(),
        arb_string(),
        arb_json_object(2),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(|(id, name, input, meta, extra)| ToolUseContent {
            id,
            name,
            input,
            meta,
            extra,
        })
        .boxed()
}

/// A tool result block (2025-11-25).
pub fn arb_tool_result_content() -> impl Strategy<Value = ToolResultContent> {
    (
        arb_string(),
        vec(arb_content_block(), 0..3),
        option::of(arb_json_object(2).prop_map(Value::Object)),
        option::of(any::<bool>()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(tool_use_id, content, structured_content, is_error, meta, extra)| ToolResultContent {
                tool_use_id,
                content,
                structured_content,
                is_error,
                meta,
                extra,
            },
        )
        .boxed()
}

/// Any sampling content block, including unknown ones.
pub fn arb_sampling_content() -> impl Strategy<Value = SamplingContent> {
    prop_oneof![
        3 => arb_text_content().prop_map(SamplingContent::Text),
        1 => arb_image_content().prop_map(SamplingContent::Image),
        1 => arb_audio_content().prop_map(SamplingContent::Audio),
        1 => arb_tool_use_content().prop_map(SamplingContent::ToolUse),
        1 => arb_tool_result_content().prop_map(SamplingContent::ToolResult),
        1 => arb_unknown_block().prop_map(SamplingContent::Unknown),
    ]
    .boxed()
}

/// Sampling message content: one block or an array.
pub fn arb_sampling_message_content() -> impl Strategy<Value = SamplingMessageContent> {
    prop_oneof![
        arb_sampling_content().prop_map(SamplingMessageContent::One),
        vec(arb_sampling_content(), 0..3).prop_map(SamplingMessageContent::Many),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------
// Tools

/// Tool annotations.
pub fn arb_tool_annotations() -> impl Strategy<Value = ToolAnnotations> {
    (
        arb_opt_string(),
        option::of(any::<bool>()),
        option::of(any::<bool>()),
        option::of(any::<bool>()),
        option::of(any::<bool>()),
        arb_extra(),
    )
        .prop_map(
            |(title, read_only_hint, destructive_hint, idempotent_hint, open_world_hint, extra)| {
                ToolAnnotations {
                    title,
                    read_only_hint,
                    destructive_hint,
                    idempotent_hint,
                    open_world_hint,
                    extra,
                }
            },
        )
        .boxed()
}

/// A task support value, known or not.
pub fn arb_task_support() -> impl Strategy<Value = TaskSupport> {
    prop_oneof![
        Just(TaskSupport::Forbidden),
        Just(TaskSupport::Optional),
        Just(TaskSupport::Required),
        arb_other("x_").prop_map(TaskSupport::Other),
    ]
}

/// Tool execution properties.
pub fn arb_tool_execution() -> impl Strategy<Value = ToolExecution> {
    (option::of(arb_task_support()), arb_extra()).prop_map(|(task_support, extra)| ToolExecution {
        task_support,
        extra,
    })
}

/// An object JSON Schema with a few properties.
pub fn arb_object_schema() -> impl Strategy<Value = JsonObject> {
    let property = prop_oneof![
        Just(serde_json::json!({"type": "string"})),
        Just(serde_json::json!({"type": "integer", "minimum": 0})),
        arb_string().prop_map(|d| serde_json::json!({"type": "boolean", "description": d})),
        Just(serde_json::json!({"type": "array", "items": {"type": "string"}})),
    ];
    (
        btree_map("[a-z_]{1,8}", property, 0..4),
        option::of(Just(
            "https://json-schema.org/draft/2020-12/schema".to_owned(),
        )),
    )
        .prop_map(|(properties, schema)| {
            let mut object = JsonObject::new();
            if let Some(schema) = schema {
                object.insert("$schema".to_owned(), schema.into());
            }
            object.insert("type".to_owned(), "object".into());
            let required: Vec<Value> = properties
                .keys()
                .take(1)
                .map(|k| k.as_str().into())
                .collect();
            object.insert(
                "properties".to_owned(),
                Value::Object(properties.into_iter().collect()),
            );
            object.insert("required".to_owned(), Value::Array(required));
            object
        })
        .boxed()
}

/// A tool definition.
pub fn arb_tool() -> impl Strategy<Value = Tool> {
    (
        "[a-zA-Z0-9_.-]{1,24}",
        arb_opt_string(),
        arb_opt_string(),
        arb_object_schema(),
        option::of(prop_oneof![
            3 => arb_object_schema().prop_map(Value::Object),
            1 => any::<bool>().prop_map(Value::Bool),
        ]),
        option::of(arb_tool_annotations()),
        arb_icons(),
        option::of(arb_tool_execution()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(
                name,
                title,
                description,
                input_schema,
                output_schema,
                annotations,
                icons,
                execution,
                meta,
                extra,
            )| Tool {
                name,
                title,
                description,
                input_schema: input_schema.into(),
                output_schema: output_schema.map(JsonText::from),
                annotations,
                icons,
                execution,
                meta,
                extra,
            },
        )
        .boxed()
}

/// A `tools/list` result.
pub fn arb_list_tools_result() -> impl Strategy<Value = ListToolsResult> {
    (
        vec(arb_tool(), 0..4),
        arb_opt_string(),
        option::of(arb_number()),
        option::of(arb_cache_scope()),
        option::of(arb_result_type()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(tools, next_cursor, ttl_ms, cache_scope, result_type, meta, extra)| ListToolsResult {
                tools,
                next_cursor,
                ttl_ms,
                cache_scope,
                result_type,
                meta,
                extra,
            },
        )
}

/// Task metadata for a task-augmented request.
pub fn arb_task_metadata() -> impl Strategy<Value = TaskMetadata> {
    (option::of(any::<u64>()), arb_extra()).prop_map(|(ttl, extra)| TaskMetadata { ttl, extra })
}

/// `tools/call` request parameters.
pub fn arb_call_tool_request_params() -> impl Strategy<Value = CallToolRequestParams> {
    (
        "[a-zA-Z0-9_.-]{1,24}",
        option::of(arb_json_object(2)),
        option::of(arb_task_metadata()),
        option::of(arb_json_object(1)),
        arb_opt_string(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(name, arguments, task, input_responses, request_state, meta, extra)| {
                CallToolRequestParams {
                    name,
                    arguments,
                    task,
                    input_responses,
                    request_state,
                    meta,
                    extra,
                }
            },
        )
}

/// A `tools/call` result. `structuredContent` is any JSON value (2026-07-28).
pub fn arb_call_tool_result() -> impl Strategy<Value = CallToolResult> {
    (
        vec(arb_content_block(), 0..4),
        // `null` reads back as `None`, so `Some(Null)` is not a value a peer can send.
        option::of(arb_json_value(2).prop_filter("not null", |v| !v.is_null())),
        option::of(any::<bool>()),
        option::of(arb_result_type()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(content, structured_content, is_error, result_type, meta, extra)| CallToolResult {
                content,
                structured_content,
                is_error,
                result_type,
                meta,
                extra,
            },
        )
}

// ---------------------------------------------------------------------------
// Resources

fn arb_uri() -> impl Strategy<Value = String> {
    "(file|https|git|x-custom)://[a-z]{1,8}/[a-z0-9/]{0,12}"
}

/// A resource.
pub fn arb_resource() -> impl Strategy<Value = Resource> {
    (
        arb_uri(),
        arb_string(),
        arb_opt_string(),
        arb_opt_string(),
        arb_opt_string(),
        option::of(arb_annotations()),
        option::of(any::<u64>()),
        arb_icons(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(uri, name, title, description, mime_type, annotations, size, icons, meta, extra)| {
                Resource {
                    uri,
                    name,
                    title,
                    description,
                    mime_type,
                    annotations,
                    size,
                    icons,
                    meta,
                    extra,
                }
            },
        )
        .boxed()
}

/// A resource template.
pub fn arb_resource_template() -> impl Strategy<Value = ResourceTemplate> {
    (
        "file:///[a-z]{1,8}/\\{[a-z]{1,6}\\}",
        arb_string(),
        arb_opt_string(),
        arb_opt_string(),
        arb_opt_string(),
        option::of(arb_annotations()),
        arb_icons(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(
                uri_template,
                name,
                title,
                description,
                mime_type,
                annotations,
                icons,
                meta,
                extra,
            )| {
                ResourceTemplate {
                    uri_template,
                    name,
                    title,
                    description,
                    mime_type,
                    annotations,
                    icons,
                    meta,
                    extra,
                }
            },
        )
        .boxed()
}

type CacheFields = (
    Option<Cursor>,
    Option<Number>,
    Option<CacheScope>,
    Option<ResultType>,
    Option<crate::types::Meta>,
    JsonObject,
);

fn arb_page_fields() -> impl Strategy<Value = CacheFields> {
    (
        arb_opt_string(),
        option::of(arb_number()),
        option::of(arb_cache_scope()),
        option::of(arb_result_type()),
        arb_meta(),
        arb_extra(),
    )
}

/// A `resources/list` result.
pub fn arb_list_resources_result() -> impl Strategy<Value = ListResourcesResult> {
    (vec(arb_resource(), 0..3), arb_page_fields()).prop_map(
        |(resources, (next_cursor, ttl_ms, cache_scope, result_type, meta, extra))| {
            ListResourcesResult {
                resources,
                next_cursor,
                ttl_ms,
                cache_scope,
                result_type,
                meta,
                extra,
            }
        },
    )
}

/// A `resources/templates/list` result.
pub fn arb_list_resource_templates_result() -> impl Strategy<Value = ListResourceTemplatesResult> {
    (vec(arb_resource_template(), 0..3), arb_page_fields()).prop_map(
        |(resource_templates, (next_cursor, ttl_ms, cache_scope, result_type, meta, extra))| {
            ListResourceTemplatesResult {
                resource_templates,
                next_cursor,
                ttl_ms,
                cache_scope,
                result_type,
                meta,
                extra,
            }
        },
    )
}

/// `resources/read` request parameters.
pub fn arb_read_resource_request_params() -> impl Strategy<Value = ReadResourceRequestParams> {
    (
        arb_uri(),
        option::of(arb_json_object(1)),
        arb_opt_string(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(|(uri, input_responses, request_state, meta, extra)| {
            ReadResourceRequestParams {
                uri,
                input_responses,
                request_state,
                meta,
                extra,
            }
        })
}

/// A `resources/read` result.
pub fn arb_read_resource_result() -> impl Strategy<Value = ReadResourceResult> {
    (vec(arb_resource_contents(), 0..3), arb_page_fields()).prop_map(
        |(contents, (_, ttl_ms, cache_scope, result_type, meta, extra))| ReadResourceResult {
            contents,
            ttl_ms,
            cache_scope,
            result_type,
            meta,
            extra,
        },
    )
}

/// `resources/subscribe` and `resources/unsubscribe` parameters.
pub fn arb_subscribe_request_params() -> impl Strategy<Value = SubscribeRequestParams> {
    (arb_uri(), arb_meta(), arb_extra()).prop_map(|(uri, meta, extra)| SubscribeRequestParams {
        uri,
        meta,
        extra,
    })
}

/// `notifications/resources/updated` parameters.
pub fn arb_resource_updated_notification_params()
-> impl Strategy<Value = ResourceUpdatedNotificationParams> {
    (arb_uri(), arb_meta(), arb_extra())
        .prop_map(|(uri, meta, extra)| ResourceUpdatedNotificationParams { uri, meta, extra })
}

// ---------------------------------------------------------------------------
// Prompts

/// A prompt argument.
pub fn arb_prompt_argument() -> impl Strategy<Value = PromptArgument> {
    (
        arb_string(),
        arb_opt_string(),
        arb_opt_string(),
        option::of(any::<bool>()),
        arb_extra(),
    )
        .prop_map(
            |(name, title, description, required, extra)| PromptArgument {
                name,
                title,
                description,
                required,
                extra,
            },
        )
}

/// A prompt.
pub fn arb_prompt() -> impl Strategy<Value = Prompt> {
    (
        arb_string(),
        arb_opt_string(),
        arb_opt_string(),
        option::of(vec(arb_prompt_argument(), 0..3)),
        arb_icons(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(name, title, description, arguments, icons, meta, extra)| Prompt {
                name,
                title,
                description,
                arguments,
                icons,
                meta,
                extra,
            },
        )
        .boxed()
}

/// A `prompts/list` result.
pub fn arb_list_prompts_result() -> impl Strategy<Value = ListPromptsResult> {
    (vec(arb_prompt(), 0..3), arb_page_fields()).prop_map(
        |(prompts, (next_cursor, ttl_ms, cache_scope, result_type, meta, extra))| {
            ListPromptsResult {
                prompts,
                next_cursor,
                ttl_ms,
                cache_scope,
                result_type,
                meta,
                extra,
            }
        },
    )
}

/// `prompts/get` request parameters.
pub fn arb_get_prompt_request_params() -> impl Strategy<Value = GetPromptRequestParams> {
    (
        arb_string(),
        option::of(btree_map(arb_string(), arb_string(), 0..3)),
        option::of(arb_json_object(1)),
        arb_opt_string(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(name, arguments, input_responses, request_state, meta, extra)| {
                GetPromptRequestParams {
                    name,
                    arguments,
                    input_responses,
                    request_state,
                    meta,
                    extra,
                }
            },
        )
}

/// A prompt message.
pub fn arb_prompt_message() -> impl Strategy<Value = PromptMessage> {
    (arb_role(), arb_content_block(), arb_extra())
        .prop_map(|(role, content, extra)| PromptMessage {
            role,
            content,
            extra,
        })
        .boxed()
}

/// A `prompts/get` result.
pub fn arb_get_prompt_result() -> impl Strategy<Value = GetPromptResult> {
    (
        arb_opt_string(),
        vec(arb_prompt_message(), 0..3),
        option::of(arb_result_type()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(description, messages, result_type, meta, extra)| GetPromptResult {
                description,
                messages,
                result_type,
                meta,
                extra,
            },
        )
}

// ---------------------------------------------------------------------------
// Logging

/// A logging level.
pub fn arb_logging_level() -> impl Strategy<Value = LoggingLevel> {
    proptest::sample::select(LoggingLevel::ALL.to_vec())
}

/// `logging/setLevel` parameters.
pub fn arb_set_level_request_params() -> impl Strategy<Value = SetLevelRequestParams> {
    (arb_logging_level(), arb_meta(), arb_extra())
        .prop_map(|(level, meta, extra)| SetLevelRequestParams { level, meta, extra })
}

/// `notifications/message` parameters.
pub fn arb_logging_message_notification_params()
-> impl Strategy<Value = LoggingMessageNotificationParams> {
    (
        arb_logging_level(),
        arb_opt_string(),
        arb_json_value(2),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(level, logger, data, meta, extra)| LoggingMessageNotificationParams {
                level,
                logger,
                data,
                meta,
                extra,
            },
        )
}

// ---------------------------------------------------------------------------
// Completion

/// A completion reference, including unknown ones.
pub fn arb_reference() -> impl Strategy<Value = Reference> {
    prop_oneof![
        (arb_string(), arb_opt_string(), arb_extra()).prop_map(|(name, title, extra)| {
            Reference::Prompt(PromptReference { name, title, extra })
        }),
        (arb_uri(), arb_extra()).prop_map(|(uri, extra)| {
            Reference::Resource(ResourceTemplateReference { uri, extra })
        }),
        arb_unknown_block().prop_map(Reference::Unknown),
    ]
}

/// `completion/complete` parameters.
pub fn arb_complete_request_params() -> impl Strategy<Value = CompleteRequestParams> {
    let argument = (arb_string(), arb_string(), arb_extra())
        .prop_map(|(name, value, extra)| CompleteArgument { name, value, extra });
    let context = (
        option::of(btree_map(arb_string(), arb_string(), 0..3)),
        arb_extra(),
    )
        .prop_map(|(arguments, extra)| CompleteContext { arguments, extra });
    (
        arb_reference(),
        argument,
        option::of(context),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(reference, argument, context, meta, extra)| CompleteRequestParams {
                reference,
                argument,
                context,
                meta,
                extra,
            },
        )
}

/// A `completion/complete` result.
pub fn arb_complete_result() -> impl Strategy<Value = CompleteResult> {
    let completion = (
        vec(arb_string(), 0..5),
        option::of(any::<u64>()),
        option::of(any::<bool>()),
        arb_extra(),
    )
        .prop_map(|(values, total, has_more, extra)| Completion {
            values,
            total,
            has_more,
            extra,
        });
    (
        completion,
        option::of(arb_result_type()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(|(completion, result_type, meta, extra)| CompleteResult {
            completion,
            result_type,
            meta,
            extra,
        })
}

// ---------------------------------------------------------------------------
// Roots

/// A root.
pub fn arb_root() -> impl Strategy<Value = Root> {
    (
        "file:///[a-z]{1,8}(/[a-z]{1,8}){0,2}",
        arb_opt_string(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(|(uri, name, meta, extra)| Root {
            uri,
            name,
            meta,
            extra,
        })
}

/// A `roots/list` result.
pub fn arb_list_roots_result() -> impl Strategy<Value = ListRootsResult> {
    (vec(arb_root(), 0..3), arb_meta(), arb_extra())
        .prop_map(|(roots, meta, extra)| ListRootsResult { roots, meta, extra })
}

// ---------------------------------------------------------------------------
// Sampling

/// A sampling message.
pub fn arb_sampling_message() -> impl Strategy<Value = SamplingMessage> {
    (
        arb_role(),
        arb_sampling_message_content(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(|(role, content, meta, extra)| SamplingMessage {
            role,
            content,
            meta,
            extra,
        })
        .boxed()
}

/// Model preferences.
pub fn arb_model_preferences() -> impl Strategy<Value = ModelPreferences> {
    let hint = (arb_opt_string(), arb_extra()).prop_map(|(name, extra)| ModelHint { name, extra });
    (
        option::of(vec(hint, 0..3)),
        option::of(arb_unit_f64()),
        option::of(arb_unit_f64()),
        option::of(arb_unit_f64()),
        arb_extra(),
    )
        .prop_map(
            |(hints, cost_priority, speed_priority, intelligence_priority, extra)| {
                ModelPreferences {
                    hints,
                    cost_priority,
                    speed_priority,
                    intelligence_priority,
                    extra,
                }
            },
        )
        .boxed()
}

fn arb_include_context() -> impl Strategy<Value = IncludeContext> {
    prop_oneof![
        Just(IncludeContext::None),
        Just(IncludeContext::ThisServer),
        Just(IncludeContext::AllServers),
        arb_other("x_").prop_map(IncludeContext::Other),
    ]
}

fn arb_tool_choice() -> impl Strategy<Value = ToolChoice> {
    let mode = prop_oneof![
        Just(ToolChoiceMode::Auto),
        Just(ToolChoiceMode::Required),
        Just(ToolChoiceMode::None),
        arb_other("x_").prop_map(ToolChoiceMode::Other),
    ];
    (option::of(mode), arb_extra()).prop_map(|(mode, extra)| ToolChoice { mode, extra })
}

/// `sampling/createMessage` parameters, with 2025-11-25 tools.
pub fn arb_create_message_request_params() -> impl Strategy<Value = CreateMessageRequestParams> {
    (
        (
            vec(arb_sampling_message(), 0..3),
            option::of(arb_model_preferences()),
            arb_opt_string(),
            option::of(arb_include_context()),
            option::of(arb_f64()),
            any::<u32>(),
        ),
        (
            option::of(vec(arb_string(), 0..3)),
            arb_opt_object(),
            option::of(vec(arb_tool(), 0..2)),
            option::of(arb_tool_choice()),
            option::of(arb_task_metadata()),
            arb_meta(),
            arb_extra(),
        ),
    )
        .prop_map(
            |(
                (
                    messages,
                    model_preferences,
                    system_prompt,
                    include_context,
                    temperature,
                    max_tokens,
                ),
                (stop_sequences, metadata, tools, tool_choice, task, meta, extra),
            )| CreateMessageRequestParams {
                messages,
                model_preferences,
                system_prompt,
                include_context,
                temperature,
                max_tokens: u64::from(max_tokens),
                stop_sequences,
                metadata,
                tools,
                tool_choice,
                task,
                meta,
                extra,
            },
        )
}

fn arb_stop_reason() -> impl Strategy<Value = StopReason> {
    prop_oneof![
        Just(StopReason::EndTurn),
        Just(StopReason::StopSequence),
        Just(StopReason::MaxTokens),
        Just(StopReason::ToolUse),
        arb_other("x_").prop_map(StopReason::Other),
    ]
}

/// A `sampling/createMessage` result.
pub fn arb_create_message_result() -> impl Strategy<Value = CreateMessageResult> {
    (
        arb_role(),
        arb_sampling_message_content(),
        arb_string(),
        option::of(arb_stop_reason()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(role, content, model, stop_reason, meta, extra)| CreateMessageResult {
                role,
                content,
                model,
                stop_reason,
                meta,
                extra,
            },
        )
}

// ---------------------------------------------------------------------------
// Elicitation

/// A form schema with primitive properties, some with defaults.
pub fn arb_elicitation_schema() -> impl Strategy<Value = ElicitationSchema> {
    let property = prop_oneof![
        Just(serde_json::json!({"type": "string", "format": "email"})),
        Just(serde_json::json!({"type": "integer", "default": 3})),
        Just(serde_json::json!({"type": "boolean", "default": true})),
        Just(serde_json::json!({"type": "string", "enum": ["a", "b"], "default": "a"})),
        Just(
            serde_json::json!({"type": "array", "items": {"anyOf": [{"const": "x", "title": "X"}]}})
        ),
    ];
    (
        btree_map("[a-z]{1,8}", property, 0..4),
        option::of(vec("[a-z]{1,8}", 0..2)),
        arb_extra(),
    )
        .prop_map(|(properties, required, extra)| ElicitationSchema {
            schema: None,
            schema_type: "object".to_owned(),
            properties: properties.into_iter().collect(),
            required,
            extra,
        })
        .boxed()
}

/// URL-mode elicitation parameters (2025-11-25).
pub fn arb_elicit_url_params() -> impl Strategy<Value = ElicitUrlParams> {
    (
        arb_string(),
        arb_string(),
        "https://[a-z]{1,8}\\.example/[a-z]{0,8}",
        option::of(arb_task_metadata()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(message, elicitation_id, url, task, meta, extra)| ElicitUrlParams {
                message,
                elicitation_id,
                url,
                task,
                meta,
                extra,
            },
        )
        .boxed()
}

/// `elicitation/create` parameters in form or URL mode.
pub fn arb_elicit_request_params() -> impl Strategy<Value = ElicitRequestParams> {
    let form = (
        option::of(Just("form".to_owned())),
        arb_string(),
        arb_elicitation_schema(),
        option::of(arb_task_metadata()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(mode, message, requested_schema, task, meta, extra)| ElicitFormParams {
                mode,
                message,
                requested_schema,
                task,
                meta,
                extra,
            },
        );
    prop_oneof![
        form.prop_map(ElicitRequestParams::Form),
        arb_elicit_url_params().prop_map(ElicitRequestParams::Url),
    ]
}

/// The answer to an elicitation.
pub fn arb_elicit_result() -> impl Strategy<Value = ElicitResult> {
    let action = prop_oneof![
        Just(ElicitAction::Accept),
        Just(ElicitAction::Decline),
        Just(ElicitAction::Cancel),
    ];
    (action, arb_opt_object(), arb_meta(), arb_extra()).prop_map(
        |(action, content, meta, extra)| ElicitResult {
            action,
            content,
            meta,
            extra,
        },
    )
}

/// `notifications/elicitation/complete` parameters.
pub fn arb_elicitation_complete_notification_params()
-> impl Strategy<Value = ElicitationCompleteNotificationParams> {
    (arb_string(), arb_meta(), arb_extra()).prop_map(|(elicitation_id, meta, extra)| {
        ElicitationCompleteNotificationParams {
            elicitation_id,
            meta,
            extra,
        }
    })
}

/// The data of a `-32042` error.
pub fn arb_url_elicitation_required_data() -> impl Strategy<Value = UrlElicitationRequiredData> {
    (vec(arb_elicit_url_params(), 0..3), arb_extra()).prop_map(|(elicitations, extra)| {
        UrlElicitationRequiredData {
            elicitations,
            extra,
        }
    })
}

// ---------------------------------------------------------------------------
// Tasks

fn arb_task_status() -> impl Strategy<Value = TaskStatus> {
    prop_oneof![
        Just(TaskStatus::Working),
        Just(TaskStatus::InputRequired),
        Just(TaskStatus::Completed),
        Just(TaskStatus::Failed),
        Just(TaskStatus::Cancelled),
        arb_other("x_").prop_map(TaskStatus::Other),
    ]
}

/// A task.
pub fn arb_task() -> impl Strategy<Value = Task> {
    (
        arb_string(),
        arb_task_status(),
        arb_opt_string(),
        Just("2025-11-25T10:00:00Z".to_owned()),
        Just("2025-11-25T10:00:05Z".to_owned()),
        option::of(any::<u64>()),
        option::of(any::<u64>()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(
                task_id,
                status,
                status_message,
                created_at,
                last_updated_at,
                ttl,
                poll_interval,
                meta,
                extra,
            )| Task {
                task_id,
                status,
                status_message,
                created_at,
                last_updated_at,
                ttl,
                poll_interval,
                meta,
                extra,
            },
        )
        .boxed()
}

/// The answer to a task-augmented request.
pub fn arb_create_task_result() -> impl Strategy<Value = CreateTaskResult> {
    (
        arb_task(),
        option::of(arb_result_type()),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(|(task, result_type, meta, extra)| CreateTaskResult {
            task,
            result_type,
            meta,
            extra,
        })
}

/// `tasks/get`, `tasks/result` and `tasks/cancel` parameters.
pub fn arb_task_id_params() -> impl Strategy<Value = TaskIdParams> {
    (arb_string(), arb_meta(), arb_extra()).prop_map(|(task_id, meta, extra)| TaskIdParams {
        task_id,
        meta,
        extra,
    })
}

/// A `tasks/list` result.
pub fn arb_list_tasks_result() -> impl Strategy<Value = ListTasksResult> {
    (
        vec(arb_task(), 0..3),
        arb_opt_string(),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(|(tasks, next_cursor, meta, extra)| ListTasksResult {
            tasks,
            next_cursor,
            meta,
            extra,
        })
}

/// The value of the related-task `_meta` key.
pub fn arb_related_task_metadata() -> impl Strategy<Value = RelatedTaskMetadata> {
    (arb_string(), arb_extra()).prop_map(|(task_id, extra)| RelatedTaskMetadata { task_id, extra })
}

// ---------------------------------------------------------------------------
// 2026-07-28

/// A `server/discover` result.
pub fn arb_discover_result() -> impl Strategy<Value = DiscoverResult> {
    (
        vec(arb_protocol_version_string(), 0..3),
        arb_server_capabilities(),
        arb_opt_string(),
        arb_page_fields(),
    )
        .prop_map(
            |(
                supported_versions,
                capabilities,
                instructions,
                (_, ttl_ms, cache_scope, result_type, meta, extra),
            )| DiscoverResult {
                supported_versions,
                capabilities,
                instructions,
                ttl_ms,
                cache_scope,
                result_type,
                meta,
                extra,
            },
        )
}

/// A subscription filter.
pub fn arb_subscription_filter() -> impl Strategy<Value = SubscriptionFilter> {
    (
        option::of(any::<bool>()),
        option::of(any::<bool>()),
        option::of(any::<bool>()),
        option::of(vec(arb_uri(), 0..3)),
        arb_extra(),
    )
        .prop_map(
            |(
                tools_list_changed,
                prompts_list_changed,
                resources_list_changed,
                resource_subscriptions,
                extra,
            )| SubscriptionFilter {
                tools_list_changed,
                prompts_list_changed,
                resources_list_changed,
                resource_subscriptions,
                extra,
            },
        )
}

/// `subscriptions/listen` parameters.
pub fn arb_subscriptions_listen_request_params()
-> impl Strategy<Value = SubscriptionsListenRequestParams> {
    (arb_subscription_filter(), arb_meta(), arb_extra()).prop_map(|(notifications, meta, extra)| {
        SubscriptionsListenRequestParams {
            notifications,
            meta,
            extra,
        }
    })
}

/// `notifications/subscriptions/acknowledged` parameters.
pub fn arb_subscriptions_acknowledged_notification_params()
-> impl Strategy<Value = SubscriptionsAcknowledgedNotificationParams> {
    (arb_subscription_filter(), arb_meta(), arb_extra()).prop_map(|(notifications, meta, extra)| {
        SubscriptionsAcknowledgedNotificationParams {
            notifications,
            meta,
            extra,
        }
    })
}

/// An input-required result (MRTR).
pub fn arb_input_required_result() -> impl Strategy<Value = InputRequiredResult> {
    (
        option::of(arb_json_object(2)),
        arb_opt_string(),
        option::of(Just(ResultType::InputRequired)),
        arb_meta(),
        arb_extra(),
    )
        .prop_map(
            |(input_requests, request_state, result_type, meta, extra)| InputRequiredResult {
                input_requests,
                request_state,
                result_type,
                meta,
                extra,
            },
        )
}

// ---------------------------------------------------------------------------
// Whole requests and sessions

/// A whole `tools/call` request (MCP "Server Features / Tools"): its typed
/// params and the message that carries them, under any request id.
pub fn arb_call_tool_request() -> impl Strategy<Value = (CallToolRequestParams, Message)> {
    typed_request(methods::TOOLS_CALL, arb_call_tool_request_params())
}

/// A whole `resources/read` request (MCP "Server Features / Resources"):
/// its typed params and the message that carries them.
pub fn arb_read_resource_request() -> impl Strategy<Value = (ReadResourceRequestParams, Message)> {
    typed_request(methods::RESOURCES_READ, arb_read_resource_request_params())
}

/// A whole `prompts/get` request (MCP "Server Features / Prompts"): its
/// typed params and the message that carries them.
pub fn arb_get_prompt_request() -> impl Strategy<Value = (GetPromptRequestParams, Message)> {
    typed_request(methods::PROMPTS_GET, arb_get_prompt_request_params())
}

/// Any request a client sends once initialized, as a whole message under
/// any request id: `ping`, the listings, `tools/call`, `resources/read`,
/// `resources/subscribe`, `prompts/get`, `logging/setLevel` or
/// `completion/complete`, each with params of its own type.
pub fn arb_client_request() -> impl Strategy<Value = Message> {
    (arb_request_id(), arb_client_request_parts())
        .prop_map(|(id, (method, params))| request_message(id, method, params))
}

/// A whole client session as the client sends it (MCP "Basic / Lifecycle"):
/// `initialize` (id 0), `notifications/initialized`, then up to 24 messages
/// drawn from [`arb_client_request`]'s requests, each under an id used
/// nowhere else in the session (integers and strings both), the client's
/// `notifications/roots/list_changed`, and `notifications/cancelled` for a
/// request sent earlier in the session and not cancelled yet (never
/// `initialize`, which "Utilities / Cancellation" forbids cancelling).
pub fn arb_client_session() -> impl Strategy<Value = Vec<Message>> {
    (
        arb_initialize_request_params(),
        vec(arb_session_step(), 0..24),
    )
        .prop_map(|(initialize, steps)| {
            let mut messages = Vec::with_capacity(steps.len() + 2);
            messages.push(request_message(
                RequestId::Number(0),
                methods::INITIALIZE,
                Some(encode(&initialize)),
            ));
            messages.push(Message::Notification(Notification {
                method: methods::NOTIFICATION_INITIALIZED.to_owned(),
                params: None,
            }));
            // Ids count up from 1; a string id spells its number, so no
            // two requests share one.
            let mut next_id = 1i64;
            let mut cancellable: Vec<RequestId> = Vec::new();
            for step in steps {
                match step {
                    SessionStep::Request {
                        string_id,
                        method,
                        params,
                    } => {
                        let id = if string_id {
                            RequestId::String(format!("req-{next_id}"))
                        } else {
                            RequestId::Number(next_id)
                        };
                        next_id += 1;
                        cancellable.push(id.clone());
                        messages.push(request_message(id, method, params));
                    }
                    SessionStep::RootsChanged => {
                        messages.push(Message::Notification(Notification {
                            method: methods::NOTIFICATION_ROOTS_LIST_CHANGED.to_owned(),
                            params: None,
                        }));
                    }
                    SessionStep::Cancel { which, reason } => {
                        if cancellable.is_empty() {
                            continue;
                        }
                        let id = cancellable.swap_remove(which.index(cancellable.len()));
                        let params = CancelledNotificationParams {
                            request_id: Some(id),
                            reason,
                            ..CancelledNotificationParams::default()
                        };
                        messages.push(Message::Notification(Notification {
                            method: methods::NOTIFICATION_CANCELLED.to_owned(),
                            params: Some(encode(&params)),
                        }));
                    }
                }
            }
            messages
        })
}

/// One step of [`arb_client_session`] before ids are given out.
#[derive(Clone, Debug)]
enum SessionStep {
    Request {
        string_id: bool,
        method: &'static str,
        params: Option<RawJson>,
    },
    RootsChanged,
    Cancel {
        which: proptest::sample::Index,
        reason: Option<String>,
    },
}

fn arb_session_step() -> impl Strategy<Value = SessionStep> {
    prop_oneof![
        4 => (any::<bool>(), arb_client_request_parts()).prop_map(
            |(string_id, (method, params))| SessionStep::Request {
                string_id,
                method,
                params,
            }
        ),
        1 => Just(SessionStep::RootsChanged),
        2 => (any::<proptest::sample::Index>(), arb_opt_string())
            .prop_map(|(which, reason)| SessionStep::Cancel { which, reason }),
    ]
}

/// A client request's method and typed params, encoded.
fn arb_client_request_parts() -> impl Strategy<Value = (&'static str, Option<RawJson>)> {
    prop_oneof![
        Just((methods::PING, None)),
        arb_paginated_request_params().prop_map(|p| (methods::TOOLS_LIST, Some(encode(&p)))),
        arb_call_tool_request_params().prop_map(|p| (methods::TOOLS_CALL, Some(encode(&p)))),
        arb_paginated_request_params().prop_map(|p| (methods::RESOURCES_LIST, Some(encode(&p)))),
        arb_read_resource_request_params()
            .prop_map(|p| (methods::RESOURCES_READ, Some(encode(&p)))),
        arb_subscribe_request_params()
            .prop_map(|p| (methods::RESOURCES_SUBSCRIBE, Some(encode(&p)))),
        arb_paginated_request_params().prop_map(|p| (methods::PROMPTS_LIST, Some(encode(&p)))),
        arb_get_prompt_request_params().prop_map(|p| (methods::PROMPTS_GET, Some(encode(&p)))),
        arb_set_level_request_params().prop_map(|p| (methods::LOGGING_SET_LEVEL, Some(encode(&p)))),
        arb_complete_request_params()
            .prop_map(|p| (methods::COMPLETION_COMPLETE, Some(encode(&p)))),
    ]
}

/// The typed params `params` generates, with the request carrying them.
fn typed_request<P, S>(method: &'static str, params: S) -> impl Strategy<Value = (P, Message)>
where
    P: serde::Serialize + Clone + std::fmt::Debug,
    S: Strategy<Value = P>,
{
    (arb_request_id(), params).prop_map(move |(id, params)| {
        let message = request_message(id, method, Some(encode(&params)));
        (params, message)
    })
}

fn request_message(id: RequestId, method: &str, params: Option<RawJson>) -> Message {
    Message::Request(Request {
        id,
        method: method.to_owned(),
        params,
    })
}

fn encode<T: serde::Serialize>(value: &T) -> RawJson {
    // The strategies' values are the crate's own types, with string keys
    // and finite numbers: serializing them cannot fail.
    RawJson::encode(value).expect("a generated value serializes")
}
