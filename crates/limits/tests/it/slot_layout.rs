//! A keyed limiter's slot is the key and its state, nothing more:
//! the two flags and half the key's hash ride in the state's padding, and a
//! single-rate rule's slot holds its algorithm's state alone (24 bytes for a
//! `u64` key of a token bucket whose full times fit in 96 bits, 32 for any
//! other, 40 at most). These tests hold the size of
//! each to what is counted, and check that keys are still
//! found, with their own state, after removals move slots, after the table
//! grows and shrinks, and after a loaded state replaces a key's.

use limits::{Algorithm, KeyedLimiter, ManualClock, Options, RetryAfter, Rule};
use std::hash::Hash;
use std::time::Duration;

const MS: u64 = 1_000_000;

fn one_shard<K: Hash + Eq + Send>(rule: &str) -> KeyedLimiter<K, ManualClock> {
    KeyedLimiter::with_options(
        Rule::new(Algorithm::TokenBucket, rule.parse().unwrap()),
        ManualClock::new(0),
        Options {
            max_keys: None,
            shards: 1,
        },
    )
}

#[test]
fn a_u64_token_bucket_key_costs_a_24_byte_slot_plus_the_table() {
    let limiter = one_shard::<u64>("10/hour");
    for key in 0..4096 {
        limiter.check_at(&key, 0, 1);
    }
    let report = limiter.memory();
    assert_eq!(report.keys, 4096);
    // 4096 slots (the `Vec` doubled to exactly that), and a table of at most
    // 8192 buckets of a 4-byte index and a control byte (plus one group of
    // control bytes): a 32-byte slot would be 32 KiB over.
    let table_at_most = 8192 * 5 + 64;
    assert!(
        report.bytes <= 4096 * 24 + table_at_most,
        "{} bytes for 4096 keys",
        report.bytes
    );
    assert!(report.bytes > 4096 * 24, "{} bytes", report.bytes);
}

/// The slot of a `u64` key of `algorithm` at `limit` per `window` ns
/// (with `burst`, if any): 4096 keys' bytes less those of the table (the
/// same for every rule), per key.
fn slot_of(algorithm: Algorithm, limit: u64, window: u64, burst: Option<u64>) -> f64 {
    let rate = limits::Rate::new(limit, Duration::from_nanos(window)).unwrap();
    let mut rule = Rule::new(algorithm, rate.into());
    if let Some(burst) = burst {
        rule = rule.with_burst(burst);
    }
    let table = bytes_of_4096_keys(Algorithm::TokenBucket, "10/hour") - 4096 * 24;
    (bytes_of_rule(rule) - table) as f64 / 4096.0
}

fn token_bucket_slot(limit: u64, window: u64) -> f64 {
    slot_of(Algorithm::TokenBucket, limit, window, None)
}

#[test]
fn a_fixed_window_counting_past_32_bits_keeps_the_32_byte_slot() {
    let fixed = |limit| slot_of(Algorithm::FixedWindow, limit, 1_000_000_000, None);
    assert_eq!(fixed((1 << 32) - 1), 24.0);
    assert_eq!(fixed(1 << 32), 32.0);
    // Any window: the index is kept whole.
    let longest = limits::MAX_WINDOW.as_nanos() as u64;
    assert_eq!(slot_of(Algorithm::FixedWindow, 1, longest, None), 24.0);
}

#[test]
fn a_leaky_bucket_whose_queue_ends_pass_96_bits_keeps_the_32_byte_slot() {
    let leaky = |limit, window, burst| slot_of(Algorithm::LeakyBucket, limit, window, burst);
    // As the token bucket (burst = L): L = 2^32 - 1 fits up to W = 2^31 + 1.
    let l = (1u64 << 32) - 1;
    assert_eq!(leaky(l, (1 << 31) + 1, None), 24.0);
    assert_eq!(leaky(l, (1 << 31) + 2, None), 32.0);
    assert_eq!(leaky(1 << 32, 1, None), 32.0);
    // A queue end is at most u64::MAX x L + (burst + 1) x W: with L = 1 and
    // W = 2^40, 2^64 - 1 + (burst + 1) x 2^40 < 2^96 iff burst + 1 <= 2^56 - 2^24.
    let most = (1u64 << 56) - (1 << 24) - 1;
    assert_eq!(leaky(1, 1 << 40, Some(most)), 24.0);
    assert_eq!(leaky(1, 1 << 40, Some(most + 1)), 32.0);
}

