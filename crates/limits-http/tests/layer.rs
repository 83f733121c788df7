//! The layer in front of a real axum router, driven in process with a manual
//! clock, so that every header value can be asserted exactly.

use axum::body::Body;
use axum::routing::{get, post};
use axum::Router;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store, StoreError, Verdict};
use limits_http::{
    ClientIp, ClientIpHeader, FailurePolicy, HttpRule, Key, KeyError, KeyErrorReason, KeyExtractor,
    KeySpec, LayerOptions, Observer, Outcome, PeerAddr, Policy, RateLimitLayer, TrustedProxies,
};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::ServiceExt;

type Memory = KeyedLimiter<String, ManualClock>;

fn store(limiter: Algorithm, rates: &str, clock: &ManualClock) -> Arc<Memory> {
    Arc::new(KeyedLimiter::with_clock(
        Rule::new(limiter, rates.parse().unwrap()),
        clock.clone(),
    ))
}

fn rule<S>(name: &str, path: &str, key: &str, store: Arc<S>) -> HttpRule<S> {
    HttpRule {
        name: name.into(),
        path_prefix: path.into(),
        methods: vec![],
        key: key.parse::<KeySpec>().unwrap(),
        cost: 1,
        store,
    }
}

fn app<S: Store>(policy: Policy<S>) -> Router {
    Router::new()
        .route("/", get(|| async { "hello" }))
        .route("/login", post(|body: String| async move { body }))
        .layer(RateLimitLayer::new(policy))
}

fn request(path: &str, peer: &str) -> Request<Body> {
    let mut r = Request::get(path).body(Body::empty()).unwrap();
    r.extensions_mut()
        .insert(PeerAddr(peer.parse::<SocketAddr>().unwrap()));
    r
}

async fn send(app: &Router, req: Request<Body>) -> Response<Body> {
    app.clone().oneshot(req).await.unwrap()
}

fn header<'a>(r: &'a Response<Body>, name: &str) -> &'a str {
    r.headers().get(name).map_or("", |v| v.to_str().unwrap())
}

