//! Tiers in `limits serve --config` (issue 27 §4), in front of the
//! recording upstream: a key on the pro plan gets pro's limit, counted
//! apart from the free plan's; the plan header counts only from a
//! `--trust-proxy` peer; a tier file maps API keys to plans from anyone;
//! each tier's decisions are metrics of its own rule, `NAME.TIER`.

use crate::common;

use common::server::Server;
use common::upstream::RecordingUpstream;
use common::write;
use std::net::IpAddr;

const RULES: &str = r#"
[[rule]]
name = "api"
key = "header:x-api-key"
tiers = { free = "1/minute", pro = "3/minute" }
tier_from = "header:x-plan"
default_tier = "free"
"#;

/// The statuses of `n` requests from `from` with API key `key` and, if
/// given, the plan `plan`.
async fn statuses(url: &str, from: &str, key: &str, plan: Option<&str>, n: usize) -> Vec<u16> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .local_address(from.parse::<IpAddr>().unwrap())
        .build()
        .unwrap();
    let mut out = Vec::new();
    for _ in 0..n {
        let mut request = http.get(format!("{url}/")).header("x-api-key", key);
        if let Some(plan) = plan {
            request = request.header("x-plan", plan);
        }
        out.push(request.send().await.unwrap().status().as_u16());
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_limits_each_key_by_the_plan_its_trusted_proxy_names() {
    let upstream = RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "rules.toml", RULES);
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--upstream",
        &upstream.url,
        "--trust-proxy",
        "127.0.0.9/32",
    ];
    let server = Server::start(&args, true);
    let url = &server.url;
    let proxy = "127.0.0.9";
    assert_eq!(
        statuses(url, proxy, "k1", Some("pro"), 4).await,
        [200, 200, 200, 429]
    );
    // The same key on the free plan: its own count, free's limit.
    assert_eq!(statuses(url, proxy, "k1", None, 2).await, [200, 429]);
    // A client that is not the proxy names its own plan: not believed.
    assert_eq!(
        statuses(url, "127.0.0.5", "k2", Some("pro"), 2).await,
        [200, 429]
    );
    assert_eq!(upstream.request_lines().len(), 5);
    let decided = |rule: &str, outcome: &str| {
        format!("limits_decisions_total{{rule=\"{rule}\",outcome=\"{outcome}\"}}")
    };
    assert_eq!(
        server.metric(&decided("api.pro", "allowed")).await,
        Some(3.0)
    );
    assert_eq!(
        server.metric(&decided("api.free", "allowed")).await,
        Some(2.0)
    );
    assert_eq!(
        server.metric(&decided("api.free", "limited")).await,
        Some(2.0)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_looks_api_keys_up_in_the_tier_file_and_reloads_it() {
    let upstream = RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "plans.txt", "# key plan\nk-paid pro\n");
    let rules = RULES.replace(
        "tier_from = \"header:x-plan\"",
        "tier_from = \"header:x-api-key\"\ntier_file = \"plans.txt\"",
    );
    let config = write(dir.path(), "rules.toml", &rules);
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--upstream",
        &upstream.url,
    ];
    let server = Server::start(&args, false);
    let url = &server.url;
    let anyone = "127.0.0.5";
    assert_eq!(
        statuses(url, anyone, "k-paid", None, 4).await,
        [200, 200, 200, 429]
    );
    assert_eq!(statuses(url, anyone, "k-new", None, 2).await, [200, 429]);
    // k-new buys the plan: the file changes, SIGHUP, and its next request
    // is decided under pro's limit, counted afresh.
    write(dir.path(), "plans.txt", "k-paid pro\nk-new pro\n");
    server.signal("HUP");
    server.wait_for_line("config reloaded (2 rules, 2 kept their state)");
    assert_eq!(
        statuses(url, anyone, "k-new", None, 4).await,
        [200, 200, 200, 429]
    );
    // A bad line keeps the plans in force and names the file's line.
    write(dir.path(), "plans.txt", "k-paid pro\nk-new gold\n");
    server.signal("HUP");
    let refused = server.wait_for_line("config not reloaded");
    let at = format!(
        "{}:2: tier \"gold\" is not one of",
        dir.path().join("plans.txt").display()
    );
    assert!(refused.contains(&at), "{refused}");
    assert_eq!(statuses(url, anyone, "k-new", None, 1).await, [429]);
}

/// A plan header with no proxy trusted can never count: said at start.
#[test]
fn serve_warns_that_a_tier_header_without_a_trusted_proxy_is_never_believed() {
    let upstream = RecordingUpstream::start();
    let (server, _dir) = Server::with_rules(RULES, &upstream.url, &[]);
    let line = server.line_since_start("counts only from a --trust-proxy peer");
    assert!(
        line.contains("api.free") && line.contains("default tier, free"),
        "{line}"
    );
}
