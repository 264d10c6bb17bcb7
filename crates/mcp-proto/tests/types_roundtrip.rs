//! Every MCP type round-trips through JSON without loss, and real-world samples decode and re-encode unchanged.
//!
//! Needs the `proptest` feature for the shared strategies; CI runs
//! `cargo test --workspace --all-features`.
#![cfg(feature = "proptest")]

use std::fmt::Debug;
use std::path::Path;

use mcp_proto::jsonrpc::Message;
use mcp_proto::strategies::*;
use mcp_proto::types::*;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The one function the property tests use: value → JSON → value is the
/// identity; JSON → value → JSON is the identity (unknown fields kept);
/// decoding does not depend on the key order, on whether keys are
/// borrowed from the input, or on the `serde_json::Value` deserializer.
fn check_roundtrip<T>(value: &T) -> Result<(), TestCaseError>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let text = serde_json::to_string(value).map_err(fail)?;
    let json: Value = serde_json::from_str(&text).map_err(fail)?;

    let from_text: T = serde_json::from_str(&text).map_err(fail)?;
    prop_assert_eq!(&from_text, value, "value → JSON → value, JSON: {}", text);
    let again = serde_json::to_value(&from_text).map_err(fail)?;
    prop_assert_eq!(&again, &json, "JSON → value → JSON");

    let from_reader: T = serde_json::from_reader(text.as_bytes()).map_err(fail)?;
    prop_assert_eq!(&from_reader, value, "through an io::Read (owned keys)");

    let from_value: T = serde_json::from_value(json.clone()).map_err(fail)?;
    prop_assert_eq!(&from_value, value, "through serde_json::Value");

    // Tags and known fields last instead of first: the slow paths.
    let reversed = reverse_keys(json);
    let from_reversed: T = serde_json::from_value(reversed.clone()).map_err(fail)?;
    prop_assert_eq!(&from_reversed, value, "with every object's keys reversed");
    let text_reversed = serde_json::to_string(&reversed).map_err(fail)?;
    let from_reversed_text: T = serde_json::from_str(&text_reversed).map_err(fail)?;
    prop_assert_eq!(&from_reversed_text, value, "reversed, from text");
    Ok(())
}

fn fail(e: serde_json::Error) -> TestCaseError {
    TestCaseError::fail(e.to_string())
}

