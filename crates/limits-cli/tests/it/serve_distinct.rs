//! `limits serve` with `distinct = {...}`: credential stuffing against a
//! real proxy and upstream. One address may try two usernames an hour,
//! each as often as it likes; a third is refused before it reaches the
//! upstream, with a 429 that says a new value was refused; with Redis or
//! memcached, whichever instance it reaches.

use crate::common;
use crate::memcached_server::MemcachedServer;
use crate::redis_server;

use common::client;
use common::server::Server;
use common::upstream::RecordingUpstream;
use redis_server::RedisServer;

#[tokio::test(flavor = "multi_thread")]
async fn a_third_username_from_one_address_never_reaches_the_upstream() {
    let upstream = RecordingUpstream::start();
    let rules = "[[rule]]\nname = \"logins\"\npath = \"/login\"\nmethods = [\"POST\"]\n\
                 distinct = { of = \"form:username\", at_most = 2, window = \"1h\" }\n";
    let (server, _dir) = Server::with_rules(rules, &upstream.url, &[]);
    let http = client();
    let login = |username: &str, password: &str| {
        let body = format!("username={username}&password={password}");
        http.post(format!("{}/login", server.url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    for (username, password) in [("alice", "1"), ("bob", "1"), ("alice", "2"), ("Alice", "3")] {
        let r = login(username, password).await.unwrap();
        assert_ne!(r.status(), 429, "{username} {password}");
    }
    let refused = login("carol", "1").await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(common::header(&refused, "retry-after"), "3600");
    let body: serde_json::Value = refused.json().await.unwrap();
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("at most 2 distinct values in 1h, and this one is new"),
        "{detail}"
    );
    let repeat = login("bob", "2").await.unwrap();
    assert_ne!(repeat.status(), 429, "a repeat is free");
    let forwarded = upstream.requests();
    assert_eq!(forwarded.len(), 5, "every request but carol's");
    assert!(forwarded.iter().all(|r| !r.contains("username=carol")));
    let missing = http
        .post(format!("{}/login", server.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("password=1")
        .send()
        .await
        .unwrap();
    assert_eq!(
        missing.status(),
        400,
        "no username: not counted, not forwarded"
    );
    assert_eq!(upstream.requests().len(), 5);
}

#[tokio::test(flavor = "multi_thread")]
async fn instances_on_one_redis_share_the_usernames_an_address_tried() {
    let redis = RedisServer::start();
    instances_share_the_usernames_an_address_tried(&redis.url()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn instances_on_one_memcached_share_the_usernames_an_address_tried() {
    let memcached = MemcachedServer::start();
    instances_share_the_usernames_an_address_tried(&memcached.url()).await;
}

/// Two instances on the store at `url`: three usernames from one address
/// pass on either, a fourth is refused on both.
async fn instances_share_the_usernames_an_address_tried(url: &str) {
    let upstream = RecordingUpstream::start();
    let rules = "[[rule]]\nname = \"logins\"\npath = \"/login\"\n\
                 distinct = { of = \"form:username\", at_most = 3, window = \"1h\" }\n";
    let args = ["--store", url];
    let (a, _dir_a) = Server::with_rules(rules, &upstream.url, &args);
    let (b, _dir_b) = Server::with_rules(rules, &upstream.url, &args);
    let http = client();
    let login = |url: &str, username: &str| {
        http.post(format!("{url}/login"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("username={username}&password=x"))
            .send()
    };
    let tries = [
        (&a, "alice"),
        (&b, "bob"),
        (&a, "bob"),
        (&b, "carol"),
        (&a, "alice"),
    ];
    for (server, username) in tries {
        let status = login(&server.url, username).await.unwrap().status();
        assert_ne!(status, 429, "{username}");
    }
    for server in [&a, &b] {
        let status = login(&server.url, "dave").await.unwrap().status();
        assert_eq!(status, 429, "a fourth name, on either instance");
    }
}
