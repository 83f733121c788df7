//! `limits serve --upstream` reads a request as the upstream will, or
//! refuses it before the upstream sees it (issue 22, points 1 to 8),
//! against a recording upstream that shows what it received.

use crate::common;

use common::server::Server;
use common::{raw_exchange, write};

const RULES: &str = r#"
[[rule]]
name = "login"
path = "/login"
case_insensitive = true
format_suffixes = true
methods = ["POST"]
key = "form:username"
rates = "3/minute"

[[rule]]
name = "api"
path = "/api"
key = "query:api_key"
rates = "100/minute"

[[rule]]
name = "items"
path = "/items"
methods = ["GET"]
rates = "2/minute"
"#;

fn start(upstream: &common::upstream::RecordingUpstream) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = write(dir.path(), "rules.toml", RULES);
    let server = Server::start(
        &[
            "--config",
            config.to_str().unwrap(),
            "--upstream",
            &upstream.url,
        ],
        false,
    );
    (server, dir)
}

/// The status line of `head` (request line and header lines, without the
/// blank line) sent with `body`, on a connection of its own.
async fn status(server: &Server, head: &str, body: &[u8]) -> String {
    let answer = exchange(server, head, body).await;
    answer.lines().next().unwrap_or_default().to_string()
}

/// The whole answer to `head` and `body`.
async fn exchange(server: &Server, head: &str, body: &[u8]) -> String {
    let mut request = format!(
        "{head}\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    raw_exchange(&server.url, &request).await
}

fn utf16le(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

const FORM: &str = "Content-Type: application/x-www-form-urlencoded";

#[tokio::test(flavor = "multi_thread")]
async fn serve_requests_upstreams_read_differently_are_refused_before_the_upstream() {
    // Regressions: each of these reached the upstream as a login of alice
    // (or an API call under REAL) while the limiter counted something else.
    let upstream = common::upstream::RecordingUpstream::start();
    let (server, _dir) = start(&upstream);
    for n in 0..10 {
        let mut body = b"username=alice&x".to_vec();
        body.extend(utf16le(&format!("&username=rnd{n}")));
        let head = format!("POST /login HTTP/1.1\r\n{FORM}; charset=utf-16le");
        assert_eq!(
            status(&server, &head, &body).await,
            "HTTP/1.1 415 Unsupported Media Type"
        );
        let rnd = format!("GET /api?api_key=rnd{n}&api.key=REAL HTTP/1.1");
        assert_eq!(status(&server, &rnd, b"").await, "HTTP/1.1 400 Bad Request");
    }
    let refused: [(&str, &[u8], &str); 5] = [
        (
            "POST /x\\..\\login HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded",
            b"username=alice",
            "backslash",
        ),
        (
            "post /login HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded",
            b"username=alice",
            "another case",
        ),
        (
            "POST /login HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Type: application/json",
            b"username=alice",
            "more than one Content-Type",
        ),
        (
            "POST /login HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded",
            b"username=al%E2%80%8Bice",
            "U+200B",
        ),
        (
            "GET /api?api_key=rnd;api_key=REAL HTTP/1.1",
            b"",
            "has a ';'",
        ),
    ];
    for (head, body, says) in refused {
        let answer = exchange(&server, head, body).await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{head}: {answer}");
        assert!(answer.contains(says), "{head}: {answer}");
    }
    assert_eq!(
        upstream.requests(),
        Vec::<String>::new(),
        "the upstream saw none of them"
    );

    // Every spelling of alice the upstream reads as alice, on every route
    // it serves alice's login from: three attempts, then 429.
    let mut lines = Vec::new();
    for (path, name) in [
        ("/login", "alice"),
        ("/LOGIN", "alice%1F"),
        ("/login.json", "%EF%BB%BFalice"),
        ("/Login.xml", "ALICE"),
        ("/login", "alice%C2%A0"),
    ] {
        let head = format!("POST {path} HTTP/1.1\r\n{FORM}");
        let body = format!("username={name}&password=guess");
        lines.push(status(&server, &head, body.as_bytes()).await);
    }
    assert_eq!(
        lines,
        [
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 429 Too Many Requests",
            "HTTP/1.1 429 Too Many Requests",
        ]
    );
    assert_eq!(
        upstream.request_lines(),
        [
            "POST /login HTTP/1.1",
            "POST /LOGIN HTTP/1.1",
            "POST /login.json HTTP/1.1"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_head_counts_under_a_get_rule() {
    // Regression: HEAD skipped a methods = ["GET"] rule (7 of 7 passed),
    // though most frameworks run the GET handler for it.
    let upstream = common::upstream::RecordingUpstream::start();
    let (server, _dir) = start(&upstream);
    let mut lines = Vec::new();
    for method in ["GET", "HEAD", "HEAD", "GET"] {
        lines.push(status(&server, &format!("{method} /items HTTP/1.1"), b"").await);
    }
    assert_eq!(
        lines,
        [
            "HTTP/1.1 200 OK",
            "HTTP/1.1 200 OK",
            "HTTP/1.1 429 Too Many Requests",
            "HTTP/1.1 429 Too Many Requests",
        ]
    );
    assert_eq!(
        upstream.request_lines(),
        ["GET /items HTTP/1.1", "HEAD /items HTTP/1.1"]
    );
}