async fn json(r: Response<Body>) -> serde_json::Value {
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn sliding_log_five_per_second_then_429_with_retry_after() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "5/s", &clock),
    )]));
    let mut remaining = Vec::new();
    for i in 0..20 {
        clock.set(i * 1_000_000); // one request a millisecond
        let r = send(&app, request("/", "192.0.2.1:5000")).await;
        if r.status() == StatusCode::OK {
            assert_eq!(header(&r, "ratelimit-policy"), r#""default";q=5;w=1"#);
            remaining.push(header(&r, "ratelimit").to_string());
        } else {
            assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
            assert_eq!(header(&r, "retry-after"), "1");
            assert_eq!(header(&r, "content-type"), "application/problem+json");
            assert_eq!(header(&r, "ratelimit"), r#""default";r=0;t=1"#);
            let body = json(r).await;
            assert_eq!(body["status"], 429);
            assert_eq!(body["rule"], "default");
        }
    }
    assert_eq!(
        remaining,
        (0..5)
            .rev()
            .map(|r| format!(r#""default";r={r};t=1"#))
            .collect::<Vec<_>>()
    );
    // The first entry (t = 0) leaves the window at t = 1 s.
    clock.set(999_999_999);
    assert_eq!(
        send(&app, request("/", "192.0.2.1:5000")).await.status(),
        429
    );
    clock.set(1_000_000_000);
    assert_eq!(
        send(&app, request("/", "192.0.2.1:5000")).await.status(),
        200
    );
    // Another client was never limited.
    assert_eq!(
        send(&app, request("/", "192.0.2.2:5000")).await.status(),
        200
    );
}

#[derive(Default)]
struct Counts(Mutex<Vec<(String, Outcome)>>);

impl Observer for Counts {
    fn decided(&self, rule: &str, outcome: Outcome, _: Duration) {
        self.0.lock().unwrap().push((rule.to_string(), outcome));
    }
}

#[tokio::test]
async fn dry_run_never_rejects_but_counts_and_sends_headers() {
    let clock = ManualClock::new(0);
    let counts = Arc::new(Counts::default());
    let mut policy = Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::FixedWindow, "2/m", &clock),
    )]);
    policy.options.dry_run = true;
    policy.observer = counts.clone();
    let app = app(policy);
    for _ in 0..5 {
        let r = send(&app, request("/", "192.0.2.1:1")).await;
        assert_eq!(r.status(), 200);
        assert!(header(&r, "ratelimit").starts_with(r#""default";r="#));
    }
    let outcomes: Vec<Outcome> = counts.0.lock().unwrap().iter().map(|c| c.1).collect();
    use Outcome::*;
    assert_eq!(
        outcomes,
        [Allowed, Allowed, WouldLimit, WouldLimit, WouldLimit]
    );
}

#[tokio::test]
async fn login_is_limited_per_account_and_per_address() {
    let clock = ManualClock::new(0);
    let per_account = store(Algorithm::SlidingLog, "2/m", &clock);
    let per_address = store(Algorithm::SlidingLog, "3/m", &clock);
    let app = app(Policy::new(vec![
        rule("login-account", "/login", "form:username", per_account),
        rule("login-address", "/login", "ip", per_address),
    ]));
    let login = |user: &str, peer: &str| {
        let mut r = Request::post("/login")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Body::from(format!("username={user}&password=guess")))
            .unwrap();
        r.extensions_mut().insert(PeerAddr(peer.parse().unwrap()));
        r
    };
    // Two guesses at alice from two addresses: the third, from a third, is denied.
    assert_eq!(
        send(&app, login("alice", "192.0.2.1:1")).await.status(),
        200
    );
    let r = send(&app, login("alice", "192.0.2.2:1")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(
        header(&r, "ratelimit-policy"),
        r#""login-account";q=2;w=60, "login-address";q=3;w=60"#
    );
    // The body still reaches the handler after being read for the key.
    assert_eq!(
        r.into_body().collect().await.unwrap().to_bytes(),
        "username=alice&password=guess"
    );
    let r = send(&app, login("alice", "192.0.2.3:1")).await;
    assert_eq!(r.status(), 429);
    assert_eq!(json(r).await["rule"], "login-account");
    // One address spraying accounts is stopped by the address rule.
    for user in ["bob", "carol"] {
        assert_eq!(send(&app, login(user, "192.0.2.9:1")).await.status(), 200);
    }
    assert_eq!(send(&app, login("dave", "192.0.2.9:1")).await.status(), 200);
    let r = send(&app, login("erin", "192.0.2.9:1")).await;
    assert_eq!(json(r).await["rule"], "login-address");
}

#[tokio::test]
async fn oversized_body_on_a_body_keyed_route_is_413() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "login",
        "/login",
        "form:username",
        store(Algorithm::SlidingLog, "2/m", &clock),
    )]));
    let mut r = Request::post("/login")
        .body(Body::from(vec![b'a'; 100_000]))
        .unwrap();
    r.extensions_mut()
        .insert(PeerAddr("192.0.2.1:1".parse().unwrap()));
    let r = send(&app, r).await;
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(json(r).await["status"], 413);
}