#[test]
fn a_token_bucket_whose_full_times_pass_96_bits_keeps_the_32_byte_slot() {
    // Compact iff (u64::MAX + 2W) x L < 2^96, every full time a key can
    // hold, decided or loaded. With L = 2^32 - 1, (2^96 - 1) / L is
    // 2^64 + 2^32 + 1 exactly, so W may be at most 2^31 + 1.
    let l = (1u64 << 32) - 1;
    assert_eq!(token_bucket_slot(l, (1 << 31) + 1), 24.0);
    assert_eq!(token_bucket_slot(l, (1 << 31) + 2), 32.0);
    // L = 2^32 never fits (u64::MAX x 2^32 alone is 2^96 - 2^32, and W >= 1).
    assert_eq!(token_bucket_slot(1 << 32, 1), 32.0);
    assert_eq!(token_bucket_slot((1 << 32) + 1, 1_000_000_000), 32.0);
    // Small limits fit with any window, the longest included.
    let longest = limits::MAX_WINDOW.as_nanos() as u64;
    assert_eq!(token_bucket_slot(1, longest), 24.0);
    assert_eq!(token_bucket_slot(1 << 31, longest), 24.0);
    // L = 2^32 - 2^20: the largest window that fits is (2^96 - 1) / L,
    // less u64::MAX, halved, rounded down.
    let l = (1u64 << 32) - (1 << 20);
    let most_window = (((1u128 << 96) - 1) / u128::from(l) - u128::from(u64::MAX)) / 2;
    let most_window = most_window as u64;
    assert_eq!(token_bucket_slot(l, most_window), 24.0);
    assert_eq!(token_bucket_slot(l, most_window + 1), 32.0);
}

/// Bytes held by 4096 `u64` keys, one request each, under `algorithm` at
/// `rates`, in one shard.
fn bytes_of_4096_keys(algorithm: Algorithm, rates: &str) -> usize {
    bytes_of_rule(Rule::new(algorithm, rates.parse().unwrap()))
}

/// Bytes held by 4096 `u64` keys, one request each, under `rule`, in one
/// shard.
fn bytes_of_rule(rule: Rule) -> usize {
    let name = format!("{rule:?}");
    let limiter: KeyedLimiter<u64, _> = KeyedLimiter::with_options(
        rule,
        ManualClock::new(0),
        Options {
            max_keys: None,
            shards: 1,
        },
    );
    for key in 0..4096 {
        limiter.check_at(&key, 0, 1);
    }
    assert_eq!(limiter.len(), 4096, "{name}");
    limiter.memory().bytes
}

#[test]
fn each_algorithm_s_slot_is_sized_for_its_own_state() {
    // The table is the same for every rule (4096 keys): the token bucket's
    // bytes less its 24-byte slots. Every other rule differs from it by its
    // slot and its state's heap only.
    let token = bytes_of_4096_keys(Algorithm::TokenBucket, "10/hour");
    let table = token - 4096 * 24;
    assert!(table <= 8192 * 5 + 64, "table {table}");
    let per_key = |algorithm, rates| (bytes_of_4096_keys(algorithm, rates) - table) as f64 / 4096.0;
    // The key (8), the state packed in 12 bytes and 4 bytes of marks.
    assert_eq!(per_key(Algorithm::FixedWindow, "10/hour"), 24.0);
    assert_eq!(per_key(Algorithm::LeakyBucket, "10/hour"), 24.0);
    // Likewise a sliding window's index and two counts (below 2^16 here;
    // `tests/it/compact_sliding_window.rs` pins the wider bounds).
    assert_eq!(per_key(Algorithm::SlidingWindow, "10/hour"), 24.0);
    // The log's inline entries (a time and a word beside the ring's null
    // pointer), or the ring's pointer, head and length: 24, so 40, and no
    // heap for its one request, whatever the limit.
    assert_eq!(per_key(Algorithm::SlidingLog, "10/hour"), 40.0);
    assert_eq!(per_key(Algorithm::SlidingLog, "134217728/hour"), 40.0);
    // Several rates: a whole `KeyState` (32) beside the marks (4, padded
    // to 8), and its states behind one pointer (their `ManyStates`, 24, and
    // two 16-byte token buckets).
    assert_eq!(
        per_key(Algorithm::TokenBucket, "10/hour; 20/day"),
        48.0 + 56.0
    );
}

