//! The shapes the page's answers take: the response body type, JSON answers and their headers.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};

/// Every response's body.
pub(crate) type ResponseBody = BoxBody<Bytes, Infallible>;

/// The JSON response every API route returns.
pub(crate) fn json(status: StatusCode, value: &serde_json::Value) -> Response<ResponseBody> {
    let mut response = Response::new(Full::new(Bytes::from(value.to_string())).boxed());
    *response.status_mut() = status;
    set(&mut response, header::CONTENT_TYPE, "application/json");
    set(&mut response, header::CACHE_CONTROL, "no-store");
    response
}

/// Sets one header of a response to a fixed value.
pub(crate) fn set(
    response: &mut Response<ResponseBody>,
    name: header::HeaderName,
    value: &'static str,
) {
    response
        .headers_mut()
        .insert(name, HeaderValue::from_static(value));
}
