//! A decision's `reset_after` is zero exactly when the key's state is idle
//! afterwards: the keyed limiter drops a key on that word, without asking
//! the state again, so the two must never disagree.

use limits::{Algorithm, Mode, Rule};

#[test]
fn reset_after_is_zero_exactly_when_the_state_is_idle() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let (mut idle_seen, mut busy_seen) = (0, 0);
    for algorithm in Algorithm::ALL {
        for rates in ["3/s", "2/100ms; 5/s", "7/3s"] {
            for burst in [None, Some(0), Some(2)] {
                let rule = Rule::build(algorithm, rates.parse().unwrap(), burst);
                let mut state = rule.new_state();
                let mut now = 0;
                for _ in 0..3_000 {
                    // Mostly small steps, sometimes a long pause.
                    now += if next(20) == 0 {
                        2_000_000_000
                    } else {
                        next(150_000_000)
                    };
                    let cost = next(rule.max_cost().min(8) + 2);
                    let mode = if next(4) == 0 {
                        Mode::Peek
                    } else {
                        Mode::Record
                    };
                    let d = rule.decide(&mut state, now, cost, mode, |_| {});
                    let idle = rule.is_idle(&mut state, now);
                    assert_eq!(
                        d.reset_after.is_zero(),
                        idle,
                        "{algorithm} {rates} burst {burst:?} at {now} cost {cost} {mode:?}: {d:?}"
                    );
                    idle_seen += usize::from(idle);
                    busy_seen += usize::from(!idle);
                }
            }
        }
    }
    // Both answers were exercised, not only one.
    assert!(
        idle_seen > 1_000 && busy_seen > 1_000,
        "{idle_seen} {busy_seen}"
    );
}
