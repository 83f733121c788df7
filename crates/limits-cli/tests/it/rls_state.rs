//! `limits rls --state FILE`: the in-memory counts written on SIGTERM and
//! read back on start, so that a restart hands no client a fresh limit; a
//! limit whose rule changed starts afresh; a state file that could not be
//! written is refused at start, not found out at shutdown. Checked on the
//! real process through a real gRPC client.

use crate::common;

use common::server::Server;
use limits_server::rls::proto::rate_limit_descriptor::Entry;
use limits_server::rls::proto::rate_limit_response::Code;
use limits_server::rls::proto::rate_limit_service_client::RateLimitServiceClient;
use limits_server::rls::proto::{RateLimitDescriptor, RateLimitRequest};
use std::path::Path;

/// Sliding windows of an hour, so that no window boundary passes between
/// the calls of a test: `ip` 3 per hour, `user` 2 per hour.
const EDGE: &str = "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {algorithm: sliding-log, window: 1h, requests_per_window: 3}\n  - key: user\n    rate_limit: {algorithm: sliding-log, window: 1h, requests_per_window: 2}\n";
/// EDGE with `user` raised to 4 per hour (`ip` unchanged).
const EDGE_USER_CHANGED: &str = "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {algorithm: sliding-log, window: 1h, requests_per_window: 3}\n  - key: user\n    rate_limit: {algorithm: sliding-log, window: 1h, requests_per_window: 4}\n";

/// `limits rls --config CONFIG --state STATE` (no watch: the tests change
/// the config only between runs), and a client connected to it.
async fn start(
    config: &Path,
    state: &Path,
) -> (Server, RateLimitServiceClient<tonic::transport::Channel>) {
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--watch-interval",
        "0",
    ];
    let server = Server::start_command("rls", &args, false);
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", server.url))
        .unwrap()
        .connect()
        .await
        .unwrap();
    (server, RateLimitServiceClient::new(channel))
}

/// One hit on `edge`'s `key: value`: the overall code and the descriptor's
/// `limit_remaining`.
async fn hit(
    client: &mut RateLimitServiceClient<tonic::transport::Channel>,
    key: &str,
    value: &str,
) -> (Code, u32) {
    let request = RateLimitRequest {
        domain: "edge".into(),
        descriptors: vec![RateLimitDescriptor {
            entries: vec![Entry {
                key: key.into(),
                value: value.into(),
            }],
            ..RateLimitDescriptor::default()
        }],
        hits_addend: 0,
    };
    let response = client
        .should_rate_limit(request)
        .await
        .unwrap()
        .into_inner();
    let code = Code::try_from(response.overall_code).unwrap();
    (code, response.statuses[0].limit_remaining)
}

/// SIGTERM, and the exit code once it has exited.
fn stop(server: Server) -> i32 {
    server.signal("TERM");
    server.wait()
}

