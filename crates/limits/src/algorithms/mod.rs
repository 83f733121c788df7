//! The limiting algorithms, one file each, as pure functions of
//! (state, now, cost) for a single rate.
//!
//! Each algorithm splits a check into steps, so that a rule with several rates
//! can ask every rate before any of them records (all-or-nothing):
//! [`advance`](RateAlgorithm::advance) brings the state up to `now` without
//! changing any future decision, [`check`](RateAlgorithm::check) answers
//! "would this cost pass?", and [`record`](RateAlgorithm::record) takes it.
//! Only integer arithmetic is used, with `u128` for products; rates are bounded
//! (see [`MAX_LIMIT`](crate::MAX_LIMIT)) so that nothing overflows.

mod cost_bound;
mod fixed_window;
mod gcra;
mod leaky_bucket;
mod log_buffer;
mod log_state;
mod none;
mod sliding_log;
mod sliding_window;
mod smoothed_rate;
mod token_bucket;
mod whole_period;

pub use fixed_window::{FixedWindow, FixedWindowState};
pub use leaky_bucket::{LeakyBucket, LeakyBucketState};
pub use none::NoLimit;
pub use sliding_log::{SlidingLog, SlidingLogState};
pub use sliding_window::{SlidingWindow, SlidingWindowState};
pub use smoothed_rate::{SmoothedRate, SmoothedRateState, TICKS_PER_HALF_LIFE, smoothed_decay};
pub use token_bucket::{TokenBucket, TokenBucketState};

use crate::{Decision, Mode, Receipt, RetryAfter};
pub(crate) use cost_bound::CostBound;
use std::time::Duration;

/// One algorithm applied to one rate.
pub trait RateAlgorithm: Send + Sync {
    /// What the algorithm keeps per key. `Default` is a key never seen.
    type State: Default + Clone + Send + Sync + std::fmt::Debug;

    /// Brings `state` up to `now` (drops expired log entries, rolls windows)
    /// without changing any decision, and returns the time to decide at: `now`,
    /// or the key's latest recorded time if `now` is earlier (time never runs
    /// backwards for one key).
    fn advance(&self, state: &mut Self::State, now: u64) -> u64;

    /// `Ok` if a request of `cost` would pass now; otherwise the exact wait
    /// after which it would, if nothing else arrives.
    fn check(&self, state: &Self::State, now: u64, cost: u64) -> Result<(), RetryAfter>;

    /// Records an admitted request of `cost`.
    fn record(&self, state: &mut Self::State, now: u64, cost: u64);

    /// How long (ns) an admitted request of `cost` must be held before it is
    /// served: zero but for the leaky bucket, which shapes traffic.
    fn delay(&self, _state: &Self::State, _now: u64, _cost: u64) -> u64 {
        0
    }

    /// How many cost-1 requests would pass now.
    fn remaining(&self, state: &Self::State, now: u64) -> u64;

    /// Nanoseconds until the state is back to full, if nothing arrives.
    fn reset_after(&self, state: &Self::State, now: u64) -> u64;

    /// The largest cost that can ever pass: the limit, or for the leaky
    /// bucket its burst + 1.
    fn capacity(&self) -> u64;

    /// Records a denied request of `cost` ([`Mode::RecordAlways`]): a
    /// counter adds it up to the limit; the limiters that keep no count
    /// record nothing (the default).
    fn record_denied(&self, _state: &mut Self::State, _now: u64, _cost: u64) {}

    /// Gives back `units` of a request counted at `at` (the state advanced
    /// to `now`): the sliding log takes them from its entries of that time,
    /// the windows from the window counted in while it still weighs, the
    /// buckets give them back at once, never above full. Nothing of a
    /// request whose count has already lapsed.
    fn refund(&self, state: &mut Self::State, now: u64, at: u64, units: u64);

    /// Takes `units` more at `now` (the state advanced to it), whether or
    /// not they fit: the debt the next requests wait for. A count (the
    /// windows', the log's units) goes up to the limit, where every next
    /// request already waits for the window to move; a bucket goes up to
    /// two windows of the rate below full (`L` tokens in debt, or a queue
    /// of `2L` units), the bound a loaded state has, so every table holds it.
    fn charge(&self, state: &mut Self::State, now: u64, units: u64);

    /// Settles a granted request to its real `cost`: refunds what its
    /// receipt counted beyond it, or charges the rest.
    fn settle(&self, state: &mut Self::State, now: u64, receipt: Receipt, cost: u64) {
        let now = self.advance(state, now);
        if cost < receipt.cost {
            self.refund(state, now, receipt.at, receipt.cost - cost);
        } else if cost > receipt.cost {
            self.charge(state, now, cost - receipt.cost);
        }
    }

    /// Heap bytes held by `state`, beyond its inline size.
    fn heap_bytes(_state: &Self::State) -> usize {
        0
    }

    /// Nanoseconds until more quota frees: the wait of a request costing one
    /// more than `remaining`; zero when full.
    fn refill_after(&self, state: &Self::State, now: u64, remaining: u64) -> u64 {
        if remaining >= self.capacity() {
            return 0;
        }
        match self.check(state, now, remaining + 1) {
            Err(RetryAfter::After(d)) => crate::duration::nanos_of(d),
            _ => 0,
        }
    }

