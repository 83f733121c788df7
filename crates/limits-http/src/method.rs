//! The request method as upstreams read it. Methods are case-sensitive
//! (RFC 9110 section 9.1), but upstreams do not agree on a standard
//! method spelled in another case: Django and Flask upper-case it and run
//! the POST handler for `post`, Go's routing treats it as a method of its
//! own, Node refuses it. No reading the limiter picked would be every
//! upstream's, and no client needs one, so it is refused.
//!
//! A POST may also stand for another method upstream: Rails (Rack),
//! Laravel, Symfony and Express's method-override read
//! `X-HTTP-Method-Override` (and its variants) or a `_method` parameter,
//! upper-cased. A rule matches a POST if it matches the POST or any method
//! it stands for ([`overrides`]), so that a `methods = ["DELETE"]` rule
//! counts `POST` with `X-HTTP-Method-Override: delete`.

use crate::key::percent_decode;
use http::Method;
use http::request::Parts;
use smallvec::SmallVec;
use std::fmt;

/// The headers that carry a POST's method override.
const OVERRIDE_HEADERS: [&str; 3] = [
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
];

/// The methods RFC 9110 and RFC 5789 define: the ones a rule may name.
///
/// ```
/// assert!(limits_http::STANDARD_METHODS.contains(&http::Method::PATCH));
/// ```
pub const STANDARD_METHODS: [Method; 9] = [
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
#[inline]
pub(crate) fn check(method: &Method) -> Result<(), MethodCase> {
    // `http` knows a standard method only in upper case: a method without
    // a lower-case letter is one, or an extension no case can make one.
    let sent = method.as_str();
    if !sent.bytes().any(|b| b.is_ascii_lowercase()) {
        return Ok(());
    }
    spelled_in_another_case(sent)
}

/// The standard method `sent` spells in another case, as an error.
#[cold]
fn spelled_in_another_case(sent: &str) -> Result<(), MethodCase> {
    match STANDARD_METHODS
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

/// The methods a POST stands for upstream, beside POST: each override
/// header's value and each `_method` query parameter, upper-cased (as
/// every framework that reads them upper-cases them). Empty for any other
/// method, and for a POST without them.
pub(crate) fn overrides(parts: &Parts) -> SmallVec<[Method; 2]> {
    let mut out: SmallVec<[Method; 2]> = SmallVec::new();
    if parts.method != Method::POST {
        return out;
    }
    overrides_of_post(parts, &mut out);
    out
}

/// [`overrides`] of a POST, into `out`.
fn overrides_of_post(parts: &Parts, out: &mut SmallVec<[Method; 2]>) {
    let mut push = |value: &[u8]| {
        let upper = value.trim_ascii().to_ascii_uppercase();
        if let Ok(m) = Method::from_bytes(&upper) {
            if m != Method::POST && !out.contains(&m) {
                out.push(m);
            }
        }
    };
    for name in OVERRIDE_HEADERS {
        for value in parts.headers.get_all(name) {
            push(value.as_bytes());
        }
    }
    if let Some(query) = parts.uri.query().filter(|q| q.contains("_method")) {
        for pair in query.split(['&', ';']) {
            if let Some(("_method", v)) = pair.split_once('=') {
                if let Ok(v) = percent_decode(v) {
                    push(v.as_bytes());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut b = http::Request::post(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn a_post_stands_for_the_methods_its_overrides_name() {
        let o = overrides(&post("/", &[("X-HTTP-Method-Override", "delete")]));
        assert_eq!(o.as_slice(), [Method::DELETE]);
        let o = overrides(&post(
            "/?a=1&_method=put",
            &[("x-method-override", "PATCH")],
        ));
        assert_eq!(o.as_slice(), [Method::PATCH, Method::PUT]);
        let o = overrides(&post("/?_method=DEL%45TE", &[("x-http-method", "post")]));
        assert_eq!(o.as_slice(), [Method::DELETE]);
        assert!(overrides(&post("/", &[])).is_empty());
        let mut get = post("/?_method=DELETE", &[("x-http-method-override", "DELETE")]);
        get.method = Method::GET;
        assert!(overrides(&get).is_empty());
    }

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