#[tokio::test]
async fn forwarded_for_counts_only_from_trusted_proxies() {
    let clock = ManualClock::new(0);
    let mut policy = Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "1/m", &clock),
    )]);
    policy.options.client_ip = ClientIp::new(
        TrustedProxies::parse(&["10.0.0.0/8"]).unwrap(),
        ClientIpHeader::XForwardedFor,
        64,
    )
    .unwrap();
    let app = app(policy);
    let spoofed = |xff: &str, peer: &str| {
        let mut r = request("/", peer);
        r.headers_mut()
            .insert("x-forwarded-for", xff.parse().unwrap());
        r
    };
    // An untrusted peer's X-Forwarded-For is ignored: still one key.
    assert_eq!(
        send(&app, spoofed("1.1.1.1", "192.0.2.1:1")).await.status(),
        200
    );
    assert_eq!(
        send(&app, spoofed("2.2.2.2", "192.0.2.1:1")).await.status(),
        429
    );
    // Through the trusted proxy, each forwarded client has its own key.
    assert_eq!(
        send(&app, spoofed("203.0.113.1", "10.0.0.1:1"))
            .await
            .status(),
        200
    );
    assert_eq!(
        send(&app, spoofed("203.0.113.2", "10.0.0.1:1"))
            .await
            .status(),
        200
    );
    assert_eq!(
        send(&app, spoofed("203.0.113.1", "10.0.0.1:1"))
            .await
            .status(),
        429
    );
}

#[tokio::test(start_paused = true)]
async fn leaky_bucket_holds_an_admitted_request_for_its_delay() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "smooth",
        "/",
        "ip",
        store(Algorithm::LeakyBucket, "10/s", &clock),
    )]));
    // A burst at one instant of the limiter's clock: each request waits its
    // turn in the queue, 0, 100 and 200 ms (time is paused: exact).
    for i in 0..3u64 {
        let started = tokio::time::Instant::now();
        let r = send(&app, request("/", "192.0.2.1:1")).await;
        assert_eq!(r.status(), 200);
        assert_eq!(started.elapsed(), Duration::from_millis(100 * i));
    }
}

struct Down(Rule);

impl Store for Down {
    fn rule(&self) -> &Rule {
        &self.0
    }
    async fn decide(&self, _: &str, _: u64, _: Mode) -> Result<Verdict, StoreError> {
        Err(StoreError("connection refused".into()))
    }
}

#[tokio::test]
async fn a_store_outage_gets_the_configured_policy() {
    let down = || {
        Arc::new(Down(Rule::new(
            Algorithm::SlidingLog,
            "1/s".parse().unwrap(),
        )))
    };
    let allow = app(Policy::new(vec![rule("default", "/", "ip", down())]));
    assert_eq!(
        send(&allow, request("/", "192.0.2.1:1")).await.status(),
        200
    );
    let mut policy = Policy::new(vec![rule("default", "/", "ip", down())]);
    policy.options = LayerOptions {
        on_store_error: FailurePolicy::Deny,
        ..LayerOptions::default()
    };
    let deny = app(policy);
    let r = send(&deny, request("/", "192.0.2.1:1")).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(header(&r, "retry-after"), "1");
}

#[tokio::test]
async fn unmatched_routes_pass_untouched() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "login",
        "/login",
        "ip",
        store(Algorithm::SlidingLog, "1/m", &clock),
    )]));
    for _ in 0..3 {
        let r = send(&app, request("/", "192.0.2.1:1")).await;
        assert_eq!(r.status(), 200);
        assert!(r.headers().get("ratelimit").is_none());
    }
}

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

