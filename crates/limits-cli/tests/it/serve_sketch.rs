//! `limits serve` with `memory = "..."`: a sliding-window rule in a sketch,
//! whose memory stays where it started under a flood of distinct keys and
//! which never forgives a limited client (collisions only add).

use crate::common;

use common::client;
use common::server::Server;

#[tokio::test(flavor = "multi_thread")]
async fn a_sketch_rule_keeps_its_memory_and_its_limited_clients_under_a_flood_of_keys() {
    let dir = tempfile::tempdir().unwrap();
    let rules = "[[rule]]\nname = \"scrape\"\nlimiter = \"sliding-window\"\nrates = \"10/h\"\n\
                 key = \"header:x-api-key\"\nmemory = \"256KiB\"\n";
    let config = common::write(dir.path(), "rules.toml", rules);
    let server = Server::start(&["--config", config.to_str().unwrap()], true);
    let (http, url) = (client(), format!("{}/", server.url));
    let ask = move |key: String| {
        let (http, url) = (http.clone(), url.clone());
        async move {
            http.get(url)
                .header("x-api-key", key)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    for _ in 0..10 {
        assert_eq!(ask("victim".into()).await, 200);
    }
    assert_eq!(ask("victim".into()).await, 429);
    // Warm up so that the baseline includes the runtime's own allocations.
    for i in 0..1000 {
        ask(format!("warm-{i}")).await;
    }
    let before = server.rss_kib();
    let tasks: Vec<_> = (0..8)
        .map(|t| {
            let ask = ask.clone();
            tokio::spawn(async move {
                let mut passed = 0;
                for i in 0..6_000 {
                    passed += u32::from(ask(format!("flood-{t}-{i}")).await == 200);
                }
                passed
            })
        })
        .collect();
    let mut passed = 0;
    for t in tasks {
        passed += t.await.unwrap();
    }
    // 48,000 keys of one request each, in 4 rows of 4,096 cells: most
    // find a cell below the limit.
    assert!(passed > 40_000, "{passed} of 48,000 passed");
    assert_eq!(
        ask("victim".into()).await,
        429,
        "a limited client is never forgiven"
    );
    let growth_mib = server.rss_kib().saturating_sub(before) as f64 / 1024.0;
    eprintln!("RSS growth over 48,000 distinct keys: {growth_mib:.1} MiB");
    assert!(growth_mib < 8.0, "RSS grew {growth_mib:.1} MiB");
}
