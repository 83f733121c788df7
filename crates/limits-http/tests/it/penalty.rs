//! A rule whose store bans repeat offenders (`KeyedLimiter::with_penalty`):
//! the banned request's 429 says until when and why, its headers carry the
//! ban's end, its outcome is counted apart, and the ban ends on time.

use crate::common::{Memory, header, json, request, rule, send};
use axum::Router;
use axum::routing::get;
use limits::{Algorithm, KeyedLimiter, ManualClock, Penalty, Rule};
use limits_http::{Outcome, Policy, RateLimitLayer};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn banning(clock: &ManualClock) -> Arc<Memory> {
    let rule = Rule::new(Algorithm::FixedWindow, "2/s".parse().unwrap());
    let penalty = Penalty::new(3, Duration::from_secs(10), Duration::from_secs(60), Some(2));
    Arc::new(KeyedLimiter::with_clock(rule, clock.clone()).with_penalty(penalty.unwrap()))
}

#[tokio::test]
async fn the_third_denial_bans_and_the_429_says_until_when_and_why() {
    let clock = ManualClock::new(0);
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let heard = outcomes.clone();
    let observer =
        move |_: &str, outcome: Outcome, _: Duration| heard.lock().unwrap().push(outcome);
    let mut policy = Policy::new(vec![rule("login", "/", "ip", banning(&clock))]);
    policy.observer = Arc::new(observer);
    let app = Router::new()
        .route("/", get(|| async { "ok" }))
        .layer(RateLimitLayer::new(policy));
    let from = "192.0.2.9:1";
    for _ in 0..2 {
        assert_eq!(send(&app, request("/", from)).await.status(), 200);
    }
    for _ in 0..2 {
        let denied = send(&app, request("/", from)).await;
        assert_eq!(header(&denied, "retry-after"), "1", "the rule's own wait");
    }
    let banned = send(&app, request("/", from)).await;
    assert_eq!(banned.status(), 429);
    assert_eq!(header(&banned, "retry-after"), "60");
    assert_eq!(header(&banned, "ratelimit"), "\"login\";r=0;t=60");
    let body = json(banned).await;
    assert_eq!(body["rule"], "login");
    assert_eq!(body["retry_after"], 60);
    assert_eq!(body["offence"], 1);
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("banned by rule \"login\" until 20"),
        "{detail}"
    );
    assert!(
        detail.contains("denied 3 times within 10s (offence 1, a ban of 1m)"),
        "{detail}"
    );
    assert_eq!(
        body["banned_until"].as_str().unwrap().len(),
        "2026-12-03T01:00:00Z".len()
    );

    clock.advance(Duration::from_secs(30));
    let still = send(&app, request("/", from)).await;
    assert_eq!(
        header(&still, "retry-after"),
        "30",
        "the ban's end, not the rule's"
    );
    clock.advance(Duration::from_secs(30));
    assert_eq!(send(&app, request("/", from)).await.status(), 200);
    let seen = outcomes.lock().unwrap().clone();
    use Outcome::{Allowed, Banned, Limited};
    assert_eq!(
        seen,
        [Allowed, Allowed, Limited, Limited, Banned, Banned, Allowed]
    );
}