/// The statuses of `reqs`, sent one after another.
async fn statuses(app: &Router, reqs: impl Iterator<Item = Request<Body>>) -> Vec<u16> {
    let mut out = Vec::new();
    for req in reqs {
        out.push(send(app, req).await.status().as_u16());
    }
    out
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

/// The layer around a service that answers with the request target it saw,
/// as the reverse proxy would forward it.
fn echo_target<S: Store>(policy: Policy<S>) -> Router {
    let echo = tower::service_fn(|req: Request<Body>| async move {
        Ok::<_, std::convert::Infallible>(Response::new(Body::from(req.uri().to_string())))
    });
    Router::new().fallback_service(tower::Layer::layer(&RateLimitLayer::new(policy), echo))
}

async fn text(r: Response<Body>) -> String {
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

#[tokio::test]
async fn path_spellings_of_login_meet_the_login_rule_and_are_forwarded_normalized() {
    // Regression: /%6cogin, //login, /./login, /x/../login and /login;x all
    // reached an upstream's /login without meeting a 3-per-minute rule.
    let clock = ManualClock::new(0);
    let app = echo_target(Policy::new(vec![rule(
        "login",
        "/login",
        "ip",
        store(Algorithm::SlidingLog, "3/m", &clock),
    )]));
    let spellings = [
        ("/login", "/login"),
        ("/%6cogin", "/login"),
        ("//login", "/login"),
        ("/./login?next=%2F", "/login?next=%2F"),
        ("/x/../login", "/login"),
        ("/login;x", "/login;x"),
        ("/LOG%49N/../login", "/login"),
    ];
    for (i, (sent, forwarded)) in spellings.iter().enumerate() {
        let r = send(&app, request(sent, "192.0.2.1:1")).await;
        if i < 3 {
            assert_eq!(r.status(), 200, "{sent}");
            assert_eq!(text(r).await, *forwarded, "{sent}");
        } else {
            assert_eq!(r.status(), 429, "{sent} went around the login rule");
        }
    }
}

#[tokio::test]
async fn encoded_slashes_and_paths_above_the_root_are_400_problems() {
    let clock = ManualClock::new(0);
    let app = echo_target(Policy::new(vec![rule(
        "all",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "100/m", &clock),
    )]));
    for (bad, says) in [
        ("/api%2Fitems", "encoded slash"),
        ("/a%5cb", "encoded slash"),
        ("/../etc/passwd", "above the root"),
        ("/a/%2e%2e/%2e%2e/b", "above the root"),
        ("/%zz", "two hex digits"),
    ] {
        let r = send(&app, request(bad, "192.0.2.1:1")).await;
        assert_eq!(r.status(), 400, "{bad}");
        assert_eq!(header(&r, "content-type"), "application/problem+json");
        let body = json(r).await;
        assert!(
            body["detail"].as_str().unwrap().contains(says),
            "{bad}: {body}"
        );
    }
}

#[tokio::test]
async fn options_asterisk_and_connect_meet_the_catch_all_rule() {
    // Regression: requests without a path matched no rule and passed
    // unlimited, without headers.
    let clock = ManualClock::new(0);
    let app = echo_target(Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "2/m", &clock),
    )]));
    let target = |method: http::Method, uri: &str| {
        let mut r = Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .unwrap();
        r.extensions_mut()
            .insert(PeerAddr("192.0.2.1:1".parse().unwrap()));
        r
    };
    let r = send(&app, target(http::Method::OPTIONS, "*")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "ratelimit"), r#""default";r=1;t=60"#);
    let r = send(&app, target(http::Method::CONNECT, "example.com:443")).await;
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "ratelimit"), r#""default";r=0;t=60"#);
    let r = send(&app, target(http::Method::OPTIONS, "*")).await;
    assert_eq!(r.status(), 429);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_body_on_a_body_keyed_route_is_408_after_the_body_timeout() {
    let clock = ManualClock::new(0);
    let mut policy = Policy::new(vec![rule(
        "login",
        "/login",
        "form:username",
        store(Algorithm::SlidingLog, "2/m", &clock),
    )]);
    policy.options.body_timeout = Duration::from_secs(10);
    let app = app(policy);
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    let body = Body::new(Trickle(rx));
    tx.send(bytes::Bytes::from_static(b"user")).await.unwrap();
    let mut r = Request::post("/login").body(body).unwrap();
    r.extensions_mut()
        .insert(PeerAddr("192.0.2.1:1".parse().unwrap()));
    let started = tokio::time::Instant::now();
    let r = send(&app, r).await;
    assert_eq!(r.status(), StatusCode::REQUEST_TIMEOUT);
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    drop(tx);
}

/// A request body whose frames arrive when the test sends them.
struct Trickle(tokio::sync::mpsc::Receiver<bytes::Bytes>);

impl http_body::Body for Trickle {
    type Data = bytes::Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|frame| frame.map(|b| Ok(http_body::Frame::data(b))))
    }
}

// Issue 7: keys a client cannot forge, repeat, encode or spell around.

