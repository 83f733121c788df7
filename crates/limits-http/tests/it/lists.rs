//! Allow and deny lists (issue 27 §3): an allow list skips the rule (or
//! every rule) and is counted; a deny list answers 403 with a problem body
//! before any rule; the address is the one the layer resolves (through a
//! trusted proxy only); IPv6 by prefix; header entries exact; 100,000
//! entries looked up.

use crate::common;

use common::*;
use limits::{Algorithm, ManualClock};
use limits_http::{
    AccessList, ClientIp, ClientIpHeader, ListKind, Lists, Observer, Outcome, Policy,
    RateLimitLayer, TrustedProxies,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Every list hit and every decision, as told to the observer.
#[derive(Default)]
struct Heard {
    listed: Mutex<Vec<(ListKind, Option<String>)>>,
    decided: Mutex<Vec<(String, Outcome)>>,
}

impl Observer for Heard {
    fn decided(&self, rule: &str, outcome: Outcome, _: Duration) {
        self.decided.lock().unwrap().push((rule.into(), outcome));
    }
    fn listed(&self, list: ListKind, rule: Option<&str>) {
        let rule = rule.map(str::to_string);
        self.listed.lock().unwrap().push((list, rule));
    }
}

fn list(entries: &[&str]) -> AccessList {
    AccessList::parse(entries).unwrap()
}

fn one_a_minute(name: &str, clock: &ManualClock) -> limits_http::HttpRule<Memory> {
    rule(name, "/", "ip", store(Algorithm::SlidingLog, "1/m", clock))
}

#[tokio::test]
async fn a_rules_allow_list_skips_that_rule_and_is_counted() {
    let clock = ManualClock::new(0);
    let office = Lists {
        allow: list(&["10.0.0.0/8"]),
        ..Lists::default()
    };
    let heard = Arc::new(Heard::default());
    let mut policy = Policy::new(vec![
        one_a_minute("per-ip", &clock).lists(office),
        one_a_minute("other", &clock).lists(Lists {
            allow: list(&["192.0.2.0/24"]),
            ..Lists::default()
        }),
    ]);
    policy.observer = heard.clone();
    let app = app(policy);
    // From the office: "per-ip" never limits, "other" still does.
    let office = statuses(&app, (0..3).map(|_| request("/", "10.1.2.3:1"))).await;
    assert_eq!(office, [200, 429, 429]);
    let exempt = heard.listed.lock().unwrap().clone();
    assert_eq!(exempt.len(), 3);
    assert!(
        exempt
            .iter()
            .all(|e| *e == (ListKind::Allow, Some("per-ip".into())))
    );
    // The exempt rule decided nothing for them: only "other" did.
    assert!(
        heard
            .decided
            .lock()
            .unwrap()
            .iter()
            .all(|(rule, _)| rule == "other")
    );
    // The 200 carries the headers of the rule that decided only.
    let r = send(&app, request("/", "10.9.9.9:1")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "ratelimit-policy"), "\"other\";q=1;w=60");
    // Anyone else: both rules.
    let outside = statuses(&app, (0..2).map(|_| request("/", "198.51.100.1:1"))).await;
    assert_eq!(outside, [200, 429]);
}

#[tokio::test]
async fn the_layers_allow_list_skips_every_rule() {
    let clock = ManualClock::new(0);
    let heard = Arc::new(Heard::default());
    let layer = RateLimitLayer::builder()
        .rule(one_a_minute("a", &clock))
        .rule(one_a_minute("b", &clock))
        .allow(list(&["10.0.0.0/8"]))
        .shared_observer(heard.clone())
        .build();
    let app = axum::Router::new()
        .route("/", axum::routing::get(|| async { "hello" }))
        .layer(layer);
    let office = statuses(&app, (0..5).map(|_| request("/", "10.1.2.3:1"))).await;
    assert_eq!(office, [200; 5]);
    let r = send(&app, request("/", "10.1.2.3:1")).await;
    assert_eq!(header(&r, "ratelimit-policy"), "", "no rule decided");
    // Each rule it passed unlimited is counted, per request.
    assert_eq!(heard.listed.lock().unwrap().len(), 12);
    assert!(heard.decided.lock().unwrap().is_empty());
    let outside = statuses(&app, (0..2).map(|_| request("/", "192.0.2.1:1"))).await;
    assert_eq!(outside, [200, 429]);
}

