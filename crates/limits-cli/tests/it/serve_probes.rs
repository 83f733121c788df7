//! `/healthz` is liveness, `/readyz` readiness. `/healthz` answered 200
//! with "degraded" in its body, which probes read as healthy; now it is
//! 200 while the process serves, and `/readyz` is 503 (naming why) while
//! the store is out (see serve_redis.rs, serve_redis_at_start.rs), 200
//! otherwise. A failed reload leaves the instance ready (it serves the
//! previous rules) and is named in the 200's body: a bad file pushed to
//! every instance must not take them all out of service.

use crate::common::server::Server;
use crate::common::{client, write};

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_reload_is_named_by_readyz_but_leaves_the_instance_ready() {
    let dir = tempfile::tempdir().unwrap();
    let good = "[[rule]]\nname = \"all\"\nrates = \"2/hour\"\n";
    let config = write(dir.path(), "rules.toml", good);
    let server = Server::start(&["--config", config.to_str().unwrap()], true);
    let admin = server.admin.clone().expect("--admin");
    let http = client();
    let probe = |path: &'static str| {
        let (http, url) = (http.clone(), format!("{admin}{path}"));
        async move {
            let r = http.get(url).send().await.unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    assert_eq!(probe("/healthz").await, (200, "ok\n".to_string()));
    assert_eq!(probe("/readyz").await, (200, "ready\n".to_string()));

    write(
        dir.path(),
        "rules.toml",
        "[[rule]]\nname = \"all\"\nrates = \"0/hour\"\n",
    );
    server.signal("HUP");
    server.wait_for_line("config not reloaded");
    let (code, why) = probe("/readyz").await;
    assert_eq!(code, 200, "{why}");
    assert!(
        why.starts_with("ready; the rules file failed to reload"),
        "{why}"
    );
    assert!(why.contains("rules.toml:3"), "{why}");
    assert_eq!(probe("/healthz").await, (200, "ok\n".to_string()));
    // Still serving, with the previous rules.
    let status = http.get(&server.url).send().await.unwrap().status();
    assert_eq!(status, 200);

    write(dir.path(), "rules.toml", good);
    server.signal("HUP");
    server.wait_for_line("config reloaded");
    assert_eq!(probe("/readyz").await, (200, "ready\n".to_string()));
}