fn reverse_keys(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .rev()
                .map(|(k, v)| (k, reverse_keys(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(reverse_keys).collect()),
        other => other,
    }
}

macro_rules! roundtrip {
    ($($name:ident: $strategy:expr;)*) => {
        proptest! {
            $(
                #[test]
                fn $name(value in $strategy) {
                    check_roundtrip(&value)?;
                }
            )*
        }
    };
}

roundtrip! {
    implementation: arb_implementation();
    icon: arb_icon();
    annotations: arb_annotations();
    result_type: arb_result_type();
    cache_scope: arb_cache_scope();
    paginated_request_params: arb_paginated_request_params();
    empty_params: arb_empty_params();
    empty_result: arb_empty_result();
    client_capabilities: arb_client_capabilities();
    server_capabilities: arb_server_capabilities();
    initialize_request_params: arb_initialize_request_params();
    initialize_result: arb_initialize_result();
    progress_notification_params: arb_progress_notification_params();
    cancelled_notification_params: arb_cancelled_notification_params();
    text_content: arb_text_content();
    image_content: arb_image_content();
    audio_content: arb_audio_content();
    resource_link: arb_resource_link();
    embedded_resource: arb_embedded_resource();
    resource_contents: arb_resource_contents();
    content_block: arb_content_block();
    tool_use_content: arb_tool_use_content();
    tool_result_content: arb_tool_result_content();
    sampling_content: arb_sampling_content();
    sampling_message_content: arb_sampling_message_content();
    tool_annotations: arb_tool_annotations();
    tool_execution: arb_tool_execution();
    tool: arb_tool();
    list_tools_result: arb_list_tools_result();
    task_metadata: arb_task_metadata();
    call_tool_request_params: arb_call_tool_request_params();
    call_tool_result: arb_call_tool_result();
    resource: arb_resource();
    resource_template: arb_resource_template();
    list_resources_result: arb_list_resources_result();
    list_resource_templates_result: arb_list_resource_templates_result();
    read_resource_request_params: arb_read_resource_request_params();
    read_resource_result: arb_read_resource_result();
    subscribe_request_params: arb_subscribe_request_params();
    resource_updated_notification_params: arb_resource_updated_notification_params();
    prompt_argument: arb_prompt_argument();
    prompt: arb_prompt();
    list_prompts_result: arb_list_prompts_result();
    get_prompt_request_params: arb_get_prompt_request_params();
    prompt_message: arb_prompt_message();
    get_prompt_result: arb_get_prompt_result();
    logging_level: arb_logging_level();
    set_level_request_params: arb_set_level_request_params();
    logging_message_notification_params: arb_logging_message_notification_params();
    reference: arb_reference();
    complete_request_params: arb_complete_request_params();
    complete_result: arb_complete_result();
    root: arb_root();
    list_roots_result: arb_list_roots_result();
    sampling_message: arb_sampling_message();
    model_preferences: arb_model_preferences();
    create_message_request_params: arb_create_message_request_params();
    create_message_result: arb_create_message_result();
    elicitation_schema: arb_elicitation_schema();
    elicit_url_params: arb_elicit_url_params();
    elicit_request_params: arb_elicit_request_params();
    elicit_result: arb_elicit_result();
    elicitation_complete_notification_params: arb_elicitation_complete_notification_params();
    url_elicitation_required_data: arb_url_elicitation_required_data();
    task: arb_task();
    create_task_result: arb_create_task_result();
    task_id_params: arb_task_id_params();
    list_tasks_result: arb_list_tasks_result();
    related_task_metadata: arb_related_task_metadata();
    discover_result: arb_discover_result();
    subscription_filter: arb_subscription_filter();
    subscriptions_listen_request_params: arb_subscriptions_listen_request_params();
    subscriptions_acknowledged_notification_params: arb_subscriptions_acknowledged_notification_params();
    input_required_result: arb_input_required_result();
}

proptest! {
    #[test]
    fn messages_roundtrip(message in arb_message()) {
        let bytes = message.to_bytes();
        prop_assert!(!bytes.contains(&b'\n'));
        let back: Message = serde_json::from_slice(&bytes).map_err(fail)?;
        prop_assert_eq!(back, message);
    }

    #[test]
    fn unknown_blocks_keep_their_json(block in arb_unknown_block()) {
        let text = serde_json::to_string(&block).map_err(fail)?;
        let decoded: ContentBlock = serde_json::from_str(&text).map_err(fail)?;
        prop_assert_eq!(&decoded, &ContentBlock::Unknown(block.clone()));
        prop_assert_eq!(serde_json::to_string(&decoded).map_err(fail)?, text);
    }
}

#[test]
fn unknown_block_is_kept_byte_for_byte() {
    // Tag first and tag last.
    for text in [
        r#"{"type":"x-hologram","frames":[1,2.5,{"depth":null,"z":"\u00e9\n"}],"label":"new","n":-3}"#,
        r#"{"frames":[1,2.5,{"depth":null}],"label":"new","type":"x-hologram"}"#,
        r#"{"kind":"no type at all"}"#,
        r#"{}"#,
    ] {
        let block: ContentBlock = serde_json::from_str(text).unwrap();
        let ContentBlock::Unknown(value) = &block else {
            panic!("{text} decoded as {block:?}");
        };
        assert_eq!(value, &serde_json::from_str::<Value>(text).unwrap());
        let expected =
            serde_json::to_string(&serde_json::from_str::<Value>(text).unwrap()).unwrap();
        assert_eq!(serde_json::to_string(&block).unwrap(), expected);
    }
}

#[test]
fn known_blocks_with_malformed_bodies_are_errors() {
    for text in [
        r#"{"type":"text"}"#,
        r#"{"type":"text","text":5}"#,
        r#"{"text":"late tag, no body","type":"image"}"#,
        r#"{"type":"image","data":"AA=="}"#,
        r#"{"type":"resource","resource":{"uri":"file:///a"}}"#,
        r#"{"type":"resource","resource":{"uri":"file:///a","text":"t","blob":"AA=="}}"#,
        r#"{"type":5,"text":"x"}"#,
        r#"{"type":"text","text":"a","type":"image"}"#,
        // A known field twice, before the tag as after it.
        r#"{"text":"a","text":"b","type":"text"}"#,
        r#"{"type":"text","text":"a","text":"b"}"#,
        // A second tag after an unknown one.
        r#"{"type":"x-new","n":1,"type":"text"}"#,
        r#""text""#,
        r#"[]"#,
    ] {
        assert!(
            serde_json::from_str::<ContentBlock>(text).is_err(),
            "accepted {text}"
        );
    }
}

#[test]
fn tags_are_written_first() {
    let block = ContentBlock::text("hi");
    assert_eq!(
        serde_json::to_string(&block).unwrap(),
        r#"{"type":"text","text":"hi"}"#
    );
    let url = ElicitRequestParams::Url(ElicitUrlParams {
        message: "m".into(),
        elicitation_id: "e".into(),
        url: "https://x.example/".into(),
        ..ElicitUrlParams::default()
    });
    assert!(
        serde_json::to_string(&url)
            .unwrap()
            .starts_with(r#"{"mode":"url","#)
    );
}

#[test]
fn result_type_defaults_to_complete_and_keeps_unknown_values() {
    let r: CallToolResult = serde_json::from_value(json!({"content": []})).unwrap();
    assert_eq!(r.result_type(), &ResultType::Complete);
    let r: CallToolResult =
        serde_json::from_value(json!({"content": [], "resultType": "partial"})).unwrap();
    assert_eq!(r.result_type(), &ResultType::Other("partial".into()));

    let raw = serde_json::value::to_raw_value(&json!({"resultType": "input_required", "x": [1]}))
        .unwrap();
    assert_eq!(ResultType::peek(&raw).unwrap(), ResultType::InputRequired);
    let raw = serde_json::value::to_raw_value(&json!({"tools": []})).unwrap();
    assert_eq!(ResultType::peek(&raw).unwrap(), ResultType::Complete);
}

#[test]
fn peeking_the_result_type_scans_only_the_top_level() {
    for (text, expected) in [
        (
            r#"{"content":[{"type":"text","text":"resultType"}],"resultType":"complete"}"#,
            Some(ResultType::Complete),
        ),
        (
            r#"{"structuredContent":{"resultType":"input_required"},"content":[]}"#,
            Some(ResultType::Complete),
        ),
        (
            r#" { "a" : 1 , "resultType" : "input_required" } "#,
            Some(ResultType::InputRequired),
        ),
        (
            r#"{"x":"a \" resultType","resultType":"mystery"}"#,
            Some(ResultType::Other("mystery".into())),
        ),
        (
            r#"{"result\u0054ype":"input_required"}"#,
            Some(ResultType::InputRequired),
        ),
        (r#"{}"#, Some(ResultType::Complete)),
        (r#"{"resultType":7}"#, None),
        (r#"[1,2]"#, None),
    ] {
        let peeked = ResultType::peek_str(text).ok();
        assert_eq!(peeked, expected, "{text}");
        // What framing notes of the result, as a response arrives, agrees.
        let frame = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{text}}}"#);
        for frame in [
            mcp_proto::jsonrpc::Frame::from_slice(frame.as_bytes()),
            mcp_proto::jsonrpc::Frame::from_vec(frame.clone().into_bytes()),
        ] {
            let Ok(mcp_proto::jsonrpc::Frame::Single(mcp_proto::jsonrpc::Message::Response(
                response,
            ))) = frame
            else {
                panic!("not a response: {text}");
            };
            assert_eq!(response.result.result_type().ok(), expected, "{text}");
        }
        // The scan agrees with a full serde read.
        if let Ok(value) = serde_json::from_str::<Value>(text) {
            let serde = value
                .get("resultType")
                .map(|v| serde_json::from_value::<ResultType>(v.clone()).ok());
            let serde = match serde {
                None if value.is_object() => Some(ResultType::Complete),
                None => None,
                Some(v) => v,
            };
            assert_eq!(peeked, serde, "{text}");
        }
    }
}

#[test]
fn cache_ttl_treats_missing_and_negative_as_zero() {
    use std::time::Duration;
    let ttl = |v: Value| {
        serde_json::from_value::<ListToolsResult>(v)
            .unwrap()
            .cache_ttl()
    };
    assert_eq!(ttl(json!({"tools": []})), Duration::ZERO);
    assert_eq!(ttl(json!({"tools": [], "ttlMs": -5})), Duration::ZERO);
    assert_eq!(
        ttl(json!({"tools": [], "ttlMs": 1500})),
        Duration::from_millis(1500)
    );
    assert_eq!(
        ttl(json!({"tools": [], "ttlMs": 2.5})),
        Duration::from_micros(2500)
    );
}

// ---------------------------------------------------------------------------
// Golden samples: `tests/golden/<Type>.<label>.json` holds the params or
// result of one message, as a peer of some protocol version sends it.

/// Decodes a sample as `T`, re-encodes it and compares the two as JSON.
fn check_golden<T>(path: &Path, text: &str) -> Value
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let original: Value =
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{}: not JSON: {e}", path.display()));
    let decoded: T = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("{}: does not decode: {e}", path.display()));
    let encoded = serde_json::to_value(&decoded).unwrap();
    assert!(
        json_eq(&original, &encoded),
        "{}: re-encoded differently\n original: {original}\n  encoded: {encoded}",
        path.display()
    );
    let again: T = serde_json::from_value(encoded.clone()).unwrap();
    assert_eq!(again, decoded, "{}", path.display());
    encoded
}

/// JSON equality, except that numbers compare by value: fields the spec
/// types as `number` are `f64`, so an integer like `50` comes back as `50.0`.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn golden(path: &Path, text: &str) -> Value {
    let file = path
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or_default();
    let ty = file.split('.').next().unwrap_or_default();
    macro_rules! dispatch {
        ($($t:ident),* $(,)?) => {
            match ty {
                $(stringify!($t) => check_golden::<$t>(path, text),)*
                other => panic!("{file}: no type named {other:?} in the golden table"),
            }
        };
    }
    dispatch!(
        CallToolRequestParams,
        CallToolResult,
        CancelledNotificationParams,
        CompleteRequestParams,
        CompleteResult,
        CreateMessageRequestParams,
        CreateMessageResult,
        CreateTaskResult,
        DiscoverResult,
        ElicitRequestParams,
        ElicitResult,
        ElicitationCompleteNotificationParams,
        EmptyResult,
        GetPromptRequestParams,
        GetPromptResult,
        InitializeRequestParams,
        InitializeResult,
        InputRequiredResult,
        ListPromptsResult,
        ListResourceTemplatesResult,
        ListResourcesResult,
        ListRootsResult,
        ListToolsResult,
        LoggingMessageNotificationParams,
        ProgressNotificationParams,
        ReadResourceResult,
        ResourceUpdatedNotificationParams,
        SetLevelRequestParams,
        SubscriptionsListenRequestParams,
        Task,
        UrlElicitationRequiredData,
    )
}

