//! Tiers (issue 27 §4): of a tiered limit's rules, only the request's
//! tier's decides, with its own counts and headers; a tier header is
//! believed from a trusted proxy only; a lookup from anyone; the
//! embedder's closure chooses as it likes.

use crate::common;

use common::*;
use limits::{Algorithm, ManualClock};
use limits_http::{ClientIp, ClientIpHeader, HttpRule, Policy, Tiers, TrustedProxies};
use std::sync::Arc;

/// `api.free` (1 a minute) and `api.pro` (3 a minute), keyed by the API
/// key, chosen by `plans`.
fn plans_policy(plans: Tiers, clock: &ManualClock) -> Policy<Memory> {
    let plans = Arc::new(plans);
    let tiered = |tier: &str, rates: &str| -> HttpRule<Memory> {
        let store = store(Algorithm::SlidingLog, rates, clock);
        rule(&format!("api.{tier}"), "/", "header:x-api-key", store).tier(plans.tier(tier).unwrap())
    };
    let mut policy = Policy::new(vec![tiered("free", "1/m"), tiered("pro", "3/m")]);
    policy.options.client_ip = ClientIp::new(
        TrustedProxies::parse(&["127.0.0.1"]).unwrap(),
        ClientIpHeader::XForwardedFor,
        64,
    )
    .unwrap();
    policy
}

/// A request from `peer` with API key `key` and, if given, `x-plan`.
fn from(peer: &str, key: &str, plan: Option<&str>) -> http::Request<axum::body::Body> {
    let mut r = request("/", peer);
    r.headers_mut().insert("x-api-key", key.parse().unwrap());
    if let Some(plan) = plan {
        r.headers_mut().insert("x-plan", plan.parse().unwrap());
    }
    r
}

fn x_plan() -> Tiers {
    Tiers::from_header(["free", "pro"], "free", "x-plan".parse().unwrap()).unwrap()
}

#[tokio::test]
async fn only_the_requests_tier_decides_with_its_own_headers() {
    let clock = ManualClock::new(0);
    let app = app(plans_policy(x_plan(), &clock));
    let proxy = "127.0.0.1:1";
    let pro = statuses(&app, (0..4).map(|_| from(proxy, "k1", Some("pro")))).await;
    assert_eq!(pro, [200, 200, 200, 429]);
    let r = send(&app, from(proxy, "k2", Some("pro"))).await;
    assert_eq!(header(&r, "ratelimit-policy"), "\"api.pro\";q=3;w=60");
    // The same key on the free plan: counted apart, under free's limit.
    let free = statuses(&app, (0..2).map(|_| from(proxy, "k1", None))).await;
    assert_eq!(free, [200, 429]);
    let r = send(&app, from(proxy, "k3", Some("gold"))).await;
    assert_eq!(header(&r, "ratelimit-policy"), "\"api.free\";q=1;w=60");
}

#[tokio::test]
async fn a_tier_header_from_a_client_that_is_no_trusted_proxy_is_ignored() {
    let clock = ManualClock::new(0);
    let app = app(plans_policy(x_plan(), &clock));
    let claimed = statuses(&app, (0..3).map(|_| from("192.0.2.1:1", "k1", Some("pro")))).await;
    assert_eq!(claimed, [200, 429, 429]);
    let r = send(&app, from("192.0.2.1:1", "k2", Some("pro"))).await;
    assert_eq!(header(&r, "ratelimit-policy"), "\"api.free\";q=1;w=60");
}

#[tokio::test]
async fn a_looked_up_tier_is_believed_from_anyone() {
    let clock = ManualClock::new(0);
    let header = "x-api-key".parse().unwrap();
    let plans = Tiers::from_lookup(["free", "pro"], "free", header, [("k-pro", "pro")]).unwrap();
    let app = app(plans_policy(plans, &clock));
    let pro = statuses(&app, (0..4).map(|_| from("192.0.2.1:1", "k-pro", None))).await;
    assert_eq!(pro, [200, 200, 200, 429]);
    let other = statuses(
        &app,
        (0..2).map(|_| from("192.0.2.1:1", "k-x", Some("pro"))),
    )
    .await;
    assert_eq!(other, [200, 429]);
}

#[tokio::test]
async fn the_embedders_closure_chooses_the_tier() {
    let clock = ManualClock::new(0);
    let plans = Tiers::from_fn(["free", "pro"], "free", |head: &http::request::Parts| {
        let key = head.headers.get("x-api-key")?.to_str().ok()?;
        key.starts_with("paid-").then_some("pro")
    })
    .unwrap();
    let app = app(plans_policy(plans, &clock));
    let paid = statuses(&app, (0..4).map(|_| from("192.0.2.1:1", "paid-1", None))).await;
    assert_eq!(paid, [200, 200, 200, 429]);
    let unpaid = statuses(&app, (0..2).map(|_| from("192.0.2.1:1", "trial-1", None))).await;
    assert_eq!(unpaid, [200, 429]);
}
