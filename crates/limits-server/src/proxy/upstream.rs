//! The upstream: which URLs it may be, and what to say when it fails.

use http::uri::{Authority, Uri};
use std::error::Error as StdError;

/// Validates an upstream URL: its authority and base path (no trailing `/`).
pub(super) fn parse_upstream(upstream: &str) -> Result<(Authority, String), String> {
    let uri: Uri = upstream
        .parse()
        .map_err(|e| format!("upstream {upstream:?} is not a URL: {e}"))?;
    match uri.scheme_str() {
        Some("http") => {}
        Some(s) if s.eq_ignore_ascii_case("https") => {
            return Err(format!(
                "upstream {upstream:?}: https is not supported (this build has no TLS); use http://"
            ))
        }
        Some(s) => {
            return Err(format!(
                "upstream {upstream:?}: scheme {s:?} is not supported; use http://"
            ))
        }
        None => {
            return Err(format!(
                "upstream {upstream:?} must be an absolute http:// URL"
            ))
        }
    }
    let authority = uri
        .authority()
        .filter(|a| !a.host().is_empty())
        .ok_or_else(|| format!("upstream {upstream:?} has no host"))?;
    if authority.as_str().contains('@') {
        return Err(format!(
            "upstream {upstream:?}: credentials in the URL are not supported"
        ));
    }
    if uri.query().is_some() {
        return Err(format!(
            "upstream {upstream:?}: a query string cannot be a proxy target"
        ));
    }
    let base_path = uri.path().trim_end_matches('/').to_string();
    Ok((authority.clone(), base_path))
}

/// Why a request to the upstream failed before its response headers.
#[derive(Debug)]
pub(super) enum UpstreamError {
    /// No TCP connection could be opened.
    Connect(std::io::Error),
    /// The exchange failed on a connection (or the request body did).
    Http(hyper::Error),
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamError::Connect(_) => f.write_str("tcp connect error"),
            UpstreamError::Http(_) => f.write_str("upstream exchange failed"),
        }
    }
}

impl StdError for UpstreamError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            UpstreamError::Connect(e) => Some(e),
            UpstreamError::Http(e) => Some(e),
        }
    }
}

/// What went wrong, as the end of "upstream http://… {what}".
pub(super) fn describe(error: &UpstreamError) -> String {
    use std::io::ErrorKind;
    let io_kind = sources(error)
        .find_map(|e| e.downcast_ref::<std::io::Error>())
        .map(|e| e.kind());
    match io_kind {
        Some(ErrorKind::ConnectionRefused) => "refused the connection".into(),
        Some(ErrorKind::ConnectionReset) => "reset the connection".into(),
        Some(ErrorKind::ConnectionAborted) => "aborted the connection".into(),
        _ if matches!(error, UpstreamError::Connect(_)) => {
            format!("could not be reached ({})", innermost(error))
        }
        _ => {
            let incomplete = sources(error)
                .filter_map(|e| e.downcast_ref::<hyper::Error>())
                .any(|e| e.is_incomplete_message());
            if incomplete {
                "closed the connection before responding".into()
            } else {
                format!("failed ({})", innermost(error))
            }
        }
    }
}

/// Whether the failure was the client's request body (a malformed chunk, a
/// connection cut mid-body): then the caller must hear 400, not a 502 that
/// blames the upstream. Only the client's body is an axum body here, so its
/// error in the chain says so.
pub(super) fn client_body_failed(error: &UpstreamError) -> bool {
    sources(error).any(|e| e.is::<axum::Error>())
}

/// `error` and everything below it.
fn sources<'a>(
    error: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(error), |&e| e.source())
}

/// The root cause's message.
fn innermost(error: &(dyn StdError + 'static)) -> String {
    sources(error)
        .last()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

/// The whole chain, for the log: "outer: inner: root".
pub(super) fn chain(error: &(dyn StdError + 'static)) -> String {
    sources(error)
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}
