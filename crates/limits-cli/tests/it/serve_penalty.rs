//! Bans in `limits serve --config` (issue 27 §2): a key denied `after`
//! times within `within` is refused for `ban`, with `Retry-After` the ban's
//! end and a problem body saying until when; on Redis and memcached the ban
//! is shared, so another instance refuses the banned key too.

use crate::common;
use crate::memcached_server::MemcachedServer;
use crate::redis_server::RedisServer;

use common::server::Server;
use common::upstream::RecordingUpstream;

const RULES: &str = r#"
[[rule]]
name = "login"
rates = "2/minute"
penalty = { after = 2, within = "1m", ban = "10m" }
"#;

/// Status, Retry-After and the body of a GET of `url/`.
async fn get(url: &str) -> (u16, u64, String) {
    let r = common::client()
        .get(format!("{url}/"))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let wait = common::header(&r, "retry-after").parse().unwrap_or(0);
    (status, wait, r.text().await.unwrap())
}

/// Two denials on `first` ban the client; `second` refuses it for the ban.
async fn ban_on_one_refused_by_other(first: &Server, second: &Server) {
    let statuses = [get(&first.url).await, get(&first.url).await];
    assert_eq!(statuses.map(|s| s.0), [200, 200]);
    let denied = get(&first.url).await;
    assert_eq!(denied.0, 429);
    assert!(denied.1 <= 60, "a denial waits for the rule: {denied:?}");
    assert!(!denied.2.contains("banned_until"), "{}", denied.2);
    // The second denial within a minute: banned for ten minutes.
    let banned = get(&first.url).await;
    assert_eq!(banned.0, 429);
    assert!((599..=600).contains(&banned.1), "{banned:?}");
    assert!(banned.2.contains("banned_until"), "{}", banned.2);
    let elsewhere = get(&second.url).await;
    assert_eq!(elsewhere.0, 429);
    assert!((598..=600).contains(&elsewhere.1), "{elsewhere:?}");
    assert!(elsewhere.2.contains("banned_until"), "{}", elsewhere.2);
    let outcome = "limits_decisions_total{rule=\"login\",outcome=\"banned\"}";
    // The refusal that started the ban is a banned one too.
    let banned_here = if std::ptr::eq(first, second) {
        2.0
    } else {
        1.0
    };
    assert_eq!(second.metric(outcome).await, Some(banned_here));
    // The ban is counted once, by the instance whose decision started it.
    let bans = "limits_bans_total{rule=\"login\"}";
    assert_eq!(first.metric(bans).await, Some(1.0));
    if !std::ptr::eq(first, second) {
        assert_eq!(second.metric(bans).await, Some(0.0));
    }
}

/// `limits serve --config RULES --upstream UPSTREAM --admin ... MORE`.
fn serve(rules: &std::path::Path, upstream: &RecordingUpstream, more: &[&str]) -> Server {
    let mut args = vec![
        "--config",
        rules.to_str().unwrap(),
        "--upstream",
        &upstream.url,
    ];
    args.extend_from_slice(more);
    Server::start(&args, true)
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_bans_a_repeat_offender_in_memory() {
    let upstream = RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let rules = common::write(dir.path(), "rules.toml", RULES);
    let server = serve(&rules, &upstream, &[]);
    ban_on_one_refused_by_other(&server, &server).await;
    assert_eq!(upstream.request_lines().len(), 2);
}

/// Two instances on the shared store `store` ban alike.
async fn shared_by_two_instances(store: &str) {
    let upstream = RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let rules = common::write(dir.path(), "rules.toml", RULES);
    let first = serve(&rules, &upstream, &["--store", store]);
    let second = serve(&rules, &upstream, &["--store", store]);
    ban_on_one_refused_by_other(&first, &second).await;
    assert_eq!(upstream.request_lines().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_on_redis_shares_a_ban_with_every_instance() {
    let redis = RedisServer::start();
    shared_by_two_instances(&redis.url()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_on_memcached_shares_a_ban_with_every_instance() {
    let memcached = MemcachedServer::start();
    shared_by_two_instances(&memcached.url()).await;
}
