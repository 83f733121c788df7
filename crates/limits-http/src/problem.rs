//! RFC 9457 problem details: the JSON body of every error this project
//! answers (429 from the limiter, 502/504 from the proxy, 413, 503).

use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{Response, StatusCode};
use http_body_util::Full;

/// The media type of a problem body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// A `status` response with a problem+json body: `title` is the status's
/// reason, `detail` says what happened to this request.
///
/// ```
/// use http::StatusCode;
/// let r = limits_http::problem(StatusCode::BAD_GATEWAY, "upstream 127.0.0.1:9 refused the connection");
/// assert_eq!(r.status(), 502);
/// assert_eq!(r.headers()["content-type"], "application/problem+json");
/// ```
pub fn problem(status: StatusCode, detail: &str) -> Response<Full<Bytes>> {
    problem_with(status, detail, serde_json::Map::new())
}

/// [`problem`] with extension members (e.g. `"retry_after": 1`).
pub fn problem_with(
    status: StatusCode,
    detail: &str,
    extensions: serde_json::Map<String, serde_json::Value>,
) -> Response<Full<Bytes>> {
    let mut body = serde_json::Map::new();
    body.insert("type".into(), "about:blank".into());
    body.insert(
        "title".into(),
        status.canonical_reason().unwrap_or("Error").into(),
    );
    body.insert("status".into(), status.as_u16().into());
    body.insert("detail".into(), detail.into());
    body.extend(extensions);
    let bytes = serde_json::to_vec(&serde_json::Value::Object(body)).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    response
}
