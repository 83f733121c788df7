//! A single-rate rule's whole decision in one call (issue 9): `check` and
//! `peek` are what the HTTP layer and the CLI send headers from, so their
//! `Decision` (verdict, `remaining`, `retry_after`, `reset_after`,
//! `refill_after`) is on the hot path too. [`Rule::decide`](super::Rule::decide)
//! matches a one-rate rule against its own state once and calls
//! [`DecideOne::decide_one`]; by default that is `decide_rates`'s steps for
//! one rate (advance, check, delay and record, derived fields), and an
//! algorithm may fuse them into one pass giving the same `Decision` and
//! state: every limiter but `NoLimit` does, in its own file
//! (`tests/it/token_bucket_decide.rs`, `tests/it/other_limiters_decide.rs`).

use super::{decide_rates, rate_decision, Mode, Rule};
// The engine that keeps the default steps.
use crate::algorithms::{NoLimit, RateAlgorithm};
use crate::state_kinds::with_engines;
use crate::{Decision, KeyState};

impl Rule {
    /// [`decide`](Rule::decide) for any rule and state: a state of another
    /// rule's shape is replaced by a new one first.
    #[inline(never)]
    pub(super) fn decide_any(
        &self,
        state: &mut KeyState,
        now: u64,
        cost: u64,
        mode: Mode,
        each: &mut impl FnMut(Decision),
    ) -> Decision {
        if !self.owns(state) {
            *state = self.new_state();
        }
        with_engines!(
            &self.engines,
            &mut state.0,
            |e, s| decide_rates(e, s, now, cost, mode, each),
            Decision::allow(0)
        )
    }
}

/// One rate's decision, its state already of the rule's shape.
pub(crate) trait DecideOne: RateAlgorithm + Sized {
    /// Decides a request of `cost` at `now`, recording it in `Record` mode
    /// if it passes, with every derived field.
    #[inline(always)]
    fn decide_one(&self, s: &mut Self::State, now: u64, cost: u64, mode: Mode) -> Decision {
        let t = self.advance(s, now);
        let verdict = if cost == 0 {
            Ok(())
        } else {
            self.check(s, t, cost)
        };
        rate_decision(self, s, t, cost, mode, verdict)
    }
}

impl DecideOne for NoLimit {}
