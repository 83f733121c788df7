//! `count = { status = [...] }` (issue 27, part 1): a login rule of `limits
//! serve --upstream` limits failed logins only. Every request is counted on
//! arrival; one whose response is not of a counted status is refunded when
//! its head arrives, through the body-keyed path (the rule keyed on the
//! form's username) and the path decided in the service's call (keyed on
//! the address), against an upstream answering 401 to a wrong password; in
//! memory, and on memcached.

use crate::common;
use crate::memcached_server::MemcachedServer;

use common::server::Server;
use common::{raw_exchange, write};

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

#[tokio::test(flavor = "multi_thread")]
async fn serve_limits_failed_logins_and_not_successful_ones() {
    limits_failed_logins_only(&[]).await;
}

/// The same on memcached: the refunds are settled there, by CAS.
#[tokio::test(flavor = "multi_thread")]
async fn serve_on_memcached_limits_failed_logins_and_not_successful_ones() {
    let memcached = MemcachedServer::start();
    limits_failed_logins_only(&["--store", &memcached.url()]).await;
}

/// The rules above, in `limits serve` with `store` (its `--store`, if any).
async fn limits_failed_logins_only(store: &[&str]) {
    let upstream = common::upstream::RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "rules.toml", RULES);
    let mut args = vec![
        "--config",
        config.to_str().unwrap(),
        "--upstream",
        &upstream.url,
    ];
    args.extend_from_slice(store);
    let server = Server::start(&args, false);
    // Ten successful logins: none counts, on either rule.
    for n in 0..10 {
        assert_eq!(
            login(&server, "alice", "right").await,
            "HTTP/1.1 200 OK",
            "#{n}"
        );
    }
    // Three failed ones pass (and count)...
    for n in 0..3 {
        assert_eq!(
            login(&server, "alice", "wrong").await,
            "HTTP/1.1 401 Unauthorized",
            "#{n}"
        );
    }
    // ...the fourth is refused before the upstream, even with the right
    // password: the account has used its failures.
    assert_eq!(
        login(&server, "alice", "right").await,
        "HTTP/1.1 429 Too Many Requests"
    );
    // Another account from the same address: its own three failures, but
    // the address has failed five times after two more.
    for n in 0..2 {
        assert_eq!(
            login(&server, "bob", "wrong").await,
            "HTTP/1.1 401 Unauthorized",
            "#{n}"
        );
    }
    assert_eq!(
        login(&server, "carol", "right").await,
        "HTTP/1.1 429 Too Many Requests",
        "five failures from one address"
    );
    // The upstream saw 10 + 3 + 2 logins, not the refused ones.
    assert_eq!(upstream.request_lines().len(), 15);
}
