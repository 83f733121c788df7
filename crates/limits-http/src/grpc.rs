//! gRPC clients get gRPC answers. A gRPC client reads an HTTP 429 (or 403,
//! or 503) and its JSON body as a broken stream and fails with INTERNAL; for
//! a request whose content type is `application/grpc` (or
//! `application/grpc+proto`, ...) the layer's own answers are gRPC
//! statuses instead: HTTP 200, trailers-only (the status in the headers, no
//! body), `grpc-status` and a percent-encoded `grpc-message`, and for a
//! wait, the exact delay as a `google.rpc.RetryInfo` inside the
//! `google.rpc.Status` of `grpc-status-details-bin` (base64 without
//! padding), as gRPC's richer error model carries it. The RateLimit headers
//! and Retry-After stay. A server's other answers of its own (`serve`'s
//! 502 and 504 from the proxy, the layer's 500 for a missing client
//! address) go through [`error_answer`] for the same reason.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use bytes::Bytes;
use http::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::Full;
use prost::Message as _;
use std::time::Duration;

/// gRPC status codes the layer answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum Code {
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    Internal = 13,
    Unavailable = 14,
}

impl Code {
    /// The code of one of our HTTP answers: the mapping gRPC gives, but
    /// for 429 (RESOURCE_EXHAUSTED: a quota, not an outage).
    pub(crate) fn of(status: StatusCode) -> Code {
        match status {
            StatusCode::TOO_MANY_REQUESTS | StatusCode::PAYLOAD_TOO_LARGE => {
                Code::ResourceExhausted
            }
            StatusCode::FORBIDDEN => Code::PermissionDenied,
            // A gateway whose upstream failed or timed out: worth a retry,
            // which is what UNAVAILABLE tells a gRPC client.
            StatusCode::SERVICE_UNAVAILABLE
            | StatusCode::BAD_GATEWAY
            | StatusCode::GATEWAY_TIMEOUT => Code::Unavailable,
            StatusCode::REQUEST_TIMEOUT => Code::DeadlineExceeded,
            s if s.is_client_error() => Code::InvalidArgument,
            _ => Code::Internal,
        }
    }
}

/// Whether a request is a gRPC client's, by its headers: its content type
/// is `application/grpc`, alone or followed by `+FORMAT` or parameters
/// (any case). Such a client reads only gRPC statuses ([`error_answer`]).
///
/// ```
/// use http::header::{HeaderMap, CONTENT_TYPE};
/// let mut headers = HeaderMap::new();
/// headers.insert(CONTENT_TYPE, "application/grpc+proto".parse().unwrap());
/// assert!(limits_http::is_grpc(&headers));
/// headers.insert(CONTENT_TYPE, "application/grpc-web".parse().unwrap());
/// assert!(!limits_http::is_grpc(&headers));
/// ```
pub fn is_grpc(headers: &HeaderMap) -> bool {
    const GRPC: &[u8] = b"application/grpc";
    let Some(value) = headers.get(CONTENT_TYPE) else {
        return false;
    };
    let value = value.as_bytes();
    value.len() >= GRPC.len()
        && value[..GRPC.len()].eq_ignore_ascii_case(GRPC)
        && matches!(value.get(GRPC.len()), None | Some(b'+' | b';'))
}

/// A server's own error answer, of `status` saying `detail`: a
/// [`problem`](crate::problem) body, or for a gRPC client (`grpc`, from
/// [`is_grpc`]) that status as a gRPC status (HTTP 200, trailers-only, a
/// 502 or 504 as UNAVAILABLE, a 500 as INTERNAL) with `detail` its
/// `grpc-message`.
///
/// ```
/// use http::StatusCode;
/// let plain = limits_http::error_answer(false, StatusCode::BAD_GATEWAY, "the upstream is unavailable");
/// assert_eq!(plain.status(), 502);
/// assert_eq!(plain.headers()["content-type"], "application/problem+json");
/// let grpc = limits_http::error_answer(true, StatusCode::BAD_GATEWAY, "the upstream is unavailable");
/// assert_eq!(grpc.status(), 200);
/// assert_eq!(grpc.headers()["grpc-status"], "14");
/// assert_eq!(grpc.headers()["grpc-message"], "the upstream is unavailable");
/// ```
pub fn error_answer(grpc: bool, status: StatusCode, detail: &str) -> Response<Full<Bytes>> {
    let response = crate::problem(status, detail);
    if grpc {
        answer(response, detail, None)
    } else {
        response
    }
}

