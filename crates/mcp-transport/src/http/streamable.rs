//! Streamable HTTP (MCP "Transports", 2025-03-26 to 2025-11-25, and 2026-07-28): the POST of each message, the GET stream, resumption and DELETE.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use http::{Method, StatusCode};
use hyper::body::Incoming;
use mcp_proto::Frame;
use mcp_proto::codec::SseDecoder;
use mcp_proto::text::ERROR_TEXT_LIMIT;

use super::client::{drain, http_error, media_type, read_body, unexpected_content_type};
use super::events::{SseBody, SseItem, answers, event_frame};
use super::legacy_sse;
use super::shared::{Kind, Mode, Outgoing, SESSION_ID, Shared};
use crate::transport::TransportError;

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";
const JSON_OR_EVENT_STREAM: &str = "application/json or text/event-stream";
/// §Sending Messages to the Server: the client MUST list both.
const POST_ACCEPT: &str = "application/json, text/event-stream";
/// Reconnection waits without a server `retry` grow to at most this.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// POSTs one message and handles the answer. With `probe`, this is Auto
/// mode's first `initialize`: a 400, 404 or 405, or an SSE answer whose
/// first event is `endpoint`, hands over to legacy SSE.
pub(crate) async fn post(shared: &Arc<Shared>, mut out: Outgoing, probe: bool) {
    // The stateless era's headers are the POST's map itself (taken, not
    // copied: a second map and a copy into it cost about 2,000 instructions
    // per call, measured with callgrind); `out.modern` stays `Some`.
    let mut headers = match out.modern.as_deref_mut() {
        Some(modern) => std::mem::take(modern),
        None => HeaderMap::new(),
    };
    headers.insert(ACCEPT, HeaderValue::from_static(POST_ACCEPT));
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(JSON));
    // §Protocol Version Header: never on `initialize`, whose POST must not
    // carry an old session id either. The stateless era has no session.
    let had_session = out.modern.is_none()
        && out.kind != Kind::Initialize
        && shared.session_headers(&mut headers);
    if out.kind == Kind::Initialize && out.modern.is_none() {
        // §Listening for Messages from the Server: the GET stream opened
        // after this handshake holds a connection of its own, and requests
        // wait for its answer (see `Shared::wait_listener`). That connection
        // is opened while `initialize` is answered, not after: its TCP (and
        // TLS) handshake is then off the connect's critical path.
        let spare = Arc::clone(shared);
        shared.spawn(async move { spare.client.open_spare(&spare.url).await });
    }
    if out.kind == Kind::Initialized && out.modern.is_none() {
        // §Listening for Messages from the Server: the session exists once
        // `initialize` was answered, so the GET stream is opened beside this
        // POST, on a connection of its own.
        shared.start_listener();
    }
    let response = match shared
        .client
        .send(Method::POST, &shared.url, &headers, out.body.clone())
        .await
    {
        Ok(response) => response,
        Err(error) => {
            // Network errors are not fallback signals (§Backwards Compatibility).
            if probe {
                shared.set_mode(Mode::Streamable);
            }
            if out.kind == Kind::Initialized {
                shared.open_listener_gate();
            }
            shared.report(&out, error);
            return;
        }
    };
    let status = response.status();
    if !status.is_success() && out.kind == Kind::Initialized {
        shared.open_listener_gate();
    }
    if !status.is_success() && out.modern.is_some() {
        // 2026-07-28: an error status may carry the request's JSON-RPC
        // error (-32020/-32021/-32022/-32602 with 400, -32601 with 404);
        // it is the server's answer. Anything else is a refusal.
        modern_refusal(shared, &out, response).await;
        return;
    }
    if status == StatusCode::BAD_REQUEST
        && out.kind == Kind::Initialize
        && shared.probe_skipped.load(Ordering::Relaxed)
        && media_type(response.headers()).as_deref() == Some(JSON)
    {
        skipped_probe_refusal(shared, out, response, probe).await;
        return;
    }
    if !status.is_success() {
        if probe
            && matches!(
                status,
                StatusCode::BAD_REQUEST | StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED
            )
        {
            let refusal = http_error(response).await;
            legacy_sse::fall_back(shared, out, refusal).await;
            return;
        }
        if probe {
            shared.set_mode(Mode::Streamable);
        }
        let error = if status == StatusCode::NOT_FOUND && had_session {
            drain(response.into_body()).await;
            TransportError::SessionExpired
        } else {
            http_error(response).await
        };
        shared.report(&out, error);
        return;
    }
    if out.kind == Kind::Initialize
        && let Some(id) = response.headers().get(&SESSION_ID)
    {
        shared.set_session_id(id);
    }
    let media = media_type(response.headers());
    if !out.is_request() {
        // §Sending Messages: a notification or response is answered with
        // 202 and no body; any 2xx is accepted.
        drain(response.into_body()).await;
        if out.kind == Kind::Initialized {
            shared.listener_gate_step();
        }
        return;
    }
    match media.as_deref() {
        Some(JSON) => {
            if probe {
                shared.set_mode(Mode::Streamable);
            }
            json_response(shared, &out, response).await;
        }
        Some(EVENT_STREAM) => post_stream(shared, out, response.into_body(), probe).await,
        None if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT => {
            // Not what the spec asks of a request, but harmless: the
            // response can only come on another stream.
            if probe {
                shared.set_mode(Mode::Streamable);
            }
            tracing::debug!("a request was accepted without a body");
            drain(response.into_body()).await;
        }
        other => {
            if probe {
                shared.set_mode(Mode::Streamable);
            }
            let error = unexpected_content_type(status.as_u16(), other, JSON_OR_EVENT_STREAM);
            drain(response.into_body()).await;
            shared.report(&out, error);
        }
    }
}

