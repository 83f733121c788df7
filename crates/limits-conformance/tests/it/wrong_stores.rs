//! The suite fails stores that are wrong by the least amount: a remaining off
//! by one, a retry_after one nanosecond early, a limit one too generous; and
//! its failure names the field.

use limits::{
    Algorithm, Decision, KeyedLimiter, ManualClock, Mode, RetryAfter, Rule, Store, StoreError,
    Verdict,
};
use limits_conformance::{check, Config, Property, ALGORITHMS};
use std::future::{ready, Future};
use std::time::Duration;

/// The in-memory store with every answer passed through `skew`.
struct Skewed {
    inner: KeyedLimiter<String, ManualClock>,
    skew: fn(&mut Decision),
}

impl Store for Skewed {
    fn rule(&self) -> &Rule {
        self.inner.rule()
    }

    fn decide(
        &self,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        let (fut, skew) = (Store::decide(&self.inner, key, cost, mode), self.skew);
        async move { fut.await.map(|v| skewed_verdict(v, skew)) }
    }

    fn decide_at(
        &self,
        key: &str,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        let (fut, skew) = (self.inner.decide_at(key, now, cost, mode), self.skew);
        async move { fut.await.map(|v| skewed_verdict(v, skew)) }
    }
}

/// Only the combined decision is skewed; each rate's stays right.
fn skewed_verdict(mut verdict: Verdict, skew: fn(&mut Decision)) -> Verdict {
    skew(&mut verdict.decision);
    verdict
}

fn skewed(skew: fn(&mut Decision)) -> impl Fn(Rule) -> std::future::Ready<Skewed> {
    move |rule| {
        let inner = KeyedLimiter::with_clock(rule, ManualClock::new(0));
        ready(Skewed { inner, skew })
    }
}

fn quick() -> Config {
    Config {
        cases: 64,
        ..Config::default()
    }
}

#[test]
fn remaining_off_by_one_fails_on_every_algorithm() {
    for algorithm in ALGORITHMS {
        let make = skewed(|d| d.remaining += 1);
        let failure = check(make, algorithm, Property::MatchesModels, &quick())
            .expect_err("an off-by-one remaining must fail");
        assert_eq!(failure.mismatch.field, "remaining", "{failure}");
        assert!(failure.to_string().contains("remaining"), "{failure}");
        let case = failure.case.clone().expect("the failing trace is reported");
        assert!(
            failure.to_string().contains(&format!("{case:?}")),
            "{failure}"
        );
    }
}

/// A retry_after one nanosecond early.
fn early(d: &mut Decision) {
    if let RetryAfter::After(wait) = d.retry_after {
        if !wait.is_zero() {
            d.retry_after = RetryAfter::After(wait - Duration::from_nanos(1));
        }
    }
}

#[test]
fn retry_after_one_nanosecond_early_fails_against_the_models() {
    for algorithm in ALGORITHMS {
        let failure = check(skewed(early), algorithm, Property::MatchesModels, &quick())
            .expect_err("an early retry_after must fail");
        assert_eq!(failure.mismatch.field, "retry_after", "{failure}");
    }
}

#[test]
fn retry_after_one_nanosecond_early_fails_the_exactness_probe() {
    for algorithm in ALGORITHMS {
        let failure = check(
            skewed(early),
            algorithm,
            Property::RetryAfterExact,
            &quick(),
        )
        .expect_err("an early retry_after must fail");
        assert_eq!(failure.mismatch.field, "retry_after", "{failure}");
        // Still denied at the early time, or a 1 ns wait become zero.
        let detail = &failure.mismatch.detail;
        assert!(
            detail.contains("still denied") || detail.contains("zero"),
            "{failure}"
        );
    }
}

/// A store whose rule is one more per window than the one it was given: it
/// agrees with itself, so only the models and the promises can catch it.
#[test]
fn a_limit_one_too_generous_breaks_the_sliding_log_promise() {
    let generous = |rule: Rule| {
        let rates: Vec<limits::Rate> = rule
            .rates()
            .iter()
            .map(|r| limits::Rate::new(r.limit() + 1, r.window()).expect("valid"))
            .collect();
        let looser = Rule::new(rule.algorithm(), limits::Rates::new(rates).expect("rates"));
        ready(KeyedLimiter::<String, ManualClock>::with_clock(
            looser,
            ManualClock::new(0),
        ))
    };
    let failure = check(
        generous,
        Algorithm::SlidingLog,
        Property::Invariants,
        &quick(),
    )
    .expect_err("L + 1 in a window must fail");
    assert_eq!(failure.mismatch.field, "allowed", "{failure}");
    assert!(
        failure.mismatch.detail.contains("in one window"),
        "{failure}"
    );
}

#[test]
fn a_store_that_cannot_decide_at_a_time_fails_with_its_error() {
    struct Clockbound(KeyedLimiter<String>);
    impl Store for Clockbound {
        fn rule(&self) -> &Rule {
            self.0.rule()
        }
        fn decide(
            &self,
            key: &str,
            cost: u64,
            mode: Mode,
        ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
            Store::decide(&self.0, key, cost, mode)
        }
    }
    let make = |rule| ready(Clockbound(KeyedLimiter::new(rule)));
    let failure = check(
        make,
        Algorithm::TokenBucket,
        Property::MatchesModels,
        &quick(),
    )
    .expect_err("no explicit time, no suite");
    assert_eq!(failure.mismatch.field, "error", "{failure}");
    assert!(
        failure.mismatch.detail.contains("explicit time"),
        "{failure}"
    );
}

/// A store that reads its times one nanosecond late. The sliding log and the
/// buckets only see time differences, so it conforms for them; the windows
/// aligned to the clock's zero must tell.
struct Late(KeyedLimiter<String, ManualClock>);

impl Store for Late {
    fn rule(&self) -> &Rule {
        self.0.rule()
    }

    fn decide(
        &self,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        Store::decide(&self.0, key, cost, mode)
    }

    fn decide_at(
        &self,
        key: &str,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        self.0.decide_at(key, now + 1, cost, mode)
    }
}

#[test]
fn one_nanosecond_late_fails_for_windows_aligned_to_zero() {
    let make = |rule| ready(Late(KeyedLimiter::with_clock(rule, ManualClock::new(0))));
    for algorithm in [Algorithm::FixedWindow, Algorithm::SlidingWindow] {
        let failure = check(make, algorithm, Property::MatchesModels, &quick())
            .expect_err("a nanosecond late must show");
        assert_ne!(failure.mismatch.field, "error", "{failure}");
    }
    check(
        make,
        Algorithm::SlidingLog,
        Property::MatchesModels,
        &quick(),
    )
    .expect("only differences of times matter to the sliding log");
}
