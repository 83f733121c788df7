//! The sliding log's ring as it grows and shrinks while wrapped (a resize
//! copies it in two runs): every decision, and `allow`'s
//! verdict, equal the reference model's, to the nanosecond, on traces whose
//! bursts fill a wrapped ring past its capacity and whose quiet spells drain
//! it below a quarter of it.

use limits::{Algorithm, Rate, Rule};
use limits_conformance::RuleModel;
use proptest::prelude::*;
use std::time::Duration;

const LIMIT: u64 = 64;
const WINDOW: u64 = 1_000;

/// Steps of (time to wait, cost): mostly short waits in bursts, sometimes a
/// long one that lets most of the log expire.
fn trace() -> impl Strategy<Value = Vec<(u64, u64)>> {
    let wait = prop_oneof![8 => 0..40u64, 1 => 600..1_200u64];
    proptest::collection::vec((wait, 1..=9u64), 1..150)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn a_growing_and_shrinking_wrapped_log_decides_as_the_model(steps in trace()) {
        let rule = Rule::new(
            Algorithm::SlidingLog,
            Rate::new(LIMIT, Duration::from_nanos(WINDOW)).unwrap().into(),
        );
        let mut model = RuleModel::new(Algorithm::SlidingLog, &[(LIMIT, WINDOW)], None);
        let mut state = rule.new_state();
        let mut fast = rule.new_state();
        let mut t = 0;
        for (i, (wait, cost)) in steps.into_iter().enumerate() {
            t += wait;
            let want = model.decide(t, cost);
            let got = rule.check(&mut state, t, cost);
            prop_assert_eq!(got, want, "step {} at {} cost {}", i, t, cost);
            let verdict = rule.allow(&mut fast, t, cost);
            let expected = if want.allowed { Ok(want.delay) } else { Err(want.retry_after) };
            prop_assert_eq!(verdict, expected, "allow, step {}", i);
        }
    }
}

/// One trace written out: four entries fill the first ring, two expire, two
/// more wrap it, and a fifth grows it from the wrapped state.
#[test]
fn growing_a_wrapped_ring_keeps_the_entries_in_order() {
    let rule = Rule::new(
        Algorithm::SlidingLog,
        Rate::new(5, Duration::from_nanos(100)).unwrap().into(),
    );
    let mut state = rule.new_state();
    for t in [0, 0, 50, 50] {
        assert!(rule.check(&mut state, t, 1).allowed);
    }
    // At 100 the two entries at 0 expire; 3 more fit under 5 in the window.
    for _ in 0..3 {
        assert!(rule.check(&mut state, 100, 1).allowed);
    }
    let denied = rule.check(&mut state, 100, 1);
    assert!(!denied.allowed);
    // The oldest left is at 50: it expires at 150, with the other one at 50,
    // so that two requests fit then, and a third waits for the entries at 100.
    assert_eq!(
        denied.retry_after.duration(),
        Some(Duration::from_nanos(50))
    );
    assert!(rule.check(&mut state, 150, 2).allowed);
    let denied = rule.check(&mut state, 150, 1);
    assert!(!denied.allowed);
    assert_eq!(
        denied.retry_after.duration(),
        Some(Duration::from_nanos(50))
    );
    assert!(rule.check(&mut state, 200, 3).allowed);
}
