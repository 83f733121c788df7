//! What a key's state becomes in memcached: its item's key, its value (the
//! core's state words, [`Rule::encode_state`], packed: [`pack`]), how long
//! the item lives, and the rules whose state could outgrow an item.

use limits::{Algorithm, KeyState, Penalty, PenaltyState, Rule, UnsupportedRule, MAX_AFTER};
use sha2::{Digest, Sha256};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The layout of a value, part of every key: a changed layout starts afresh
/// instead of misreading what an older version wrote.
const VALUE_FORMAT: u32 = 2;

/// Memcached's longest key.
const MAX_KEY: usize = 250;

/// Room left in an item for its key and memcached's own header.
pub(crate) const ITEM_OVERHEAD: usize = 512;

/// Memcached reads a relative TTL above 30 days as a Unix time.
const MAX_RELATIVE_TTL: u64 = 30 * 24 * 3600;

/// The longest varint ([`pack`]): ten bytes of seven bits.
const MAX_VARINT: u128 = 10;

/// The largest value a state of `rule` can have, in bytes, packed: the
/// tag, the number of rates, and each rate's words at their most.
fn max_value_bytes(rule: &Rule) -> u128 {
    let per_rate: u128 = rule
        .rates()
        .iter()
        .map(|rate| match rule.algorithm() {
            Algorithm::SlidingLog => max_log_bytes(rate.limit(), rate.window_nanos()),
            // At most three words each (the sliding window's).
            _ => 3 * MAX_VARINT,
        })
        .sum();
    2 * MAX_VARINT + per_rate
}

/// The largest packed sliding log of limit `limit` and window `window`
/// (nanoseconds): its length, first time and first cost at most the
/// longest varint each; then at most `limit` entries. Their times lie
/// within the window, so the n gaps between them add up to less than it;
/// a gap g packs (zigzagged, 2g) into at most 1 + log2(2g + 1) / 7 bytes,
/// whose sum is largest when the gaps are equal, and largest at n =
/// `limit`. Their costs add up to at most `limit`: one byte each, and one
/// more for each change of cost past 63 (at most one per 64 units on
/// either side of it).
fn max_log_bytes(limit: u64, window: u64) -> u128 {
    let (entries, window) = (limit as f64, window as f64);
    let gap_bits = (2.0 * window / entries + 1.0).log2();
    let times = u128::from(limit) + (entries * gap_bits / 7.0).ceil() as u128;
    let costs = u128::from(limit) + u128::from(2 * limit).div_ceil(63);
    3 * MAX_VARINT + times + costs
}

/// The largest standing under `penalty`: the count of the rule's words,
/// then the ban's three words, the count of denials and fewer than `after`
/// denials, each at most the longest varint.
fn max_standing_bytes(penalty: Option<&Penalty>) -> u128 {
    penalty.map_or(0, |p| {
        MAX_VARINT * (5 + u128::from(p.after().min(MAX_AFTER)))
    })
}

/// Checks that every state of `rule` (and its standing under `penalty`)
/// fits an item of `item_size_max` bytes.
pub(crate) fn check_fits(
    rule: &Rule,
    penalty: Option<&Penalty>,
    item_size_max: usize,
) -> Result<(), UnsupportedRule> {
    let most = max_value_bytes(rule) + max_standing_bytes(penalty);
    let room = item_size_max.saturating_sub(ITEM_OVERHEAD) as u128;
    if most <= room {
        return Ok(());
    }
    Err(UnsupportedRule(format!(
        "{} {}: a key's state can take {most} bytes (a sliding log 4-6 per request in a window), more than a memcached item holds ({item_size_max} bytes, less {ITEM_OVERHEAD} for its key and header); lower the limit, or raise the servers' -I and the store's item size",
        rule.algorithm(),
        rule.rates()
    )))
}

/// The start of every item key of a rule: `PREFIX NAME.FINGERPRINT:`, so
/// that a changed rule, penalty (or value layout) starts afresh.
pub(crate) fn stem(prefix: &str, name: &str, rule: &Rule, penalty: Option<&Penalty>) -> String {
    let penalty = penalty.map_or(String::new(), |p| format!("|{p}"));
    let text = format!(
        "{}|{}|{:?}|{VALUE_FORMAT}{penalty}",
        rule.algorithm(),
        rule.rates(),
        rule.burst()
    );
    let digest = Sha256::digest(text.as_bytes());
    format!("{prefix}{name}.{}:", hex(&digest[..4]))
}

