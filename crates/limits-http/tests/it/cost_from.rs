//! A rule that reads the real cost from the response (`HttpRule::cost_from`,
//! issue 27 part 1: the LLM gateway's tokens per minute): each request is
//! counted at the rule's cost (the estimate) on arrival, then settled to
//! what the upstream's header says when the response head arrives: the
//! difference refunded, or the rest charged as a debt; at most the rule's
//! maximum; the estimate kept when the header is missing or unreadable;
//! the header never reaching the client.

use crate::common::{Memory, request, rule, send, store};
use axum::Router;
use axum::http::HeaderMap;
use axum::routing::get;
use http::StatusCode;
use limits::{Algorithm, ManualClock};
use limits_http::{CostFrom, Counts, Policy, RateLimitLayer};
use std::sync::Arc;

const KEY: &str = "ip=192.0.2.1";

/// An upstream that reports the tokens its answer used, as the request's
/// `x-answer-tokens` asks (none if it does not), with the status its
/// `x-answer-status` asks (200 if it does not).
fn app(policy: Policy<Memory>) -> Router {
    let answer = |asked: HeaderMap| async move {
        let status = asked
            .get("x-answer-status")
            .and_then(|s| s.to_str().ok()?.parse::<u16>().ok())
            .map_or(StatusCode::OK, |s| StatusCode::from_u16(s).unwrap());
        let mut headers = HeaderMap::new();
        if let Some(tokens) = asked.get("x-answer-tokens") {
            headers.insert("x-tokens-used", tokens.clone());
        }
        (status, headers, "answer")
    };
    Router::new()
        .route("/llm", get(answer))
        .layer(RateLimitLayer::new(policy))
}

/// A request whose answer reports `tokens` (if any) with `status`.
fn ask(tokens: Option<&str>, status: u16) -> http::Request<axum::body::Body> {
    let mut r = request("/llm", "192.0.2.1:1");
    if let Some(tokens) = tokens {
        r.headers_mut()
            .insert("x-answer-tokens", tokens.parse().unwrap());
    }
    r.headers_mut()
        .insert("x-answer-status", status.to_string().parse().unwrap());
    r
}

/// A tokens rule: `rates`, estimated at 100 a request, at most 500.
fn tokens(limiter: Algorithm, rates: &str, clock: &ManualClock) -> (Arc<Memory>, Router) {
    let tokens = store(limiter, rates, clock);
    let llm = rule("llm", "/llm", "ip", tokens.clone())
        .cost(100)
        .cost_from(CostFrom::header("x-tokens-used", 500).unwrap());
    (tokens, app(Policy::new(vec![llm])))
}

#[tokio::test]
async fn the_estimate_is_settled_to_the_tokens_the_response_reports() {
    let clock = ManualClock::new(0);
    let (tokens, app) = tokens(Algorithm::SlidingLog, "1000/m", &clock);
    let r = send(&app, ask(Some("30"), 200)).await;
    assert_eq!(r.status(), 200);
    assert!(
        r.headers().get("x-tokens-used").is_none(),
        "the header is the upstream's, not the client's"
    );
    assert_eq!(tokens.peek(KEY, 1).remaining, 970, "70 refunded");
    send(&app, ask(Some("400"), 200)).await;
    assert_eq!(tokens.peek(KEY, 1).remaining, 570, "300 more charged");
}

#[tokio::test]
async fn a_cost_above_the_maximum_is_settled_to_the_maximum() {
    let clock = ManualClock::new(0);
    let (tokens, app) = tokens(Algorithm::FixedWindow, "1000/m", &clock);
    send(&app, ask(Some("999999999999999999999999"), 200)).await;
    assert_eq!(tokens.peek(KEY, 1).remaining, 500);
}

#[tokio::test]
async fn a_missing_or_unreadable_cost_leaves_the_estimate() {
    let clock = ManualClock::new(0);
    let (tokens, app) = tokens(Algorithm::SlidingWindow, "1000/m", &clock);
    send(&app, ask(None, 200)).await;
    assert_eq!(tokens.peek(KEY, 1).remaining, 900);
    for unreadable in ["", "-5", "1e3", "12 tokens", "0x10"] {
        let r = send(&app, ask(Some(unreadable), 200)).await;
        assert!(r.headers().get("x-tokens-used").is_none(), "{unreadable:?}");
    }
    assert_eq!(tokens.peek(KEY, 1).remaining, 400, "five more estimates");
}

#[tokio::test]
async fn a_cost_past_the_limit_is_a_debt_the_next_request_waits_for() {
    let clock = ManualClock::new(0);
    let (tokens, app) = tokens(Algorithm::TokenBucket, "300/m", &clock);
    // 500 of a bucket of 300: 200 tokens of debt, 40 s of refill.
    assert_eq!(send(&app, ask(Some("500"), 200)).await.status(), 200);
    let next = send(&app, ask(Some("1"), 200)).await;
    assert_eq!(next.status(), 429);
    let waited = tokens.peek(KEY, 100).retry_after.duration().unwrap();
    assert_eq!(waited.as_secs(), 60, "200 tokens of debt, then 100 more");
}

#[tokio::test]
async fn a_status_the_rule_does_not_count_is_refunded_whatever_the_header_says() {
    let clock = ManualClock::new(0);
    let tokens = store(Algorithm::SlidingLog, "1000/m", &clock);
    let llm = rule("llm", "/llm", "ip", tokens.clone())
        .cost(100)
        .count(Counts {
            status: vec![],
            unless_status: vec![503],
        })
        .cost_from(CostFrom::header("x-tokens-used", 500).unwrap());
    let app = app(Policy::new(vec![llm]));
    send(&app, ask(Some("400"), 503)).await;
    assert_eq!(tokens.peek(KEY, 1).remaining, 1000);
    send(&app, ask(Some("400"), 200)).await;
    assert_eq!(tokens.peek(KEY, 1).remaining, 600);
}
