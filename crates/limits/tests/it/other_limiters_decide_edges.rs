//! Written-out decisions of the fused `check` and `peek` of the fixed
//! window, the sliding window, the leaky bucket and the sliding log
//! (`tests/it/other_limiters_decide.rs` compares them with the general path
//! over random sequences), and the one edge where the sliding window's
//! division-free roll must step aside: the last window index, where
//! `advance` rolls at every call.

use limits::{Algorithm, Decision, Rate, Rule};
use std::time::Duration;

/// Written out: 3 per 10 ns, a few fields of each limiter's decision.
#[test]
fn fused_decisions_at_written_edges() {
    let rate = || Rate::new(3, Duration::from_nanos(10)).unwrap().into();
    let ns = Duration::from_nanos;
    let fields = |d: Decision| (d.allowed, d.remaining, d.reset_after, d.refill_after);

    let fixed = Rule::new(Algorithm::FixedWindow, rate());
    let mut s = fixed.new_state();
    assert_eq!(fields(fixed.check(&mut s, 19, 2)), (true, 1, ns(1), ns(1)));
    assert_eq!(fields(fixed.peek(&mut s, 20, 0)), (true, 3, ns(0), ns(0)));

    let sliding = Rule::new(Algorithm::SlidingWindow, rate());
    let mut s = sliding.new_state();
    assert_eq!(
        fields(sliding.check(&mut s, 10, 3)),
        (true, 0, ns(20), ns(14))
    );
    // At 24 the previous 3 weigh 3 * 6 / 10 = 1.8: one fits, the next at 27.
    assert_eq!(
        fields(sliding.check(&mut s, 24, 1)),
        (true, 0, ns(16), ns(3))
    );

    let leaky = Rule::new(Algorithm::LeakyBucket, rate()).with_burst(1);
    let mut s = leaky.new_state();
    let d = leaky.check(&mut s, 10, 2);
    assert_eq!((fields(d), d.delay), ((true, 0, ns(7), ns(4)), ns(4)));

    let log = Rule::new(Algorithm::SlidingLog, rate());
    let mut s = log.new_state();
    log.check(&mut s, 10, 1);
    assert_eq!(fields(log.check(&mut s, 14, 2)), (true, 0, ns(10), ns(6)));
    let d = log.check(&mut s, 15, 1);
    assert_eq!(d.retry_after.duration(), Some(ns(5)));
}

/// At the last window index (W = 1 ns, t = `u64::MAX`) there is no next
/// window: a decision stays in the state's own (regression: `advance` took
/// the same index for the next and rolled the count away every time). The
/// fused check and peek and the sweep's idle test leave the state as it is.
#[test]
fn sliding_window_at_the_last_index_stays_in_its_window() {
    let rule = Rule::new(
        Algorithm::SlidingWindow,
        Rate::new(1, Duration::from_nanos(1)).unwrap().into(),
    );
    let tag = rule.encode_state(&rule.new_state())[0];
    let start = vec![tag, 1, u64::MAX, 0, 1];
    let mut s = rule.decode_state(&start).unwrap();
    let d = rule.check(&mut s, u64::MAX, 0);
    assert_eq!(rule.encode_state(&s), start);
    // The count of 1 fades over the window after this one: 2 ns.
    assert_eq!((d.remaining, d.reset_after), (0, Duration::from_nanos(2)));
    let d = rule.check(&mut s, u64::MAX, 1);
    assert!(!d.allowed);
    assert_eq!(rule.encode_state(&s), start);
    rule.peek(&mut s, u64::MAX, 1);
    assert_eq!(rule.encode_state(&s), start);
    assert!(!rule.is_idle(&mut s, u64::MAX));
    assert_eq!(rule.encode_state(&s), start);
}
