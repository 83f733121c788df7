//! Idle tests over many keys' states with the rule's dispatch done once:
//! the sweep looks at one or two slots per operation, and through
//! [`Rule::is_idle`] each look paid a call, the match of the rule's
//! algorithm against the state's kind and the walk over the rates, around a
//! test that for the token bucket is one comparison (issue 9).

use super::Rule;
// The engine types the dispatch macro names, resolved here.
use crate::algorithms::{
    FixedWindow, LeakyBucket, NoLimit, RateAlgorithm, SlidingLog, SlidingWindow, TokenBucket,
};
use crate::state_kinds::with_one_engine;
use crate::KeyState;

/// A loop over keys' states that asks of some whether they are idle (the
/// sweep): [`Rule::with_idle_test`] hands it the test for its rule.
pub(crate) trait IdleLoop {
    /// What the loop returns.
    type Output;

    /// Runs the loop; `is_idle(state)` is [`Rule::is_idle`] of `state` at
    /// the time the test was made for.
    fn run(self, is_idle: impl FnMut(&mut KeyState) -> bool) -> Self::Output;
}

impl Rule {
    /// Runs `lp` with this rule's idle test at `now`, the rule's algorithm
    /// picked once: a single-rate rule tests each state of its own kind
    /// directly; anything else goes through [`is_idle`](Rule::is_idle).
    #[inline(always)]
    pub(crate) fn with_idle_test<L: IdleLoop>(&self, now: u64, lp: L) -> L::Output {
        with_one_engine!(
            &self.engines,
            |e, pick| lp.run(|s: &mut KeyState| match pick(&mut s.0) {
                Some(one) => e.is_idle(one, now),
                None => self.is_idle(s, now),
            }),
            lp.run(|s: &mut KeyState| self.is_idle(s, now))
        )
    }
}
