//! Why a request has no key under a rule: the error a [`KeyExtractor`]
//! returns, which the layer answers with a 400 naming the field.
//!
//! [`KeyExtractor`]: super::KeyExtractor

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
        }
    }
}

impl std::error::Error for KeyError {}
