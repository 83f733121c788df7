//! `limits rls --store redis://...` through a Redis outage: the outage is
//! logged once and its end once, with the calls answered during it, not a
//! warning per call.

use crate::common;
use crate::redis_server;

use common::server::Server;
use limits_server::rls::proto::rate_limit_descriptor::Entry;
use limits_server::rls::proto::rate_limit_response::Code;
use limits_server::rls::proto::rate_limit_service_client::RateLimitServiceClient;
use limits_server::rls::proto::{RateLimitDescriptor, RateLimitRequest};
use redis_server::RedisServer;
use std::time::{Duration, Instant};

fn request(user: &str) -> RateLimitRequest {
    // Two descriptors on one store: a call is counted once, however many
    // of its descriptors failed.
    let descriptor = |key: &str| RateLimitDescriptor {
        entries: vec![Entry {
            key: key.into(),
            value: user.into(),
        }],
        ..RateLimitDescriptor::default()
    };
    RateLimitRequest {
        domain: "shop".into(),
        descriptors: vec![descriptor("user"), descriptor("cart")],
        hits_addend: 0,
    }
}

#[tokio::test]
async fn rls_logs_a_redis_outage_once_and_its_end_once_with_the_calls_answered() {
    let mut redis = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    common::write(
        dir.path(),
        "shop.yaml",
        "domain: shop\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 100}\n  - key: cart\n    rate_limit: {unit: hour, requests_per_unit: 100}\n",
    );
    let rls = Server::start_command(
        "rls",
        &[
            "--config",
            dir.path().to_str().unwrap(),
            "--store",
            &redis.url(),
            "--on-store-error",
            "allow",
        ],
        false,
    );
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", rls.url))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let client = RateLimitServiceClient::new(channel);
    let call = |user: &'static str| {
        let mut client = client.clone();
        async move {
            client
                .should_rate_limit(request(user))
                .await
                .unwrap()
                .into_inner()
        }
    };
    assert_eq!(call("ann").await.overall_code, Code::Ok as i32);

    redis.stop();
    const CALLS: usize = 25;
    for _ in 0..CALLS {
        let answer = call("ann").await;
        assert_eq!(answer.overall_code, Code::Ok as i32, "allow");
        assert!(answer.statuses[0].current_limit.is_none(), "{answer:?}");
    }
    redis.restart();
    // Decided by Redis again once its probe has seen it back; the calls
    // made meanwhile were answered by the policy too, and are counted.
    let mut waiting = 0;
    let back = Instant::now();
    while call("bob").await.statuses[0].current_limit.is_none() {
        waiting += 1;
        assert!(
            back.elapsed() < Duration::from_secs(5),
            "Redis not used again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut lines = Vec::new();
    while !lines
        .iter()
        .any(|l: &String| l.contains("no longer unreachable"))
    {
        assert!(
            back.elapsed() < Duration::from_secs(10),
            "no end logged: {lines:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        lines.extend(rls.lines_so_far());
    }
    let began: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("answering calls per"))
        .collect();
    assert_eq!(began.len(), 1, "one line for the outage: {lines:#?}");
    assert!(
        began[0].contains("--on-store-error (allow)"),
        "{}",
        began[0]
    );
    let ended: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("no longer unreachable"))
        .collect();
    assert_eq!(ended.len(), 1, "{lines:#?}");
    let calls = format!("calls={}", CALLS + waiting);
    assert!(ended[0].contains(&calls), "{calls}: {}", ended[0]);
    assert!(
        lines.len() <= 6,
        "a few lines for the outage (ours and the Redis store's), none per call: {lines:#?}"
    );
}
