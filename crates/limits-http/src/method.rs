//! The request method as upstreams read it. Methods are case-sensitive
//! (RFC 9110 section 9.1), but upstreams do not agree on a standard
//! method spelled in another case: Django and Flask upper-case it and run
//! the POST handler for `post`, Go's routing treats it as a method of its
//! own, Node refuses it. No reading the limiter picked would be every
//! upstream's, and no client needs one, so it is refused.

use http::Method;
use std::fmt;

/// The methods RFC 9110 and RFC 5789 define.
const STANDARD: [Method; 9] = [
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::DELETE,
    Method::CONNECT,
    Method::OPTIONS,
    Method::TRACE,
    Method::PATCH,
];

/// A standard method spelled in another case (`post`, `Get`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MethodCase {
    sent: String,
    standard: &'static str,
}

impl fmt::Display for MethodCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the method {:?} is {} in another case, which upstreams read differently; send {}",
            self.sent, self.standard, self.standard
        )
    }
}

/// Refuses a standard method spelled in another case; every other method
/// (standard, or an extension such as `PROPFIND`) passes.
pub(crate) fn check(method: &Method) -> Result<(), MethodCase> {
    if STANDARD.contains(method) {
        return Ok(());
    }
    let sent = method.as_str();
    match STANDARD
        .iter()
        .find(|m| m.as_str().eq_ignore_ascii_case(sent))
    {
        Some(m) => Err(MethodCase {
            sent: sent.to_string(),
            standard: m.as_str(),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_methods_in_another_case_are_refused_and_others_pass() {
        for sent in [
            "post", "Post", "pOST", "get", "head", "Delete", "patch", "options",
        ] {
            let m = Method::from_bytes(sent.as_bytes()).unwrap();
            let err = check(&m).unwrap_err().to_string();
            assert!(err.contains(&sent.to_ascii_uppercase()), "{err}");
        }
        for sent in ["POST", "GET", "PROPFIND", "purge", "M-SEARCH"] {
            let m = Method::from_bytes(sent.as_bytes()).unwrap();
            assert_eq!(check(&m), Ok(()), "{sent}");
        }
    }
}
