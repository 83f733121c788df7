//! What the keyed limiter's amortized sweep guarantees: every
//! eighth operation on an existing key looks at one slot (two when the
//! first was idle), and so does the next operation after one that dropped a
//! key; one that adds a key looks at two, so that
//!
//! - a shard of N keys forgets its idle keys within 8N operations, even
//!   when every operation is on a busy key;
//! - while it finds idle keys it drops two per operation;
//! - a flood of one-off keys cannot outgrow it: the keys held stay within a
//!   small multiple of the keys in use.

use limits::{Algorithm, KeyedLimiter, ManualClock, Options, Rule};

const MS: u64 = 1_000_000;

fn one_shard(rule: &str) -> KeyedLimiter<u64, ManualClock> {
    let rule = Rule::new(Algorithm::TokenBucket, rule.parse().unwrap());
    KeyedLimiter::with_options(
        rule,
        ManualClock::new(0),
        Options {
            max_keys: None,
            shards: 1,
        },
    )
}

#[test]
fn idle_keys_among_busy_ones_are_forgotten_within_eight_operations_per_key() {
    // 10/s: a cost of 10 at t = 0 leaves the bucket empty until 1 s.
    let limiter = one_shard("10/s");
    for key in 0..1000 {
        assert!(limiter.check_at(&key, 0, 10).allowed);
    }
    assert_eq!(limiter.len(), 1000);
    // At 1.2 s every key is idle but the first 500, used again at 0.9 s
    // with a cost of 9 (busy until 1.9 s).
    for key in 0..500 {
        assert!(limiter.check_at(&key, 900 * MS, 9).allowed);
    }
    let n = limiter.len();
    assert_eq!(n, 1000, "none was idle yet");
    // Traffic on the busy keys only: every eighth operation looks at one
    // slot at least, so 8N operations (N = the keys held) are enough.
    for i in 0..8 * n as u64 {
        limiter.check_at(&(i % 500), 1200 * MS, 1);
    }
    assert_eq!(
        limiter.len(),
        500,
        "after {} operations on busy keys",
        8 * n
    );
    assert_eq!(limiter.evictions(), 0);
}

#[test]
fn idle_keys_are_dropped_two_per_operation_while_the_sweep_finds_them() {
    let limiter = one_shard("10/s");
    limiter.check_at(&u64::MAX, 0, 1);
    for key in 0..1000 {
        limiter.check_at(&key, 0, 1);
    }
    // At 1 s all are idle; 500 operations on one key (added first, then
    // existing) drop them all.
    for i in 0..510 {
        limiter.check_at(&u64::MAX, 1000 * MS + i, 1);
    }
    assert_eq!(limiter.len(), 1);
}

#[test]
fn a_flood_of_one_off_keys_beside_busy_ones_stays_bounded() {
    // Each one-off key is in use for 100 ms after its one request; one comes
    // every millisecond, between operations on 50 busy keys: about 150 keys
    // are in use at any time.
    let limiter = one_shard("10/s");
    let mut most = 0;
    let mut t = 0;
    for i in 0..100_000u64 {
        t += MS / 2;
        if i % 2 == 0 {
            limiter.check_at(&(1_000_000 + i), t, 1);
        } else {
            limiter.check_at(&(i % 100), t, 1);
        }
        most = most.max(limiter.len());
    }
    // In use at the end: 100 one-off keys and 50 busy ones.
    assert!(limiter.len() >= 150, "{}", limiter.len());
    assert!(most <= 2 * 151, "{most} keys held at most");
}
