//! RFC 9457 problem details: the JSON body of every error this project
//! answers (429 from the limiter, 502/504 from the proxy, 413, 503).
//!
//! The body is written member by member straight into its buffer: a 429 is
//! the deny path's whole answer, so it should cost one buffer, not a JSON
//! tree of owned keys and values built and then serialized.

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::Full;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer as _};
use std::fmt;

/// The media type of a problem body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// The members every problem has; extensions with these names are skipped.
const STANDARD: [&str; 4] = ["type", "title", "status", "detail"];

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
    problem_members(status, detail, std::iter::empty::<(&str, ())>())
}

/// [`problem`] with extension members (e.g. `"retry_after": 1`), written
/// after the standard ones; an extension named like a standard member
/// (`type`, `title`, `status`, `detail`) is skipped.
///
/// ```
/// use http::StatusCode;
/// use http_body_util::BodyExt;
/// let mut ext = serde_json::Map::new();
/// ext.insert("retry_after".into(), 3.into());
/// let r = limits_http::problem_with(StatusCode::TOO_MANY_REQUESTS, "slow down", ext);
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let body = r.into_body().collect().await.unwrap().to_bytes();
/// assert_eq!(
///     &body[..],
///     br#"{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"slow down","retry_after":3}"#
/// );
/// # });
/// ```
pub fn problem_with(
    status: StatusCode,
    detail: &str,
    extensions: serde_json::Map<String, serde_json::Value>,
) -> Response<Full<Bytes>> {
    problem_members(
        status,
        detail,
        extensions.iter().map(|(k, v)| (k.as_str(), v)),
    )
}

/// The one writer of problem bodies: the standard members, then
/// `extensions` in order; `detail` is written through its `Display`, so a
/// formatted detail needs no `String` of its own.
pub(crate) fn problem_members<'a, V: Serialize>(
    status: StatusCode,
    detail: impl fmt::Display,
    extensions: impl IntoIterator<Item = (&'a str, V)>,
) -> Response<Full<Bytes>> {
    let mut bytes = Vec::with_capacity(160);
    let title = status.canonical_reason().unwrap_or("Error");
    let written = (|| {
        let mut serializer = serde_json::Serializer::new(&mut bytes);
        let mut map = (&mut serializer).serialize_map(None)?;
        map.serialize_entry("type", "about:blank")?;
        map.serialize_entry("title", title)?;
        map.serialize_entry("status", &status.as_u16())?;
        map.serialize_entry("detail", &AsString(detail))?;
        for (name, value) in extensions {
            if !STANDARD.contains(&name) {
                map.serialize_entry(name, &value)?;
            }
        }
        map.end()
    })();
    // Writing into a Vec fails only if a Display impl fails; the body is then
    // what was written so far, never a panic.
    let _: Result<(), serde_json::Error> = written;
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    response
}

/// Serializes a `Display` as a JSON string, escaped as it is formatted.
struct AsString<D>(D);

impl<D: fmt::Display> Serialize for AsString<D> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}
