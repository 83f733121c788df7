//! Caps on requests in flight (issue 27 §5): a rule marked `in_flight`
//! holds a slot from its decision until the response body ends or is
//! dropped, or a later rule refuses the request; a slot held longer than
//! its lease (the sliding log's window) is renewed every half lease, and
//! one no longer renewed frees itself when its lease ends.

use crate::common;

use common::*;
use http_body_util::BodyExt;
use limits::{Algorithm, ManualClock};
use limits_http::{HttpRule, Policy};
use std::time::Duration;

/// At most `n` requests from one address under way, with a lease of a
/// minute.
fn at_once(n: u64, clock: &ManualClock) -> HttpRule<Memory> {
    let slots = store(Algorithm::SlidingLog, &format!("{n}/m"), clock);
    rule("in-flight", "/", "ip", slots).in_flight()
}

const PEER: &str = "192.0.2.1:1";

#[tokio::test]
async fn a_slot_is_held_until_the_response_body_ends_or_is_dropped() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![at_once(2, &clock)]));
    let first = send(&app, request("/", PEER)).await;
    let second = send(&app, request("/", PEER)).await;
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    assert_eq!(send(&app, request("/", PEER)).await.status(), 429);
    // Another client has slots of its own.
    assert_eq!(send(&app, request("/", "192.0.2.2:1")).await.status(), 200);
    // Read to its end: the slot is back.
    let body = first.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "hello");
    let third = send(&app, request("/", PEER)).await;
    assert_eq!(third.status(), 200);
    assert_eq!(send(&app, request("/", PEER)).await.status(), 429);
    // Dropped unread (the client went away): back too.
    drop(second);
    assert_eq!(send(&app, request("/", PEER)).await.status(), 200);
    drop(third);
}

#[tokio::test]
async fn a_slot_taken_by_a_request_a_later_rule_refuses_is_given_back() {
    let clock = ManualClock::new(0);
    let once = rule(
        "once",
        "/login",
        "ip",
        store(Algorithm::SlidingLog, "1/m", &clock),
    );
    let app = app(Policy::new(vec![at_once(1, &clock), once]));
    let login = || {
        let mut r = request("/login", PEER);
        *r.method_mut() = http::Method::POST;
        r
    };
    assert_eq!(send(&app, login()).await.status(), 200);
    // "once" refuses the second: the slot it had taken is back, so the
    // third request, which only the cap decides, passes.
    assert_eq!(send(&app, login()).await.status(), 429);
    assert_eq!(send(&app, request("/", PEER)).await.status(), 200);
}

#[tokio::test]
async fn a_slot_held_past_its_lease_is_renewed_every_half_lease() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![at_once(1, &clock)]));
    tokio::time::pause();
    let held = send(&app, request("/", PEER)).await;
    assert_eq!(held.status(), 200);
    // The renewal due at 30 s runs at 40 s by the store's clock.
    clock.advance(Duration::from_secs(40));
    past_renewal_due_at(30).await;
    clock.advance(Duration::from_secs(21));
    let refused = send(&app, request("/", PEER)).await;
    assert_eq!(
        refused.status(),
        429,
        "renewed, the slot outlives its lease"
    );
    assert_eq!(header(&refused, "retry-after"), "39");
    // Done: the renewed slot is given back.
    drop(held);
    assert_eq!(send(&app, request("/", PEER)).await.status(), 200);
}

#[tokio::test]
async fn a_slot_given_back_is_no_longer_renewed() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![at_once(1, &clock)]));
    tokio::time::pause();
    drop(send(&app, request("/", PEER)).await);
    let next = send(&app, request("/", PEER)).await;
    assert_eq!(next.status(), 200);
    // The first request's renewal, were it still due, would take a
    // second slot at 30 s.
    clock.advance(Duration::from_secs(30));
    past_renewal_due_at(30).await;
    drop(next);
    assert_eq!(send(&app, request("/", PEER)).await.status(), 200);
}

/// Waits (Tokio's clock paused, so at once) until just after the renewals
/// due `seconds` after the start have run: in memory, each in one poll.
async fn past_renewal_due_at(seconds: u64) {
    tokio::time::sleep(Duration::from_secs(seconds) + Duration::from_millis(1)).await;
}

// Tokio's clock stands still here as far as a renewal is concerned (its
// first is due in 30 s of it), as an instance that died renews nothing.
#[tokio::test]
async fn a_slot_no_longer_renewed_frees_itself_when_its_lease_ends() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![at_once(1, &clock)]));
    let held = send(&app, request("/", PEER)).await;
    assert_eq!(held.status(), 200);
    // Held the whole lease: still counted until its last nanosecond.
    clock.advance(Duration::from_secs(60) - Duration::from_nanos(1));
    let refused = send(&app, request("/", PEER)).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(header(&refused, "retry-after"), "1");
    clock.advance(Duration::from_nanos(1));
    let next = send(&app, request("/", PEER)).await;
    assert_eq!(next.status(), 200);
    // The old response ending gives back its own slot only: the new
    // request still holds one, so a third waits.
    drop(held);
    assert_eq!(send(&app, request("/", PEER)).await.status(), 429);
    drop(next);
    assert_eq!(send(&app, request("/", PEER)).await.status(), 200);
}
