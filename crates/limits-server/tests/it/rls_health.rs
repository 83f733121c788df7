//! `limits rls`'s gRPC health service: the overall status, the protocol's
//! own name, and `ratelimit`, the name envoyproxy/ratelimit serves, so that
//! a health check written for the reference finds it.

use crate::rls_common;

use rls_common::*;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

const CONFIG: &str = "
domain: edge
descriptors:
  - key: remote_address
    rate_limit: {unit: second, requests_per_unit: 10}
";

async fn status(
    health: &mut HealthClient<tonic::transport::Channel>,
    service: &str,
) -> Result<ServingStatus, tonic::Code> {
    health
        .check(HealthCheckRequest {
            service: service.into(),
        })
        .await
        .map(|r| r.into_inner().status())
        .map_err(|e| e.code())
}

#[tokio::test]
async fn health_under_the_reference_name_ratelimit_is_serving() {
    let rls = Rls::start(CONFIG).await;
    let channel = tonic::transport::Channel::from_shared(format!("http://{}", rls.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = HealthClient::new(channel);
    for service in [
        "",
        "ratelimit",
        "envoy.service.ratelimit.v3.RateLimitService",
    ] {
        assert_eq!(
            status(&mut health, service).await,
            Ok(ServingStatus::Serving),
            "{service:?}"
        );
    }
    assert_eq!(
        status(&mut health, "no.such.Service").await,
        Err(tonic::Code::NotFound)
    );
}