/// An error status in the stateless era (or for its probe): the body is
/// the server's answer when it is a JSON-RPC error for this request;
/// otherwise the request was not delivered (for the probe: a handshake-era
/// server, 2026-07-28 "Streamable HTTP" §Backward Compatibility).
async fn modern_refusal(shared: &Shared, out: &Outgoing, response: http::Response<Incoming>) {
    let status = response.status().as_u16();
    // How a handshake-era server refuses the probe (an unknown method, or
    // a POST without a session); the body may still say otherwise.
    let like_handshake_era = out.kind == Kind::Discover && matches!(status, 400 | 404 | 405);
    if media_type(response.headers()).as_deref() != Some(JSON) {
        // Not a JSON-RPC answer: only the start of it is read, for the error.
        let body = super::client::error_body(response).await;
        if like_handshake_era {
            shared.handshake_era.store(true, Ordering::Relaxed);
        }
        shared.report(out, TransportError::Http { status, body });
        return;
    }
    let body = match read_body(response, super::client::ERROR_BODY_LIMIT).await {
        Ok(body) => body,
        Err(_) => Bytes::new(),
    };
    if let Some(id) = &out.id
        && let Ok(frame) = Frame::from_slice(&body)
        && matches!(&frame, Frame::Single(mcp_proto::Message::Error(e)) if e.id.as_ref() == Some(id))
    {
        shared.push_frame(frame);
        return;
    }
    let length = Some(body.len() as u64);
    let body = super::client::bounded_body(&body[..body.len().min(ERROR_TEXT_LIMIT + 1)], length);
    if like_handshake_era {
        shared.handshake_era.store(true, Ordering::Relaxed);
    }
    shared.report(out, TransportError::Http { status, body });
}

