//! `count = { status = [...] }` (issue 27, part 1): a login rule of `limits
//! serve --upstream` limits failed logins only. Every request is counted on
//! arrival; one whose response is not of a counted status is refunded when
//! its head arrives, through the body-keyed path (the rule keyed on the
//! form's username) and the path decided in the service's call (keyed on
//! the address), against an upstream answering 401 to a wrong password; on
//! a real redis-server and a real memcached, the same answers as in memory.

use crate::common;
use crate::memcached_server::MemcachedServer;
use crate::redis_server;

use common::raw_exchange;
use common::server::Server;
use redis_server::RedisServer;

const RULES: &str = r#"
[[rule]]
name = "login-per-account"
path = "/login"
methods = ["POST"]
key = "form:username"
rates = "3/minute"
count = { status = [401, 403] }

[[rule]]
name = "login-per-address"
path = "/login"
methods = ["POST"]
key = "ip"
rates = "5/minute"
count = { unless_status = [200] }
"#;

/// The status line of a login of `user` with `password`.
async fn login(server: &Server, user: &str, password: &str) -> String {
    let body = format!("username={user}&password={password}");
    let request = format!(
        "POST /login HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let answer = raw_exchange(&server.url, request.as_bytes()).await;
    answer.lines().next().unwrap_or_default().to_string()
}

/// The logins of the scenario below, on a server of `store` arguments:
/// every answer's status line, and how many logins reached the upstream.
async fn failed_logins(store: &[&str]) -> (Vec<String>, usize) {
    let upstream = common::upstream::RecordingUpstream::start();
    let (server, _rules) = Server::with_rules(RULES, &upstream.url, store);
    let mut answers = Vec::new();
    // Ten successful logins, three failed ones and one more of alice's;
    // two of bob's, then carol's.
    let logins = [("alice", "right"); 10]
        .into_iter()
        .chain([("alice", "wrong"); 3])
        .chain([("alice", "right")])
        .chain([("bob", "wrong"); 2])
        .chain([("carol", "right")]);
    for (user, password) in logins {
        answers.push(login(&server, user, password).await);
    }
    (answers, upstream.request_lines().len())
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_limits_failed_logins_and_not_successful_ones() {
    let (answers, upstream) = failed_logins(&[]).await;
    // Ten successful logins: none counts, on either rule.
    for (n, answer) in answers[..10].iter().enumerate() {
        assert_eq!(answer, "HTTP/1.1 200 OK", "#{n}");
    }
    // Three failed ones pass (and count)...
    for (n, answer) in answers[10..13].iter().enumerate() {
        assert_eq!(answer, "HTTP/1.1 401 Unauthorized", "#{n}");
    }
    // ...the fourth is refused before the upstream, even with the right
    // password: the account has used its failures.
    assert_eq!(answers[13], "HTTP/1.1 429 Too Many Requests");
    // Another account from the same address: its own three failures, but
    // the address has failed five times after two more.
    for (n, answer) in answers[14..16].iter().enumerate() {
        assert_eq!(answer, "HTTP/1.1 401 Unauthorized", "#{n}");
    }
    assert_eq!(
        answers[16], "HTTP/1.1 429 Too Many Requests",
        "five failures from one address"
    );
    // The upstream saw 10 + 3 + 2 logins, not the refused ones.
    assert_eq!(upstream, 15);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_on_redis_counts_failed_logins_as_memory_does() {
    let redis = RedisServer::start();
    let url = redis.url();
    let in_memory = failed_logins(&[]).await;
    // Each refund is made before the response goes out: the next login,
    // sent as soon as it arrives, finds it settled.
    let on_redis = failed_logins(&["--store", &url]).await;
    assert_eq!(on_redis, in_memory);
    let keys = redis.integer(&["DBSIZE"]);
    assert!(keys >= 1, "the rules' keys are in Redis: {keys}");
}

/// The same on memcached: the refunds are settled there, by CAS.
#[tokio::test(flavor = "multi_thread")]
async fn serve_on_memcached_counts_failed_logins_as_memory_does() {
    let memcached = MemcachedServer::start();
    let in_memory = failed_logins(&[]).await;
    let on_memcached = failed_logins(&["--store", &memcached.url()]).await;
    assert_eq!(on_memcached, in_memory);
}
