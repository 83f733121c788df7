//! `limits serve`'s connection caps and file limit as a deployment meets
//! them: a process started with a file limit of 128 under 200 idle sockets
//! (which once shut out its main and admin listeners until the header
//! timeout), the soft limit raised at start, and a cap that cannot fit the
//! limit refused at start.

use crate::common;

use common::server::Server;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const HANG: Duration = Duration::from_secs(30);

fn addr(url: &str) -> SocketAddr {
    url.trim_start_matches("http://").parse().unwrap()
}

async fn connect_from(source: &str, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket
        .bind(SocketAddr::new(source.parse().unwrap(), 0))
        .unwrap();
    socket.connect(to).await.unwrap()
}

/// A request on a fresh connection from `source`: the status line, or None
/// when the server closed the connection without answering.
async fn request_from(source: &str, to: SocketAddr) -> Option<String> {
    let mut s = connect_from(source, to).await;
    let _ = s
        .write_all(b"GET /api/items HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .await;
    let mut got = Vec::new();
    let read = tokio::time::timeout(HANG, s.read_to_end(&mut got))
        .await
        .expect("an answer or a close, not silence");
    if read.is_err() && got.is_empty() {
        return None;
    }
    let text = String::from_utf8_lossy(&got);
    text.lines().next().map(str::to_string)
}

/// GET `url` within `HANG`, or fail saying what did not answer.
async fn get(url: &str) -> reqwest::Response {
    tokio::time::timeout(HANG, common::client().get(url).send())
        .await
        .unwrap_or_else(|_| panic!("{url}: no answer within {HANG:?}"))
        .unwrap()
}

fn sample(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// Waits until the scrape satisfies `done`; the scrape.
async fn scrape_until(admin: &str, done: impl Fn(&str) -> bool) -> String {
    let url = format!("{admin}/metrics");
    let deadline = tokio::time::Instant::now() + HANG;
    loop {
        let text = get(&url).await.text().await.unwrap();
        if done(&text) {
            return text;
        }
        assert!(tokio::time::Instant::now() < deadline, "never so: {text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const OPEN: &str = r#"limits_connections_open{listener="main"}"#;
const OVER_TOTAL: &str = r#"limits_connections_refused_total{listener="main",reason="total"}"#;
const OVER_CLIENT: &str =
    r#"limits_connections_refused_total{listener="main",reason="per_client"}"#;

#[tokio::test(flavor = "multi_thread")]
async fn serve_with_a_file_limit_of_128_keeps_its_admin_listener_under_200_idle_sockets() {
    let server = Server::start_with_ulimit(
        "-n 128",
        "serve",
        &["--limiter", "token-bucket", "--limit", "100000"],
        true,
    );
    let admin = server.admin.clone().unwrap();
    let main = addr(&server.url);
    // 200 sockets that never send a byte, 25 from each of 8 addresses.
    let mut idle = Vec::new();
    for i in 0..200 {
        idle.push(connect_from(&format!("127.0.0.{}", 2 + i % 8), main).await);
    }
    // 128 descriptors: 64 kept for the process, 16 for the admin listener,
    // 48 for the demo's connections (12 per address by default).
    let text = scrape_until(&admin, |t| {
        sample(t, OVER_TOTAL) + sample(t, OVER_CLIENT) == 152.0
    })
    .await;
    assert_eq!(sample(&text, OPEN), 48.0, "{text}");
    // Taken in turn, 6 from each address: the total is what refused them.
    assert_eq!(sample(&text, OVER_TOTAL), 152.0, "{text}");
    assert_eq!(get(&format!("{admin}/healthz")).await.status(), 200);
    // A newcomer on the full main listener is closed at once, not left hanging.
    assert_eq!(request_from("127.0.0.10", main).await, None);

    drop(idle);
    scrape_until(&admin, |t| sample(t, OPEN) == 0.0).await;
    assert_eq!(
        request_from("127.0.0.10", main).await.as_deref(),
        Some("HTTP/1.1 200 OK")
    );
}

/// The soft and hard "Max open files" of process `pid` (Linux).
fn open_files_limits(pid: u32) -> (String, String) {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    let mut fields = line["Max open files".len()..].split_whitespace();
    (
        fields.next().unwrap().to_string(),
        fields.next().unwrap().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_raises_its_soft_file_limit_to_the_hard_limit() {
    let server = Server::start_with_ulimit("-Sn 100", "serve", &[], false);
    let (soft, hard) = open_files_limits(server.pid());
    let expected = if hard == "unlimited" {
        std::fs::read_to_string("/proc/sys/fs/nr_open")
            .unwrap()
            .trim()
            .to_string()
    } else {
        hard.clone()
    };
    assert_ne!(expected, "100", "the test needs a hard limit above 100");
    assert_eq!(soft, expected, "soft {soft}, hard {hard}");
}

#[test]
fn serve_refuses_max_connections_beyond_its_file_limit() {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 128 && exec \"$0\" serve --max-connections 1000 --listen 127.0.0.1:0")
        .arg(env!("CARGO_BIN_EXE_limits"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("--max-connections 1000: the file limit (128 descriptors")
            && stderr.contains("room for 48 connections"),
        "{stderr}"
    );
    let (_, stderr, code) = common::limits(&["serve", "--max-connections-per-client", "0"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--max-connections-per-client"), "{stderr}");
}