/// Checks `keys` at `t`, one request each, on a rule of 1/s: each key's
/// bucket is then empty until `t + 1 s`.
fn take_one<K, Q>(limiter: &KeyedLimiter<K, ManualClock>, keys: &[&Q], t: u64)
where
    K: Hash + Eq + Send + std::borrow::Borrow<Q>,
    Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
{
    for key in keys {
        assert!(limiter.check_at(*key, t, 1).allowed);
    }
}

#[test]
fn keys_keep_their_state_as_removals_move_slots_and_the_table_shrinks() {
    let limiter = one_shard::<u64>("1/s");
    // 3000 keys that go idle at 1 s, 600 interleaved ones that stay busy
    // until 1.9 s: dropping the first moves the last slots into their holes
    // and leaves the shard sparse enough to give memory back.
    let (early, late): (Vec<u64>, Vec<u64>) = (0..3600u64).partition(|k| k % 6 != 0);
    take_one(&limiter, &early.iter().collect::<Vec<_>>(), 0);
    take_one(&limiter, &late.iter().collect::<Vec<_>>(), 900 * MS);
    let full = limiter.memory().bytes;
    assert_eq!(limiter.sweep_at(1500 * MS), early.len());
    assert_eq!(limiter.len(), late.len());
    assert!(limiter.memory().bytes < full / 2, "the shard shrank");
    for key in &late {
        // Its own state: the token taken at 0.9 s is back at 1.9 s.
        let d = limiter.check_at(key, 1500 * MS, 1);
        assert!(!d.allowed, "key {key}");
        assert_eq!(
            d.retry_after,
            RetryAfter::After(Duration::from_millis(400)),
            "key {key}"
        );
    }
    for key in &early {
        assert!(limiter.check_at(key, 1500 * MS, 1).allowed, "key {key}");
    }
    assert_eq!(limiter.len(), 3600);
}

#[test]
fn string_keys_are_found_by_str_after_removals_and_growth() {
    let limiter = one_shard::<String>("1/s");
    let names: Vec<String> = (0..2000).map(|i| format!("client-{i}")).collect();
    let early: Vec<&str> = names
        .iter()
        .skip(1)
        .step_by(3)
        .map(String::as_str)
        .collect();
    let late: Vec<&str> = names.iter().step_by(3).map(String::as_str).collect();
    take_one(&limiter, &early, 0);
    take_one(&limiter, &late, 900 * MS);
    // Each check drops idle keys as its sweep passes them, one at a time.
    for (i, key) in late.iter().enumerate() {
        let d = limiter.check_at(*key, 1000 * MS + i as u64, 1);
        assert!(!d.allowed, "{key}");
    }
    limiter.sweep_at(1500 * MS);
    assert_eq!(limiter.len(), late.len());
    for key in &late {
        let d = limiter.peek_at(*key, 1500 * MS, 1);
        assert_eq!(
            d.retry_after,
            RetryAfter::After(Duration::from_millis(400)),
            "{key}"
        );
    }
}

#[test]
fn loaded_states_replace_keys_which_still_move_drop_and_refile() {
    let before = one_shard::<u64>("1/s");
    let loaded: Vec<u64> = (0..400).collect();
    take_one(&before, &loaded.iter().collect::<Vec<_>>(), 0);
    let limiter = one_shard::<u64>("1/s");
    let keys: Vec<u64> = (0..500).collect();
    take_one(&limiter, &keys.iter().collect::<Vec<_>>(), 500 * MS);
    // Keys 0..400 get states that are full again at 1 s, not 1.5 s: loaded
    // states carry no marks, so their table entries are found by hashing
    // the keys again as they are dropped.
    assert_eq!(limiter.import(before.export()), 400);
    assert_eq!(
        limiter.peek_at(&7, 600 * MS, 1).retry_after,
        RetryAfter::After(Duration::from_millis(400))
    );
    // At 1.2 s they alone are idle: dropping them moves slots and leaves the
    // shard sparse, so its table is refiled (an entry left behind for a
    // dropped slot would point past the end).
    let full = limiter.memory().bytes;
    assert_eq!(limiter.sweep_at(1200 * MS), 400);
    assert!(limiter.memory().bytes < full / 2, "the shard shrank");
    for key in &keys[400..] {
        let d = limiter.peek_at(key, 1200 * MS, 1);
        assert_eq!(
            d.retry_after,
            RetryAfter::After(Duration::from_millis(300)),
            "key {key}"
        );
    }
    for key in &keys[..400] {
        assert!(limiter.check_at(key, 1200 * MS, 1).allowed, "key {key}");
    }
    assert_eq!(limiter.len(), 500);
}