/// `response`, one of our HTTP answers, as a gRPC status: `message`
/// percent-encoded, and `retry` (the wait it asks for, if any) as a
/// RetryInfo; its other headers kept.
pub(crate) fn answer(
    response: Response<Full<Bytes>>,
    message: &str,
    retry: Option<Duration>,
) -> Response<Full<Bytes>> {
    let (mut parts, _) = response.into_parts();
    let code = Code::of(parts.status);
    parts.status = StatusCode::OK;
    let headers = &mut parts.headers;
    headers.remove(CONTENT_LENGTH);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert("grpc-status", HeaderValue::from(code as i32));
    let encoded = percent_encode(message);
    if let Ok(value) = HeaderValue::from_str(&encoded) {
        headers.insert("grpc-message", value);
    }
    let details = status_details(code, message, retry);
    if let Ok(value) = HeaderValue::from_str(&STANDARD_NO_PAD.encode(details)) {
        headers.insert("grpc-status-details-bin", value);
    }
    Response::from_parts(parts, Full::new(Bytes::new()))
}

/// `google.rpc.Status`, as gRPC's status details carry it.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
    #[prost(message, repeated, tag = "3")]
    details: Vec<prost_types::Any>,
}

/// `google.rpc.RetryInfo`: how long the client should wait.
#[derive(Clone, PartialEq, prost::Message)]
struct RetryInfo {
    #[prost(message, optional, tag = "1")]
    retry_delay: Option<prost_types::Duration>,
}

const RETRY_INFO: &str = "type.googleapis.com/google.rpc.RetryInfo";

/// The encoded `google.rpc.Status` of an answer: its code, message, and
/// the exact wait (to the nanosecond) as a RetryInfo.
fn status_details(code: Code, message: &str, retry: Option<Duration>) -> Vec<u8> {
    let details = retry
        .map(|wait| {
            let delay = prost_types::Duration {
                // Waits are far below i64::MAX seconds; saturate rather than wrap.
                seconds: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
                nanos: i32::try_from(wait.subsec_nanos()).unwrap_or(0),
            };
            let info = RetryInfo {
                retry_delay: Some(delay),
            };
            prost_types::Any {
                type_url: RETRY_INFO.to_string(),
                value: info.encode_to_vec(),
            }
        })
        .into_iter()
        .collect();
    RpcStatus {
        code: code as i32,
        message: message.to_string(),
        details,
    }
    .encode_to_vec()
}

/// gRPC's percent-encoding of `grpc-message`: printable ASCII but `%` as
/// it is, every other byte of the UTF-8 text as `%XX`.
fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for &b in message.as_bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_content_types() {
        for (value, grpc) in [
            ("application/grpc", true),
            ("application/grpc+proto", true),
            ("Application/GRPC+json", true),
            ("application/grpc;charset=utf-8", true),
            ("application/grpc-web", false),
            ("application/grpcx", false),
            ("application/json", false),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(CONTENT_TYPE, value.parse().unwrap());
            assert_eq!(is_grpc(&headers), grpc, "{value}");
        }
        assert!(!is_grpc(&HeaderMap::new()));
    }

    #[test]
    fn messages_are_percent_encoded_as_grpc_requires() {
        assert_eq!(
            percent_encode("rate limit \"api\" exceeded"),
            "rate limit \"api\" exceeded"
        );
        assert_eq!(percent_encode("100% é\n"), "100%25 %C3%A9%0A");
    }

    #[test]
    fn codes_of_our_answers() {
        assert_eq!(
            Code::of(StatusCode::TOO_MANY_REQUESTS),
            Code::ResourceExhausted
        );
        assert_eq!(Code::of(StatusCode::FORBIDDEN), Code::PermissionDenied);
        for gateway in [
            StatusCode::SERVICE_UNAVAILABLE,
            StatusCode::BAD_GATEWAY,
            StatusCode::GATEWAY_TIMEOUT,
        ] {
            assert_eq!(Code::of(gateway), Code::Unavailable, "{gateway}");
        }
        assert_eq!(Code::of(StatusCode::BAD_REQUEST), Code::InvalidArgument);
        assert_eq!(Code::of(StatusCode::INTERNAL_SERVER_ERROR), Code::Internal);
    }

    #[test]
    fn details_decode_to_the_exact_wait() {
        let wait = Duration::new(3, 123_456_789);
        let bytes = status_details(Code::ResourceExhausted, "m", Some(wait));
        let status = RpcStatus::decode(&bytes[..]).unwrap();
        assert_eq!((status.code, status.message.as_str()), (8, "m"));
        assert_eq!(status.details[0].type_url, RETRY_INFO);
        let info = RetryInfo::decode(&status.details[0].value[..]).unwrap();
        let delay = info.retry_delay.unwrap();
        assert_eq!((delay.seconds, delay.nanos), (3, 123_456_789));
    }
}