#[tokio::test]
async fn a_deny_list_answers_403_with_a_problem_before_any_rule() {
    let clock = ManualClock::new(0);
    let heard = Arc::new(Heard::default());
    let rules = vec![one_a_minute("login", &clock).lists(Lists {
        allow: list(&["203.0.113.0/24"]),
        deny: list(&["203.0.113.66"]),
    })];
    let mut policy = Policy::new(rules);
    policy.observer = heard.clone();
    let app = app(policy);
    // On the rule's deny list, and on its allow list too: the deny list wins.
    let r = send(&app, request("/", "203.0.113.66:1")).await;
    assert_eq!(r.status(), 403);
    assert_eq!(header(&r, "content-type"), "application/problem+json");
    assert_eq!(header(&r, "ratelimit"), "");
    let body = json(r).await;
    assert_eq!(body["status"], 403);
    assert_eq!(body["title"], "Forbidden");
    assert_eq!(body["rule"], "login");
    assert_eq!(body["detail"], "refused by the deny list of rule \"login\"");
    assert_eq!(
        *heard.listed.lock().unwrap(),
        [(ListKind::Deny, Some("login".to_string()))]
    );
    assert!(heard.decided.lock().unwrap().is_empty(), "no rule decided");
    // Its neighbour is allowed, unlimited.
    let ok = statuses(&app, (0..3).map(|_| request("/", "203.0.113.7:1"))).await;
    assert_eq!(ok, [200, 200, 200]);
}

#[tokio::test]
async fn the_layers_deny_list_refuses_paths_no_rule_matches() {
    let clock = ManualClock::new(0);
    let layer = RateLimitLayer::builder()
        .rule(rule(
            "api",
            "/api",
            "ip",
            store(Algorithm::SlidingLog, "1/m", &clock),
        ))
        .deny(list(&["198.51.100.0/24", "header:user-agent=BadBot/1.0"]))
        .build();
    let app = axum::Router::new()
        .route("/", axum::routing::get(|| async { "hello" }))
        .layer(layer);
    let r = send(&app, request("/", "198.51.100.9:1")).await;
    assert_eq!(r.status(), 403);
    let body = json(r).await;
    assert_eq!(body["detail"], "refused by the deny list");
    assert!(body.get("rule").is_none());
    let mut bot = request("/", "192.0.2.1:1");
    bot.headers_mut()
        .insert("user-agent", "BadBot/1.0".parse().unwrap());
    assert_eq!(send(&app, bot).await.status(), 403);
    // A header's value compares exactly: another case is another value.
    let mut other = request("/", "192.0.2.1:1");
    other
        .headers_mut()
        .insert("user-agent", "badbot/1.0".parse().unwrap());
    assert_eq!(send(&app, other).await.status(), 200);
}

#[tokio::test]
async fn a_header_allow_entry_exempts_only_its_exact_value_sent_alone() {
    let clock = ManualClock::new(0);
    let internal = Lists {
        allow: list(&["header:x-api-key=internal-123"]),
        ..Lists::default()
    };
    let app = app(Policy::new(vec![
        one_a_minute("api", &clock).lists(internal),
    ]));
    let with_keys = |keys: &[&str]| {
        let mut r = request("/", "192.0.2.1:1");
        for k in keys {
            r.headers_mut().append("x-api-key", k.parse().unwrap());
        }
        r
    };
    let internal = statuses(&app, (0..3).map(|_| with_keys(&["internal-123"]))).await;
    assert_eq!(internal, [200, 200, 200]);
    // The secret beside another value: an upstream may read either.
    let both = statuses(&app, (0..2).map(|_| with_keys(&["internal-123", "guest"]))).await;
    assert_eq!(both, [200, 429]);
    let wrong = send(&app, with_keys(&["INTERNAL-123"])).await;
    assert_eq!(wrong.status(), 429);
}

/// Through a trusted proxy: the forwarded client is listed, and a client
/// that is not behind one cannot name its own address.
#[tokio::test]
async fn lists_read_the_address_forwarded_by_a_trusted_proxy_only() {
    let clock = ManualClock::new(0);
    let mut policy = Policy::new(vec![one_a_minute("api", &clock)]);
    policy.options.client_ip = ClientIp::new(
        TrustedProxies::parse(&["127.0.0.1"]).unwrap(),
        ClientIpHeader::XForwardedFor,
        64,
    )
    .unwrap();
    policy.options.lists = Lists {
        allow: list(&["10.0.0.0/8"]),
        deny: list(&["203.0.113.66"]),
    };
    let app = app(policy);
    let from = |peer: &str, xff: &str| {
        let mut r = request("/", peer);
        r.headers_mut()
            .insert("x-forwarded-for", xff.parse().unwrap());
        r
    };
    // Behind the proxy: the forwarded client decides.
    let office = statuses(&app, (0..3).map(|_| from("127.0.0.1:1", "10.0.0.5"))).await;
    assert_eq!(office, [200, 200, 200]);
    assert_eq!(
        send(&app, from("127.0.0.1:1", "203.0.113.66"))
            .await
            .status(),
        403
    );
    // A client's own header names an office address: it is ignored.
    let spoofed = statuses(&app, (0..2).map(|_| from("192.0.2.1:1", "10.0.0.5"))).await;
    assert_eq!(spoofed, [200, 429]);
    // Nor can a denied client escape by naming another address.
    assert_eq!(
        send(&app, from("203.0.113.66:1", "192.0.2.200"))
            .await
            .status(),
        403
    );
}

