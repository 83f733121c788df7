//! `cost_from` (issue 27, part 1: tokens per minute per API key): `limits
//! serve --upstream` counts each request at its estimate on arrival and
//! settles it to the `x-tokens-used` the upstream's response reports (at
//! most `max_cost`), the header never reaching the client; in memory and
//! on a real redis-server alike, each answer's remaining count exact.

use crate::common;
use crate::redis_server;

use common::raw_exchange;
use common::server::Server;
use redis_server::RedisServer;

const RULES: &str = r#"
[[rule]]
name = "tokens"
path = "/v1/"
key = "header:x-api-key"
rates = "1000/minute"
cost = 100
cost_from = "header:x-tokens-used"
max_cost = 600
"#;

/// A call whose answer reports `tokens` (if any): its status code, the
/// RateLimit field's remaining count, and whether the cost header reached
/// the client.
async fn call(server: &Server, tokens: Option<u64>) -> (String, String, bool) {
    let asked = tokens.map_or(String::new(), |t| format!("x-answer-tokens: {t}\r\n"));
    let request = format!(
        "POST /v1/chat HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-api-key: k1\r\n{asked}Content-Length: 0\r\n\r\n"
    );
    let answer = raw_exchange(&server.url, request.as_bytes()).await;
    let status = answer.lines().next().unwrap_or_default().to_string();
    let remaining = answer
        .lines()
        .find_map(|l| l.strip_prefix("ratelimit: "))
        .and_then(|v| v.split(";r=").nth(1))
        .map(|r| r.split(';').next().unwrap_or_default().to_string())
        .unwrap_or_default();
    let leaked = answer.to_ascii_lowercase().contains("x-tokens-used");
    (status, remaining, leaked)
}

/// The calls below on a server of `store` arguments.
async fn calls(store: &[&str]) -> Vec<(String, String, bool)> {
    let upstream = common::upstream::RecordingUpstream::start();
    let (server, _rules) = Server::with_rules(RULES, &upstream.url, store);
    let mut answers = Vec::new();
    for tokens in [Some(30), Some(700), None, Some(500), Some(1)] {
        answers.push(call(&server, tokens).await);
    }
    answers
}

/// Each call counted at 100 on arrival (what its RateLimit field says),
/// then settled: 30; 600 (700, at most 600); the estimate (no header);
/// 500, 400 more of which 170 fit (a count goes up to its limit); then
/// nothing is left.
fn settled() -> Vec<(String, String, bool)> {
    let ok = |r: &str| ("HTTP/1.1 200 OK".to_string(), r.to_string(), false);
    vec![
        ok("900"),
        ok("870"),
        ok("270"),
        ok("170"),
        ("HTTP/1.1 429 Too Many Requests".into(), "0".into(), false),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_settles_each_call_to_the_tokens_its_answer_used() {
    assert_eq!(calls(&[]).await, settled());
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_on_redis_settles_each_call_as_memory_does() {
    let redis = RedisServer::start();
    let url = redis.url();
    // Each settlement is made before the response goes out: the next call
    // finds it.
    assert_eq!(calls(&["--store", &url]).await, settled());
}
