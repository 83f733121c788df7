//! How far an instance's clock is from the other instances' on the same
//! memcached: what [`measure_clock_offset`] finds (`clock_check.rs` says
//! how).
//!
//! [`measure_clock_offset`]: crate::MemcachedClient::measure_clock_offset

use std::time::Duration;

/// How far this instance's clock is from the other instances' on the same
/// memcached ([`measure_clock_offset`](crate::MemcachedClient::measure_clock_offset)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockOffset {
    /// This instance's clock less the median of the other instances'
    /// (nanoseconds; positive: ahead). Zero while no other has reported.
    pub from_others: i64,
    /// The instances that measured the same tick, this one too.
    pub instances: usize,
    /// How far this instance's own measurement may be off (nanoseconds):
    /// half the time from its last read before memcached's tick to its
    /// first after it.
    pub uncertainty: u64,
}

impl ClockOffset {
    /// Whether the offset is surely beyond `bound`: by more than the
    /// measurement's uncertainty.
    ///
    /// ```
    /// use limits_memcached::ClockOffset;
    /// use std::time::Duration;
    ///
    /// let offset = ClockOffset { from_others: -12_000_000, instances: 2, uncertainty: 1_000_000 };
    /// assert!(offset.beyond(Duration::from_millis(10)));
    /// assert!(!offset.beyond(Duration::from_millis(11)), "perhaps 11 ms only");
    /// ```
    pub fn beyond(&self, bound: Duration) -> bool {
        let bound = u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX);
        self.from_others.unsigned_abs() > bound.saturating_add(self.uncertainty)
    }
}
