//! The strategies for whole typed requests and whole client sessions produce what they promise: messages that round-trip and sessions a server could accept.
//!
//! Needs the `proptest` feature for the shared strategies; CI runs
//! `cargo test --workspace --all-features`.
#![cfg(feature = "proptest")]

use std::collections::HashSet;
use std::fmt::Debug;

use mcp_proto::codec::ndjson::{self, NdjsonDecoder};
use mcp_proto::jsonrpc::{Frame, Message, RawJson, RequestId};
use mcp_proto::methods;
use mcp_proto::strategies::proptest;
use mcp_proto::strategies::*;
use mcp_proto::types::*;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde::de::DeserializeOwned;

fn fail(error: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(error.to_string())
}

/// `message` survives both wire forms: its compact JSON and one NDJSON line.
fn check_wire_roundtrip(message: &Message) -> Result<(), TestCaseError> {
    let again = Frame::from_slice(&message.to_bytes()).map_err(fail)?;
    prop_assert_eq!(&again, &Frame::Single(message.clone()));
    let mut line = Vec::new();
    ndjson::encode(message, &mut line).map_err(fail)?;
    let mut decoder = NdjsonDecoder::new();
    decoder.push(&line);
    let decoded = decoder.next_frame().ok_or_else(|| fail("no line"))?;
    prop_assert_eq!(decoded.map_err(fail)?, Frame::Single(message.clone()));
    Ok(())
}

/// The params of request `message` decode to `T`, and equal `expected`.
fn params_of<T: DeserializeOwned>(message: &Message) -> Result<T, TestCaseError> {
    let Message::Request(request) = message else {
        return Err(fail(format!("not a request: {message:?}")));
    };
    let params: &RawJson = request
        .params
        .as_ref()
        .ok_or_else(|| fail(format!("{} has no params", request.method)))?;
    params.decode().map_err(fail)
}

fn check_typed<T>(method: &str, params: &T, message: &Message) -> Result<(), TestCaseError>
where
    T: DeserializeOwned + PartialEq + Debug,
{
    prop_assert_eq!(message.method(), Some(method));
    prop_assert!(message.id().is_some(), "a request has an id");
    prop_assert_eq!(&params_of::<T>(message)?, params);
    check_wire_roundtrip(message)
}

/// The params of a client request decode to the type its method names.
fn check_client_request(message: &Message) -> Result<(), TestCaseError> {
    let method = message.method().ok_or_else(|| fail("no method"))?;
    match method {
        methods::PING => {
            let Message::Request(request) = message else {
                return Err(fail("ping is not a request"));
            };
            prop_assert!(request.params.is_none());
        }
        methods::TOOLS_LIST | methods::RESOURCES_LIST | methods::PROMPTS_LIST => {
            params_of::<PaginatedRequestParams>(message)?;
        }
        methods::TOOLS_CALL => {
            params_of::<CallToolRequestParams>(message)?;
        }
        methods::RESOURCES_READ => {
            params_of::<ReadResourceRequestParams>(message)?;
        }
        methods::RESOURCES_SUBSCRIBE => {
            params_of::<SubscribeRequestParams>(message)?;
        }
        methods::PROMPTS_GET => {
            params_of::<GetPromptRequestParams>(message)?;
        }
        methods::LOGGING_SET_LEVEL => {
            params_of::<SetLevelRequestParams>(message)?;
        }
        methods::COMPLETION_COMPLETE => {
            params_of::<CompleteRequestParams>(message)?;
        }
        other => return Err(fail(format!("{other} is not a client request"))),
    }
    check_wire_roundtrip(message)
}

