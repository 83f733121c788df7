//! The verdict alone: whether a request passes, how long an admitted one is
//! held (the leaky bucket's delay) and how long a denied one must wait, the
//! way governor's `check_key` answers. [`Rule::decide`] also computes every
//! derived field of a [`Decision`](crate::Decision) (`remaining`,
//! `reset_after`, `refill_after`: divisions and a second check), which a
//! caller that sends no headers never reads (issue 9).
//!
//! The same algorithm functions run in the same order on the same states as
//! in `decide`, so the verdict, the wait, the delay and the state left behind
//! are those of `check`, to the nanosecond (`tests/it/allow_fast_path.rs`); the
//! exception is a single rate of the token bucket, fixed window, sliding
//! window or leaky bucket, whose check, record and idle test are fused into
//! one pass that gives the same numbers ([`AdmitOne`],
//! `tests/it/token_bucket_admit.rs`, `tests/it/other_limiters_admit.rs`); the
//! sliding log keeps the steps but chooses its state's shape once for them
//! (`tests/it/log_inline_entry.rs`).

use super::Rule;
// The engine types the dispatch macro names, resolved here.
use crate::algorithms::{
    FixedWindow, LeakyBucket, NoLimit, RateAlgorithm, SlidingLog, SlidingWindow, TokenBucket,
};
use crate::state_kinds::{with_engines, with_one_engine};
use crate::{KeyState, RetryAfter};
use std::time::Duration;

/// What the fast path leaves: the verdict, and whether the key's state is
/// idle afterwards (what a decision's zero `reset_after` says, asked
/// without the division).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Admission {
    pub verdict: Result<Duration, RetryAfter>,
    pub idle: bool,
}

impl Admission {
    /// The answer to a cost outside what a fused admission decides: 0
    /// passes at once and records nothing, more than the most that can pass
    /// never does; `idle` is the key's state as it stands.
    #[inline(always)]
    pub fn without_room(cost: u64, idle: bool) -> Admission {
        Admission {
            verdict: if cost == 0 {
                Ok(Duration::ZERO)
            } else {
                Err(RetryAfter::Never)
            },
            idle,
        }
    }

    /// Whether the verdict marks the key as limited: denied, other than for
    /// a cost no state could ever admit.
    pub fn limits_the_key(&self) -> bool {
        matches!(self.verdict, Err(RetryAfter::After(_)))
    }
}

impl Rule {
    /// Checks a request of `cost` at `now` and records it if allowed, as
    /// [`check`](Rule::check) does, but answers only the verdict: `Ok(delay)`
    /// if it passes (`delay` is the decision's, zero but for the leaky
    /// bucket), `Err(retry_after)` if not. Both equal the fields of what
    /// `check` would have returned, and the state is left as `check` leaves
    /// it; `remaining`, `reset_after` and `refill_after` are not computed.
    ///
    /// ```
    /// use limits::{Algorithm, RetryAfter, Rule};
    /// use std::time::Duration;
    /// let rule = Rule::new(Algorithm::TokenBucket, "2/s".parse().unwrap());
    /// let mut state = rule.new_state();
    /// assert_eq!(rule.allow(&mut state, 0, 2), Ok(Duration::ZERO));
    /// // One token comes back every 500 ms.
    /// let wait = RetryAfter::After(Duration::from_millis(500));
    /// assert_eq!(rule.allow(&mut state, 0, 1), Err(wait));
    /// assert_eq!(rule.allow(&mut state, 0, 3), Err(RetryAfter::Never));
    /// ```
    pub fn allow(&self, state: &mut KeyState, now: u64, cost: u64) -> Result<Duration, RetryAfter> {
        self.admit(state, now, cost).verdict
    }

    /// [`allow`](Rule::allow), also saying whether the state is idle after.
    /// A single-rate rule's own state (the usual case) goes straight to its
    /// algorithm's [`AdmitOne::admit_one`]: one match on the rule, one on
    /// the state, which is also the ownership test.
    #[inline(always)]
    pub(crate) fn admit(&self, state: &mut KeyState, now: u64, cost: u64) -> Admission {
        with_one_engine!(
            &self.engines,
            |e, pick| match pick(&mut state.0) {
                Some(one) => e.admit_one(one, now, cost),
                None => self.admit_any(state, now, cost),
            },
            self.admit_any(state, now, cost)
        )
    }

    /// [`admit`](Rule::admit) for any rule and state: a state of another
    /// rule's shape is replaced by a new one first.
    #[inline(never)]
    fn admit_any(&self, state: &mut KeyState, now: u64, cost: u64) -> Admission {
        if !self.owns(state) {
            *state = self.new_state();
        }
        with_engines!(
            &self.engines,
            &mut state.0,
            |e, s| admit_rates(e, s, now, cost),
            Admission {
                verdict: Ok(Duration::ZERO),
                idle: true,
            }
        )
    }
}

/// One rate's verdict, its state already of the rule's shape: the steps of
/// `decide_rates` for one rate (advance, check, delay and record, then the
/// idle test) by default; an algorithm may fuse them into one pass that
/// leaves the same verdict and state (the token bucket's).
pub(crate) trait AdmitOne: RateAlgorithm + Sized {
    /// Admits (and records) or denies a request of `cost` at `now`.
    #[inline(always)]
    fn admit_one(&self, s: &mut Self::State, now: u64, cost: u64) -> Admission {
        let t = self.advance(s, now);
        let verdict = if cost == 0 {
            Ok(())
        } else {
            self.check(s, t, cost)
        };
        let verdict = match verdict {
            Ok(()) => Ok(pass(self, s, t, cost)),
            Err(wait) => Err(wait),
        };
        Admission {
            verdict,
            idle: self.is_idle_at(s, t),
        }
    }
}

impl AdmitOne for NoLimit {}

/// The all-or-nothing verdict over one algorithm's rates: the steps of
/// `decide_rates` in the same order, without the derived fields.
fn admit_rates<A: AdmitOne>(
    engines: &[A],
    states: &mut [A::State],
    now: u64,
    cost: u64,
) -> Admission {
    // One rate, the usual rule (reached here from a state of another shape).
    if let ([a], [s]) = (engines, &mut *states) {
        return a.admit_one(s, now, cost);
    }
    let allowed = cost == 0
        || engines.iter().zip(states.iter_mut()).all(|(a, s)| {
            let t = a.advance(s, now);
            a.check(s, t, cost).is_ok()
        });
    let mut delay = Duration::ZERO;
    let mut wait = RetryAfter::ZERO;
    let mut idle = true;
    for (a, s) in engines.iter().zip(states.iter_mut()) {
        let t = a.advance(s, now);
        if allowed {
            delay = delay.max(pass(a, s, t, cost));
        } else if let Err(w) = a.check(s, t, cost) {
            wait = wait.max(w);
        }
        idle &= a.is_idle_at(s, t);
    }
    Admission {
        verdict: if allowed { Ok(delay) } else { Err(wait) },
        idle,
    }
}

/// An admitted request at `t`: its delay, taken before it is recorded.
fn pass<A: RateAlgorithm>(a: &A, s: &mut A::State, t: u64, cost: u64) -> Duration {
    let delay = Duration::from_nanos(a.delay(s, t, cost));
    if cost > 0 {
        a.record(s, t, cost);
    }
    delay
}
