//! The in-memory store (`KeyedLimiter<String, ManualClock>`) runs the whole
//! conformance suite: the store the Redis store will be held equal to.

use limits::{KeyedLimiter, ManualClock, Options, Rule};
use std::future::{ready, Ready};

/// A fresh in-memory store; two shards, so that keys land on both, and a
/// clock that never moves (the suite gives every time explicitly).
fn memory(rule: Rule) -> Ready<KeyedLimiter<String, ManualClock>> {
    let options = Options {
        max_keys: None,
        shards: 2,
    };
    ready(KeyedLimiter::with_options(
        rule,
        ManualClock::new(0),
        options,
    ))
}

limits_conformance::store_conformance_tests!(memory);
limits_conformance::store_settle_tests!(memory);

/// The in-memory store with a penalty.
fn banning(rule: Rule, penalty: limits::Penalty) -> Ready<KeyedLimiter<String, ManualClock>> {
    ready(memory(rule).into_inner().with_penalty(penalty))
}

limits_conformance::store_penalty_tests!(banning);

/// Regression: the penalty model waited a cost-0 peek, while banned,
/// for the leaky bucket to drain one unit, where the plain model (and
/// the store) admit a cost of 0 at any time: the wait is the ban's.
#[test]
fn a_banned_peek_of_cost_zero_waits_for_the_ban_alone() {
    use limits::{Algorithm, Mode, Penalty, RetryAfter, Store};
    use limits_conformance::{Case, PenaltyModel, RuleModel};
    use std::time::Duration;

    let case = Case {
        rates: vec![(6, 11), (1, 910), (2, 999_999_937)],
        burst: None,
        events: Vec::new(),
    };
    let ns = Duration::from_nanos;
    let penalty = Penalty::new(1, ns(1), ns(5), None).unwrap();
    let store = banning(case.rule(Algorithm::LeakyBucket), penalty).into_inner();
    let rule = RuleModel::new(Algorithm::LeakyBucket, &case.rates, case.burst);
    let mut model = PenaltyModel::new(rule, penalty);
    let (t0, t1) = (263_775_730, 263_776_239);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for (t, cost, mode) in [
        (t0, 2, Mode::Record),
        (t1, 1, Mode::Record),
        (t1, 0, Mode::Peek),
    ] {
        let got = runtime
            .block_on(store.decide_at("k1", t, cost, mode))
            .unwrap();
        let (want, until) = model.decide_each(t, cost, mode);
        assert_eq!(got.decision, want.0, "at {t}, cost {cost}, {mode:?}");
        assert_eq!(got.ban.map(|b| b.until), until);
    }
    let (peek, _) = model.decide_each(t1, 0, Mode::Peek);
    assert_eq!(peek.0.retry_after, RetryAfter::After(ns(5)));
}
