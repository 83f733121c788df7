//! Settling a granted request to its real cost, or renewing it: the
//! core's `Rule::settle`, `Rule::renew` and `KeyedLimiter::settle`. Held to
//! the reference models settled alike over random traces (any rule, ties,
//! window edges, refunds whole and partial, renewals, charges past the
//! limit); a sliding log or fixed window given refunds never holds more
//! than its limit of what the requests really cost in any window; and the
//! cases that broke or could: a token bucket refunded past full, a log's
//! own entry among others of its time, a key made idle by a refund, a
//! charge on a compact table's key, the receipt's decision allocating
//! nothing.

use crate::counting::counted;
use limits::{
    Algorithm, KeyedLimiter, ManualClock, Options, Rate, Rates, Receipt, RetryAfter, Rule,
};
use limits_conformance::{ALGORITHMS, RuleModel, SettleCase, SettleTo, check_rate, settle_case};
use proptest::prelude::*;
use std::time::Duration;

const SECOND: u64 = 1_000_000_000;

fn rule(algorithm: Algorithm, rate: &str) -> Rule {
    Rule::new(algorithm, rate.parse().unwrap())
}

fn keyed(rule: Rule) -> KeyedLimiter<u64, ManualClock> {
    let options = Options {
        max_keys: None,
        shards: 1,
    };
    KeyedLimiter::with_options(rule, ManualClock::new(0), options)
}

/// A trace on `Rule` alone (each key's state, the rule's receipts), every
/// decision and a peek after every settlement compared with the models.
fn rule_settles_as_models(algorithm: Algorithm, case: &SettleCase) -> Result<(), TestCaseError> {
    let rule = case.case.rule(algorithm);
    let mut states = std::collections::BTreeMap::new();
    let mut models = std::collections::BTreeMap::new();
    let mut pending: Vec<(u8, Receipt)> = Vec::new();
    for (i, e) in case.case.events.iter().enumerate() {
        if let (Some((n, to)), false) = (case.settles[i], pending.is_empty()) {
            let (key, receipt) = pending.remove(n % pending.len());
            let cost = to.cost(receipt.cost);
            let state = states.get_mut(&key).unwrap();
            let model: &mut RuleModel = models.get_mut(&key).unwrap();
            if to == SettleTo::Renewed {
                let renewed = rule.renew(state, e.t, receipt);
                prop_assert_eq!(renewed, model.renew(e.t, receipt), "renewing before #{}", i);
                pending.push((key, renewed));
            } else {
                rule.settle(state, e.t, receipt, cost);
                model.settle(e.t, receipt, cost);
            }
            let got = rule.peek(state, e.t, 1);
            let want = model.decide_each(e.t, 1, limits::Mode::Peek).0;
            prop_assert_eq!(got, want, "peek after settling #{} to {}", i, cost);
        }
        let state = states.entry(e.key).or_insert_with(|| rule.new_state());
        let model = models
            .entry(e.key)
            .or_insert_with(|| RuleModel::new(algorithm, &case.case.rates, case.case.burst));
        let (got, receipt) = rule.check_with_receipt(state, e.t, e.cost);
        prop_assert_eq!(got, model.decide(e.t, e.cost), "event #{} {:?}", i, e);
        prop_assert_eq!(receipt.is_some(), got.allowed && e.cost > 0);
        if let Some(receipt) = receipt {
            prop_assert_eq!(
                receipt,
                Receipt {
                    at: e.t,
                    cost: e.cost
                }
            );
            pending.push((e.key, receipt));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, ..ProptestConfig::default() })]

    #[test]
    fn every_limiter_settles_as_its_model(case in settle_case(3, 30)) {
        for algorithm in ALGORITHMS {
            rule_settles_as_models(algorithm, &case)?;
        }
    }

    /// Refunds only: what the requests really cost (their settled cost at
    /// their arrival) is within the limit in every window.
    #[test]
    fn refunds_never_let_more_than_the_limit_into_a_window(case in settle_case(1, 40)) {
        for algorithm in [Algorithm::SlidingLog, Algorithm::FixedWindow] {
            let rule = case.case.rule(algorithm);
            let mut states = std::collections::BTreeMap::new();
            // Per key: (arrival, real cost) of each admitted request.
            let mut passed: std::collections::BTreeMap<u8, Vec<(u64, u64)>> = Default::default();
            let mut pending: Vec<(u8, usize, Receipt)> = Vec::new();
            for (i, e) in case.case.events.iter().enumerate() {
                if let (Some((n, to)), false) = (case.settles[i], pending.is_empty()) {
                    let (key, index, receipt) = pending.remove(n % pending.len());
                    // A charge is debt, not a request: refunds alone here.
                    let cost = to.cost(receipt.cost).min(receipt.cost);
                    rule.settle(states.get_mut(&key).unwrap(), e.t, receipt, cost);
                    passed.get_mut(&key).unwrap()[index].1 = cost;
                }
                let state = states.entry(e.key).or_insert_with(|| rule.new_state());
                if let (_, Some(receipt)) = rule.check_with_receipt(state, e.t, e.cost) {
                    let list = passed.entry(e.key).or_default();
                    pending.push((e.key, list.len(), receipt));
                    list.push((e.t, e.cost));
                }
            }
            let (limit, window) = case.case.rates[0];
            for list in passed.values() {
                let real: Vec<(u64, u64)> = list.iter().copied().filter(|p| p.1 > 0).collect();
                match algorithm {
                    Algorithm::FixedWindow => {
                        let mut per_window = std::collections::BTreeMap::<u64, u64>::new();
                        for (t, c) in &real {
                            *per_window.entry(t / window).or_default() += c;
                        }
                        prop_assert!(per_window.values().all(|&n| n <= limit), "{:?}", per_window);
                    }
                    _ => check_rate(algorithm, &real, limit, window)
                        .map_err(TestCaseError::fail)?,
                }
            }
        }
    }
}