#[tokio::test(flavor = "multi_thread")]
async fn counts_survive_a_restart_and_run_out_at_exactly_the_same_call() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write(dir.path(), "edge.yaml", EDGE);
    let state = dir.path().join("state.json");

    let (server, mut client) = start(&config, &state).await;
    // Two of the 3 calls of 192.0.2.1; all 3 of 192.0.2.2, and it is over.
    assert_eq!(hit(&mut client, "ip", "192.0.2.1").await, (Code::Ok, 2));
    assert_eq!(hit(&mut client, "ip", "192.0.2.1").await, (Code::Ok, 1));
    for remaining in [2, 1, 0] {
        assert_eq!(
            hit(&mut client, "ip", "192.0.2.2").await,
            (Code::Ok, remaining)
        );
    }
    assert_eq!(hit(&mut client, "ip", "192.0.2.2").await.0, Code::OverLimit);
    drop(client);
    assert_eq!(stop(server), 0, "a graceful stop saving the state");
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(
        saved.contains("\"edge.ip\""),
        "saved under the limit id: {saved}"
    );

    let (server, mut client) = start(&config, &state).await;
    assert_eq!(
        hit(&mut client, "ip", "192.0.2.1").await,
        (Code::Ok, 0),
        "the third call is the last one, as before the restart"
    );
    assert_eq!(hit(&mut client, "ip", "192.0.2.1").await.0, Code::OverLimit);
    assert_eq!(
        hit(&mut client, "ip", "192.0.2.2").await.0,
        Code::OverLimit,
        "a client over its limit stays over across the restart"
    );
    assert_eq!(
        hit(&mut client, "ip", "192.0.2.3").await,
        (Code::Ok, 2),
        "a client never seen starts with the whole limit"
    );
    drop(client);
    assert_eq!(stop(server), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_limit_whose_rule_changed_starts_afresh_and_the_others_keep_their_counts() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write(dir.path(), "edge.yaml", EDGE);
    let state = dir.path().join("state.json");

    let (server, mut client) = start(&config, &state).await;
    assert_eq!(hit(&mut client, "ip", "a").await, (Code::Ok, 2));
    assert_eq!(hit(&mut client, "user", "alice").await, (Code::Ok, 1));
    assert_eq!(hit(&mut client, "user", "alice").await, (Code::Ok, 0));
    assert_eq!(hit(&mut client, "user", "alice").await.0, Code::OverLimit);
    drop(client);
    assert_eq!(stop(server), 0);

    std::fs::write(&config, EDGE_USER_CHANGED).unwrap();
    let (server, mut client) = start(&config, &state).await;
    // `user` is now 4 per hour: its old calls (2 of 2) are not loaded into
    // it, else alice would have 2 left, not 3.
    assert_eq!(hit(&mut client, "user", "alice").await, (Code::Ok, 3));
    // `ip` did not change: its one call is still counted.
    assert_eq!(hit(&mut client, "ip", "a").await, (Code::Ok, 1));
    drop(client);
    assert_eq!(stop(server), 0);
}

#[test]
fn a_state_file_that_cannot_be_written_is_refused_at_start_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write(dir.path(), "edge.yaml", EDGE);
    let file = common::write(dir.path(), "file", "not a directory");
    let garbage = common::write(dir.path(), "garbage.json", "{ not json");
    let cases = [
        (
            dir.path().join("missing").join("state.json"),
            "No such file or directory",
        ),
        // Tests run as root, where permissions stop nothing: a regular file
        // as "directory" cannot take a new file for anyone.
        (file.join("state.json"), "not a directory"),
        (dir.path().to_path_buf(), "is a directory, not a file"),
        (garbage, "not a state file"),
    ];
    for (path, reason) in cases {
        let path = path.to_str().unwrap();
        let args = ["--config", config.to_str().unwrap(), "--state", path];
        let (out, code) = common::output_until_listening("rls", &args);
        assert!(
            code.is_some_and(|c| c != 0),
            "--state {path} started: {out}"
        );
        assert!(out.contains(&format!("--state {path}")), "{out}");
        assert!(out.contains(reason), "{reason:?} not said: {out}");
        assert!(!out.contains("panicked"), "{out}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_state_that_cannot_be_saved_at_shutdown_exits_non_zero_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write(dir.path(), "edge.yaml", EDGE);
    let states = dir.path().join("states");
    std::fs::create_dir(&states).unwrap();
    let (server, mut client) = start(&config, &states.join("state.json")).await;
    assert_eq!(hit(&mut client, "ip", "a").await, (Code::Ok, 2));
    drop(client);
    // Writable at start, gone by the time of the stop.
    std::fs::remove_dir(&states).unwrap();
    server.signal("TERM");
    // "stopped" is on stdout, the error on stderr: either may come first.
    let lines = server.wait_for_lines(&["limits rls: stopped", "state not saved"]);
    assert!(lines[1].contains("state.json"), "{}", lines[1]);
    assert_ne!(server.wait(), 0, "a lost state is not a clean exit");
}
