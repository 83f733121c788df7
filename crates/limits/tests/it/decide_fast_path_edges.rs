//! The edges of two fast paths of `Rule::check`/`Rule::peek`,
//! each compared field by field, state included, with the general path
//! written from the algorithm's public steps:
//!
//! - the leaky bucket's whole-period path (W a multiple of L): queues
//!   `a * L + b` with `a` at and either side of its bound 2^62, of the
//!   `u64` edge (`2^64`, and `hi * 2^64 + lo` where `hi * wrap_r + lo`
//!   passes `u64`), within 1 of where a request just fits, `b` at 0, 1 and
//!   L - 1; `burst * T` either side of 2^62; L = 1, T = 1 (1 ns windows);
//!   W = T * L + 1 (not whole) for the general path beside it;
//! - the token bucket's whole-period path: debts `a * L + b` at the same
//!   edges, within 1 of the tolerance of a request and of L tokens missing;
//! - the sliding window's `units = ceil(previous * left / W)`: times
//!   where `previous * left` is within 1 of a multiple of W, counts within 1
//!   of where a request fits, products past `u64`.

use limits::algorithms::{
    LeakyBucket, LeakyBucketState, RateAlgorithm, ScaledTime, SlidingWindow, SlidingWindowState,
    TokenBucket, TokenBucketState,
};
use limits::{Algorithm, MAX_LIMIT, MAX_WINDOW, Rate, Rule};
use proptest::prelude::*;
use std::time::Duration;

use crate::edges;
use edges::general;

const BOUND: u64 = 1 << 62;

/// Checks (even steps) and peeks (odd) of `costs` at `times` from the state
/// `words` encode, on `rule` and through [`general`], decisions and states
/// compared after each.
fn same<A: RateAlgorithm>(
    rule: &Rule,
    a: &A,
    mut state: A::State,
    words: impl Fn(&A::State) -> Vec<u64>,
    steps: &[(u64, u64)],
) -> Result<(), TestCaseError> {
    let fused = rule.decode_state(&words(&state));
    prop_assume!(fused.is_some());
    let mut fused = fused.unwrap();
    for (i, &(now, cost)) in steps.iter().enumerate() {
        let record = i % 2 == 0;
        let want = general(a, &mut state, now, cost, record);
        let got = if record {
            rule.check(&mut fused, now, cost)
        } else {
            rule.peek(&mut fused, now, cost)
        };
        prop_assert_eq!(got, want, "step {} (cost {} at {})", i, cost, now);
        prop_assert_eq!(
            rule.encode_state(&fused),
            words(&state),
            "state after step {}",
            i
        );
    }
    Ok(())
}

/// `base + d`, kept within `0..=most`.
fn near(base: u128, d: i128, most: u128) -> u128 {
    base.saturating_add_signed(d).min(most)
}