#[test]
fn a_token_bucket_refunded_is_never_above_its_burst() {
    let rule = rule(Algorithm::TokenBucket, "4/s");
    let mut state = rule.new_state();
    let (_, receipt) = rule.check_with_receipt(&mut state, 0, 1);
    // Half a second later the token has come back by itself (and one
    // more): the refund cannot make five.
    rule.settle(&mut state, SECOND / 2, receipt.unwrap(), 0);
    assert_eq!(rule.peek(&mut state, SECOND / 2, 1).remaining, 4);
    assert!(!rule.check(&mut state, SECOND / 2, 5).allowed);
    // Refunded while still spent, it comes back at once.
    let (_, receipt) = rule.check_with_receipt(&mut state, SECOND, 3);
    rule.settle(&mut state, SECOND, receipt.unwrap(), 1);
    assert_eq!(rule.peek(&mut state, SECOND, 1).remaining, 3);
}

#[test]
fn a_charge_past_the_limit_is_a_debt_the_next_requests_wait_for() {
    let rule = rule(Algorithm::TokenBucket, "10/s");
    let mut state = rule.new_state();
    let (_, receipt) = rule.check_with_receipt(&mut state, 0, 1);
    // Settled to 15: 5 tokens owed, paid back at 10 per second.
    rule.settle(&mut state, 0, receipt.unwrap(), 15);
    let denied = rule.check(&mut state, 0, 1);
    assert_eq!(
        denied.retry_after,
        RetryAfter::After(Duration::from_millis(600))
    );
    // At most one limit in debt: settled to a million, the wait is 2 s.
    let mut state = rule.new_state();
    let (_, receipt) = rule.check_with_receipt(&mut state, 0, 1);
    rule.settle(&mut state, 0, receipt.unwrap(), 1_000_000);
    let denied = rule.check(&mut state, 0, 10);
    assert_eq!(
        denied.retry_after,
        RetryAfter::After(Duration::from_secs(2))
    );
}

