//! The Lua scripts' layout of a counter limiter's state (`common.lua`'s
//! `load_counters`), read into the core's state and written back: per rate,
//! little-endian doubles, each an exact integer below 2^53. A deployment
//! moves between the scripts and the module without losing a count.
//!
//! The numbers are the core's own ([`Rule::encode_state`]) in the scripts'
//! unit: the windows' index and counts as they are; the buckets' time
//! scaled by the limit in microseconds, as `q * L + r` (`0 <= r < L`),
//! where the core keeps nanoseconds: the same instant times 1000, exact
//! because every time the module decides at is a whole microsecond.

use limits::{Algorithm, KeyState, Rule};

/// The core's words of a rule: its state's tag and number of rates first.
const HEAD: usize = 2;

/// The numbers a rate keeps in the scripts' layout.
fn fields(algorithm: Algorithm) -> usize {
    match algorithm {
        Algorithm::SlidingWindow => 3,
        _ => 2,
    }
}

/// `stored` (the key's value, if any) as the core's state of `rule`: a
/// fresh state for a value of another length (another rule, or none), as
/// the scripts read it, or one the core does not accept (counts above the
/// limit).
///
/// ```
/// use limits::{Algorithm, Rule};
/// use limits_redis_module::layout;
///
/// let rule = Rule::new(Algorithm::FixedWindow, "2/s".parse().unwrap());
/// let mut state = rule.new_state();
/// rule.check(&mut state, 3_000_000_000, 1);
/// let stored = layout::write(&rule, &state);
/// assert_eq!(stored.len(), 16); // the window's index and count, as doubles
/// let mut back = layout::read(&rule, Some(&stored));
/// assert!(rule.check(&mut back, 3_000_000_000, 1).allowed);
/// assert!(!rule.check(&mut back, 3_000_000_000, 1).allowed);
/// ```
pub fn read(rule: &Rule, stored: Option<&[u8]>) -> KeyState {
    let Some(stored) = stored else {
        return rule.new_state();
    };
    let algorithm = rule.algorithm();
    let per_rate = fields(algorithm);
    let rates = rule.rates().as_slice();
    if stored.len() != 8 * per_rate * rates.len() {
        return rule.new_state();
    }
    let mut numbers = stored.chunks_exact(8).map(|eight| {
        let x = f64::from_le_bytes(eight.try_into().unwrap_or_default());
        // Every number the scripts write is a whole one below 2^53.
        (x.fract() == 0.0 && (0.0..9_007_199_254_740_992.0).contains(&x)).then_some(x as u64)
    });
    let mut words = rule.encode_state(&rule.new_state());
    words.truncate(HEAD);
    for rate in rates {
        match algorithm {
            Algorithm::TokenBucket | Algorithm::LeakyBucket => {
                let (Some(Some(q)), Some(Some(r))) = (numbers.next(), numbers.next()) else {
                    return rule.new_state();
                };
                let scaled = (u128::from(q) * u128::from(rate.limit()) + u128::from(r)) * 1000;
                words.extend([(scaled >> 64) as u64, scaled as u64]);
            }
            _ => {
                for _ in 0..per_rate {
                    let Some(Some(n)) = numbers.next() else {
                        return rule.new_state();
                    };
                    words.push(n);
                }
            }
        }
    }
    rule.decode_state(&words)
        .unwrap_or_else(|| rule.new_state())
}

/// `state` in the scripts' layout.
pub fn write(rule: &Rule, state: &KeyState) -> Vec<u8> {
    let words = rule.encode_state(state);
    let mut out = Vec::with_capacity(8 * (words.len() - HEAD));
    let mut push = |n: u128| out.extend_from_slice(&(n as f64).to_le_bytes());
    match rule.algorithm() {
        Algorithm::TokenBucket | Algorithm::LeakyBucket => {
            for (rate, pair) in rule.rates().iter().zip(words[HEAD..].chunks_exact(2)) {
                let micros = ((u128::from(pair[0]) << 64) | u128::from(pair[1])) / 1000;
                let limit = u128::from(rate.limit());
                push(micros / limit);
                push(micros % limit);
            }
        }
        _ => words[HEAD..].iter().for_each(|&n| push(u128::from(n))),
    }
    out
}