/// A 400 with a JSON body to the `initialize` sent without the era probe
/// (the endpoint remembered as handshake-era, [`super::eras`]): when the
/// body is the request's JSON-RPC error, it is the server's answer (2026-07-28
/// "Versioning": a server that supports only the 2026-07-28 era names its
/// versions in its error to `initialize`, and a -32022 takes the session
/// back to the stateless era). Anything else is the refusal it was before:
/// with `probe` (Auto), a fall back to legacy HTTP+SSE.
async fn skipped_probe_refusal(
    shared: &Arc<Shared>,
    out: Outgoing,
    response: http::Response<Incoming>,
    probe: bool,
) {
    let status = response.status().as_u16();
    let body = read_body(response, super::client::ERROR_BODY_LIMIT)
        .await
        .unwrap_or_default();
    if let Some(id) = &out.id
        && let Ok(frame) = Frame::from_slice(&body)
        && matches!(&frame, Frame::Single(mcp_proto::Message::Error(e)) if e.id.as_ref() == Some(id))
    {
        if probe {
            shared.set_mode(Mode::Streamable);
        }
        shared.push_frame(frame);
        return;
    }
    let length = Some(body.len() as u64);
    let body = super::client::bounded_body(&body[..body.len().min(ERROR_TEXT_LIMIT + 1)], length);
    let refusal = TransportError::Http { status, body };
    if probe {
        legacy_sse::fall_back(shared, out, refusal).await;
        return;
    }
    shared.report(&out, refusal);
}

/// A JSON body: one message or a batch.
async fn json_response(shared: &Shared, out: &Outgoing, response: http::Response<Incoming>) {
    match shared
        .bodies
        .read_frame(response, shared.limits.max_message_size)
        .await
    {
        // Handed over whole: a large result is decoded where it lies.
        Ok(frame) => match frame {
            Ok(frame) => shared.push_frame(frame),
            Err(error) => shared.report(
                out,
                TransportError::Protocol(format!("the response body is not JSON-RPC: {error}")),
            ),
        },
        Err(error @ TransportError::TooLarge { .. }) => shared.finish(Some(error)),
        Err(error) => shared.report(out, error),
    }
}

/// A POST's SSE stream (§Sending Messages, §Resumability): dispatch every
/// event until the response to `out` has arrived; if the stream ends
/// first, resume it by GET with `Last-Event-ID` after `retry`.
async fn post_stream(shared: &Arc<Shared>, out: Outgoing, body: Incoming, probe: bool) {
    let mut decoder = SseDecoder::with_max_event_size(shared.limits.max_message_size);
    // The data of an earlier response, once decoded, collects this one's.
    shared.bodies.recycle(&mut decoder);
    let mut body = Some(SseBody::new(body));
    let mut undecided = probe;
    let mut answered = false;
    // Reconnections in a row that delivered no event.
    let mut attempts = 0u32;
    loop {
        if let Some(stream) = body.as_mut() {
            match stream.next(&mut decoder).await {
                SseItem::Event(event) => {
                    attempts = 0;
                    if undecided && !event.data.is_empty() {
                        undecided = false;
                        if event.event == "endpoint" {
                            // A legacy server that answers POST with its
                            // SSE stream (the 2024-11-05 backwards-compatibility advice, as
                            // VS Code does).
                            if let Some(stream) = body.take() {
                                legacy_sse::adopt(shared, out, &event.data, stream, decoder).await;
                            }
                            return;
                        }
                        shared.set_mode(Mode::Streamable);
                    }
                    if let Some(frame) = event_frame(event, &shared.bodies) {
                        if let Some(id) = &out.id
                            && answers(&frame, id)
                        {
                            answered = true;
                        }
                        shared.push_frame(frame);
                    }
                    continue;
                }
                SseItem::TooLarge(limit) => {
                    shared.finish(Some(TransportError::TooLarge { limit }));
                    return;
                }
                SseItem::End => {}
                SseItem::Broken(error) => {
                    if !answered {
                        tracing::debug!(%error, "a POST's SSE stream broke before its response");
                    }
                }
            }
            body = None;
            if undecided {
                undecided = false;
                shared.set_mode(Mode::Streamable);
            }
            if answered || !out.is_request() {
                return;
            }
            if out.modern.is_some() {
                // 2026-07-28: streams are not resumable; the request is lost.
                shared.report(
                    &out,
                    TransportError::Protocol(
                        "the response stream ended before the response".to_owned(),
                    ),
                );
                return;
            }
            if decoder.last_event_id().is_none() {
                shared.report(
                    &out,
                    TransportError::Protocol(
                        "the SSE stream ended before the response, with no event id to resume from"
                            .to_owned(),
                    ),
                );
                return;
            }
            // The server closed it to be polled: its caller may mirror that.
            if let Some(id) = &out.id {
                shared.stream_paused(id.clone(), reconnect_delay(shared, &decoder, attempts + 1));
            }
        }
        if attempts >= shared.limits.max_reconnect_attempts {
            shared.report(
                &out,
                TransportError::Protocol(format!(
                    "gave up resuming the SSE stream after {attempts} attempts"
                )),
            );
            return;
        }
        attempts += 1;
        tokio::time::sleep(reconnect_delay(shared, &decoder, attempts)).await;
        match open_get(shared, decoder.last_event_id()).await {
            Ok(stream) => body = Some(stream),
            Err(GetFailure::SessionExpired) => {
                shared.report(&out, TransportError::SessionExpired);
                return;
            }
            Err(GetFailure::NoStream(status)) => {
                shared.report(
                    &out,
                    TransportError::Protocol(format!(
                        "cannot resume the SSE stream: the server answered the GET with HTTP {status}"
                    )),
                );
                return;
            }
            Err(GetFailure::Failed(error)) => {
                tracing::debug!(%error, attempts, "resuming a POST's SSE stream failed");
            }
        }
    }
}

