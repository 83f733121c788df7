//! Caps on requests in flight in `limits serve --config` (issue 27 §5), in
//! front of the recording upstream, whose `x-body-after-ms` answers the
//! head at once and the body later: a slot is held until the response body
//! has gone out, not only its head, and renewed while that takes longer
//! than its lease; on Redis, the slots of an instance killed while holding
//! them come back within one lease.

use crate::common;
use crate::redis_server::RedisServer;

use common::server::Server;
use common::upstream::RecordingUpstream;
use std::time::{Duration, Instant};

fn http() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// A GET of `url/` whose body the upstream sends `body_after_ms` later.
async fn get(url: &str, body_after_ms: u64) -> reqwest::Response {
    http()
        .get(format!("{url}/"))
        .header("x-body-after-ms", body_after_ms.to_string())
        .send()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_holds_a_slot_until_the_response_body_has_gone_out() {
    let upstream = RecordingUpstream::start();
    let rules = "[[rule]]\nname = \"downloads\"\nconcurrency = 1\nlease = \"1s\"\n";
    let (server, _dir) = Server::with_rules(rules, &upstream.url, &["--admin", "127.0.0.1:0"]);
    let streaming = get(&server.url, 2000).await;
    assert_eq!(streaming.status(), 200);
    // Its head is out, its body is not: the slot is still taken, past its
    // lease too (renewed every half second).
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let refused = get(&server.url, 0).await;
    assert_eq!(refused.status(), 429);
    let policy = refused.headers()["ratelimit-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert_eq!(policy, "\"downloads.in_flight\";q=1;w=1");
    assert_eq!(streaming.text().await.unwrap(), "ok");
    // The body went out: the slot is given back (not lapsed: a lease is a
    // second). The server gives it back once it has written the body's
    // end, which the client can read a moment before: a request in that
    // moment still finds it taken.
    let back = back_within(&server.url, Instant::now()).await;
    assert!(back < Duration::from_millis(500), "back after {back:?}");
    assert_eq!(
        upstream.request_lines().len(),
        2,
        "the refused requests never reached the upstream"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_on_redis_gets_back_the_slots_of_a_killed_instance_within_one_lease() {
    let redis = RedisServer::start();
    let store = redis.url();
    let upstream = RecordingUpstream::start();
    let rules = "[[rule]]\nname = \"exports\"\nconcurrency = 1\nlease = \"2s\"\n";
    let args = ["--store", store.as_str()];
    let (first, _dir) = Server::with_rules(rules, &upstream.url, &args);
    let (second, _dir2) = Server::with_rules(rules, &upstream.url, &args);
    // One slot for both instances, given back through Redis when the body
    // has gone out, long before its lease ends.
    let taken = Instant::now();
    let short = get(&first.url, 300).await;
    assert_eq!(short.status(), 200);
    assert_eq!(get(&second.url, 0).await.status(), 429);
    assert_eq!(short.text().await.unwrap(), "ok");
    let back = back_within(&second.url, taken).await;
    assert!(back < Duration::from_millis(1500), "back after {back:?}");
    // The first takes it with a long download, and dies holding it: nobody
    // gives it back. (The probe that found the slot back held it for a
    // moment itself: its give-back reaches Redis just after its response.)
    let (held, taken) = get_once_free(&first.url, 30_000).await;
    assert_eq!(get(&second.url, 0).await.status(), 429);
    first.signal("KILL");
    drop(held);
    assert_eq!(get(&second.url, 0).await.status(), 429);
    // It frees itself when its lease ends, two seconds after it was taken.
    let freed = back_within(&second.url, taken).await;
    assert!(freed >= Duration::from_secs(2), "back after {freed:?}");
    assert!(freed < Duration::from_secs(4), "back after {freed:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_on_redis_renews_a_slot_while_its_body_is_under_way() {
    let redis = RedisServer::start();
    let store = redis.url();
    let upstream = RecordingUpstream::start();
    let rules = "[[rule]]\nname = \"exports\"\nconcurrency = 1\nlease = \"1s\"\n";
    let args = ["--store", store.as_str()];
    let (first, _dir) = Server::with_rules(rules, &upstream.url, &args);
    let (second, _dir2) = Server::with_rules(rules, &upstream.url, &args);
    let long = get(&first.url, 3000).await;
    assert_eq!(long.status(), 200);
    // Twice its lease later, the first instance has kept the slot.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(get(&second.url, 0).await.status(), 429);
    assert_eq!(long.text().await.unwrap(), "ok");
    let back = back_within(&second.url, Instant::now()).await;
    eprintln!("back after {back:?}");
    assert!(back < Duration::from_millis(5000), "back after {back:?}");
}

/// How long after `taken` a request to `url` passes again, asked every
/// 50 ms (for at most 10 s).
/// A request sent until it is not refused (a slot given back a moment
/// ago may not be back in Redis yet), for at most 500 ms: its response
/// (200) and when it was sent.
async fn get_once_free(url: &str, body_after_ms: u64) -> (reqwest::Response, Instant) {
    let first = Instant::now();
    loop {
        let sent = Instant::now();
        let response = get(url, body_after_ms).await;
        if response.status() != 429 || first.elapsed() > Duration::from_millis(500) {
            assert_eq!(response.status(), 200);
            return (response, sent);
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn back_within(url: &str, taken: Instant) -> Duration {
    loop {
        if get(url, 0).await.status() == 200 {
            return taken.elapsed();
        }
        let waited = taken.elapsed();
        assert!(waited < Duration::from_secs(10), "the slot never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
