//! What a real Envoy tells its clients about a limit whose window is no
//! unit of the protocol (`window: 5m`, reported with the unit UNKNOWN),
//! beside one whose window is a whole unit (`window: 60m`, an HOUR).

use crate::common;

use common::envoy::{self, Envoy};
use common::server::Server;
use common::upstream::RecordingUpstream;
use common::{client, header};

const WINDOWS: &str = "\
domain: edge
algorithm: sliding-log
descriptors:
  - key: remote_address
    rate_limit: { window: 5m, requests_per_window: 3, name: five_minutes }
  - key: api_key
    rate_limit: { window: 60m, requests_per_window: 10, name: hourly }
";

#[tokio::test]
async fn envoy_shows_a_window_of_no_unit_as_a_bare_limit_and_a_whole_unit_with_its_window() {
    let dir = tempfile::tempdir().unwrap();
    common::write(dir.path(), "config.yaml", WINDOWS);
    let config = dir.path().to_str().unwrap();
    let args = ["--config", config, "--response-headers", "draft"];
    let rls = Server::start_command("rls", &args, false);
    let upstream = RecordingUpstream::start();
    let actions = "\
- actions: [{ remote_address: {} }]
- actions: [{ request_headers: { header_name: x-api-key, descriptor_key: api_key } }]";
    let envoy = Envoy::start(&envoy::config(
        upstream.url.trim_start_matches("http://"),
        &rls.url,
        "edge",
        actions,
        true,
    ));
    let client = client();
    let url = format!("{}/api", envoy.url);
    let mut statuses = Vec::new();
    for left in ["2", "1", "0", "0"] {
        let r = client
            .get(&url)
            .header("x-api-key", "k1")
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
        // Envoy writes a policy member only for a unit it knows: the hourly
        // limit (60m is one HOUR) has its window; the 5-minute one (UNKNOWN)
        // is the bare number that leads the field, never a wrong window.
        assert_eq!(
            header(&r, "x-ratelimit-limit"),
            "3, 10;w=3600;name=\"hourly\""
        );
        assert_eq!(header(&r, "x-ratelimit-remaining"), left);
        // The time until the 5-minute window has its 3 back, rounded up.
        let reset: u64 = header(&r, "x-ratelimit-reset").parse().unwrap();
        assert!((299..=300).contains(&reset), "{reset}");
        // Our own field carries both windows exactly.
        assert_eq!(
            header(&r, "ratelimit-policy"),
            "\"five_minutes\";q=3;w=300, \"hourly\";q=10;w=3600"
        );
    }
    assert_eq!(statuses, [200, 200, 200, 429]);
}