/// A login route that echoes any body, UTF-8 or not.
fn login_app<S: Store>(policy: Policy<S>) -> Router {
    Router::new()
        .route("/", get(|| async { "hello" }))
        .route("/login", post(|body: bytes::Bytes| async move { body }))
        .layer(RateLimitLayer::new(policy))
}

fn login_with(content_type: Option<&str>, body: impl Into<Body>, peer: &str) -> Request<Body> {
    let mut r = Request::post("/login");
    if let Some(ct) = content_type {
        r = r.header("content-type", ct);
    }
    let mut r = r.body(body.into()).unwrap();
    r.extensions_mut().insert(PeerAddr(peer.parse().unwrap()));
    r
}

fn utf16(text: &str, big_endian: bool) -> Vec<u8> {
    text.encode_utf16()
        .flat_map(|u| {
            if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            }
        })
        .collect()
}

#[tokio::test]
async fn an_api_key_header_spelling_an_address_does_not_spend_that_addresss_limit() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "api",
        "/",
        "header:X-Api-Key",
        store(Algorithm::SlidingLog, "1/m", &clock),
    )]));
    // 127.0.0.41 without a key: its one request a minute.
    assert_eq!(send(&app, request("/", "127.0.0.41:1")).await.status(), 200);
    // Another client naming 127.0.0.41's fallback key as its API key has a
    // limit of its own, and did not spend 127.0.0.41's.
    let mut forged = request("/", "192.0.2.7:1");
    forged
        .headers_mut()
        .insert("x-api-key", "ip:127.0.0.41".parse().unwrap());
    assert_eq!(send(&app, forged).await.status(), 200);
    assert_eq!(send(&app, request("/", "127.0.0.41:1")).await.status(), 429);
}

#[tokio::test]
async fn a_query_key_repeated_with_different_values_is_400_naming_it() {
    let clock = ManualClock::new(0);
    let app = app(Policy::new(vec![rule(
        "api",
        "/",
        "query:api_key",
        store(Algorithm::SlidingLog, "1/m", &clock),
    )]));
    for _ in 0..2 {
        let r = send(&app, request("/?api_key=r1&api_key=real", "192.0.2.1:1")).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(header(&r, "content-type"), "application/problem+json");
        let body = json(r).await;
        assert_eq!(body["field"], "query:api_key");
        assert!(
            body["detail"].as_str().unwrap().contains("api_key"),
            "{body}"
        );
    }
    // The same value twice is one key.
    let same = "/?api_key=real&api_key=real";
    assert_eq!(send(&app, request(same, "192.0.2.1:1")).await.status(), 200);
    assert_eq!(send(&app, request(same, "192.0.2.2:1")).await.status(), 429);
}

#[tokio::test]
async fn a_duplicate_json_member_with_different_values_is_400() {
    let clock = ManualClock::new(0);
    let app = login_app(Policy::new(vec![rule(
        "login",
        "/login",
        "json:username",
        store(Algorithm::SlidingLog, "3/m", &clock),
    )]));
    let body = r#"{"username":"alice","username":"mallory"}"#;
    let r = send(
        &app,
        login_with(Some("application/json"), body, "192.0.2.1:1"),
    )
    .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body = json(r).await;
    assert_eq!(body["field"], "json:username");
    assert_eq!(body["rule"], "login");
}

