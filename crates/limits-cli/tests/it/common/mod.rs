//! Running the real `limits` binary from tests.

#![allow(dead_code)]

pub mod browser;
pub mod docs;
pub mod envoy;
pub mod replay;
pub mod server;
pub mod upstream;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `limits ARGS`; returns (stdout, stderr, exit code).
pub fn limits(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_limits"))
        .args(args)
        .output()
        .expect("run limits");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// Writes `text` to `dir/name`; returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A plain HTTP client (no proxy from the environment).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// The value of header `name`, or "" when absent.
pub fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers()
        .get(name)
        .map_or(String::new(), |v| v.to_str().unwrap().to_string())
}

/// Sends `bytes` on a fresh connection to `server` and returns what came
/// back before the server closed it (or 10 s passed).
pub async fn raw_exchange(url: &str, bytes: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(url.trim_start_matches("http://"))
        .await
        .unwrap();
    s.write_all(bytes).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(10), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs `limits COMMAND ARGS --listen 127.0.0.1:0` until it exits or listens:
/// its stdout and stderr so far, and its exit code if it exited. A server
/// that listens is stopped.
pub fn output_until_listening(command: &str, args: &[&str]) -> (String, Option<i32>) {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("output.log");
    let append = || {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap()
    };
    let mut child = Command::new(env!("CARGO_BIN_EXE_limits"))
        .arg(command)
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stdout(append())
        .stderr(append())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let exited = child.try_wait().unwrap().map(|s| s.code().unwrap_or(-1));
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if exited.is_some() || text.contains(&format!("limits {command}: listening on")) {
            let _ = child.kill();
            let _ = child.wait();
            return (text, exited);
        }
        assert!(
            Instant::now() < deadline,
            "neither listening nor exited: {text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The statuses of GET `url/` sent from the local address `from`, one
/// request per `X-Forwarded-For` value in `forwarded_for`.
pub async fn statuses_from(url: &str, from: std::net::IpAddr, forwarded_for: &[&str]) -> Vec<u16> {
    let http = reqwest::Client::builder()
        .no_proxy()
        .local_address(from)
        .build()
        .unwrap();
    let mut out = Vec::new();
    for value in forwarded_for {
        let r = http
            .get(format!("{url}/"))
            .header("x-forwarded-for", *value)
            .send()
            .await
            .unwrap();
        out.push(r.status().as_u16());
    }
    out
}
