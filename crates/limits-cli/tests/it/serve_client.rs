//! `limits serve`: who the client is (issue 7, "Who the client is"): the
//! peer, or the ONE forwarding header the operator names, from trusted
//! proxies only.

use crate::common;

use common::client;
use common::server::Server;

#[tokio::test(flavor = "multi_thread")]
async fn serve_spoofed_forwarded_for_counts_only_from_a_trusted_proxy() {
    let http = client();
    let ask = |url: String, xff: &'static str| {
        let http = http.clone();
        async move {
            http.get(url)
                .header("x-forwarded-for", xff)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    let rule = ["--limiter", "sliding-log", "--limit", "1", "--window", "1m"];
    let untrusted = Server::start(&rule, false);
    assert_eq!(
        ask(format!("{}/", untrusted.url), "198.51.100.1").await,
        200
    );
    assert_eq!(
        ask(format!("{}/", untrusted.url), "198.51.100.2").await,
        429
    );
    let mut args = rule.to_vec();
    args.extend(["--trust-proxy", "127.0.0.1/32"]);
    let trusted = Server::start(&args, false);
    assert_eq!(ask(format!("{}/", trusted.url), "198.51.100.1").await, 200);
    assert_eq!(ask(format!("{}/", trusted.url), "198.51.100.2").await, 200);
    assert_eq!(ask(format!("{}/", trusted.url), "198.51.100.1").await, 429);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_reads_only_the_chosen_client_ip_header_from_a_trusted_proxy() {
    let http = client();
    let ask = |url: &str, headers: &[(&str, String)]| {
        let mut r = http.get(format!("{url}/"));
        for (name, value) in headers {
            r = r.header(*name, value);
        }
        async move { r.send().await.unwrap().status().as_u16() }
    };
    let rule = [
        "--limiter",
        "sliding-log",
        "--limit",
        "1",
        "--window",
        "1m",
        "--trust-proxy",
        "127.0.0.1/32",
    ];
    // Default x-forwarded-for: a client's own Forwarded (passed through by
    // nginx) is ignored, so rotating it gets no fresh limit.
    let server = Server::start(&rule, true);
    let mut statuses = Vec::new();
    for i in 0..5 {
        let headers = [
            ("forwarded", format!("for=9.9.9.{i}")),
            ("x-forwarded-for", "203.0.113.5".to_string()),
        ];
        statuses.push(ask(&server.url, &headers).await);
    }
    assert_eq!(statuses, [200, 429, 429, 429, 429]);
    let other = [("x-forwarded-for", "203.0.113.6".to_string())];
    assert_eq!(ask(&server.url, &other).await, 200);
    // An unreadable hop is keyed as the nearest trusted hop and counted.
    let counter = "limits_unreadable_client_addresses_total";
    assert_eq!(server.metric(counter).await, Some(0.0));
    let unknown = [("x-forwarded-for", "unknown".to_string())];
    assert_eq!(ask(&server.url, &unknown).await, 200);
    assert_eq!(ask(&server.url, &unknown).await, 429);
    assert_eq!(server.metric(counter).await, Some(2.0));

    // --client-ip-header forwarded: now X-Forwarded-For is the client's own.
    let mut args = rule.to_vec();
    args.extend(["--client-ip-header", "forwarded"]);
    let server = Server::start(&args, false);
    let mut statuses = Vec::new();
    for i in 0..3 {
        let headers = [
            ("x-forwarded-for", format!("9.9.9.{i}")),
            ("forwarded", "for=203.0.113.5".to_string()),
        ];
        statuses.push(ask(&server.url, &headers).await);
    }
    assert_eq!(statuses, [200, 429, 429]);
    let other = [("forwarded", "for=203.0.113.6".to_string())];
    assert_eq!(ask(&server.url, &other).await, 200);
}

#[test]
fn serve_bad_client_ip_flags_exit_non_zero_naming_the_flag() {
    for (args, says) in [
        (["--ipv6-prefix", "0"], "--ipv6-prefix"),
        (["--ipv6-prefix", "129"], "--ipv6-prefix"),
        (["--ipv6-prefix", "4096"], "--ipv6-prefix"),
        (["--client-ip-header", "via"], "--client-ip-header"),
        (["--client-ip-header", ""], "--client-ip-header"),
    ] {
        let mut cmd = vec!["serve"];
        cmd.extend(args);
        let (_, err, code) = common::limits(&cmd);
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