fn golden_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn read_golden(name: &str) -> String {
    std::fs::read_to_string(golden_dir().join(name))
        .unwrap_or_else(|e| panic!("tests/golden/{name}: {e}"))
}

fn decode_golden<T: DeserializeOwned>(name: &str) -> T {
    serde_json::from_str(&read_golden(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn golden_samples_decode_and_reencode_unchanged() {
    let mut paths: Vec<_> = std::fs::read_dir(golden_dir())
        .expect("tests/golden exists")
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 30, "only {} golden samples", paths.len());
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        golden(&path, &text);
    }
}

#[test]
fn golden_samples_decode_to_the_expected_shapes() {
    let old: InitializeResult = decode_golden("InitializeResult.2024-11-05.json");
    assert_eq!(old.server_info.title, None);
    assert_eq!(old.server_info.icons, None);

    let new: InitializeResult = decode_golden("InitializeResult.2025-11-25.json");
    let icons = new.server_info.icons.as_deref().unwrap_or_default();
    assert_eq!(icons.len(), 2);
    assert_eq!(icons[0].theme.as_deref(), Some("light"));

    let tools: ListToolsResult = decode_golden("ListToolsResult.2025-03-26.json");
    let annotations = tools.tools[1].annotations.as_ref().unwrap();
    assert!(annotations.destructive() && annotations.idempotent() && !annotations.open_world());
    assert_eq!(tools.next_cursor.as_deref(), Some("next-page-cursor"));

    let tools: ListToolsResult = decode_golden("ListToolsResult.2025-11-25.json");
    assert_eq!(tools.tools[0].task_support(), TaskSupport::Optional);
    assert_eq!(tools.tools[0].display_name(), "Weather Forecast");
    assert!(tools.tools[0].output_schema.is_some());

    let tools: ListToolsResult = decode_golden("ListToolsResult.2026-07-28.json");
    assert_eq!(tools.cache_scope, Some(CacheScope::Public));
    assert_eq!(tools.cache_ttl(), std::time::Duration::from_secs(60));
    assert_eq!(
        tools.tools[0].output_schema,
        Some(JsonText::from(Value::Bool(true)))
    );

    let result: CallToolResult = decode_golden("CallToolResult.structured-2025-06-18.json");
    assert_eq!(result.structured_content.as_ref().unwrap()["humidity"], 65);
    assert!(!result.failed());

    let result: CallToolResult = decode_golden("CallToolResult.mixed-content.json");
    let kinds: Vec<_> = result.content.iter().map(ContentBlock::kind).collect();
    assert_eq!(
        kinds,
        [
            Some("text"),
            Some("image"),
            Some("audio"),
            Some("resource_link"),
            Some("resource"),
            Some("resource"),
            Some("x-hologram")
        ]
    );
    assert!(matches!(&result.content[3], ContentBlock::ResourceLink(l) if l.size == Some(2048)));
    assert!(matches!(
        &result.content[5],
        ContentBlock::Resource(EmbeddedResource {
            resource: ResourceContents::Blob(_),
            ..
        })
    ));
    assert!(matches!(&result.content[6], ContentBlock::Unknown(_)));

    let form: ElicitRequestParams = decode_golden("ElicitRequestParams.form-2025-06-18.json");
    assert!(matches!(
        form,
        ElicitRequestParams::Form(ElicitFormParams { mode: None, .. })
    ));
    let form: ElicitRequestParams = decode_golden("ElicitRequestParams.form-2025-11-25.json");
    let ElicitRequestParams::Form(form) = form else {
        panic!("not a form")
    };
    let filled = fill_elicitation_defaults(&form.requested_schema, JsonObject::new());
    assert_eq!(
        Value::Object(filled),
        json!({"name": "Jane", "age": 30, "plan": "free", "colors": ["red"], "subscribe": false})
    );
    let url: ElicitRequestParams = decode_golden("ElicitRequestParams.url-2025-11-25.json");
    assert!(matches!(url, ElicitRequestParams::Url(u) if u.elicitation_id.starts_with("550e")));

    let sampling: CreateMessageRequestParams =
        decode_golden("CreateMessageRequestParams.tools-2025-11-25.json");
    assert_eq!(sampling.tools.as_ref().map(Vec::len), Some(1));
    assert_eq!(
        sampling.tool_choice.as_ref().and_then(|c| c.mode.clone()),
        Some(ToolChoiceMode::Auto)
    );
    assert!(matches!(
        sampling.messages[1].content.blocks(),
        [SamplingContent::ToolUse(_), SamplingContent::ToolUse(_)]
    ));
    assert!(matches!(
        sampling.messages[2].content.blocks()[1],
        SamplingContent::ToolResult(ToolResultContent {
            is_error: Some(false),
            ..
        })
    ));

    let old: CreateMessageResult = decode_golden("CreateMessageResult.2024-11-05.json");
    assert!(matches!(old.content, SamplingMessageContent::One(_)));
    assert_eq!(
        old.stop_reason,
        Some(StopReason::Other("provider_specific_reason".into()))
    );

    let discover: DiscoverResult = decode_golden("DiscoverResult.2026-07-28.json");
    assert_eq!(discover.supported_versions, ["2026-07-28", "2025-11-25"]);
    assert_eq!(discover.cache_scope, Some(CacheScope::Private));
    assert!(
        discover
            .meta
            .as_ref()
            .is_some_and(|m| m.get(meta::SERVER_INFO).is_some())
    );

    let mrtr: InputRequiredResult = decode_golden("InputRequiredResult.2026-07-28.json");
    assert_eq!(mrtr.result_type(), &ResultType::InputRequired);

    let task: Task = decode_golden("Task.unlimited-ttl.json");
    assert_eq!(task.ttl, None);
    assert!(task.status.is_terminal());
}

#[test]
fn a_malformed_block_is_refused_alike_whatever_its_key_order() {
    // The same body with the tag first (decoded straight into the variant)
    // and last (its fields read ahead of the tag, then taken over): the
    // same error, apart from where in the text it was noticed.
    for (first, last) in [
        (r#"{"type":"text","text":5}"#, r#"{"text":5,"type":"text"}"#),
        (
            r#"{"type":"text","annotations":{"priority":"high"},"text":"a"}"#,
            r#"{"annotations":{"priority":"high"},"text":"a","type":"text"}"#,
        ),
        (
            r#"{"type":"image","data":"AA=="}"#,
            r#"{"data":"AA==","type":"image"}"#,
        ),
        (
            r#"{"type":"resource","resource":{"uri":"file:///a"}}"#,
            r#"{"resource":{"uri":"file:///a"},"type":"resource"}"#,
        ),
        (
            r#"{"type":"text","text":"a","text":"b"}"#,
            r#"{"text":"a","text":"b","type":"text"}"#,
        ),
    ] {
        let refusal = |text: &str| {
            let error = serde_json::from_str::<ContentBlock>(text)
                .expect_err(text)
                .to_string();
            match error.find(" at line ") {
                Some(at) => error[..at].to_owned(),
                None => error,
            }
        };
        assert_eq!(refusal(first), refusal(last), "{first} against {last}");
    }
}