/// An IPv6 network covers its addresses, matched on the whole address
/// (not the /64 the client is keyed by), IPv4-mapped peers as IPv4.
#[tokio::test]
async fn ipv6_networks_and_single_addresses() {
    let clock = ManualClock::new(0);
    let mut policy = Policy::new(vec![one_a_minute("api", &clock)]);
    policy.options.lists = Lists {
        allow: list(&["2001:db8::/32", "192.0.2.1"]),
        deny: list(&["2001:db8:1:2::bad/128"]),
    };
    let app = app(policy);
    let inside = statuses(&app, (0..3).map(|_| request("/", "[2001:db8:ffff::1]:1"))).await;
    assert_eq!(inside, [200, 200, 200]);
    // One address of a /64 is denied, its neighbours in the same /64 are not.
    let bad = send(&app, request("/", "[2001:db8:1:2::bad]:1")).await;
    assert_eq!(bad.status(), 403);
    let good = send(&app, request("/", "[2001:db8:1:2::600d]:1")).await;
    assert_eq!(good.status(), 200);
    let mapped = statuses(&app, (0..2).map(|_| request("/", "[::ffff:192.0.2.1]:1"))).await;
    assert_eq!(mapped, [200, 200]);
    let outside = statuses(&app, (0..2).map(|_| request("/", "[2001:db9::1]:1"))).await;
    assert_eq!(outside, [200, 429]);
}

/// A dry run refuses nothing: a deny-list hit is counted, and the rules
/// decide as for anyone.
#[tokio::test]
async fn a_dry_run_counts_a_deny_list_hit_and_refuses_nothing() {
    let clock = ManualClock::new(0);
    let heard = Arc::new(Heard::default());
    let mut policy = Policy::new(vec![one_a_minute("api", &clock)]);
    policy.options.dry_run = true;
    policy.options.lists.deny = list(&["192.0.2.1"]);
    policy.observer = heard.clone();
    let app = app(policy);
    let seen = statuses(&app, (0..2).map(|_| request("/", "192.0.2.1:1"))).await;
    assert_eq!(seen, [200, 200]);
    assert_eq!(heard.listed.lock().unwrap().len(), 2);
    let decided = heard.decided.lock().unwrap().clone();
    assert_eq!(decided[1], ("api".to_string(), Outcome::WouldLimit));
}

/// 100,000 addresses (and networks) in one list: every one found, their
/// neighbours not.
#[tokio::test]
async fn a_list_of_100k_entries_finds_each_one() {
    let address = |i: u32| std::net::Ipv4Addr::from(0x0b00_0000 + i * 7);
    let mut entries: Vec<String> = (0..100_000).map(|i| address(i).to_string()).collect();
    entries.push("172.16.0.0/12".into());
    entries.push("2001:db8:aaaa::/48".into());
    let big = AccessList::parse(&entries).unwrap();
    assert_eq!(big.len(), 100_002);
    for i in (0..100_000).step_by(997) {
        assert!(big.contains_address(address(i).into()), "{}", address(i));
        let next = std::net::Ipv4Addr::from(u32::from(address(i)) + 1);
        assert!(!big.contains_address(next.into()), "{next}");
    }
    assert!(big.contains_address("172.31.255.255".parse().unwrap()));
    assert!(big.contains_address("2001:db8:aaaa:1::1".parse().unwrap()));
    assert!(!big.contains_address("2001:db8:aaab::1".parse().unwrap()));
    // Through the layer: the last entry is as exempt as the first.
    let clock = ManualClock::new(0);
    let rules = vec![one_a_minute("api", &clock).lists(Lists {
        allow: big,
        ..Lists::default()
    })];
    let app = app(Policy::new(rules));
    let last = format!("{}:1", address(99_999));
    let seen = statuses(&app, (0..3).map(|_| request("/", &last))).await;
    assert_eq!(seen, [200, 200, 200]);
    let first = statuses(&app, (0..3).map(|_| request("/", "11.0.0.0:1"))).await;
    assert_eq!(first, [200, 200, 200]);
    let unlisted = statuses(&app, (0..2).map(|_| request("/", "11.0.0.1:1"))).await;
    assert_eq!(unlisted, [200, 429]);
}
