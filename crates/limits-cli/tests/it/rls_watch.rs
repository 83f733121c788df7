//! `limits rls` reloads its config directory on change, without SIGHUP: an
//! edited file, a new domain's file, a Kubernetes ConfigMap's symlink swap;
//! a broken edit keeps the old limits and is reported once; counts of
//! unchanged limits survive. Checked through a real gRPC client against the
//! real process.

use crate::common;

use limits_server::rls::proto::rate_limit_descriptor::Entry;
use limits_server::rls::proto::rate_limit_response::Code;
use limits_server::rls::proto::rate_limit_service_client::RateLimitServiceClient;
use limits_server::rls::proto::{RateLimitDescriptor, RateLimitRequest};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

const EDGE: &str =
    "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: day, requests_per_unit: 2}\n";
/// EDGE plus a second limit (`ip` unchanged).
const EDGE_TWO: &str = "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: day, requests_per_unit: 2}\n  - key: user\n    rate_limit: {unit: day, requests_per_unit: 1}\n";
/// An unknown unit on line 5.
const EDGE_BAD: &str = "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 2\n";

/// A `limits rls` process with its stdout lines; killed on drop.
struct Rls {
    child: Child,
    lines: Receiver<String>,
    client: RateLimitServiceClient<tonic::transport::Channel>,
}