/// The GET stream of a session (§Listening for Messages from the Server),
/// kept open until the session changes or the transport closes.
pub(crate) async fn listen(shared: &Arc<Shared>, generation: u64) {
    let mut decoder = SseDecoder::with_max_event_size(shared.limits.max_message_size);
    let mut opened = false;
    let mut first = true;
    // Reconnections in a row that delivered no event.
    let mut attempts = 0u32;
    loop {
        if shared.generation() != generation {
            return;
        }
        let answer = open_get(shared, decoder.last_event_id()).await;
        if std::mem::take(&mut first) {
            // Whatever the answer, messages held for the GET stream need
            // not wait for it any longer.
            shared.listener_gate_step();
        }
        match answer {
            Ok(mut stream) => {
                opened = true;
                loop {
                    match stream.next(&mut decoder).await {
                        SseItem::Event(event) => {
                            attempts = 0;
                            if let Some(frame) = event_frame(event, &shared.bodies) {
                                shared.push_frame(frame);
                            }
                        }
                        SseItem::End => break,
                        SseItem::Broken(error) => {
                            tracing::debug!(%error, "the GET stream broke");
                            break;
                        }
                        SseItem::TooLarge(limit) => {
                            shared.finish(Some(TransportError::TooLarge { limit }));
                            return;
                        }
                    }
                }
            }
            Err(GetFailure::NoStream(status)) => {
                tracing::debug!(status, "the server offers no GET stream");
                return;
            }
            Err(GetFailure::SessionExpired) if opened => {
                shared.finish(Some(TransportError::SessionExpired));
                return;
            }
            Err(GetFailure::SessionExpired) => {
                // The first GET of a session the server has just accepted:
                // a 404 here means "no GET endpoint", not an expired session.
                tracing::debug!("the server offers no GET stream (404)");
                return;
            }
            Err(GetFailure::Failed(error)) => {
                tracing::debug!(%error, attempts, "opening the GET stream failed");
            }
        }
        if attempts >= shared.limits.max_reconnect_attempts {
            tracing::warn!(
                attempts,
                "giving up the GET stream after reconnections that delivered nothing"
            );
            return;
        }
        attempts += 1;
        tokio::time::sleep(reconnect_delay(shared, &decoder, attempts)).await;
    }
}

