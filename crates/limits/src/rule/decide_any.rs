//! The general decision: any rule, on a state of any shape (replaced by
//! the rule's own if it is of another). [`Rule::decide`] reaches it only
//! when a single-rate rule's state is not of its shape, or for a rule of
//! several rates; the usual case calls the algorithm's
//! [`decide_one`](crate::algorithms::RateAlgorithm::decide_one) directly.

use super::{Rule, decide_rates};
use crate::state_kinds::with_engines;
use crate::{Decision, KeyState, Mode};

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
