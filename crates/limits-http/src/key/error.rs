//! Why a request has no key under a rule: the error a [`KeyExtractor`]
//! returns, which the layer answers with a 400 naming the field.
//!
//! [`KeyExtractor`]: super::KeyExtractor

use http::StatusCode;
use std::fmt;

/// Why a request has no key under a rule: the layer answers 400 naming the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyError {
    /// The key part, as written in the spec (`query:api_key`).
    pub field: String,
    /// What is wrong with it.
    pub reason: KeyErrorReason,
}

/// What is wrong with a key field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyErrorReason {
    /// It appears more than once with different values: the upstream may
    /// read another one than the limiter.
    Repeated,
    /// It is not in the request (or is empty), and the rule says `reject`.
    Missing,
    /// The body cannot be read (why), and the rule says `reject`.
    Unreadable(String),
    /// A [`KeyExtractor`](super::KeyExtractor) of the application's refused the value (why): a
    /// token that does not verify, a tenant it does not know.
    Invalid(String),
    /// Common upstreams would read the field (or the request around it)
    /// differently from one another (why): a control or invisible
    /// character, an escape one decodes and another keeps, a second
    /// Content-Type. Refused whatever the rule's `missing` policy, since
    /// no reading the limiter picked would be the upstream's for certain.
    Ambiguous(String),
    /// The body is not UTF-8 (or US-ASCII) text (why): answered 415, whatever
    /// the rule's `missing` policy. Upstreams read a form or JSON body's raw
    /// bytes, so a body the limiter would have to transcode is one it could
    /// read as another account than the upstream does.
    Charset(String),
}

impl KeyErrorReason {
    /// The status of the layer's answer: 415 for a body not in UTF-8, 400
    /// for every other reason.
    pub fn status(&self) -> StatusCode {
        match self {
            KeyErrorReason::Charset(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            _ => StatusCode::BAD_REQUEST,
        }
    }

    /// Whether the rule's `missing` policy may answer it (a missing or
    /// unreadable field); every other reason is refused as it is.
    pub(crate) fn missing_policy_applies(&self) -> bool {
        matches!(
            self,
            KeyErrorReason::Missing | KeyErrorReason::Unreadable(_)
        )
    }
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = &self.field;
        match &self.reason {
            KeyErrorReason::Repeated => write!(
                f,
                "the key field {field} appears more than once with different values"
            ),
            KeyErrorReason::Missing => write!(
                f,
                "the request has no {field}, which this route's rate limit counts by"
            ),
            KeyErrorReason::Unreadable(why) => {
                write!(f, "cannot read {field} from the request body: {why}")
            }
            KeyErrorReason::Invalid(why) => write!(f, "the key field {field} is invalid: {why}"),
            KeyErrorReason::Ambiguous(why) => write!(
                f,
                "common upstreams read the key field {field} differently: {why}"
            ),
            KeyErrorReason::Charset(why) => write!(
                f,
                "cannot read {field} from the request body: {why}; send it as UTF-8"
            ),
        }
    }
}

impl std::error::Error for KeyError {}
