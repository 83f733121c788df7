//! `limits rls` as a process: a bad config stops it with FILE:LINE; a good
//! one serves gRPC, reloads on SIGHUP and stops cleanly on SIGTERM.

use crate::common;

use common::server::Server;
use limits_server::rls::proto::rate_limit_descriptor::Entry;
use limits_server::rls::proto::rate_limit_response::Code;
use limits_server::rls::proto::rate_limit_service_client::RateLimitServiceClient;
use limits_server::rls::proto::{RateLimitDescriptor, RateLimitRequest};

#[test]
fn a_bad_config_stops_rls_with_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = common::write(
        dir.path(),
        "bad.yaml",
        "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 5\n",
    );
    let (_, stderr, code) = common::limits(&[
        "rls",
        "--config",
        path.to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_ne!(code, 0);
    assert!(stderr.contains("bad.yaml:5:"), "{stderr}");
    assert!(stderr.contains("fortnight"), "{stderr}");
    let (_, stderr, code) = common::limits(&["rls", "--config", "/nonexistent/x.yaml"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("/nonexistent/x.yaml"), "{stderr}");
}

pub(crate) async fn code(client: &mut RateLimitServiceClient<tonic::transport::Channel>) -> i32 {
    let request = RateLimitRequest {
        domain: "edge".into(),
        descriptors: vec![RateLimitDescriptor {
            entries: vec![Entry {
                key: "ip".into(),
                value: "192.0.2.1".into(),
            }],
            ..RateLimitDescriptor::default()
        }],
        hits_addend: 0,
    };
    client
        .should_rate_limit(request)
        .await
        .unwrap()
        .into_inner()
        .overall_code
}

#[tokio::test]
async fn rls_serves_reloads_on_sighup_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: day, requests_per_unit: 2}\n";
    let path = common::write(dir.path(), "edge.yaml", yaml);
    let rls = Server::start_command("rls", &["--config", dir.path().to_str().unwrap()], true);
    assert!(rls.admin.is_some(), "the admin listener is announced");
    assert!(rls.listening.ends_with("(1 limits)"), "{}", rls.listening);
    let addr = rls.url.clone();
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = RateLimitServiceClient::new(channel);
    assert_eq!(code(&mut client).await, Code::Ok as i32);
    std::fs::write(&path, yaml.replace("requests_per_unit: 2", "requests_per_unit: 2}\n  - key: other\n    rate_limit: {unit: day, requests_per_unit: 1")).unwrap();
    rls.signal("HUP");
    let reloaded = rls.wait_for_line("limits rls: config reloaded");
    assert!(
        reloaded.contains("(2 limits, 1 kept their state)"),
        "{reloaded}"
    );
    // The kept limit kept its count: one of two left.
    assert_eq!(code(&mut client).await, Code::Ok as i32);
    assert_eq!(code(&mut client).await, Code::OverLimit as i32);
    rls.signal("TERM");
    rls.wait_for_line("limits rls: stopped");
    assert_eq!(rls.wait(), 0);
}
