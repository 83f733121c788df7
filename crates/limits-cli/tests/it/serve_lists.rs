//! Allow and deny lists in `limits serve --config` (issue 27 §3), in front
//! of the recording upstream: a denied client never reaches the upstream,
//! an allowed one reaches it even over the limit; the client is the one
//! `--trust-proxy` resolves; list files reload with the rules; every hit
//! counted in `limits_listed_total`. Clients are loopback addresses of
//! their own (127.0.0.X).

use crate::common;

use common::server::Server;
use common::upstream::RecordingUpstream;
use common::{statuses_from, write};
use std::net::IpAddr;
use std::path::Path;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// `limits serve --config CONFIG --upstream UPSTREAM` and `more` flags.
fn serve(config: &Path, upstream: &RecordingUpstream, more: &[&str], admin: bool) -> Server {
    let mut args = vec![
        "--config",
        config.to_str().unwrap(),
        "--upstream",
        &upstream.url,
    ];
    args.extend_from_slice(more);
    Server::start(&args, admin)
}

const RULES: &str = r#"
# The file's own lists: every request, before any rule.
deny_file = "blocked.txt"

[[rule]]
name = "api"
rates = "2/minute"
# The office is never limited.
allow = ["127.0.0.2"]
"#;

#[tokio::test(flavor = "multi_thread")]
async fn serve_denies_before_the_upstream_and_allows_over_the_limit() {
    let upstream = RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "blocked.txt", "# abusers\n127.0.0.3\n");
    let config = write(dir.path(), "rules.toml", RULES);
    let server = serve(&config, &upstream, &[], true);
    let five = ["-"; 5];
    // Denied: 403 each time, and the upstream never sees one.
    assert_eq!(
        statuses_from(&server.url, ip("127.0.0.3"), &five).await,
        [403; 5]
    );
    assert!(upstream.request_lines().is_empty());
    // Allowed: five requests over a limit of two, all served.
    assert_eq!(
        statuses_from(&server.url, ip("127.0.0.2"), &five).await,
        [200; 5]
    );
    assert_eq!(upstream.request_lines().len(), 5);
    // Anyone else: the rule.
    assert_eq!(
        statuses_from(&server.url, ip("127.0.0.4"), &["-"; 3]).await,
        [200, 200, 429]
    );
    assert_eq!(upstream.request_lines().len(), 7);
    let exempt = server
        .metric("limits_listed_total{list=\"allow\",rule=\"api\"}")
        .await;
    assert_eq!(exempt, Some(5.0));
    let denied = server
        .metric("limits_listed_total{list=\"deny\",rule=\"\"}")
        .await;
    assert_eq!(denied, Some(5.0));
}

/// Behind a trusted proxy, the forwarded client is listed; a client that
/// is not the proxy cannot name an allowed address.
#[tokio::test(flavor = "multi_thread")]
async fn serve_lists_the_client_a_trusted_proxy_forwards() {
    let upstream = RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "blocked.txt", "203.0.113.0/24\n");
    let config = write(
        dir.path(),
        "rules.toml",
        &RULES.replace("127.0.0.2", "10.0.0.0/8"),
    );
    let server = serve(
        &config,
        &upstream,
        &["--trust-proxy", "127.0.0.9/32"],
        false,
    );
    let proxy = ip("127.0.0.9");
    assert_eq!(
        statuses_from(&server.url, proxy, &["10.1.2.3"; 4]).await,
        [200; 4]
    );
    assert_eq!(
        statuses_from(&server.url, proxy, &["203.0.113.7"]).await,
        [403]
    );
    // Not the proxy: its X-Forwarded-For is its own word, ignored.
    assert_eq!(
        statuses_from(&server.url, ip("127.0.0.5"), &["10.1.2.3"; 3]).await,
        [200, 200, 429]
    );
    assert_eq!(upstream.request_lines().len(), 6);
}

/// SIGHUP reads the list files again: an address added to the file is
/// denied from then on, one removed is served again; a bad entry keeps
/// the old lists and names the list file's line.
#[tokio::test(flavor = "multi_thread")]
async fn serve_reloads_list_files_with_the_rules() {
    let upstream = RecordingUpstream::start();
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "blocked.txt", "127.0.0.3\n");
    let config = write(dir.path(), "rules.toml", RULES);
    let server = serve(&config, &upstream, &[], false);
    assert_eq!(
        statuses_from(&server.url, ip("127.0.0.3"), &["-"]).await,
        [403]
    );
    assert_eq!(
        statuses_from(&server.url, ip("127.0.0.6"), &["-"]).await,
        [200]
    );
    write(dir.path(), "blocked.txt", "127.0.0.6\n");
    server.signal("HUP");
    server.wait_for_line("config reloaded (1 rules, 1 kept their state)");
    assert_eq!(
        statuses_from(&server.url, ip("127.0.0.3"), &["-"]).await,
        [200]
    );
    assert_eq!(
        statuses_from(&server.url, ip("127.0.0.6"), &["-"]).await,
        [403]
    );
    let blocked = write(dir.path(), "blocked.txt", "127.0.0.6\n127.0.0.256\n");
    server.signal("HUP");
    let line = server.wait_for_line("config not reloaded");
    let at = format!("{}:2: deny_file entry \"127.0.0.256\"", blocked.display());
    assert!(line.contains(&at), "{line}");
    assert_eq!(
        statuses_from(&server.url, ip("127.0.0.6"), &["-"]).await,
        [403]
    );
}

/// A bad entry stops the server at start, naming the file and line.
#[test]
fn serve_refuses_to_start_on_a_bad_list_entry() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "rules.toml",
        "[[rule]]\nname = \"api\"\nrates = \"2/minute\"\ndeny = [\"10.0.0.0/8\", \"10.0.0.0/40\"]\n",
    );
    let err = Server::try_start(&["--config", config.to_str().unwrap()], false)
        .err()
        .expect("a bad entry");
    let at = format!("{}:4: deny: \"10.0.0.0/40\"", config.display());
    assert!(err.contains(&at), "{err}");
}
