//! The layer decides in `call` when every matching rule's store answers at
//! once (`Store::decide_now`), and in a boxed future otherwise. Both must
//! give the same answers: the same statuses, headers and bodies, the same
//! observer calls, the same delays. Each scenario runs the same script of
//! requests against the same rules on stores that answer at once, on
//! stores that make the layer wait (the same in-memory limiter behind a
//! `decide` that yields once, and no `decide_now`), and on mixes of both,
//! each on its own manual clock, and compares everything they answered.

mod harness;

use harness::*;
use limits::Algorithm;
use limits_http::{FailurePolicy, LayerOptions};

const A: &str = "192.0.2.1:1";
const B: &str = "198.51.100.7:2";

#[tokio::test(start_paused = true)]
async fn allowed_then_limited_with_several_rates_and_legacy_headers() {
    let defs = [("api", "/", "ip", Algorithm::TokenBucket, "2/s; 3/m", false)];
    let options = LayerOptions {
        legacy_headers: true,
        ..LayerOptions::default()
    };
    let script = [
        Act::Get("/", A, None),
        Act::Get("/x", A, None),
        Act::Get("/", A, None),
        Act::Get("/", B, None),
        Act::Advance(1500),
        Act::Get("/", A, None),
        Act::Get("/", A, None),
    ];
    let statuses = same_both_ways(&defs, options, &script).await;
    assert_eq!(statuses, [200, 200, 429, 200, 200, 429]);
}

#[tokio::test(start_paused = true)]
async fn a_later_rule_denies_after_the_earlier_counted() {
    let defs = [
        ("wide", "/", "ip", Algorithm::SlidingLog, "10/s", false),
        (
            "narrow",
            "/api",
            "ip",
            Algorithm::SlidingWindow,
            "1/s",
            false,
        ),
        (
            "user",
            "/api",
            "header:x-user",
            Algorithm::FixedWindow,
            "5/s",
            false,
        ),
    ];
    let script = [
        Act::Get("/api", A, Some("ann")),
        Act::Get("/api/items", A, Some("ann")),
        Act::Get("/", A, None),
        Act::Get("/api", B, Some("bob")),
        Act::Advance(2000),
        Act::Get("/api", A, Some("ann")),
    ];
    let statuses = same_both_ways(&defs, LayerOptions::default(), &script).await;
    assert_eq!(statuses, [200, 429, 200, 200, 200]);
}

#[tokio::test(start_paused = true)]
async fn unmatched_paths_refused_paths_and_missing_keys() {
    let defs = [
        ("by-ip", "/api", "ip", Algorithm::TokenBucket, "1/s", false),
        (
            "by-user",
            "/api",
            "header:x-user",
            Algorithm::TokenBucket,
            "5/s",
            false,
        ),
    ];
    let script = [
        Act::Get("/other", A, None),
        Act::Get("/api/%2Fetc", A, Some("ann")),
        Act::Get("/api", A, None),
        Act::Get("/api", A, Some("ann")),
        Act::Get("/api/../other", A, None),
    ];
    let statuses = same_both_ways(&defs, LayerOptions::default(), &script).await;
    // The key error comes after the first rule counted the request.
    assert_eq!(statuses, [200, 400, 400, 429, 200]);
}

#[tokio::test(start_paused = true)]
async fn a_store_that_is_down_under_each_failure_policy() {
    let defs = [
        ("up", "/", "ip", Algorithm::TokenBucket, "3/s", false),
        ("down", "/", "ip", Algorithm::TokenBucket, "3/s", true),
    ];
    let script = [Act::Get("/", A, None), Act::Get("/", A, None)];
    let allow = LayerOptions::default();
    assert_eq!(same_both_ways(&defs, allow, &script).await, [200, 200]);
    let deny = LayerOptions {
        on_store_error: FailurePolicy::Deny,
        ..LayerOptions::default()
    };
    assert_eq!(
        same_both_ways(&defs, deny.clone(), &script).await,
        [503, 503]
    );
    let dry_run = LayerOptions {
        dry_run: true,
        ..deny
    };
    assert_eq!(same_both_ways(&defs, dry_run, &script).await, [200, 200]);
}

#[tokio::test(start_paused = true)]
async fn a_dry_run_lets_the_limited_through_with_their_headers() {
    let defs = [("api", "/", "ip", Algorithm::SlidingWindow, "1/s", false)];
    let options = LayerOptions {
        dry_run: true,
        ..LayerOptions::default()
    };
    let script = [Act::Get("/", A, None), Act::Get("/", A, None)];
    assert_eq!(same_both_ways(&defs, options, &script).await, [200, 200]);
}

#[tokio::test(start_paused = true)]
async fn a_leaky_bucket_delay_is_waited_the_same() {
    let defs = [("smooth", "/", "ip", Algorithm::LeakyBucket, "10/s", false)];
    let script = [
        Act::Get("/", A, None),
        Act::Get("/", A, None),
        Act::Get("/", A, None),
    ];
    let options = LayerOptions::default();
    let sync = run(&defs, &options, &[true], &script).await;
    let waits: Vec<u64> = sync
        .seen
        .iter()
        .map(|s| s.waited.as_millis() as u64)
        .collect();
    assert_eq!(
        waits,
        [0, 100, 200],
        "held for the delays, decided in `call`"
    );
    assert_eq!(
        same_both_ways(&defs, options, &script).await,
        [200, 200, 200]
    );
}
