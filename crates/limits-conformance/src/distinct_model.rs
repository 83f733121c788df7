//! The reference model of a limit on distinct values (`limits::Distinct`):
//! every value a key was admitted with and the last time it was asked
//! for, in no order, the window scanned whole at each request.

use std::time::Duration;

/// One key's values, decided plainly.
#[derive(Clone, Debug, Default)]
pub struct DistinctModel {
    /// (value, last asked for).
    values: Vec<(u64, u64)>,
    latest: u64,
}

/// What the model answers, field for field as `limits::Decision` has them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistinctAnswer {
    /// Whether the value passes.
    pub allowed: bool,
    /// How many new values would pass now, after this one.
    pub remaining: u64,
    /// The wait of a refused value: until the value asked for longest ago
    /// leaves the window; `None` when allowed.
    pub retry_after: Option<Duration>,
    /// Until every value held has left the window.
    pub reset_after: Duration,
    /// Until the value asked for longest ago leaves the window (zero with
    /// none held).
    pub refill_after: Duration,
}

impl From<limits::Decision> for DistinctAnswer {
    /// What a limiter decided, as the model answers it: its wait only when
    /// it refused.
    fn from(d: limits::Decision) -> DistinctAnswer {
        DistinctAnswer {
            allowed: d.allowed,
            remaining: d.remaining,
            retry_after: match d.retry_after {
                limits::RetryAfter::After(w) if !d.allowed => Some(w),
                _ => None,
            },
            reset_after: d.reset_after,
            refill_after: d.refill_after,
        }
    }
}

impl DistinctModel {
    /// At most `at_most` values within any `window` ns: `value` at `now`,
    /// held (or refreshed) when `record` and admitted.
    pub fn decide(
        &mut self,
        at_most: u64,
        window: u64,
        value: u64,
        now: u64,
        record: bool,
    ) -> DistinctAnswer {
        self.latest = self.latest.max(now);
        let now = self.latest;
        // A value counts while `now` is before its last time plus W.
        self.values
            .retain(|&(_, at)| u128::from(at) + u128::from(window) > u128::from(now));
        let held = self.values.iter().position(|&(v, _)| v == value);
        let allowed = held.is_some() || (self.values.len() as u64) < at_most;
        if allowed && record {
            match held {
                Some(i) => self.values[i].1 = now,
                None => self.values.push((value, now)),
            }
        }
        let left = |at: u64| Duration::from_nanos(at.saturating_add(window) - now);
        let oldest = self
            .values
            .iter()
            .map(|&(_, at)| at)
            .min()
            .map_or(Duration::ZERO, left);
        let newest = self
            .values
            .iter()
            .map(|&(_, at)| at)
            .max()
            .map_or(Duration::ZERO, left);
        DistinctAnswer {
            allowed,
            remaining: at_most - self.values.len() as u64,
            retry_after: (!allowed).then_some(oldest),
            reset_after: newest,
            refill_after: oldest,
        }
    }
}
