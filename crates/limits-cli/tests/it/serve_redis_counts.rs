//! Two `limits serve` instances on one real redis-server, 8 clients for 3 s
//! against 50 per 10 s: the exact number each non-sliding-log limiter lets
//! through between them (serve_redis.rs has the sliding log's 50), derived
//! from the rule and the reference semantics, not observed and pasted.
//!
//! Where the count depends on time (the buckets refill during the run), it
//! is bounded exactly from the elapsed time as the model counts it: the
//! first decision is no later than the first answer, the last no earlier
//! than the last request sent and no later than the last answer.

use crate::common;
use crate::redis_server;

use common::server::Server;
use redis_server::RedisServer;
use std::time::{Duration, Instant};

/// The rule's window and limit, and the run.
const LIMIT: u64 = 50;
const WINDOW: Duration = Duration::from_secs(10);
const RUN: Duration = Duration::from_secs(3);
const CLIENTS: usize = 8;

/// What a load saw: 200s, 429s, and its times (this host's monotonic clock;
/// Redis runs on this host, so durations agree with its `TIME`).
struct Load {
    ok: u64,
    limited: u64,
    started: Instant,
    first_answer: Instant,
    last_sent: Instant,
    ended: Instant,
}

impl Load {
    /// Shortest and longest the span from the first decision to the last
    /// can have been.
    fn span(&self) -> (Duration, Duration) {
        (
            self.last_sent.saturating_duration_since(self.first_answer),
            self.ended - self.started,
        )
    }
}

/// `CLIENTS` clients for `RUN`, each sending to the servers in turn.
async fn load(urls: &[String]) -> Load {
    let started = Instant::now();
    let deadline = started + RUN;
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let urls = urls.to_vec();
            tokio::spawn(async move {
                let http = common::client();
                let (mut ok, mut limited, mut first, mut last) = (0, 0, None, started);
                let mut i = c;
                while Instant::now() < deadline {
                    let url = &urls[i % urls.len()];
                    i += 1;
                    last = Instant::now();
                    let status = http.get(format!("{url}/")).send().await.unwrap().status();
                    first.get_or_insert_with(Instant::now);
                    match status.as_u16() {
                        200 => ok += 1,
                        429 => limited += 1,
                        other => panic!("{url}: {other}"),
                    }
                }
                (ok, limited, first.unwrap_or(deadline), last)
            })
        })
        .collect();
    let mut seen = Load {
        ok: 0,
        limited: 0,
        started,
        first_answer: deadline,
        last_sent: started,
        ended: started,
    };
    for task in tasks {
        let (ok, limited, first, last) = task.await.unwrap();
        seen.ok += ok;
        seen.limited += limited;
        seen.first_answer = seen.first_answer.min(first);
        seen.last_sent = seen.last_sent.max(last);
    }
    seen.ended = Instant::now();
    seen
}

/// Redis's `TIME` in microseconds.
fn redis_time(redis: &RedisServer) -> u64 {
    let reply = redis.command(&["TIME"]).unwrap();
    let lines: Vec<&str> = reply.split("\r\n").collect();
    let secs: u64 = lines[2].parse().unwrap();
    let micros: u64 = lines[4].parse().unwrap();
    secs * 1_000_000 + micros
}

/// Waits, if need be, until Redis's clock is early enough in a fixed window
/// (windows start at multiples of W from the epoch) that the whole run,
/// with a second to spare, ends within it.
fn align_to_one_window(redis: &RedisServer) {
    let w = WINDOW.as_micros() as u64;
    let into = redis_time(redis) % w;
    let needed = (RUN + Duration::from_secs(1)).as_micros() as u64;
    if w - into < needed {
        std::thread::sleep(Duration::from_micros(w - into + 20_000));
    }
}

/// Two instances of `limiter` on one Redis, under the load.
async fn two_instances(redis: &RedisServer, extra: &[&str]) -> Load {
    let url = redis.url();
    let mut args = vec!["--limit", "50", "--window", "10s"];
    args.extend(extra);
    args.extend(["--store", &url, "--store-timeout", "2s"]);
    let a = Server::start(&args, false);
    let b = Server::start(&args, false);
    let urls = [a.url.clone(), b.url.clone()];
    let seen = load(&urls).await;
    assert!(
        seen.limited > 100,
        "the clients kept trying: {}",
        seen.limited
    );
    seen
}

/// Fixed window: allowed iff count + 1 <= L within the window floor(t / W).
/// A run inside one window therefore passes exactly L, whichever instance
/// asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fixed_window_passes_exactly_the_limit_within_one_window() {
    let redis = RedisServer::start();
    align_to_one_window(&redis);
    let seen = two_instances(&redis, &["--limiter", "fixed-window"]).await;
    assert_eq!(seen.ok, LIMIT);
}

/// Sliding-window counter: allowed iff prev x (W - e) / W + curr + 1 <= L.
/// A fresh key has prev = 0, so inside its first window this is curr + 1 <=
/// L: exactly L pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sliding_window_passes_exactly_the_limit_within_its_first_window() {
    let redis = RedisServer::start();
    align_to_one_window(&redis);
    let seen = two_instances(&redis, &["--limiter", "sliding-window"]).await;
    assert_eq!(seen.ok, LIMIT);
}

/// Token bucket: full (L tokens) at the first request at t0, then one token
/// per T = W / L = 200 ms. Under a flood (a request every few ms, far more
/// often than T) each token is taken as soon as it exists, so by the last
/// decision at t1 exactly L + floor((t1 - t0) / T) have passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn token_bucket_passes_the_limit_plus_one_per_refill_during_the_run() {
    let redis = RedisServer::start();
    let seen = two_instances(&redis, &["--limiter", "token-bucket"]).await;
    let t = WINDOW / LIMIT as u32;
    let (shortest, longest) = seen.span();
    let least = LIMIT + (shortest.as_nanos() / t.as_nanos()) as u64;
    let most = LIMIT + (longest.as_nanos() / t.as_nanos()) as u64;
    eprintln!(
        "token bucket: {} passed, between {least} and {most}",
        seen.ok
    );
    assert!(
        (least..=most).contains(&seen.ok),
        "{} passed; {shortest:?}..{longest:?} allows {least}..={most}",
        seen.ok
    );
}

/// Leaky bucket with a queue of B = 2: one unit leaves every T = W / L =
/// 200 ms; a request is admitted iff its departure d = max(t, last + T) is
/// at most B x T after t. An idle bucket takes B + 1 at once (departing at
/// t0, t0 + T, t0 + 2T); the flood keeps the queue full (at most B + 1
/// clients are held for their delay, the other 5 keep asking), so the n-th
/// further admission comes as soon as t0 + (n + B) T - t <= B T: by the
/// last decision at t1, exactly B + 1 + floor((t1 - t0) / T) have passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leaky_bucket_passes_its_burst_plus_one_per_departure_during_the_run() {
    let redis = RedisServer::start();
    let burst = 2;
    let seen = two_instances(&redis, &["--limiter", "leaky-bucket", "--burst", "2"]).await;
    let t = WINDOW / LIMIT as u32;
    let (shortest, longest) = seen.span();
    let least = burst + 1 + (shortest.as_nanos() / t.as_nanos()) as u64;
    let most = burst + 1 + (longest.as_nanos() / t.as_nanos()) as u64;
    eprintln!(
        "leaky bucket: {} passed, between {least} and {most}",
        seen.ok
    );
    assert!(
        (least..=most).contains(&seen.ok),
        "{} passed; {shortest:?}..{longest:?} allows {least}..={most}",
        seen.ok
    );
}