#[tokio::test]
async fn eight_encodings_of_one_login_from_eight_addresses_get_three_attempts() {
    // Regression: bodies the limiter could not parse but the upstream could
    // fell back to the address key, so all 8 passed a 3 per minute limit.
    let clock = ManualClock::new(0);
    let app = login_app(Policy::new(vec![rule(
        "login",
        "/login",
        "json:username",
        store(Algorithm::SlidingLog, "3/m", &clock),
    )]));
    let plain = r#"{"username":"alice","password":"guess"}"#;
    let deep = format!(
        r#"{{"pad":{}{},"username":"alice"}}"#,
        "[".repeat(8_000),
        "]".repeat(8_000)
    );
    let mut bom16 = vec![0xFE, 0xFF];
    bom16.extend(utf16(plain, true));
    let bodies: Vec<(Option<&str>, Vec<u8>)> = vec![
        (Some("application/json"), plain.into()),
        (
            Some("application/json"),
            [b"\xEF\xBB\xBF", plain.as_bytes()].concat(),
        ),
        (
            Some("application/json; charset=utf-16le"),
            utf16(plain, false),
        ),
        (None, bom16),
        (Some("application/json"), utf16(plain, false)),
        (Some("application/json"), deep.into_bytes()),
        (
            Some("application/json; charset=UTF-8"),
            [b"\xEF\xBB\xBF", plain.as_bytes()].concat(),
        ),
        (Some("text/plain"), plain.into()),
    ];
    let mut statuses = Vec::new();
    for (i, (ct, body)) in bodies.into_iter().enumerate() {
        let r = send(&app, login_with(ct, body, &format!("192.0.2.{}:1", i + 1))).await;
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429, 429, 429, 429]);

    // A JSON body (or any other) on a form rule is unreadable: 400, not the address key.
    let app = login_app(Policy::new(vec![rule(
        "login",
        "/login",
        "form:username",
        store(Algorithm::SlidingLog, "3/m", &clock),
    )]));
    for (i, ct) in [
        Some("application/json"),
        None,
        Some("multipart/form-data; boundary=x"),
    ]
    .into_iter()
    .enumerate()
    {
        let r = send(&app, login_with(ct, plain, &format!("198.51.100.{i}:1"))).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{ct:?}");
        assert_eq!(json(r).await["field"], "form:username");
    }
    let form = "application/x-www-form-urlencoded; charset=utf-16le";
    for (i, expected) in [200, 200, 200, 429].into_iter().enumerate() {
        let body = utf16("username=alice&password=guess", false);
        let r = send(
            &app,
            login_with(Some(form), body, &format!("203.0.113.{i}:1")),
        )
        .await;
        assert_eq!(r.status(), expected);
    }
}

#[tokio::test]
async fn spellings_of_one_account_share_its_limit_by_default() {
    let clock = ManualClock::new(0);
    let app = login_app(Policy::new(vec![rule(
        "login",
        "/login",
        "json:username",
        store(Algorithm::SlidingLog, "3/m", &clock),
    )]));
    let attempt = |name: &str, peer: &str| {
        let body = serde_json::json!({ "username": name, "password": "guess" }).to_string();
        login_with(Some("application/json"), body, peer)
    };
    let mut statuses = Vec::new();
    for (i, name) in ["alice", "Alice", " alice ", "ａｌｉｃｅ", "ALICE\t"]
        .into_iter()
        .enumerate()
    {
        let r = send(&app, attempt(name, &format!("192.0.2.{i}:1"))).await;
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    // Composed (NFC) and decomposed (NFD) accents are one name.
    let mut statuses = Vec::new();
    for (i, name) in ["zo\u{eb}", "zoe\u{308}", "ZOE\u{308}", " Zo\u{eb}"]
        .into_iter()
        .enumerate()
    {
        let r = send(&app, attempt(name, &format!("198.51.100.{i}:1"))).await;
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429]);
}

#[tokio::test]
async fn missing_shared_puts_every_keyless_request_in_one_bucket() {
    let clock = ManualClock::new(0);
    let key = "header:X-Api-Key"
        .parse::<KeySpec>()
        .unwrap()
        .with_missing(limits_http::Missing::Shared);
    let app = app(Policy::new(vec![HttpRule {
        key,
        ..rule(
            "api",
            "/",
            "ip",
            store(Algorithm::SlidingLog, "2/m", &clock),
        )
    }]));
    let statuses = [
        send(&app, request("/", "192.0.2.1:1")).await.status(),
        send(&app, request("/", "192.0.2.2:1")).await.status(),
        send(&app, request("/", "192.0.2.3:1")).await.status(),
    ];
    assert_eq!(statuses, [200, 200, 429]);
    let mut keyed = request("/", "192.0.2.3:1");
    keyed
        .headers_mut()
        .insert("x-api-key", "k1".parse().unwrap());
    assert_eq!(send(&app, keyed).await.status(), 200);
}

