//! The layer: who the client is (one trusted forwarding header, IPv6 by
//! prefix, unreadable hops counted).

use crate::common;

use common::*;
use limits::{Algorithm, ManualClock};
use limits_http::{ClientIp, ClientIpHeader, Observer, Outcome, Policy, TrustedProxies};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Unreadable(Mutex<usize>);

impl Observer for Unreadable {
    fn decided(&self, _: &str, _: Outcome, _: Duration) {}
    fn unreadable_client_address(&self) {
        *self.0.lock().unwrap() += 1;
    }
}

#[tokio::test]
async fn a_clients_own_forwarded_header_behind_a_trusted_proxy_gets_no_fresh_limit() {
    let clock = ManualClock::new(0);
    let mut policy = Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "1/m", &clock),
    )]);
    policy.options.client_ip = ClientIp::new(
        TrustedProxies::parse(&["127.0.0.1"]).unwrap(),
        ClientIpHeader::XForwardedFor,
        64,
    )
    .unwrap();
    let unreadable = Arc::new(Unreadable::default());
    policy.observer = unreadable.clone();
    let app = app(policy);
    // nginx appends the client to X-Forwarded-For and passes its Forwarded through.
    let via_nginx = |forwarded: String, xff: &str| {
        let mut r = request("/", "127.0.0.1:1");
        r.headers_mut()
            .insert("forwarded", forwarded.parse().unwrap());
        r.headers_mut()
            .insert("x-forwarded-for", xff.parse().unwrap());
        r
    };
    let statuses: Vec<u16> = statuses(
        &app,
        (0..5).map(|i| via_nginx(format!("for=9.9.9.{i}"), "203.0.113.5")),
    )
    .await;
    assert_eq!(statuses, [200, 429, 429, 429, 429]);
    // Another client behind the same proxy has its own limit.
    let r = send(&app, via_nginx("for=9.9.9.9".into(), "203.0.113.6")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(*unreadable.0.lock().unwrap(), 0);
    // An unreadable hop: keyed as the proxy itself, and counted once.
    let r = send(&app, via_nginx("for=1.1.1.1".into(), "unknown")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(*unreadable.0.lock().unwrap(), 1);
    let mut r = request("/", "127.0.0.1:2");
    r.headers_mut()
        .insert("x-forwarded-for", "6.6.6.6, _hidden".parse().unwrap());
    assert_eq!(send(&app, r).await.status(), 429);
    assert_eq!(*unreadable.0.lock().unwrap(), 2);
}

#[tokio::test]
async fn ipv6_clients_in_one_prefix_share_a_limit() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "1/m", &clock),
    )]));
    let status = |peer: &'static str| {
        let app = app.clone();
        async move { send(&app, request("/", peer)).await.status().as_u16() }
    };
    // Default /64: two addresses of one /64 are one client.
    assert_eq!(status("[2001:db8:1:2::1]:1").await, 200);
    assert_eq!(status("[2001:db8:1:2:ffff::9]:1").await, 429);
    // The next /64 is another client; so is an IPv4-mapped peer.
    assert_eq!(status("[2001:db8:1:3::1]:1").await, 200);
    assert_eq!(status("[::ffff:192.0.2.1]:1").await, 200);
    assert_eq!(status("192.0.2.1:2").await, 429);

    // /128: every address its own client; /48: the whole /48 is one.
    let with_prefix = |prefix| {
        let mut policy = Policy::new(vec![rule(
            "default",
            "/",
            "ip",
            store(Algorithm::SlidingLog, "1/m", &clock),
        )]);
        policy.options.client_ip = ClientIp::new(
            TrustedProxies::none(),
            ClientIpHeader::XForwardedFor,
            prefix,
        )
        .unwrap();
        self::app(policy)
    };
    let full = with_prefix(128);
    assert_eq!(
        send(&full, request("/", "[2001:db8:1:2::1]:1"))
            .await
            .status(),
        200
    );
    assert_eq!(
        send(&full, request("/", "[2001:db8:1:2::2]:1"))
            .await
            .status(),
        200
    );
    let wide = with_prefix(48);
    assert_eq!(
        send(&wide, request("/", "[2001:db8:1:2::1]:1"))
            .await
            .status(),
        200
    );
    assert_eq!(
        send(&wide, request("/", "[2001:db8:1:ff::1]:1"))
            .await
            .status(),
        429
    );
}
