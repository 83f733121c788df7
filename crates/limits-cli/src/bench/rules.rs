//! How each run's rule is made: the user's flags as they are, or the rule
//! the benches would run for an `--outcome` (their `sizing`, shared), sized
//! from the measured interval between two checks of one key, and adjusted
//! for what the benches' virtual clock never meets: windows aligned to the
//! real clock's epoch, and Redis's microseconds and 2^53 bound.

use super::scenario::{self, Outcome, Sizing};
use crate::args::RateArgs;
use limits::{Algorithm, Rate, Rule};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where one limiter's rule comes from.
#[derive(Clone, Copy, Debug)]
pub enum RuleSource<'a> {
    /// The user's rule flags.
    Given(&'a RateArgs),
    /// Sized for an outcome from the measured interval between one key's
    /// checks.
    Derived(Outcome),
}

impl RuleSource<'_> {
    /// The rule and warm-up cost for `algorithm` when each key is checked
    /// every `every` ns; `micros`: windows rounded up to whole microseconds
    /// (Redis keeps time in microseconds).
    pub fn rule(
        &self,
        algorithm: Algorithm,
        every: u64,
        micros: bool,
    ) -> Result<(Rule, u64), String> {
        match self {
            RuleSource::Given(rate) => Ok((rate.rule(algorithm)?, 1)),
            RuleSource::Derived(outcome) => {
                // The buckets' window is a million intervals: keep it within
                // the core's longest window (2^62 ns), whatever was measured.
                let every = every.min(4_000_000_000_000);
                let mut s = scenario::sizing(algorithm, every, *outcome);
                if micros {
                    s = fit(algorithm, s);
                }
                if matches!(algorithm, Algorithm::FixedWindow | Algorithm::SlidingWindow) {
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .unwrap_or_default();
                    let step = if micros { 1000 } else { 1 };
                    s.window = starting_now(s.window, step, now.as_nanos() as u64);
                }
                let rate = Rate::new(s.limit, Duration::from_nanos(s.window)).map_err(|e| {
                    format!("the derived rule {} per {} ns: {e}", s.limit, s.window)
                })?;
                Ok((Rule::new(algorithm, rate.into()), s.warm_cost))
            }
        }
    }

    /// `allowed`, `denied`, or None for the user's rule.
    pub fn outcome(&self) -> Option<&'static str> {
        match self {
            RuleSource::Given(_) => None,
            RuleSource::Derived(o) => Some(o.name()),
        }
    }
}

/// A window of about `window` ns (at most 1/16 longer, in `step`s) in whose
/// first sixteenth `now` falls, or `window` if there is none.
///
/// The windowed limiters' windows are aligned to whole multiples of W since
/// the epoch. The benches' virtual clock starts at a boundary; the real
/// clock is anywhere in a window, and a boundary early in a short run would
/// give every key a fresh window: "denied" would then mostly pass. Which
/// part of a window `now` is in changes completely with W (`now` is about
/// 10^11 windows since the epoch), so a nearby W that starts a window just
/// before `now` is quickly found.
fn starting_now(window: u64, step: u64, now: u64) -> u64 {
    let early = window / 16;
    (window..=window + early)
        .step_by(step as usize)
        .take(100_000)
        .find(|w| now % w < early)
        .unwrap_or(window)
}

/// `sizing` for Redis: windows in whole microseconds, and the buckets'
/// limit lowered (by tens, the refill per check kept) until 2 x limit x
/// window (in microseconds) is below 2^53, which the store requires.
pub fn fit(algorithm: Algorithm, s: Sizing) -> Sizing {
    let mut s = s;
    if matches!(algorithm, Algorithm::TokenBucket | Algorithm::LeakyBucket)
        && s.warm_cost > 1
        && s.limit >= 1000
    {
        let period = s.window.div_ceil(s.limit).div_ceil(1000) * 1000;
        while s.limit > 10
            && 2 * (s.limit as u128) * (s.limit as u128 * period as u128 / 1000) >= 1 << 53
        {
            s.limit /= 10;
        }
        s.window = s.limit * period;
        s.warm_cost = s.limit / 2;
    }
    s.window = s.window.div_ceil(1000) * 1000;
    s
}

#[cfg(test)]
mod tests {
    use super::super::scenario::sizing;
    use super::*;

    #[test]
    fn windows_start_near_now() {
        let now = 1_796_000_000_123_456_789;
        for (window, step) in [
            (400_000, 1),
            (16_000_000, 1),
            (700_000_000, 1000),
            (48_000_000_000, 1),
        ] {
            let w = starting_now(window, step, now);
            assert!(
                w >= window && w <= window + window / 16 && w % step == 0,
                "{w}"
            );
            assert!(now % w < window / 16, "{window}: {}", now % w);
        }
    }

    #[test]
    fn derived_rules_fit_the_redis_store() {
        for algorithm in crate::bench::ALL {
            for outcome in [Outcome::Allowed, Outcome::Denied] {
                for every in [1, 999, 50_000, 200_000_000, 20_000_000_000] {
                    let s = fit(algorithm, sizing(algorithm, every, outcome));
                    assert_eq!(s.window % 1000, 0, "{algorithm} {every}");
                    assert!(
                        2 * u128::from(s.limit) * u128::from(s.window / 1000) < 1 << 53,
                        "{algorithm} {every}: {s:?}"
                    );
                    assert!(s.warm_cost >= 1 && s.warm_cost <= s.limit);
                    let derived = RuleSource::Derived(outcome).rule(algorithm, every, true);
                    assert_eq!(derived.unwrap().1, s.warm_cost);
                }
            }
        }
    }
}