// Issue 8: keys only the application knows, the builder, closure observers.

/// The tenant named by `X-Tenant`, if it is one we know.
struct Tenant;

impl KeyExtractor for Tenant {
    fn key(
        &self,
        parts: &http::request::Parts,
        _: Option<std::net::IpAddr>,
        _: Option<&[u8]>,
    ) -> Result<Key, KeyError> {
        let error = |reason| KeyError {
            field: "header:x-tenant".into(),
            reason,
        };
        let tenant = parts.headers.get("x-tenant");
        let tenant = tenant.ok_or(error(KeyErrorReason::Missing))?;
        let tenant = tenant.to_str().unwrap_or_default();
        if tenant.starts_with("evil") {
            let why = "no such tenant".to_string();
            return Err(error(KeyErrorReason::Invalid(why)));
        }
        Ok(Key::custom("tenant", tenant))
    }
}

/// A store that remembers every key it was asked about.
struct Recording(Memory, Mutex<Vec<String>>);

impl Store for Recording {
    fn rule(&self) -> &Rule {
        self.0.rule()
    }
    async fn decide(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        self.1.lock().unwrap().push(key.to_string());
        Store::decide(&self.0, key, cost, mode).await
    }
}

fn layered<S: Store, K: KeyExtractor>(layer: RateLimitLayer<S, K>) -> Router {
    Router::new()
        .route("/a", get(|| async { "a" }))
        .route("/b", get(|| async { "b" }))
        .layer(layer)
}

fn tenant_request(path: &str, tenant: &str, peer: &str) -> Request<Body> {
    let mut r = request(path, peer);
    r.headers_mut().insert("x-tenant", tenant.parse().unwrap());
    r
}

#[tokio::test]
async fn a_custom_extractors_keys_never_meet_the_built_in_ones() {
    let clock = ManualClock::new(0);
    let limiter = KeyedLimiter::with_clock(
        Rule::new(Algorithm::FixedWindow, "1/m".parse().unwrap()),
        clock.clone(),
    );
    // One store shared by a rule keyed on the address and one keyed on the
    // tenant, each extractor behind `dyn`.
    let shared = Arc::new(Recording(limiter, Mutex::new(Vec::new())));
    let rule = |name: &str, path: &str, key: Arc<dyn KeyExtractor>| HttpRule {
        name: name.into(),
        path_prefix: path.into(),
        methods: vec![],
        key,
        cost: 1,
        store: shared.clone(),
    };
    let a = rule("by-ip", "/a", Arc::new(KeySpec::ip()));
    let b = rule("by-tenant", "/b", Arc::new(Tenant));
    let app = layered(RateLimitLayer::new(Policy::new(vec![a, b])));

    assert_eq!(send(&app, request("/a", "192.0.2.1:1")).await.status(), 200);
    assert_eq!(send(&app, request("/a", "192.0.2.1:1")).await.status(), 429);
    // Tenants spelling the address's key, or an escape of it, are tenants:
    // they neither spend nor meet its budget.
    for forged in ["ip=192.0.2.1", "ip=192.0.2.2", r"x|ip=192.0.2.2"] {
        let r = send(&app, tenant_request("/b", forged, "192.0.2.9:1")).await;
        assert_eq!(r.status(), 200, "{forged}");
    }
    assert_eq!(send(&app, request("/a", "192.0.2.2:1")).await.status(), 200);
    assert_eq!(
        *shared.1.lock().unwrap(),
        [
            "ip=192.0.2.1",
            "ip=192.0.2.1",
            "custom:tenant=ip=192.0.2.1",
            "custom:tenant=ip=192.0.2.2",
            r"custom:tenant=x\|ip=192.0.2.2",
            "ip=192.0.2.2",
        ]
    );
    // A tenant the extractor refuses is a 400 naming the rule and field.
    let r = send(&app, tenant_request("/b", "evil-corp", "192.0.2.9:1")).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body = json(r).await;
    assert_eq!(body["rule"], "by-tenant");
    assert_eq!(body["field"], "header:x-tenant");
    assert!(body["detail"].as_str().unwrap().contains("no such tenant"));
}

