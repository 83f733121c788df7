//! Which header fields `limits rls` asks Envoy to add to a response: none,
//! as envoyproxy/ratelimit by default; the reference's three fields for the
//! descriptor closest to its limit (its `LIMIT_RESPONSE_HEADERS_ENABLED`);
//! the draft `RateLimit-Policy`/`RateLimit` fields of every limit decided,
//! as `limits serve` sends them; or both sets.

use super::proto::rate_limit_response::{Code, DescriptorStatus};
use super::proto::HeaderValue;

/// The header fields an answer carries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseHeaders {
    /// The draft `RateLimit-Policy` and `RateLimit` fields (and
    /// `Retry-After` when denied) of every enforced limit decided.
    pub draft: bool,
    /// The reference's fields, under these names, if any.
    pub reference: Option<ReferenceHeaderNames>,
}

/// The names of the reference's three fields (its `LIMIT_LIMIT_HEADER`,
/// `LIMIT_REMAINING_HEADER`, `LIMIT_RESET_HEADER`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReferenceHeaderNames {
    /// The limit's requests per unit.
    pub limit: String,
    /// What the limit has left (0 when over).
    pub remaining: String,
    /// Seconds until the limit is whole again.
    pub reset: String,
}

impl Default for ReferenceHeaderNames {
    /// The reference's defaults: `RateLimit-Limit`, `RateLimit-Remaining`,
    /// `RateLimit-Reset`.
    fn default() -> ReferenceHeaderNames {
        ReferenceHeaderNames {
            limit: "RateLimit-Limit".to_string(),
            remaining: "RateLimit-Remaining".to_string(),
            reset: "RateLimit-Reset".to_string(),
        }
    }
}

impl ReferenceHeaderNames {
    /// The reference's three fields for the descriptor it reports: the
    /// last one over its limit, else the one with a limit that has the
    /// least left, below u32::MAX (the first of equals); none without such
    /// a descriptor.
    pub fn fields(&self, statuses: &[DescriptorStatus]) -> Vec<HeaderValue> {
        let mut chosen = None;
        let mut least = u32::MAX;
        for status in statuses.iter().filter(|s| s.current_limit.is_some()) {
            if status.code == Code::OverLimit as i32 {
                (chosen, least) = (Some(status), 0);
            } else if status.limit_remaining < least {
                (chosen, least) = (Some(status), status.limit_remaining);
            }
        }
        let Some(status) = chosen else {
            return Vec::new();
        };
        let limit = status
            .current_limit
            .as_ref()
            .map_or(0, |l| l.requests_per_unit);
        let reset = status
            .duration_until_reset
            .as_ref()
            .map_or(0, |d| d.seconds.max(0));
        [
            (&self.limit, limit.to_string()),
            (&self.remaining, status.limit_remaining.to_string()),
            (&self.reset, reset.to_string()),
        ]
        .into_iter()
        .map(|(name, value)| HeaderValue {
            key: name.clone(),
            value,
            raw_value: Vec::new(),
        })
        .collect()
    }
}

#[cfg(test)]
mod tests;