#[test]
fn a_log_refund_drops_the_request_s_own_entry_among_others() {
    let rule = rule(Algorithm::SlidingLog, "3/s");
    let limiter = keyed(rule);
    limiter.check_at(&1, 0, 1);
    let (_, receipt) = limiter.decide_with_receipt(&1, Some(10), 1, limits::Mode::Record, |_| {});
    limiter.check_at(&1, 20, 1);
    assert!(!limiter.check_at(&1, 30, 1).allowed);
    limiter.settle_at(&1, 40, receipt.unwrap(), 0);
    // The entry at 10 is gone: the next request passes, and the one after
    // waits for the entry at 0, not 10.
    assert!(limiter.check_at(&1, 50, 1).allowed);
    let denied = limiter.check_at(&1, 60, 1);
    assert_eq!(
        denied.retry_after,
        RetryAfter::After(Duration::from_nanos(SECOND - 60))
    );
}

#[test]
fn a_refund_that_leaves_nothing_drops_the_key() {
    for algorithm in ALGORITHMS {
        let limiter = keyed(rule(algorithm, "5/s"));
        let (_, receipt) =
            limiter.decide_with_receipt(&7, Some(3), 2, limits::Mode::Record, |_| {});
        assert_eq!(limiter.len(), 1, "{algorithm}");
        limiter.settle_at(&7, 3, receipt.unwrap(), 0);
        // The sliding window keeps nothing once its one count is gone.
        assert_eq!(limiter.len(), 0, "{algorithm}: the key is idle");
        assert_eq!(
            limiter.peek_at(&7, 3, 1).remaining,
            if algorithm == Algorithm::LeakyBucket {
                6
            } else {
                5
            }
        );
    }
}

#[test]
fn a_charge_on_a_key_no_longer_held_starts_it_in_debt() {
    for algorithm in ALGORITHMS {
        let limiter = keyed(rule(algorithm, "5/s"));
        let (_, receipt) =
            limiter.decide_with_receipt(&7, Some(0), 1, limits::Mode::Record, |_| {});
        // Three seconds on, every limiter is back to full and drops the key
        // (the smoothed rate forgets a request in four half-lives, 2.8 s).
        limiter.sweep_at(3 * SECOND);
        assert_eq!(limiter.len(), 0, "{algorithm}");
        limiter.settle_at(&7, 3 * SECOND, receipt.unwrap(), 4);
        let want = match algorithm {
            // A window counts the charge in the window it is made in.
            Algorithm::LeakyBucket => 3,
            _ => 2,
        };
        assert_eq!(
            limiter.peek_at(&7, 3 * SECOND, 1).remaining,
            want,
            "{algorithm}"
        );
    }
}

#[test]
fn a_compact_table_s_key_settles_as_the_rule_does() {
    // Both buckets at a rate whose states pack into 12 bytes: a charge to
    // the most debt still fits, and every later decision is the rule's.
    for algorithm in [Algorithm::TokenBucket, Algorithm::LeakyBucket] {
        let rule = Rule::new(
            algorithm,
            Rates::new(vec![Rate::new(1000, Duration::from_secs(60)).unwrap()]).unwrap(),
        );
        let limiter = keyed(rule.clone());
        let mut state = rule.new_state();
        let t = u64::MAX - 10 * SECOND;
        let (_, receipt) =
            limiter.decide_with_receipt(&1, Some(t), 1, limits::Mode::Record, |_| {});
        rule.check(&mut state, t, 1);
        limiter.settle_at(&1, t, receipt.unwrap(), u64::MAX);
        rule.settle(&mut state, t, receipt.unwrap(), u64::MAX);
        for dt in [0, 1, 60 * SECOND, 119 * SECOND, 120 * SECOND] {
            let now = t.saturating_add(dt);
            assert_eq!(
                limiter.peek_at(&1, now, 1),
                rule.peek(&mut state, now, 1),
                "{algorithm} +{dt}"
            );
        }
    }
}

#[test]
fn a_decision_with_its_receipt_allocates_nothing() {
    for algorithm in ALGORITHMS {
        let limiter = keyed(rule(algorithm, "100/s"));
        limiter.check_at(&1, 0, 1);
        let ((decision, receipt), allocations) =
            counted(|| limiter.decide_with_receipt(&1, Some(1), 1, limits::Mode::Record, |_| {}));
        assert!(decision.allowed && receipt.is_some(), "{algorithm}");
        // The log's second entry moves it to a ring: its one allocation.
        let most = usize::from(algorithm == Algorithm::SlidingLog);
        assert!(allocations.0 <= most, "{algorithm}: {allocations:?}");
    }
}
