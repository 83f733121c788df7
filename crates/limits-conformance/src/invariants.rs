//! What each algorithm promises about the traffic it lets through, checked on
//! the allowed requests themselves rather than against a model (so that a
//! model and a limiter wrong in the same way are still caught).

use limits::Algorithm;

/// The most cost in any half-open window [s, s + w) over sorted (time, cost):
/// the same as the most in any (t - w, t].
pub fn worst_window(events: &[(u64, u64)], w: u64) -> u64 {
    let mut worst = 0;
    let mut start = 0;
    let mut sum = 0;
    for &(t, c) in events {
        sum += c;
        while events[start].0 + w <= t {
            sum -= events[start].1;
            start += 1;
        }
        worst = worst.max(sum);
    }
    worst
}

/// Whether the allowed (time, cost) of one key, sorted by time, never exceed
/// `limit + limit * span / window` over any span: the token bucket's promise.
pub fn within_burst_and_refill(allowed: &[(u64, u64)], limit: u64, window: u64) -> bool {
    (0..allowed.len()).all(|i| {
        let mut sum = 0u128;
        allowed[i..].iter().all(|&(t, c)| {
            sum += u128::from(c);
            let span = u128::from(t - allowed[i].0);
            let bound_times_w = u128::from(limit) * u128::from(window) + u128::from(limit) * span;
            sum * u128::from(window) <= bound_times_w
        })
    })
}

/// Checks what `algorithm` promises for one rate (`limit` per `window` ns)
/// over the allowed (time, cost) of one key, sorted by time (for the leaky
/// bucket, by departure, with every cost one). The error says what broke.
pub fn check_rate(
    algorithm: Algorithm,
    allowed: &[(u64, u64)],
    limit: u64,
    window: u64,
) -> Result<(), String> {
    let worst = || worst_window(allowed, window);
    match algorithm {
        Algorithm::None => Ok(()),
        Algorithm::SlidingLog | Algorithm::LeakyBucket if worst() > limit => Err(format!(
            "{} let {} through in one window of {window} ns, limit {limit}",
            algorithm,
            worst()
        )),
        Algorithm::FixedWindow | Algorithm::SlidingWindow if worst() > 2 * limit => Err(format!(
            "{} let {} through in one window of {window} ns, more than twice {limit}",
            algorithm,
            worst()
        )),
        Algorithm::TokenBucket if !within_burst_and_refill(allowed, limit, window) => Err(format!(
            "token-bucket let more than {limit} + {limit} * span / {window} ns through"
        )),
        // Twice the limit, and a sixteenth of a request forgotten per
        // request (each at least one unit): (2L + 1) * 16 / 15 in all.
        Algorithm::SmoothedRate if u128::from(worst()) * 15 > (2 * u128::from(limit) + 1) * 16 => {
            Err(format!(
                "smoothed-rate let {} through in one window of {window} ns, more than twice {limit} and what it forgets",
                worst()
            ))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worst_window_counts_the_busiest_window() {
        let events = [(0, 1), (5, 2), (9, 1), (10, 3)];
        assert_eq!(worst_window(&events, 10), 6); // (0, 10]: 2 + 1 + 3
        assert_eq!(worst_window(&events, 11), 7);
        assert_eq!(worst_window(&events, 1), 3);
    }

    #[test]
    fn each_algorithm_has_its_bound() {
        let three_at_once = [(0, 1), (0, 1), (0, 1)];
        assert!(check_rate(Algorithm::SlidingLog, &three_at_once, 2, 10).is_err());
        assert!(check_rate(Algorithm::FixedWindow, &three_at_once, 2, 10).is_ok());
        assert!(check_rate(Algorithm::FixedWindow, &three_at_once, 1, 10).is_err());
        assert!(check_rate(Algorithm::TokenBucket, &three_at_once, 2, 10).is_err());
        assert!(check_rate(Algorithm::TokenBucket, &[(0, 2), (5, 1)], 2, 10).is_ok());
    }
}
