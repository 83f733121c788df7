//! The module's decision, apart from Redis, on random traces: its answer
//! is the core's decision, and the keys it writes hold a state that
//! decides as the core's does, for every limiter it decides.

mod common;

use limits::{Algorithm, Mode, Rule};
use limits_redis_module::{decide, layout, Request};
use proptest::prelude::*;

/// The script arguments of `rule`, after the key.
fn args(rule: &Rule, cost: u64, mode: Mode) -> Vec<String> {
    let mode = match mode {
        Mode::Peek => "0",
        Mode::Record => "1",
        Mode::RecordAlways => "2",
    };
    let mut args = vec![
        rule.algorithm().name().to_owned(),
        "".into(),
        cost.to_string(),
        mode.into(),
        "0".into(),
        rule.rates().len().to_string(),
    ];
    for rate in rule.rates().iter() {
        let burst = match rule.algorithm() {
            Algorithm::LeakyBucket => rule.burst().unwrap_or(rate.limit()),
            _ => 0,
        };
        args.extend([rate.limit(), rate.window_nanos() / 1000, burst].map(|n| n.to_string()));
    }
    args.extend((1..layout::keys(rule)).map(|i| format!("key{i}")));
    args
}

proptest! {
    #[test]
    fn the_module_decides_as_the_core_and_keeps_its_state(
        rule in common::rule(20),
        trace in prop::collection::vec((prop_oneof![Just(0u64), Just(1), 0u64..300_000], 0u64..25, 0u8..4), 1..60),
    ) {
        let mut state = rule.new_state();
        let mut stored: Vec<Option<Vec<u8>>> = vec![None; layout::keys(&rule)];
        let mut now = 1_700_000_000_000_000u64;
        for (step, cost, mode) in trace {
            now += step;
            let mode = [Mode::Record, Mode::Record, Mode::Peek, Mode::RecordAlways][usize::from(mode)];
            let cost = cost % (rule.max_cost() + 2);
            let args = args(&rule, cost, mode);
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            let request = Request::parse(&args).unwrap();
            let values: Vec<Option<&[u8]>> = stored.iter().map(Option::as_deref).collect();
            let outcome = decide(&request, &values, now);
            let mut rows = Vec::new();
            let (decision, at) = rule.decide_timed(&mut state, now * 1000, cost, mode, |d| rows.push(d));
            let answer: Vec<u64> = outcome
                .answer
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap()) as u64)
                .collect();
            prop_assert_eq!(answer[0], at / 1000);
            prop_assert_eq!(answer[1] == 1, decision.allowed);
            for (write, value) in outcome.writes.into_iter().zip(stored.iter_mut()) {
                *value = Some(write.0);
            }
            let values: Vec<Option<&[u8]>> = stored.iter().map(Option::as_deref).collect();
            let mut written = layout::read(&rule, &values);
            // What the keys hold decides as the core's state does.
            let probe = |s: &mut limits::KeyState| rule.peek(s, now * 1000, 1);
            prop_assert_eq!(probe(&mut written), probe(&mut state.clone()));
        }
    }
}

/// The scripts' layout holds limits and windows below 2^48 (µs) and times
/// below 2^52: past them a sliding log's ring could not be laid out (its
/// widths would pass 8 bytes) or a double not hold the numbers, so such a
/// request is refused by name rather than decided wrongly or panicking
/// inside Redis.
#[test]
fn numbers_past_the_layouts_range_are_refused_not_a_panic() {
    let refused = |text: &str| {
        let args: Vec<&[u8]> = text
            .split(' ')
            .map(|a| if a == "''" { &b""[..] } else { a.as_bytes() })
            .collect();
        Request::parse(&args).unwrap_err().0
    };
    let huge = (1u64 << 62).to_string();
    let err = refused(&format!("sliding-log '' 1 1 0 1 {huge} 1000000 0"));
    assert!(err.contains("2^48") && err.contains("rate 1"), "{err}");
    let err = refused(&format!("token-bucket '' 1 1 0 1 5 {} 0", 1u64 << 50));
    assert!(err.contains("2^48"), "{err}");
    let err = refused(&format!("fixed-window {} 1 1 0 1 5 1000000 0", 1u64 << 60));
    assert!(err.contains("time"), "{err}");
    // At the range's edge a log is decided.
    let edge = ((1u64 << 48) - 1).to_string();
    let args: Vec<String> = ["sliding-log", "", "1", "1", "0", "1", &edge, "1000000", "0"]
        .map(String::from)
        .to_vec();
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    let request = Request::parse(&args).unwrap();
    let outcome = decide(&request, &[None], 1_700_000_000_000_000);
    assert_eq!(outcome.writes.len(), 1);
}
