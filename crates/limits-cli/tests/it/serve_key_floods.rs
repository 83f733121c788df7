//! `limits serve` under floods of distinct keys: memory stays bounded and
//! no limited client is forgiven by eviction.

use crate::common;

use common::client;
use common::server::Server;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn serve_flood_of_distinct_keys_stays_under_the_key_cap_and_memory_bound() {
    let server = Server::start(
        &[
            "--limiter",
            "sliding-log",
            "--limit",
            "10",
            "--window",
            "1h",
            "--key",
            "header:X-Api-Key",
            "--max-keys",
            "1000",
        ],
        true,
    );
    let http = client();
    // Warm up so that the baseline includes the runtime's own allocations.
    for i in 0..1000 {
        http.get(format!("{}/", server.url))
            .header("x-api-key", format!("warm-{i}"))
            .send()
            .await
            .unwrap();
    }
    let before = server.rss_kib();
    let mut most_keys = 0.0f64;
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let http = http.clone();
            let url = format!("{}/", server.url);
            tokio::spawn(async move {
                for i in 0..12_500 {
                    let key = format!("flood-{t}-{i}");
                    let r = http
                        .get(&url)
                        .header("x-api-key", key)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 200);
                }
            })
        })
        .collect();
    while tasks.iter().any(|t| !t.is_finished()) {
        if let Some(keys) = server.metric("limits_keys{").await {
            most_keys = most_keys.max(keys);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for t in tasks {
        t.await.unwrap();
    }
    let keys = server.metric("limits_keys{").await.unwrap();
    most_keys = most_keys.max(keys);
    assert!(most_keys <= 1000.0, "keys gauge reached {most_keys}");
    assert!(keys > 900.0, "the cap keeps recent keys: {keys}");
    let evicted = server.metric("limits_evictions_total{").await.unwrap();
    assert!(evicted >= 99_000.0, "evictions {evicted}");
    let growth_mib = server.rss_kib().saturating_sub(before) as f64 / 1024.0;
    eprintln!("RSS growth over 100,000 distinct keys: {growth_mib:.1} MiB");
    assert!(growth_mib < 32.0, "RSS grew {growth_mib:.1} MiB");
}

/// Regression (issue 7, "memory cap without amnesty"): with `--max-keys`, a
/// flood of distinct keys sending two requests each evicted a client that
/// started during the flood, at its limit too, and it came back with a fresh
/// limit (28 of its requests passed a limit of 10). The flood must evict its
/// own keys: the client gets its 10 and no more, and no limited key is
/// evicted, while the flood's keys are.
#[tokio::test(flavor = "multi_thread")]
async fn serve_flood_of_distinct_keys_buys_a_limited_client_no_amnesty() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let server = Server::start(
        &[
            "--max-keys",
            "1000",
            "--limiter",
            "sliding-log",
            "--limit",
            "10",
            "--window",
            "1m",
            "--key",
            "header:X-Api-Key",
        ],
        true,
    );
    let http = client();
    let url = format!("{}/", server.url);
    let sent = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    // 8 × 1,250 distinct keys, two requests each: 20,000 requests.
    let flood: Vec<_> = (0..8)
        .map(|t| {
            let (http, url, sent) = (http.clone(), url.clone(), sent.clone());
            tokio::spawn(async move {
                for i in 0..1_250 {
                    let key = format!("flood-{t}-{i}");
                    for _ in 0..2 {
                        let r = http.get(&url).header("x-api-key", &key).send().await;
                        assert_eq!(r.unwrap().status(), 200);
                        sent.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    // The client starts during the flood and keeps asking: at once while it
    // passes, then (once denied) every 1,000 flood requests, slower than the
    // flood turns the key table over.
    let victim = {
        let (http, url, sent, done) = (http.clone(), url.clone(), sent.clone(), done.clone());
        tokio::spawn(async move {
            while sent.load(Ordering::Relaxed) < 2_000 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            let (mut passed, mut asked, mut denied) = (0, 0, false);
            while !done.load(Ordering::Relaxed) {
                let next = sent.load(Ordering::Relaxed) + if denied { 1_000 } else { 0 };
                while denied && sent.load(Ordering::Relaxed) < next && !done.load(Ordering::Relaxed)
                {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                let r = http.get(&url).header("x-api-key", "victim").send().await;
                let status = r.unwrap().status();
                asked += 1;
                if status == 200 {
                    passed += 1;
                } else {
                    assert_eq!(status, 429);
                    denied = true;
                }
            }
            (passed, asked)
        })
    };
    for t in flood {
        t.await.unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let (passed, asked) = victim.await.unwrap();
    eprintln!("the client asked {asked} times, {passed} passed");
    assert!(asked > 20, "the client asked only {asked} times");
    assert!(
        passed <= 10,
        "{passed} of the client's {asked} requests passed a limit of 10"
    );
    let evicted = server.metric("limits_evictions_total{").await.unwrap();
    assert!(
        evicted > 0.0,
        "the flood reached the cap: {evicted} evictions"
    );
    let limited = server
        .metric("limits_evictions_of_limited_keys_total{")
        .await
        .unwrap();
    assert_eq!(limited, 0.0, "limited keys evicted");
}
