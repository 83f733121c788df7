//! No limit at all: the simulator's baseline.

use super::RateAlgorithm;
use crate::{Rate, RetryAfter};

/// Allows everything; reports the rate's limit as always remaining.
///
/// ```
/// use limits::{Algorithm, Rule};
/// let rule = Rule::new(Algorithm::None, "1/s".parse().unwrap());
/// assert!(rule.is_valid_cost(1_000_000));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct NoLimit {
    limit: u64,
}

impl NoLimit {
    /// The baseline for `rate` (only its limit is reported).
    pub fn new(rate: Rate) -> NoLimit {
        NoLimit {
            limit: rate.limit(),
        }
    }
}

impl RateAlgorithm for NoLimit {
    type State = ();

    fn advance(&self, _: &mut (), now: u64) -> u64 {
        now
    }

    fn check(&self, _: &(), _: u64, _: u64) -> Result<(), RetryAfter> {
        Ok(())
    }

    fn record(&self, _: &mut (), _: u64, _: u64) {}

    fn refund(&self, _: &mut (), _: u64, _: u64, _: u64) {}

    fn charge(&self, _: &mut (), _: u64, _: u64) {}

    fn remaining(&self, _: &(), _: u64) -> u64 {
        self.limit
    }

    fn reset_after(&self, _: &(), _: u64) -> u64 {
        0
    }

    fn capacity(&self) -> u64 {
        u64::MAX
    }
}