/// What a server checks of a client's session: `initialize` first,
/// `notifications/initialized` next, then requests whose ids are unique in
/// the session, and cancellations that each name an earlier request other
/// than `initialize`, at most once.
fn check_session(messages: &[Message]) -> Result<(), TestCaseError> {
    prop_assert!(messages.len() >= 2, "initialize and initialized come first");
    prop_assert_eq!(messages[0].method(), Some(methods::INITIALIZE));
    params_of::<InitializeRequestParams>(&messages[0])?;
    prop_assert_eq!(
        messages[1].method(),
        Some(methods::NOTIFICATION_INITIALIZED)
    );
    let initialize_id = messages[0].id().cloned().ok_or_else(|| fail("no id"))?;
    let mut ids: HashSet<RequestId> = HashSet::from([initialize_id.clone()]);
    let mut cancelled: HashSet<RequestId> = HashSet::new();
    for message in &messages[2..] {
        check_wire_roundtrip(message)?;
        match message {
            Message::Request(request) => {
                prop_assert!(
                    ids.insert(request.id.clone()),
                    "id {:?} used twice",
                    request.id
                );
                prop_assert_ne!(request.method.as_str(), methods::INITIALIZE);
                check_client_request(message)?;
            }
            Message::Notification(notification) => match notification.method.as_str() {
                methods::NOTIFICATION_CANCELLED => {
                    let params: CancelledNotificationParams = notification
                        .params
                        .as_ref()
                        .ok_or_else(|| fail("a cancellation without params"))?
                        .decode()
                        .map_err(fail)?;
                    let id = params.request_id.ok_or_else(|| fail("no requestId"))?;
                    prop_assert!(ids.contains(&id), "{:?} was not sent before", id);
                    prop_assert_ne!(&id, &initialize_id, "initialize is never cancelled");
                    prop_assert!(cancelled.insert(id.clone()), "{:?} cancelled twice", id);
                }
                methods::NOTIFICATION_ROOTS_LIST_CHANGED => {}
                other => return Err(fail(format!("unexpected notification {other}"))),
            },
            other => return Err(fail(format!("a client session sends no {other:?}"))),
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn typed_requests_carry_their_params_and_round_trip(
        (call, call_message) in arb_call_tool_request(),
        (read, read_message) in arb_read_resource_request(),
        (get, get_message) in arb_get_prompt_request(),
    ) {
        check_typed(methods::TOOLS_CALL, &call, &call_message)?;
        check_typed(methods::RESOURCES_READ, &read, &read_message)?;
        check_typed(methods::PROMPTS_GET, &get, &get_message)?;
    }

    #[test]
    fn any_client_request_has_params_of_its_methods_type(message in arb_client_request()) {
        check_client_request(&message)?;
    }

    #[test]
    fn client_sessions_are_valid_and_cross_one_stream_intact(session in arb_client_session()) {
        check_session(&session)?;
        // The whole session as one NDJSON stream decodes to itself.
        let mut stream = Vec::new();
        for message in &session {
            ndjson::encode(message, &mut stream).map_err(fail)?;
        }
        let mut decoder = NdjsonDecoder::new();
        decoder.push(&stream);
        let mut decoded = Vec::new();
        while let Some(frame) = decoder.next_frame() {
            match frame.map_err(fail)? {
                Frame::Single(message) => decoded.push(message),
                batch => return Err(fail(format!("a batch appeared: {batch:?}"))),
            }
        }
        prop_assert_eq!(decoded, session);
    }
}

#[test]
fn sessions_do_cancel_earlier_requests() {
    // The property above must not hold vacuously: over a run, sessions
    // with requests and cancellations of them do come up.
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = arb_client_session();
    let (mut requests, mut cancellations, mut string_ids) = (0, 0, 0);
    for _ in 0..64 {
        let session = strategy.new_tree(&mut runner).unwrap().current();
        for message in &session[2..] {
            match message {
                Message::Request(request) => {
                    requests += 1;
                    string_ids += usize::from(matches!(request.id, RequestId::String(_)));
                }
                Message::Notification(n) if n.method == methods::NOTIFICATION_CANCELLED => {
                    cancellations += 1;
                }
                _ => {}
            }
        }
    }
    assert!(requests > 100, "{requests} requests");
    assert!(cancellations > 20, "{cancellations} cancellations");
    assert!(string_ids > 20, "{string_ids} string ids");
}