fn pick(raw: u64, of: &[u64]) -> u64 {
    of[(raw % of.len() as u64) as usize]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3_000))]

    #[test]
    fn leaky_bucket_whole_period_edges(
        l_pick in 0u64..6, t_pick in 0u64..6, whole in prop::bool::weighted(0.9),
        b_pick in 0u64..8, a_pick in 0u64..8, rem_pick in 0u64..4, d in -1i128..=1,
        raws in any::<[u64; 6]>(), now in prop_oneof![0u64..=3, u64::MAX - 3..=u64::MAX, any::<u64>()],
        costs in prop::collection::vec((0u64..6, any::<u64>()), 1..5),
    ) {
        let max_w = MAX_WINDOW.as_nanos() as u64;
        let limit = pick(l_pick, &[1, 2, 1_000_000, 1 + raws[0] % MAX_LIMIT, MAX_LIMIT, 3]);
        let most_t = max_w / limit;
        let t = pick(t_pick, &[1, 2, 1001, most_t, most_t.saturating_sub(1), 1 + raws[1] % most_t]).clamp(1, most_t);
        let window = if whole || t * limit == max_w { t * limit } else { t * limit + 1 };
        let burst = pick(b_pick, &[0, 1, limit, (BOUND / t).saturating_sub(1), BOUND / t, BOUND / t + 1, raws[2], 2])
            .min(MAX_LIMIT);
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::LeakyBucket, rate.into()).with_burst(burst);
        let (l, w) = (u128::from(limit), u128::from(window));
        let wrap_r = u128::from(u64::MAX % limit + 1);
        let hi = u128::from(1 + raws[3] % 3);
        let first = 1 + raws[4] % (burst + 1);
        // Queues ahead of `now` (ns x L) at the edges of the fast path.
        let ahead = match a_pick {
            0 => near(u128::from(BOUND) * l, d * l as i128, u128::MAX),
            1 => near(1 << 64, d, u128::MAX),
            2 => near((hi << 64) + (1 << 64) - hi * wrap_r, d, u128::MAX),
            3 => near(u128::from(burst) * w, d * l as i128, u128::MAX)
                .saturating_sub(u128::from(first - 1) * w),
            4 => u128::from(raws[5]),
            5 => u128::from(raws[5]) * u128::from(raws[4]),
            6 => 0,
            _ => near(u128::from(u64::MAX / limit) * l, d * l as i128, u128::MAX),
        };
        // The remainder b by L: kept, 0, 1 or L - 1.
        let ahead = match rem_pick {
            0 => ahead,
            r => ahead - ahead % l + [0, 1, l - 1][r as usize - 1],
        };
        let most = (u128::from(u64::MAX) + 2 * w) * l;
        let next_slot = (u128::from(now) * l).saturating_add(ahead).min(most);
        let state = LeakyBucketState { next_slot: ScaledTime([(next_slot >> 64) as u64, next_slot as u64]) };
        let tag = rule.encode_state(&rule.new_state())[0];
        let words = |s: &LeakyBucketState| vec![tag, 1, s.next_slot.0[0], s.next_slot.0[1]];
        let steps: Vec<(u64, u64)> = costs.iter().enumerate().map(|(i, &(c, raw))| {
            let at = match i { 0 => now, 1 => now.saturating_add(1), 2 => now.saturating_add(t), _ => now.saturating_add(raw % (2 * t)) };
            (at, pick(c, &[0, 1, burst, burst + 1, first, raw % (burst + 2)]))
        }).collect();
        same(&rule, &LeakyBucket::new(rate, burst), state, words, &steps)?;
    }

    #[test]
    fn token_bucket_whole_period_edges(
        l_pick in 0u64..6, t_pick in 0u64..6, whole in prop::bool::weighted(0.9),
        a_pick in 0u64..8, rem_pick in 0u64..4, d in -1i128..=1,
        raws in any::<[u64; 6]>(), now in prop_oneof![0u64..=3, u64::MAX - 3..=u64::MAX, any::<u64>()],
        costs in prop::collection::vec((0u64..6, any::<u64>()), 1..5),
    ) {
        let max_w = MAX_WINDOW.as_nanos() as u64;
        let limit = pick(l_pick, &[1, 2, 16, 1 + raws[0] % MAX_LIMIT, MAX_LIMIT, 1_000_000]);
        let most_t = max_w / limit;
        let t = pick(t_pick, &[1, 2, 1001, most_t, most_t.saturating_sub(1), 1 + raws[1] % most_t]).clamp(1, most_t);
        let window = if whole || t * limit == max_w { t * limit } else { t * limit + 1 };
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::TokenBucket, rate.into());
        let (l, w) = (u128::from(limit), u128::from(window));
        let wrap_r = u128::from(u64::MAX % limit + 1);
        let hi = u128::from(1 + raws[3] % 3);
        let first = 1 + raws[4] % limit;
        // Debts (ns x L) at the edges of the fast path.
        let debt = match a_pick {
            0 => near(u128::from(BOUND) * l, d * l as i128, u128::MAX),
            1 => near(1 << 64, d, u128::MAX),
            2 => near((hi << 64) + (1 << 64) - hi * wrap_r, d, u128::MAX),
            3 => near(u128::from(limit - first) * w, d * l as i128, u128::MAX),
            4 => near(l * w, d * l as i128, u128::MAX),
            5 => u128::from(raws[5]) * u128::from(raws[4]),
            6 => 0,
            _ => u128::from(raws[5]),
        };
        let debt = match rem_pick {
            0 => debt,
            r => debt - debt % l + [0, 1, l - 1][r as usize - 1],
        };
        let most = (u128::from(u64::MAX) + 2 * w) * l;
        let full_at = (u128::from(now) * l).saturating_add(debt).min(most);
        let state = TokenBucketState { full_at: ScaledTime([(full_at >> 64) as u64, full_at as u64]) };
        let tag = rule.encode_state(&rule.new_state())[0];
        let words = |s: &TokenBucketState| vec![tag, 1, s.full_at.0[0], s.full_at.0[1]];
        let steps: Vec<(u64, u64)> = costs.iter().enumerate().map(|(i, &(c, raw))| {
            let at = match i { 0 => now, 1 => now.saturating_add(1), 2 => now.saturating_add(t), _ => now.saturating_add(raw % (2 * t)) };
            (at, pick(c, &[0, 1, limit, limit + 1, first, raw % (limit + 2)]))
        }).collect();
        same(&rule, &TokenBucket::new(rate), state, words, &steps)?;
    }

    #[test]
    fn sliding_window_units_edges(
        l_pick in 0u64..5, w_pick in 0u64..5, p_pick in 0u64..5, e_pick in 0u64..3,
        fit in -1i128..=1, d in -1i128..=1, raws in any::<[u64; 5]>(),
        index in prop_oneof![0u64..=2, any::<u64>()],
        costs in prop::collection::vec((0u64..5, any::<u64>()), 1..5),
    ) {
        let max_w = MAX_WINDOW.as_nanos() as u64;
        let limit = pick(l_pick, &[1, 16, 1 << 33, MAX_LIMIT, 1 + raws[0] % MAX_LIMIT]);
        let window = pick(w_pick, &[1, 3, 8_000_000, max_w, 1 + raws[1] % max_w]);
        let index = index.min(u64::MAX / window - 1);
        let previous = pick(p_pick, &[0, 1, limit, (1 << 32) + 1, raws[2]]).min(limit);
        let w = u128::from(window);
        // A time where previous * left is within 1 of m * W (or anywhere).
        let left = match e_pick {
            0 if previous > 0 => {
                let m = u128::from(raws[3] % (previous + 1));
                near((m * w).div_ceil(u128::from(previous)), d, w).max(1)
            }
            1 => w,
            _ => 1 + u128::from(raws[3]) % w,
        };
        let elapsed = window - left as u64;
        let units = (u128::from(previous) * left).div_ceil(w) as u64;
        let cost = 1 + raws[4] % limit;
        // The current count within 1 of where `cost` just fits.
        let current = near(u128::from(limit.saturating_sub(cost).saturating_sub(units)), fit, limit.into()) as u64;
        let now = index * window + elapsed;
        let rate = Rate::new(limit, Duration::from_nanos(window)).unwrap();
        let rule = Rule::new(Algorithm::SlidingWindow, rate.into());
        let state = SlidingWindowState { index, previous, current };
        let tag = rule.encode_state(&rule.new_state())[0];
        let words = |s: &SlidingWindowState| vec![tag, 1, s.index, s.previous, s.current];
        let steps: Vec<(u64, u64)> = costs.iter().enumerate().map(|(i, &(c, raw))| {
            let at = if i == 0 { now } else { now.saturating_add(raw % 3) };
            (at, pick(c, &[0, 1, cost, limit, raw % (limit + 2)]))
        }).collect();
        same(&rule, &SlidingWindow::new(rate), state, words, &steps)?;
    }
}
