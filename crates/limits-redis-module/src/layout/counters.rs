//! The counter limiters' layout (`common.lua`'s `load_counters`): every
//! rate's numbers in one string, little-endian doubles, each an exact
//! integer below 2^53.
//!
//! The numbers are the core's own words in the scripts' unit: the windows'
//! index and counts as they are; the buckets' time scaled by the limit in
//! microseconds, as `q * L + r` (`0 <= r < L`), where the core keeps
//! nanoseconds: the same instant times 1000, exact because every time the
//! module decides at is a whole microsecond.

use limits::{Algorithm, Rule};

/// The numbers a rate keeps in the scripts' layout.
fn fields(algorithm: Algorithm) -> usize {
    match algorithm {
        Algorithm::SlidingWindow => 3,
        _ => 2,
    }
}

fn is_bucket(algorithm: Algorithm) -> bool {
    matches!(algorithm, Algorithm::TokenBucket | Algorithm::LeakyBucket)
}

/// Appends to `words` the core's words of every rate held in `stored`;
/// `None` for a value of another length (another rule's), as the scripts
/// then start afresh, or holding other than whole numbers below 2^53.
pub(super) fn read(rule: &Rule, stored: &[u8], words: &mut Vec<u64>) -> Option<()> {
    let algorithm = rule.algorithm();
    let rates = rule.rates().as_slice();
    if stored.len() != 8 * fields(algorithm) * rates.len() {
        return None;
    }
    let mut numbers = stored.chunks_exact(8).map(|eight| {
        let x = f64::from_le_bytes(eight.try_into().unwrap_or_default());
        (x.fract() == 0.0 && (0.0..9_007_199_254_740_992.0).contains(&x)).then_some(x as u64)
    });
    for rate in rates {
        if is_bucket(algorithm) {
            let (q, r) = (numbers.next()??, numbers.next()??);
            let scaled = (u128::from(q) * u128::from(rate.limit()) + u128::from(r)) * 1000;
            words.extend([(scaled >> 64) as u64, scaled as u64]);
        } else {
            for _ in 0..fields(algorithm) {
                words.push(numbers.next()??);
            }
        }
    }
    Some(())
}

/// The value holding every rate's `words` (the core's, after its head).
pub(super) fn write(rule: &Rule, words: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 * words.len());
    let mut push = |n: u128| out.extend_from_slice(&(n as f64).to_le_bytes());
    if is_bucket(rule.algorithm()) {
        for (rate, pair) in rule.rates().iter().zip(words.chunks_exact(2)) {
            let micros = ((u128::from(pair[0]) << 64) | u128::from(pair[1])) / 1000;
            let limit = u128::from(rate.limit());
            push(micros / limit);
            push(micros % limit);
        }
    } else {
        words.iter().for_each(|&n| push(u128::from(n)));
    }
    out
}