    /// A decision's derived fields at `now` (the state advanced to it):
    /// `remaining`, then `reset_after` and `refill_after` in nanoseconds.
    /// By default the three functions above, `refill_after` through a
    /// second `check`; an algorithm may give the same numbers cheaper.
    #[inline]
    fn derived(&self, state: &Self::State, now: u64) -> (u64, u64, u64) {
        let remaining = self.remaining(state, now);
        let reset = self.reset_after(state, now);
        (remaining, reset, self.refill_after(state, now, remaining))
    }

    /// Whether the state can no longer affect any decision at or after `now`,
    /// so that dropping it is lossless.
    fn is_idle(&self, state: &mut Self::State, now: u64) -> bool {
        let now = self.advance(state, now);
        self.reset_after(state, now) == 0
    }

    /// A single-rate rule's whole decision: advance, check, record (in
    /// `Record` mode, if the request passes), then the derived fields of
    /// the state left. [`Rule::check`](crate::Rule::check) and
    /// [`Rule::peek`](crate::Rule::peek) of a one-rate rule call it, and
    /// the headers a server sends come from its fields, so an algorithm
    /// may fuse these steps into one pass; the steps themselves are what a
    /// rule of several rates composes, all-or-nothing.
    #[inline]
    fn decide_one(&self, state: &mut Self::State, now: u64, cost: u64, mode: Mode) -> Decision
    where
        Self: Sized,
    {
        decide_by_steps(self, state, now, cost, mode)
    }
}

/// [`RateAlgorithm::decide_one`] composed of the steps: advance, check,
/// then [`rate_decision`]. The default, and what a fused pass falls back to
/// where its shortcut does not hold.
#[inline]
pub(crate) fn decide_by_steps<A: RateAlgorithm>(
    a: &A,
    state: &mut A::State,
    now: u64,
    cost: u64,
    mode: Mode,
) -> Decision {
    let t = a.advance(state, now);
    let verdict = if cost == 0 {
        Ok(())
    } else {
        a.check(state, t, cost)
    };
    rate_decision(a, state, t, cost, mode, verdict)
}

/// One rate's decision at `t` (already advanced to): `verdict` is `Ok` if
/// the request passes (and is then recorded, in `Record` mode), otherwise
/// this rate's wait.
pub(crate) fn rate_decision<A: RateAlgorithm>(
    a: &A,
    s: &mut A::State,
    t: u64,
    cost: u64,
    mode: Mode,
    verdict: Result<(), RetryAfter>,
) -> Decision {
    let mut decision = Decision::allow(0);
    match verdict {
        Ok(()) => {
            decision.delay = Duration::from_nanos(a.delay(s, t, cost));
            if mode.records() && cost > 0 {
                a.record(s, t, cost);
            }
        }
        Err(wait) => {
            decision.allowed = false;
            decision.retry_after = wait;
            if mode == Mode::RecordAlways && cost > 0 {
                a.record_denied(s, t, cost);
                // The wait is the same request's after what it added.
                if let (false, Err(after)) = (wait.is_never(), a.check(s, t, cost)) {
                    decision.retry_after = after;
                }
            }
        }
    }
    let (remaining, reset_after, refill_after) = a.derived(s, t);
    decision.remaining = remaining;
    decision.reset_after = Duration::from_nanos(reset_after);
    decision.refill_after = Duration::from_nanos(refill_after);
    decision
}

/// `ceil(a / b)` for `b > 0`. Operands almost always fit in 64 bits, where
/// one machine division does (a `u128` division is a library call).
pub(crate) fn ceil_div(a: u128, b: u128) -> u128 {
    match (u64::try_from(a), u64::try_from(b)) {
        (Ok(a), Ok(b)) => u128::from(a.div_ceil(b)),
        _ => a.div_ceil(b),
    }
}

/// `floor(a / b)` for `b > 0`, by one machine division when both fit in 64
/// bits.
pub(crate) fn floor_div(a: u128, b: u128) -> u128 {
    match (u64::try_from(a), u64::try_from(b)) {
        (Ok(a), Ok(b)) => u128::from(a / b),
        _ => a / b,
    }
}

/// `x` as `u64`, saturating.
pub(crate) fn sat64(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

/// `Err(wait)` for a wait in nanoseconds.
pub(crate) fn wait(nanos: u128) -> Result<(), RetryAfter> {
    Err(RetryAfter::from_nanos(sat64(nanos)))
}

/// A time in nanoseconds multiplied by a rate's limit L, so that steps of
/// W / L are the integer W: how the buckets stay exact. Two `u64` halves keep
/// the state 8-byte aligned (a `u128` field would pad it to 16).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScaledTime(pub [u64; 2]);

impl ScaledTime {
    /// The value as one integer.
    pub fn get(self) -> u128 {
        (u128::from(self.0[0]) << 64) | u128::from(self.0[1])
    }

    /// Stores `v`.
    pub fn set(&mut self, v: u128) {
        self.0 = [(v >> 64) as u64, v as u64];
    }
}
