//! Legacy HTTP+SSE (MCP 2024-11-05 "Transports" §HTTP with SSE): the GET stream, its `endpoint` event, and one POST per message; plus the fallback to it.

use std::sync::Arc;

use bytes::Bytes;
use http::Method;
use http::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use mcp_proto::codec::SseDecoder;
use url::Url;

use super::client::{drain, http_error, media_type, same_origin, unexpected_content_type};
use super::events::{SseBody, SseItem, event_frame};
use super::shared::{Mode, Outgoing, Shared};
use crate::transport::TransportError;

/// Opens the SSE stream, waits for its endpoint, and starts reading it:
/// the transport speaks legacy SSE from now on.
pub(crate) async fn start(shared: &Arc<Shared>) -> Result<(), TransportError> {
    let (endpoint, stream, decoder) = open(shared).await?;
    begin(shared, endpoint, stream, decoder);
    Ok(())
}

/// POSTs one message to the endpoint. Any 2xx means delivered (202 is
/// usual); the answer, if any, comes on the SSE stream.
pub(crate) async fn post(shared: &Shared, endpoint: &Url, out: Outgoing) {
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(
        ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    match shared
        .client
        .send(Method::POST, endpoint, &headers, out.body.clone())
        .await
    {
        Ok(response) if response.status().is_success() => drain(response.into_body()).await,
        Ok(response) => {
            let error = http_error(response).await;
            shared.report(&out, error);
        }
        Err(error) => shared.report(&out, error),
    }
}

/// Auto mode: the Streamable HTTP `initialize` was refused with 400, 404
/// or 405 (`refusal`). Try the same URL as a legacy SSE server and, if it
/// is one, send the `initialize` there (MCP "Transports", backwards
/// compatibility).
pub(crate) async fn fall_back(shared: &Arc<Shared>, out: Outgoing, refusal: TransportError) {
    match open(shared).await {
        Ok((endpoint, stream, decoder)) => {
            tracing::debug!("the server refused Streamable HTTP; using legacy HTTP+SSE");
            let endpoint = begin(shared, endpoint, stream, decoder);
            post(shared, &endpoint, out).await;
        }
        Err(error) => {
            shared.set_mode(Mode::Streamable);
            // Report the legacy failure when the server did look like a
            // legacy server (an SSE stream with a bad endpoint) or asked for
            // credentials; otherwise the original refusal says more.
            let error = match error {
                TransportError::Protocol(_) | TransportError::TooLarge { .. } => error,
                TransportError::Http {
                    status: 401 | 403, ..
                }
                | TransportError::Forbidden { .. } => error,
                other => {
                    tracing::debug!(error = %other, "the legacy SSE fallback failed too");
                    refusal
                }
            };
            shared.report(&out, error);
        }
    }
}

/// Auto mode: the `initialize` POST was answered with an SSE stream whose
/// first event is `endpoint` (`endpoint_data`): the server is a legacy one
/// and that stream is its SSE stream.
pub(crate) async fn adopt(
    shared: &Arc<Shared>,
    out: Outgoing,
    endpoint_data: &str,
    stream: SseBody,
    decoder: SseDecoder,
) {
    match endpoint_url(&shared.url, endpoint_data) {
        Ok(endpoint) => {
            tracing::debug!("the server answered with a legacy SSE stream; using legacy HTTP+SSE");
            let endpoint = begin(shared, endpoint, stream, decoder);
            post(shared, &endpoint, out).await;
        }
        Err(error) => {
            shared.set_mode(Mode::Streamable);
            shared.report(&out, error);
        }
    }
}

/// Settles the legacy mode and starts the task that reads the stream.
fn begin(shared: &Arc<Shared>, endpoint: Url, stream: SseBody, decoder: SseDecoder) -> Arc<Url> {
    let endpoint = Arc::new(endpoint);
    shared.set_mode(Mode::Legacy(Arc::clone(&endpoint)));
    let reader = Arc::clone(shared);
    shared.spawn(async move { read(&reader, stream, decoder).await });
    endpoint
}

/// GETs the SSE URL and reads up to the `endpoint` event, which must come
/// within [`HttpOptions::endpoint_timeout`](super::HttpOptions::endpoint_timeout).
async fn open(shared: &Shared) -> Result<(Url, SseBody, SseDecoder), TransportError> {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    let response = shared
        .client
        .send(Method::GET, &shared.url, &headers, Bytes::new())
        .await?;
    if !response.status().is_success() {
        return Err(http_error(response).await);
    }
    let media = media_type(response.headers());
    if media.as_deref() != Some("text/event-stream") {
        let status = response.status().as_u16();
        drain(response.into_body()).await;
        return Err(unexpected_content_type(
            status,
            media.as_deref(),
            "text/event-stream",
        ));
    }
    let mut stream = SseBody::new(response.into_body());
    let mut decoder = SseDecoder::with_max_event_size(shared.limits.max_message_size);
    let endpoint = tokio::time::timeout(
        shared.limits.endpoint_timeout,
        wait_for_endpoint(shared, &mut stream, &mut decoder),
    )
    .await
    .map_err(|_| {
        TransportError::Protocol(format!(
            "no `endpoint` event within {} s",
            shared.limits.endpoint_timeout.as_secs_f64()
        ))
    })??;
    Ok((endpoint, stream, decoder))
}

async fn wait_for_endpoint(
    shared: &Shared,
    stream: &mut SseBody,
    decoder: &mut SseDecoder,
) -> Result<Url, TransportError> {
    loop {
        match stream.next(decoder).await {
            SseItem::Event(event) if event.event == "endpoint" => {
                return endpoint_url(&shared.url, &event.data);
            }
            SseItem::Event(event) => {
                if let Some(frame) = event_frame(event, &shared.bodies) {
                    shared.push_frame(frame);
                }
            }
            SseItem::End => {
                return Err(TransportError::Protocol(
                    "the SSE stream ended before its `endpoint` event".to_owned(),
                ));
            }
            SseItem::Broken(error) => return Err(error),
            SseItem::TooLarge(limit) => return Err(TransportError::TooLarge { limit }),
        }
    }
}

/// Resolves the `endpoint` event's URI against the SSE URL and refuses
/// another origin (what the TypeScript SDK does: a server must not steer
/// the client's messages, and credentials, to another host).
fn endpoint_url(base: &Url, data: &str) -> Result<Url, TransportError> {
    let url = base.join(data.trim()).map_err(|_| {
        TransportError::Protocol("the `endpoint` event does not hold a URI".to_owned())
    })?;
    if !same_origin(base, &url) {
        return Err(TransportError::Protocol(format!(
            "the `endpoint` event points to another origin ({}); refused",
            url.origin().ascii_serialization()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(TransportError::Protocol(
            "the `endpoint` event holds user info; refused".to_owned(),
        ));
    }
    Ok(url)
}

/// Reads the SSE stream for as long as it lasts: every server message
/// arrives here, and its end ends the session.
async fn read(shared: &Shared, mut stream: SseBody, mut decoder: SseDecoder) {
    loop {
        match stream.next(&mut decoder).await {
            SseItem::Event(event) if event.event == "endpoint" => {
                tracing::debug!("ignoring a repeated `endpoint` event");
            }
            SseItem::Event(event) => {
                if let Some(frame) = event_frame(event, &shared.bodies) {
                    shared.push_frame(frame);
                }
                // Every response arrives on this stream: an earlier one's
                // data, once decoded, collects the next.
                shared.bodies.recycle(&mut decoder);
            }
            SseItem::End => {
                shared.finish(None);
                return;
            }
            SseItem::Broken(error) => {
                shared.finish(Some(error));
                return;
            }
            SseItem::TooLarge(limit) => {
                shared.finish(Some(TransportError::TooLarge { limit }));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_is_resolved_against_the_sse_url_and_kept_on_its_origin() {
        let base = Url::parse("http://127.0.0.1:8000/sse").unwrap();
        assert_eq!(
            endpoint_url(&base, " /messages?sessionId=abc\n")
                .unwrap()
                .as_str(),
            "http://127.0.0.1:8000/messages?sessionId=abc"
        );
        assert_eq!(
            endpoint_url(&base, "messages").unwrap().as_str(),
            "http://127.0.0.1:8000/messages"
        );
        for other in [
            "http://127.0.0.1:8001/messages",
            "https://127.0.0.1:8000/messages",
            "//evil.example/messages",
            "http://evil.example/messages",
        ] {
            assert!(
                matches!(endpoint_url(&base, other), Err(TransportError::Protocol(_))),
                "{other}"
            );
        }
    }
}