/// The item key of `key`: the stem and the key as they are when memcached
/// takes them (printable ASCII, at most 250 bytes), else the prefix and a
/// SHA-256 of both.
pub(crate) fn item_key(prefix: &str, stem: &str, key: &str) -> String {
    let plain = stem.len() + key.len() <= MAX_KEY
        && stem
            .bytes()
            .chain(key.bytes())
            .all(|b| b.is_ascii_graphic());
    if plain {
        return format!("{stem}{key}");
    }
    let mut hasher = Sha256::new();
    hasher.update(stem.as_bytes());
    hasher.update(key.as_bytes());
    format!("{prefix}#{}", hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What one item holds: a key's state, and its standing under the rule's
/// penalty if it has one.
#[derive(Clone, Debug)]
pub(crate) struct Held {
    pub state: KeyState,
    pub standing: Option<PenaltyState>,
}

impl Held {
    /// A key never seen.
    pub fn new(rule: &Rule, penalty: Option<&Penalty>) -> Held {
        Held {
            state: rule.new_state(),
            standing: penalty.map(Penalty::new_state),
        }
    }
}

/// The value of `held`: its words packed ([`pack`]); under a penalty, the
/// number of the state's words first and the standing's after them.
pub(crate) fn encode(rule: &Rule, penalty: Option<&Penalty>, held: &Held) -> Vec<u8> {
    let mut words = rule.encode_state(&held.state);
    if let (Some(penalty), Some(standing)) = (penalty, &held.standing) {
        words.insert(0, words.len() as u64);
        words.extend(penalty.encode_state(standing));
    }
    pack(&words)
}

/// What a value holds; `None` if it is not a state of `rule` (with a
/// standing under `penalty`, if given).
pub(crate) fn decode(rule: &Rule, penalty: Option<&Penalty>, value: &[u8]) -> Option<Held> {
    let words = unpack(value)?;
    let Some(penalty) = penalty else {
        let state = rule.decode_state(&words)?;
        return Some(Held {
            state,
            standing: None,
        });
    };
    let (&count, rest) = words.split_first()?;
    let split = usize::try_from(count).ok().filter(|&n| n <= rest.len())?;
    let (state, standing) = rest.split_at(split);
    Some(Held {
        state: rule.decode_state(state)?,
        standing: Some(penalty.decode_state(standing)?),
    })
}

/// `words` as varints (seven bits a byte, the low first, the high bit set
/// on every byte but a number's last), each word after the first two as
/// the zigzag of its difference from the word two before it: the sliding
/// log's entries, (time, cost) pairs, become the gaps between their times
/// and the changes of their costs, a few bytes each instead of sixteen.
fn pack(words: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(words.len() * 3);
    for (i, &word) in words.iter().enumerate() {
        let mut n = match i.checked_sub(2) {
            Some(before) => zigzag(word.wrapping_sub(words[before])),
            None => word,
        };
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }
    out
}

/// The words [`pack`] wrote; `None` for bytes it could not have written (a
/// number cut short, or longer than a word).
fn unpack(mut bytes: &[u8]) -> Option<Vec<u64>> {
    let mut words: Vec<u64> = Vec::with_capacity(bytes.len() / 2);
    while !bytes.is_empty() {
        let mut n: u64 = 0;
        let mut shift = 0;
        loop {
            let (&byte, rest) = bytes.split_first()?;
            bytes = rest;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                return None;
            }
            n |= bits << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
            if shift > 63 {
                return None;
            }
        }
        let word = match words.len().checked_sub(2) {
            Some(before) => words[before].wrapping_add(unzigzag(n)),
            None => n,
        };
        words.push(word);
    }
    Some(words)
}

/// A difference (two's complement) as a number small when it is near
/// zero either way: 0, -1, 1, -2 become 0, 1, 2, 3.
fn zigzag(difference: u64) -> u64 {
    let d = difference as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

fn unzigzag(n: u64) -> u64 {
    (n >> 1) ^ (n & 1).wrapping_neg()
}

/// The `T` of an item whose state stops mattering `reset_after` from now:
/// whole seconds rounded up, and one more, since memcached's clock ticks
/// once a second and an item set just before a tick expires up to a second
/// early. Above memcached's 30 days a TTL is a Unix time: then this one is.
pub(crate) fn ttl(reset_after: Duration) -> u64 {
    let seconds = reset_after.as_secs() + u64::from(reset_after.subsec_nanos() > 0) + 1;
    if seconds <= MAX_RELATIVE_TTL {
        return seconds;
    }
    let unix_now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    unix_now.saturating_add(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(algorithm: Algorithm, rates: &str) -> Rule {
        Rule::new(algorithm, rates.parse().unwrap())
    }

    #[test]
    fn a_sliding_log_that_could_outgrow_an_item_is_refused_with_the_reason() {
        let mib = 1 << 20;
        // About five bytes an entry in a minute, four in a second.
        assert!(check_fits(&rule(Algorithm::SlidingLog, "220000/m"), None, mib).is_ok());
        let err = check_fits(&rule(Algorithm::SlidingLog, "221000/m"), None, mib).unwrap_err();
        assert!(err.0.contains("-I"), "{err}");
        assert!(err.0.contains("221000/m"), "{err}");
        assert!(check_fits(&rule(Algorithm::SlidingLog, "270000/s"), None, mib).is_ok());
        // Several rates add up.
        assert!(check_fits(
            &rule(Algorithm::SlidingLog, "120000/m; 120000/h"),
            None,
            mib
        )
        .is_err());
        // The counters and buckets keep a few words whatever the limit.
        assert!(check_fits(&rule(Algorithm::TokenBucket, "1000000000/s"), None, mib).is_ok());
        // A penalty's denials count too.
        let penalty = Penalty::new(5000, Duration::from_secs(60), Duration::from_secs(60), None);
        let near = rule(Algorithm::SlidingLog, "215000/m");
        assert!(check_fits(&near, penalty.as_ref().ok(), mib).is_err());
    }

    #[test]
    fn keys_memcached_cannot_take_are_hashed_and_stay_apart() {
        let r = rule(Algorithm::FixedWindow, "1/s");
        let stem = stem("p:", "api", &r, None);
        assert!(stem.starts_with("p:api.") && stem.ends_with(':'), "{stem}");
        assert_eq!(item_key("p:", &stem, "alice"), format!("{stem}alice"));
        let spaced = item_key("p:", &stem, "a b");
        let long = item_key("p:", &stem, &"x".repeat(300));
        for hashed in [&spaced, &long] {
            assert!(
                hashed.starts_with("p:#") && hashed.len() == 3 + 64,
                "{hashed}"
            );
        }
        assert_ne!(spaced, item_key("p:", &stem, "a  b"));
        assert_ne!(
            stem,
            super::stem("p:", "api", &rule(Algorithm::FixedWindow, "2/s"), None)
        );
        let penalty =
            Penalty::new(3, Duration::from_secs(1), Duration::from_secs(9), None).unwrap();
        assert_ne!(stem, super::stem("p:", "api", &r, Some(&penalty)));
    }

    #[test]
    fn ttls_round_up_and_turn_absolute_past_30_days() {
        assert_eq!(ttl(Duration::ZERO), 1);
        assert_eq!(ttl(Duration::from_nanos(1)), 2);
        assert_eq!(ttl(Duration::from_secs(60)), 61);
        assert_eq!(
            ttl(Duration::from_secs(MAX_RELATIVE_TTL - 1)),
            MAX_RELATIVE_TTL
        );
        let absolute = ttl(Duration::from_secs(40 * 24 * 3600));
        let unix_now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let expected = unix_now + 40 * 24 * 3600 + 1;
        assert!((expected - 2..=expected).contains(&absolute), "{absolute}");
    }

    #[test]
    fn values_round_trip_and_damaged_ones_are_refused() {
        let r = rule(Algorithm::SlidingLog, "3/s; 5/m");
        let mut held = Held::new(&r, None);
        r.check(&mut held.state, 10, 2);
        let value = encode(&r, None, &held);
        let mut back = decode(&r, None, &value).expect("a state of the rule");
        assert_eq!(r.check(&mut back.state, 11, 1).remaining, 0);
        assert!(decode(&r, None, &value[..value.len() - 1]).is_none());
        assert!(decode(&rule(Algorithm::SlidingLog, "3/s"), None, &value).is_none());
    }

    #[test]
    fn words_pack_and_unpack_whatever_they_are() {
        let words = [0, u64::MAX, 1, u64::MAX - 1, 5, 3, u64::MAX, 0, 1 << 63, 7];
        for n in 0..=words.len() {
            assert_eq!(unpack(&pack(&words[..n])).as_deref(), Some(&words[..n]));
        }
        // Cut short, or a number longer than a word: refused.
        assert_eq!(unpack(&[0x80]), None);
        assert_eq!(unpack(&[0xff; 10]), None);
        assert_eq!(
            unpack(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
            None
        );
        assert_eq!(
            unpack(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
            Some(vec![u64::MAX])
        );
    }

    /// The logs that pack longest: every entry as far from the last as
    /// the window lets it, and costs that change as much as they can.
    #[test]
    fn a_full_log_packs_within_the_bound_an_item_is_sized_by() {
        for (rates, costs) in [
            ("1000/s", vec![1]),
            ("1000/m", vec![1]),
            ("1000/m", vec![1, 63, 1, 64]),
            ("1000/h", vec![1, 200]),
            ("1000/s; 2000/m", vec![1, 2, 1, 64]),
        ] {
            let r = rule(Algorithm::SlidingLog, rates);
            let shortest = r
                .rates()
                .iter()
                .map(|rate| rate.window_nanos())
                .min()
                .unwrap();
            let mut held = Held::new(&r, None);
            let (mut now, mut admitted) = (1u64 << 62, 0);
            for cost in costs.iter().cycle().take(5000) {
                now += shortest / 1000 - 1;
                admitted += u64::from(r.check(&mut held.state, now, *cost).allowed);
            }
            assert!(admitted > 100, "{rates}: {admitted}");
            let packed = encode(&r, None, &held).len() as u128;
            let bound = max_value_bytes(&r);
            assert!(packed <= bound, "{rates} {costs:?}: {packed} > {bound}");
            if costs == [1] {
                // As many entries as the limit, evenly spread: the bound's own case.
                assert!(
                    packed * 10 > bound * 7,
                    "{rates}: {packed} is far from {bound}"
                );
            }
        }
    }

    proptest::proptest! {
        /// Any trace of requests leaves a log that packs within the bound,
        /// and reads back as it was.
        #[test]
        fn every_log_packs_within_the_bound(
            limit in 1u64..300,
            window in 1u64..100_000_000_000,
            requests in proptest::collection::vec((0u64..2_000_000_000, 1u64..100), 1..600),
        ) {
            let r = Rule::new(
                Algorithm::SlidingLog,
                limits::Rates::new(vec![limits::Rate::new(limit, Duration::from_nanos(window)).unwrap()]).unwrap(),
            );
            let mut held = Held::new(&r, None);
            let mut now = 0u64;
            for (gap, cost) in requests {
                now += gap % window;
                r.check(&mut held.state, now, cost);
            }
            let packed = encode(&r, None, &held);
            proptest::prop_assert!(packed.len() as u128 <= max_value_bytes(&r));
            let back = decode(&r, None, &packed).expect("its own value");
            proptest::prop_assert_eq!(encode(&r, None, &back), packed);
        }
    }

    #[test]
    fn a_standing_round_trips_after_its_state() {
        let r = rule(Algorithm::FixedWindow, "1/s");
        let penalty = Penalty::new(3, Duration::from_secs(10), Duration::from_secs(60), Some(2));
        let penalty = penalty.unwrap();
        let mut held = Held::new(&r, Some(&penalty));
        let mut standing = held.standing.take().unwrap();
        let (mut state, now) = (held.state.clone(), 5);
        let decide = |state: &mut KeyState, m| r.decide(state, now, 1, m, |_| {});
        penalty.decide(&mut standing, now, limits::Mode::Record, |m| {
            decide(&mut state, m)
        });
        penalty.decide(&mut standing, now, limits::Mode::Record, |m| {
            decide(&mut state, m)
        });
        held = Held {
            state,
            standing: Some(standing),
        };
        let value = encode(&r, Some(&penalty), &held);
        let back = decode(&r, Some(&penalty), &value).expect("a penalized value");
        assert_eq!(back.standing, held.standing);
        assert_eq!(encode(&r, Some(&penalty), &back), value);
        // A plain rule's value is no penalized one's, and the other way.
        assert!(decode(&r, None, &value).is_none());
        let plain = encode(&r, None, &Held::new(&r, None));
        assert!(decode(&r, Some(&penalty), &plain).is_none());
    }
}
