//! The instances' clock offsets (issue 28): each instance finds memcached's
//! clock tick on its own clock, and reports its offset from the others'
//! through a shared item. Two clients on one memcached stand for two
//! instances, one of them with a clock a quarter second ahead.

use crate::memcached_server::MemcachedServer;
use limits::{Clock, SystemClock};
use limits_memcached::{ClockOffset, MemcachedClient, MemcachedOptions};
use std::time::Duration;

/// The system clock, `by` nanoseconds ahead.
struct Ahead(SystemClock, u64);

impl Clock for Ahead {
    fn now(&self) -> u64 {
        self.0.now() + self.1
    }
}

const QUARTER_SECOND: i64 = 250_000_000;

/// Whether `offset` is `want` within the uncertainty of its measurement and
/// the other's: they measured the same tick of memcached's clock.
fn within(offset: ClockOffset, other: ClockOffset, want: i64) -> bool {
    let uncertainty = (offset.uncertainty + other.uncertainty) as i64;
    (offset.from_others - want).abs() <= uncertainty
}

#[tokio::test]
async fn an_instance_a_quarter_second_ahead_reads_a_quarter_second_from_the_others() {
    let server = MemcachedServer::start();
    let client = || MemcachedClient::new(&server.url(), MemcachedOptions::default()).unwrap();
    let (first, second) = (client(), client());
    let every = Duration::from_secs(2);
    let alone = first
        .measure_clock_offset(&SystemClock::new(), every)
        .await
        .unwrap();
    assert_eq!((alone.instances, alone.from_others), (1, 0), "{alone:?}");
    assert!(alone.uncertainty < 100_000_000, "{alone:?}");
    // Measuring as often, the two measure the same tick.
    let ahead = Ahead(SystemClock::new(), QUARTER_SECOND as u64);
    let system = SystemClock::new();
    let (behind, ahead) = tokio::join!(
        first.measure_clock_offset(&system, every),
        second.measure_clock_offset(&ahead, every),
    );
    let (behind, ahead) = (behind.unwrap(), ahead.unwrap());
    assert_eq!(
        (behind.instances, ahead.instances),
        (2, 2),
        "{behind:?} {ahead:?}"
    );
    assert!(
        within(ahead, behind, QUARTER_SECOND),
        "{ahead:?} {behind:?}"
    );
    assert!(
        within(behind, ahead, -QUARTER_SECOND),
        "{behind:?} {ahead:?}"
    );
    assert_eq!(first.clock_offset(), Some(behind));
}