/// DELETEs the session, if there is one (§Session Management). 405 means
/// the server does not let clients end sessions; that is fine, as is any
/// failure: the session will expire on its own.
pub(crate) async fn delete_session(shared: &Shared) {
    let mut headers = HeaderMap::new();
    if !shared.session_headers(&mut headers) {
        return;
    }
    let request = shared
        .client
        .send(Method::DELETE, &shared.url, &headers, Bytes::new());
    match tokio::time::timeout(shared.limits.close_timeout, request).await {
        Ok(Ok(response)) => {
            let status = response.status();
            if !(status.is_success()
                || status == StatusCode::NOT_FOUND
                || status == StatusCode::METHOD_NOT_ALLOWED)
            {
                tracing::debug!(
                    status = status.as_u16(),
                    "the server refused the session DELETE"
                );
            }
            drain(response.into_body()).await;
        }
        Ok(Err(error)) => tracing::debug!(%error, "the session DELETE failed"),
        Err(_) => tracing::debug!("the session DELETE timed out"),
    }
}

/// Why a GET for an SSE stream gave no stream.
#[derive(Debug)]
enum GetFailure {
    /// 404, 405 or 406 without a session id: the server offers no GET stream.
    NoStream(u16),
    /// 404 on a GET that carried a session id.
    SessionExpired,
    /// Anything else: worth another try.
    Failed(TransportError),
}

/// Opens an SSE stream by GET, resuming after `last_event_id` if given.
async fn open_get(shared: &Shared, last_event_id: Option<&str>) -> Result<SseBody, GetFailure> {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static(EVENT_STREAM));
    let had_session = shared.session_headers(&mut headers);
    if let Some(id) = last_event_id {
        match HeaderValue::from_str(id) {
            Ok(value) => {
                headers.insert("last-event-id", value);
            }
            Err(_) => tracing::debug!("the last event id cannot be sent as a header"),
        }
    }
    let response = shared
        .client
        .send(Method::GET, &shared.url, &headers, Bytes::new())
        .await
        .map_err(GetFailure::Failed)?;
    let status = response.status();
    if status == StatusCode::NOT_FOUND && had_session {
        drain(response.into_body()).await;
        return Err(GetFailure::SessionExpired);
    }
    if matches!(
        status,
        StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED | StatusCode::NOT_ACCEPTABLE
    ) {
        drain(response.into_body()).await;
        return Err(GetFailure::NoStream(status.as_u16()));
    }
    if !status.is_success() {
        return Err(GetFailure::Failed(http_error(response).await));
    }
    let media = media_type(response.headers());
    if media.as_deref() != Some(EVENT_STREAM) {
        drain(response.into_body()).await;
        return Err(GetFailure::Failed(unexpected_content_type(
            status.as_u16(),
            media.as_deref(),
            EVENT_STREAM,
        )));
    }
    Ok(SseBody::new(response.into_body()))
}

/// The wait before reconnection number `attempt` (1 for the first): the
/// server's `retry` when it sent one (2025-11-25: the client MUST wait
/// it), else [`HttpOptions::default_retry`](super::HttpOptions::default_retry)
/// doubled per attempt, capped at 30 s.
fn reconnect_delay(shared: &Shared, decoder: &SseDecoder, attempt: u32) -> Duration {
    match decoder.retry_ms() {
        Some(ms) => Duration::from_millis(ms),
        None => {
            let factor = 1u32 << attempt.saturating_sub(1).min(5);
            shared
                .limits
                .default_retry
                .saturating_mul(factor)
                .min(MAX_BACKOFF.max(shared.limits.default_retry))
        }
    }
}

impl Shared {
    /// Starts the GET stream of the current session, unless one runs.
    /// Its first answer counts as one step of the listener gate (see
    /// [`Shared::wait_listener`]), and so does finding one running.
    pub(crate) fn start_listener(self: &Arc<Self>) {
        let generation = self.generation();
        if self.session().listener.is_some() {
            self.listener_gate_step();
            return;
        }
        let shared = Arc::clone(self);
        let Some(handle) = self.spawn(async move { listen(&shared, generation).await }) else {
            self.listener_gate_step();
            return;
        };
        let mut session = self.session();
        if session.generation == generation && session.listener.is_none() {
            session.listener = Some(handle);
        } else {
            handle.abort();
        }
    }
}
