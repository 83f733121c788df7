//! An idle connection's age counted in the reaper's looks, not read from
//! the clock: it is closed at the first look at which it has surely been
//! idle for the whole idle timeout, and no sooner.

use crate::proxy::pool::{stale, IDLE_TIMEOUT};

/// The reaper's period, as the pool's: 5 s.
const PERIOD: u64 = 5;

#[test]
fn the_idle_timeout_is_whole_periods() {
    assert_eq!(IDLE_TIMEOUT.as_secs() % PERIOD, 0);
}

#[test]
fn stale_once_surely_idle_for_the_timeout() {
    let looks = (IDLE_TIMEOUT.as_secs() / PERIOD) as u32;
    for since in [0, 1, 7, u32::MAX - 3] {
        // Went idle between look `since` and the next: at look `now`,
        // idle for more than (now - since - 1) periods and at most
        // (now - since).
        for after in 0..=looks + 3 {
            let now = since.wrapping_add(after);
            let surely = u64::from(after.saturating_sub(1)) * PERIOD;
            let at_most = u64::from(after) * PERIOD;
            let timeout = IDLE_TIMEOUT.as_secs();
            assert_eq!(
                stale(since, now),
                surely >= timeout,
                "since {since}, {after} looks later"
            );
            // So never before the timeout, and at most one period after it.
            if stale(since, now) {
                assert!(at_most > timeout);
            } else {
                assert!(surely < timeout);
            }
        }
    }
}