impl Rls {
    async fn start(config: &Path, watch_interval: &str) -> Rls {
        let mut child = Command::new(env!("CARGO_BIN_EXE_limits"))
            .args(["rls", "--config", config.to_str().unwrap()])
            .args([
                "--listen",
                "127.0.0.1:0",
                "--watch-interval",
                watch_interval,
            ])
            .env("RUST_LOG", "off")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, lines) = channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut rls = Rls {
            child,
            lines,
            client: RateLimitServiceClient::new(
                tonic::transport::Channel::from_static("http://127.0.0.1:1").connect_lazy(),
            ),
        };
        let listening = rls.line_with("limits rls: listening on ");
        let addr = listening
            .trim_start_matches("limits rls: listening on ")
            .split(' ')
            .next()
            .unwrap()
            .to_string();
        let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        rls.client = RateLimitServiceClient::new(channel);
        rls
    }

    /// The next stdout line containing `needle` (60 s at most).
    fn line_with(&self, needle: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("no line with {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// The lines printed so far and not yet read.
    fn pending_lines(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    /// The overall code for one hit on `domain`'s `key: value`.
    async fn code(&mut self, domain: &str, key: &str) -> Code {
        let request = RateLimitRequest {
            domain: domain.into(),
            descriptors: vec![RateLimitDescriptor {
                entries: vec![Entry {
                    key: key.into(),
                    value: "192.0.2.1".into(),
                }],
                ..RateLimitDescriptor::default()
            }],
            hits_addend: 0,
        };
        let code = self
            .client
            .should_rate_limit(request)
            .await
            .unwrap()
            .into_inner()
            .overall_code;
        Code::try_from(code).unwrap()
    }
}

impl Drop for Rls {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn an_edit_is_reloaded_and_an_unchanged_limit_keeps_its_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::write(dir.path(), "edge.yaml", EDGE);
    let mut rls = Rls::start(dir.path(), "100ms").await;
    assert_eq!(rls.code("edge", "ip").await, Code::Ok);
    assert_eq!(rls.code("edge", "user").await, Code::Ok, "no limit yet");
    std::fs::write(&path, EDGE_TWO).unwrap();
    let reloaded = rls.line_with("limits rls: config reloaded");
    assert!(
        reloaded.contains("(2 limits, 1 kept their state)"),
        "{reloaded}"
    );
    // `ip` kept its count (one of two left); `user` now has its limit of 1.
    assert_eq!(rls.code("edge", "ip").await, Code::Ok);
    assert_eq!(rls.code("edge", "ip").await, Code::OverLimit);
    assert_eq!(rls.code("edge", "user").await, Code::Ok);
    assert_eq!(rls.code("edge", "user").await, Code::OverLimit);
}

#[tokio::test]
async fn a_broken_edit_keeps_the_old_limits_and_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::write(dir.path(), "edge.yaml", EDGE);
    let mut rls = Rls::start(dir.path(), "50ms").await;
    assert_eq!(rls.code("edge", "ip").await, Code::Ok);
    std::fs::write(&path, EDGE_BAD).unwrap();
    let refused = rls.line_with("limits rls: config not reloaded");
    assert!(refused.contains("edge.yaml:5:"), "{refused}");
    assert!(refused.contains("fortnight"), "{refused}");
    // Twenty more polls of the same broken file: not reported again.
    std::thread::sleep(Duration::from_secs(1));
    let again: Vec<_> = rls
        .pending_lines()
        .into_iter()
        .filter(|l| l.contains("config"))
        .collect();
    assert!(again.is_empty(), "{again:?}");
    // The old limit still decides, with its count.
    assert_eq!(rls.code("edge", "ip").await, Code::Ok);
    assert_eq!(rls.code("edge", "ip").await, Code::OverLimit);
    // Fixed: reloaded, and the count survived the broken interlude.
    std::fs::write(&path, EDGE_TWO).unwrap();
    let reloaded = rls.line_with("limits rls: config reloaded");
    assert!(reloaded.contains("1 kept their state"), "{reloaded}");
    assert_eq!(rls.code("edge", "ip").await, Code::OverLimit);
    assert_eq!(rls.code("edge", "user").await, Code::Ok);
}

#[tokio::test]
async fn a_new_domain_file_in_the_directory_is_picked_up() {
    let dir = tempfile::tempdir().unwrap();
    common::write(dir.path(), "edge.yaml", EDGE);
    let sub = dir.path().join("teams");
    std::fs::create_dir(&sub).unwrap();
    let mut rls = Rls::start(dir.path(), "100ms").await;
    assert_eq!(rls.code("api", "ip").await, Code::Ok);
    assert_eq!(rls.code("api", "ip").await, Code::Ok, "no domain api yet");
    // In a subdirectory: the watch walks it as the loader does.
    common::write(&sub, "api.yaml", &EDGE.replace("edge", "api"));
    let reloaded = rls.line_with("limits rls: config reloaded");
    assert!(
        reloaded.contains("(2 limits, 1 kept their state)"),
        "{reloaded}"
    );
    assert_eq!(rls.code("api", "ip").await, Code::Ok);
    assert_eq!(rls.code("api", "ip").await, Code::Ok);
    assert_eq!(rls.code("api", "ip").await, Code::OverLimit);
    // A file the loader does not read (not YAML) changes nothing.
    common::write(dir.path(), "notes.txt", "not a config");
    common::write(dir.path(), ".hidden.yaml", "not: [valid");
    std::thread::sleep(Duration::from_millis(500));
    let seen: Vec<_> = rls
        .pending_lines()
        .into_iter()
        .filter(|l| l.contains("config"))
        .collect();
    assert!(seen.is_empty(), "{seen:?}");
}

#[cfg(unix)]
#[tokio::test]
async fn a_configmap_symlink_swap_is_seen() {
    use std::os::unix::fs::symlink;
    // The layout kubelet mounts: the files in a timestamped directory,
    // `..data` linking to it, and each name linking through `..data`.
    let dir = tempfile::tempdir().unwrap();
    let v1 = dir.path().join("..2026_11_30_01");
    std::fs::create_dir(&v1).unwrap();
    common::write(&v1, "edge.yaml", EDGE);
    symlink("..2026_11_30_01", dir.path().join("..data")).unwrap();
    symlink("..data/edge.yaml", dir.path().join("edge.yaml")).unwrap();
    let mut rls = Rls::start(dir.path(), "100ms").await;
    assert_eq!(rls.code("edge", "ip").await, Code::Ok);
    // A new revision of the same size; `..data` swapped by a rename.
    let v2 = dir.path().join("..2026_11_30_02");
    std::fs::create_dir(&v2).unwrap();
    let three = EDGE.replace("requests_per_unit: 2", "requests_per_unit: 3");
    assert_eq!(three.len(), EDGE.len());
    common::write(&v2, "edge.yaml", &three);
    symlink("..2026_11_30_02", dir.path().join("..data_tmp")).unwrap();
    std::fs::rename(dir.path().join("..data_tmp"), dir.path().join("..data")).unwrap();
    let reloaded = rls.line_with("limits rls: config reloaded");
    // A changed rate is a new limit: 3 from now on.
    assert!(
        reloaded.contains("(1 limits, 0 kept their state)"),
        "{reloaded}"
    );
    for _ in 0..3 {
        assert_eq!(rls.code("edge", "ip").await, Code::Ok);
    }
    assert_eq!(rls.code("edge", "ip").await, Code::OverLimit);
}

#[tokio::test]
async fn watch_interval_zero_reloads_on_sighup_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::write(dir.path(), "edge.yaml", EDGE);
    let mut rls = Rls::start(&path, "0").await;
    std::fs::write(&path, EDGE_TWO).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    for _ in 0..3 {
        assert_eq!(rls.code("edge", "user").await, Code::Ok, "not reloaded");
    }
    let status = Command::new("kill")
        .args(["-HUP", &rls.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    rls.line_with("limits rls: config reloaded (2 limits");
    assert_eq!(rls.code("edge", "user").await, Code::Ok);
    assert_eq!(rls.code("edge", "user").await, Code::OverLimit);
}