#[tokio::test]
async fn the_builder_sets_rules_options_and_a_closure_observer() {
    let clock = ManualClock::new(0);
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = heard.clone();
    let proxy = TrustedProxies::parse(&["10.0.0.0/8"]).unwrap();
    let layer = RateLimitLayer::builder()
        .rule(rule(
            "a",
            "/a",
            "ip",
            store(Algorithm::FixedWindow, "1/m", &clock),
        ))
        .rules([rule(
            "b",
            "/b",
            "ip",
            store(Algorithm::FixedWindow, "1/m", &clock),
        )])
        .dry_run(true)
        .legacy_headers(true)
        .client_ip(ClientIp::new(proxy, ClientIpHeader::XForwardedFor, 64).unwrap())
        .observer(move |rule: &str, outcome: Outcome, _: Duration| {
            log.lock().unwrap().push((rule.to_string(), outcome));
        })
        .build();
    let app = layered(layer);
    let forwarded = |path: &str| {
        let mut r = request(path, "10.0.0.1:1");
        r.headers_mut()
            .insert("x-forwarded-for", "192.0.2.7".parse().unwrap());
        r
    };
    for path in ["/a", "/a", "/b"] {
        let r = send(&app, forwarded(path)).await;
        // Dry run: never a 429; legacy headers too.
        assert_eq!(r.status(), 200);
        assert_eq!(header(&r, "x-ratelimit-limit"), "1");
    }
    // The forwarded client, not the proxy, was the key: another client
    // behind the same proxy is allowed by rule a.
    let mut other = request("/a", "10.0.0.1:1");
    other
        .headers_mut()
        .insert("x-forwarded-for", "192.0.2.8".parse().unwrap());
    assert_eq!(send(&app, other).await.status(), 200);
    use Outcome::{Allowed, WouldLimit};
    let expected = [
        ("a", Allowed),
        ("a", WouldLimit),
        ("b", Allowed),
        ("a", Allowed),
    ];
    let heard: Vec<_> = heard.lock().unwrap().clone();
    let heard: Vec<_> = heard.iter().map(|(r, o)| (r.as_str(), *o)).collect();
    assert_eq!(heard, expected);
}

#[tokio::test]
async fn a_closure_or_unit_observer_fits_a_policy() {
    let clock = ManualClock::new(0);
    let limited = Arc::new(Mutex::new(0));
    let count = limited.clone();
    let mut policy = Policy::new(vec![rule(
        "default",
        "/",
        "ip",
        store(Algorithm::SlidingLog, "2/m", &clock),
    )]);
    policy.observer = Arc::new(move |_: &str, outcome: Outcome, _: Duration| {
        if outcome == Outcome::Limited {
            *count.lock().unwrap() += 1;
        }
    });
    let app = app(policy);
    let seen = statuses(&app, (0..5).map(|_| request("/", "192.0.2.1:1"))).await;
    assert_eq!(seen, [200, 200, 429, 429, 429]);
    assert_eq!(*limited.lock().unwrap(), 3);

    let built = RateLimitLayer::builder()
        .rule(rule(
            "default",
            "/",
            "ip",
            store(Algorithm::SlidingLog, "1/m", &clock),
        ))
        .observer(())
        .build();
    let app = layered(built);
    let seen = statuses(&app, (0..2).map(|_| request("/a", "192.0.2.1:1"))).await;
    assert_eq!(seen, [200, 429]);
}
