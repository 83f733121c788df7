//! `limits serve`: what is limited is what is served (normalized paths,
//! requests without a path) and slow or broken bodies cost bounded memory
//! and time; against a recording upstream that shows what it received.

use crate::common;

use common::server::Server;
use common::{client, raw_exchange, write};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn serve_path_spellings_meet_the_login_rule_and_the_upstream_sees_the_normalized_path() {
    // Regression: /%6cogin, //login, /./login, /x/../login and /login;x were
    // each served upstream as /login, and none met the 3-per-minute rule.
    let upstream = common::upstream::RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "rules.toml",
        "[[rule]]\nname = \"login\"\npath = \"/login\"\nrates = \"3/minute\"\n",
    );
    let server = Server::start(
        &[
            "--config",
            config.to_str().unwrap(),
            "--upstream",
            &upstream.url,
        ],
        false,
    );
    let mut answers = Vec::new();
    for spelling in ["/%6cogin", "//login", "/./login", "/x/../login", "/login;x"] {
        let request = format!("GET {spelling} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let answer = raw_exchange(&server.url, request.as_bytes()).await;
        answers.push(answer.lines().next().unwrap_or_default().to_string());
    }
    assert_eq!(
        answers,
        [
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 429 Too Many Requests",
            "HTTP/1.1 429 Too Many Requests",
        ]
    );
    assert_eq!(upstream.request_lines(), ["GET /login HTTP/1.1"; 3]);
    let answer = raw_exchange(
        &server.url,
        b"GET /api%2Fitems HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("application/problem+json"), "{answer}");
    assert_eq!(
        upstream.requests().len(),
        3,
        "a refused path never reaches the upstream"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_options_asterisk_is_limited_and_connect_is_refused_in_proxy_mode() {
    // Regression: `OPTIONS *` and `CONNECT host:port` matched no rule and
    // were forwarded unlimited, without headers.
    let upstream = common::upstream::RecordingUpstream::start();
    let server = Server::start(
        &[
            "--limit",
            "2",
            "--window",
            "1m",
            "--upstream",
            &upstream.url,
        ],
        false,
    );
    let options = b"OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    let first = raw_exchange(&server.url, options).await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    assert!(first.contains("ratelimit: \"default\";r=1;t=60"), "{first}");
    let connect = raw_exchange(
        &server.url,
        b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(connect.starts_with("HTTP/1.1 405"), "{connect}");
    let third = raw_exchange(&server.url, options).await;
    assert!(third.starts_with("HTTP/1.1 429"), "{third}");
    assert_eq!(upstream.request_lines(), ["OPTIONS * HTTP/1.1"]);
}

/// A login route keyed on a form field, in front of `upstream`.
fn form_keyed_config(dir: &std::path::Path) -> String {
    let config = write(
        dir,
        "rules.toml",
        "[[rule]]\nname = \"login\"\npath = \"/login\"\nkey = \"form:username\"\nrates = \"1000/minute\"\n",
    );
    config.to_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_trickled_bodies_on_32_connections_hold_memory_for_their_bytes_only() {
    // Regression: a body sent a byte at a time held about 4 KB per byte
    // received (24 connections: +1.3 GB), and a stalled body was never
    // timed out.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let upstream = common::upstream::RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let config = form_keyed_config(dir.path());
    let server = Server::start(
        &[
            "--config",
            &config,
            "--upstream",
            &upstream.url,
            "--body-timeout",
            "30s",
        ],
        false,
    );
    let before = server.rss_kib();
    const BODY: usize = 4000;
    let mut connections = Vec::new();
    for _ in 0..32 {
        let mut s = tokio::net::TcpStream::connect(server.url.trim_start_matches("http://"))
            .await
            .unwrap();
        s.set_nodelay(true).unwrap();
        let head = format!(
            "POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {BODY}\r\nConnection: close\r\n\r\nusername="
        );
        s.write_all(head.as_bytes()).await.unwrap();
        connections.push(s);
    }
    // One byte per connection per round, each its own TCP segment.
    let mut most_growth = 0u64;
    for round in 0..(BODY - "username=".len()) {
        for s in &mut connections {
            s.write_all(b"a").await.unwrap();
        }
        if round % 200 == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
            most_growth = most_growth.max(server.rss_kib().saturating_sub(before));
        }
    }
    for mut s in connections {
        let mut out = Vec::new();
        tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out))
            .await
            .unwrap()
            .unwrap();
        let answer = String::from_utf8_lossy(&out);
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
    eprintln!("RSS growth with 32 trickled bodies: {most_growth} KiB");
    assert!(most_growth < 4 * 1024, "RSS grew {most_growth} KiB");
    assert_eq!(upstream.requests().len(), 32);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_a_stalled_body_gets_408_after_the_body_timeout() {
    let upstream = common::upstream::RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let config = form_keyed_config(dir.path());
    let server = Server::start(
        &[
            "--config",
            &config,
            "--upstream",
            &upstream.url,
            "--body-timeout",
            "1s",
        ],
        false,
    );
    let started = Instant::now();
    let answer = raw_exchange(
        &server.url,
        b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nusername=al",
    )
    .await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(9),
        "{:?}",
        started.elapsed()
    );
    assert!(upstream.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_bodies_past_the_total_memory_cap_get_503_with_retry_after() {
    use tokio::io::AsyncWriteExt;
    let upstream = common::upstream::RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    let config = form_keyed_config(dir.path());
    let server = Server::start(
        &[
            "--config",
            &config,
            "--upstream",
            &upstream.url,
            "--max-body-memory",
            "8000",
        ],
        false,
    );
    // A first body holds most of the budget while it trickles in...
    let mut holder = tokio::net::TcpStream::connect(server.url.trim_start_matches("http://"))
        .await
        .unwrap();
    holder
        .write_all(b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 7000\r\n\r\n")
        .await
        .unwrap();
    holder.write_all(&[b'a'; 6000]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // ...so a second one cannot be buffered.
    let body = vec![b'b'; 5000];
    let mut request =
        b"POST /login HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 5000\r\n\r\n"
            .to_vec();
    request.extend_from_slice(&body);
    let answer = raw_exchange(&server.url, &request).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("retry-after: 1"), "{answer}");
    drop(holder);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_admin_listener_closes_half_sent_requests_after_the_header_timeout() {
    // Regression: 200 half-sent requests to --admin stayed open forever.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = Server::start(&["--header-timeout", "1s"], true);
    let admin = server.admin.clone().unwrap();
    let mut open = Vec::new();
    for _ in 0..200 {
        let mut s = tokio::net::TcpStream::connect(admin.trim_start_matches("http://"))
            .await
            .unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await
            .unwrap();
        open.push(s);
    }
    let mut closed = 0;
    for mut s in open {
        let mut out = Vec::new();
        // Closed by the header timeout (an end of stream), or over the admin
        // listener's connection caps at once (a reset, as the server closes
        // a socket holding bytes it never read): either way, not open.
        if tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
            .await
            .is_ok()
        {
            closed += 1;
        }
    }
    assert_eq!(
        closed, 200,
        "half-sent admin requests still open after 10 s"
    );
    let r = client()
        .get(format!("{admin}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_malformed_chunked_body_is_the_clients_400_not_a_502() {
    // Regression: LF-only chunks and overflowing chunk sizes got 502 and
    // counted as upstream errors.
    let upstream = common::upstream::RecordingUpstream::start();
    let server = Server::start(&["--limit", "100", "--upstream", &upstream.url], true);
    for body in [
        "5\nhello\n0\n\n",
        "ffffffffffffffffff\r\nhello\r\n0\r\n\r\n",
    ] {
        let request = format!(
            "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{body}"
        );
        let answer = raw_exchange(&server.url, request.as_bytes()).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{body:?}: {answer}");
    }
    let client_errors = server
        .metric(r#"limits_client_errors_total{kind="bad_request_body"}"#)
        .await;
    assert_eq!(client_errors, Some(2.0));
    let bad_gateway = server
        .metric(r#"limits_upstream_errors_total{kind="bad_gateway"}"#)
        .await;
    assert_eq!(bad_gateway, Some(0.0));
}
