//! Where a request's cost stands against the largest cost a rate can ever
//! pass: the one bound every algorithm applies before its state is read.

/// A cost against a rate's capacity (its limit; the leaky bucket's burst +
/// 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CostBound {
    /// 0: passes whatever the state, and records nothing.
    Free,
    /// 1 to the capacity: the state decides.
    Decided,
    /// Above the capacity: never passes, whatever the state, and touches
    /// nothing.
    Never,
}

impl CostBound {
    /// Where `cost` stands against `capacity`.
    #[inline]
    pub(crate) fn of(cost: u64, capacity: u64) -> CostBound {
        // 1 <= cost <= capacity in one comparison: 0 wraps past any capacity.
        if cost.wrapping_sub(1) < capacity {
            CostBound::Decided
        } else if cost == 0 {
            CostBound::Free
        } else {
            CostBound::Never
        }
    }
}
