//! `limits serve` in operation: signals, graceful shutdown, reload, state
//! files, and flags refused at start.

use crate::common;

use common::server::Server;
use common::{client, write};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn serve_sigterm_finishes_requests_in_flight_and_exits_zero() {
    sigterm_finishes_requests_in_flight("shared").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_per_core_sigterm_finishes_requests_in_flight_on_every_thread_and_exits_zero() {
    sigterm_finishes_requests_in_flight("per-core").await;
}

async fn sigterm_finishes_requests_in_flight(runtime: &str) {
    // A leaky bucket holds a burst: 11 admitted, the last one for a second.
    let server = Server::start(
        &[
            "--limiter",
            "leaky-bucket",
            "--limit",
            "10",
            "--runtime",
            runtime,
        ],
        false,
    );
    let http = client();
    let url = format!("{}/api/items", server.url);
    let requests: Vec<_> = (0..11)
        .map(|_| {
            let http = http.clone();
            let url = url.clone();
            tokio::spawn(async move { http.get(url).send().await.map(|r| r.status()) })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.signal("TERM");
    let mut ok = 0;
    for r in requests {
        if r.await.unwrap().map(|s| s == 200).unwrap_or(false) {
            ok += 1;
        }
    }
    assert_eq!(ok, 11, "every request in flight at SIGTERM completed");
    assert_eq!(server.wait(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_state_file_keeps_a_limited_client_limited_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let state = state.to_str().unwrap();
    let args = [
        "--limiter",
        "sliding-log",
        "--limit",
        "2",
        "--window",
        "1h",
        "--state",
        state,
    ];
    let http = client();
    let first = Server::start(&args, false);
    for expected in [200, 200, 429] {
        let r = http.get(format!("{}/", first.url)).send().await.unwrap();
        assert_eq!(r.status(), expected);
    }
    first.signal("TERM");
    assert_eq!(first.wait(), 0);
    let second = Server::start(&args, false);
    let r = http.get(format!("{}/", second.url)).send().await.unwrap();
    assert_eq!(r.status(), 429, "the restart handed out a fresh limit");
    // Without the state, it would have: a new rule shape starts afresh.
    let other = [
        "--limiter",
        "sliding-log",
        "--limit",
        "3",
        "--window",
        "1h",
        "--state",
        state,
    ];
    second.signal("TERM");
    assert_eq!(second.wait(), 0);
    let third = Server::start(&other, false);
    let r = http.get(format!("{}/", third.url)).send().await.unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_config_reload_on_sighup_keeps_unchanged_rules_and_survives_bad_files() {
    reload_on_sighup_keeps_unchanged_rules_and_survives_bad_files("shared").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_per_core_config_reload_on_sighup_reaches_every_thread() {
    reload_on_sighup_keeps_unchanged_rules_and_survives_bad_files("per-core").await;
}

async fn reload_on_sighup_keeps_unchanged_rules_and_survives_bad_files(runtime: &str) {
    let dir = tempfile::tempdir().unwrap();
    let one = "[[rule]]\nname = \"all\"\nrates = \"2/hour\"\n";
    let config = write(dir.path(), "rules.toml", one);
    let server = Server::start(
        &["--config", config.to_str().unwrap(), "--runtime", runtime],
        false,
    );
    let http = client();
    let get = |path: &'static str| {
        let http = http.clone();
        let url = format!("{}{path}", server.url);
        async move { http.get(url).send().await.unwrap().status().as_u16() }
    };
    assert_eq!(
        (get("/").await, get("/").await, get("/").await),
        (200, 200, 429)
    );
    // Add a rule; "all" is unchanged and keeps its state.
    let two =
        format!("{one}\n[[rule]]\nname = \"items\"\npath = \"/api/items\"\nrates = \"1/hour\"\n");
    write(dir.path(), "rules.toml", &two);
    server.signal("HUP");
    server.wait_for_line("config reloaded (2 rules, 1 kept their state)");
    assert_eq!(get("/").await, 429, "the unchanged rule forgot its state");
    // A bad file keeps the old rules and says why.
    write(
        dir.path(),
        "rules.toml",
        "[[rule]]\nname = \"all\"\nrates = \"0/hour\"\n",
    );
    server.signal("HUP");
    let line = server.wait_for_line("config not reloaded");
    assert!(line.contains("rules.toml:3"), "{line}");
    assert_eq!(get("/").await, 429);
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_sighup_without_config_keeps_serving_and_sigterm_still_saves_state() {
    sighup_without_config_keeps_serving_and_sigterm_still_saves_state("shared").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_per_core_sighup_keeps_serving_and_sigterm_saves_state() {
    sighup_without_config_keeps_serving_and_sigterm_still_saves_state("per-core").await;
}

async fn sighup_without_config_keeps_serving_and_sigterm_still_saves_state(runtime: &str) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let server = Server::start(
        &[
            "--limit",
            "2",
            "--window",
            "1h",
            "--state",
            state.to_str().unwrap(),
            "--runtime",
            runtime,
        ],
        false,
    );
    let http = client();
    let r = http.get(format!("{}/", server.url)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    server.signal("HUP");
    server.wait_for_line("SIGHUP: no --config to reload; still serving");
    let r = http.get(format!("{}/", server.url)).send().await.unwrap();
    assert_eq!(r.status(), 200, "still serving after SIGHUP");
    server.signal("TERM");
    assert_eq!(server.wait(), 0);
    let saved = std::fs::read_to_string(&state).unwrap();
    assert!(saved.contains("\"default\""), "{saved}");
}

#[test]
fn serve_state_file_that_cannot_be_written_or_read_exits_at_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "file", "not a directory");
    let garbage = write(dir.path(), "garbage.json", "{ not json");
    let cases = [
        dir.path().join("missing").join("state.json"),
        // Tests run as root, where permissions stop nothing: a regular file
        // as "directory" cannot take a new file for anyone.
        file.join("state.json"),
        garbage,
        dir.path().to_path_buf(),
    ];
    for path in cases {
        let path = path.to_str().unwrap();
        let (out, code) =
            common::output_until_listening("serve", &["--limit", "5", "--state", path]);
        assert!(
            code.is_some_and(|c| c != 0),
            "--state {path} started: {out}"
        );
        assert!(out.contains(&format!("--state {path}")), "{out}");
        assert!(!out.contains("panicked"), "{out}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_symlinked_state_file_keeps_the_link_and_updates_its_target() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("real")).unwrap();
    let link = dir.path().join("state.json");
    // Relative to the link's directory, not to the server's.
    std::os::unix::fs::symlink("real/state.json", &link).unwrap();
    let args = [
        "--limit",
        "1",
        "--window",
        "1h",
        "--state",
        link.to_str().unwrap(),
    ];
    let http = client();
    for expected in [200, 429] {
        let server = Server::start(&args, false);
        let r = http.get(format!("{}/", server.url)).send().await.unwrap();
        assert_eq!(r.status(), expected, "the state went through the link");
        server.signal("TERM");
        assert_eq!(server.wait(), 0);
        let meta = std::fs::symlink_metadata(&link).unwrap();
        assert!(meta.file_type().is_symlink(), "the link was replaced");
        let target = std::fs::read_to_string(dir.path().join("real/state.json")).unwrap();
        assert!(target.contains("\"default\""), "{target}");
    }
    let mut left: Vec<String> = std::fs::read_dir(dir.path().join("real"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.extend(
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned()),
    );
    left.sort();
    assert_eq!(
        left,
        ["real", "state.json", "state.json"],
        "temporary files left"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_state_entry_from_the_year_2100_is_dropped_on_load() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let args = [
        "--limiter",
        "sliding-log",
        "--limit",
        "1",
        "--window",
        "1h",
        "--state",
        state.to_str().unwrap(),
    ];
    let http = client();
    // A real state file, then its one entry moved to the year 2100.
    let first = Server::start(&args, false);
    let r = http.get(format!("{}/", first.url)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    first.signal("TERM");
    assert_eq!(first.wait(), 0);
    let mut saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let words = &mut saved["rules"]["default"]["keys"][0][1];
    let len = words.as_array().unwrap().len();
    // The log's one entry is its time, then its cost.
    words[len - 2] = serde_json::json!(4_102_444_800_000_000_000u64);
    std::fs::write(&state, saved.to_string()).unwrap();

    let (out, code) = common::output_until_listening("serve", &args);
    assert_eq!(code, None, "{out}");
    assert!(out.contains("dropped 1 future entry"), "{out}");
    let second = Server::start(&args, false);
    let r = http.get(format!("{}/", second.url)).send().await.unwrap();
    assert_eq!(r.status(), 200, "a key from the future was denied");
}

#[test]
fn serve_refuses_flags_that_would_be_ignored_or_limit_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "rules.toml",
        "[[rule]]\nname = \"all\"\nrates = \"2/hour\"\n",
    );
    let config = config.to_str().unwrap();
    for (extra, says) in [
        (vec!["--limit", "5"], "--limit"),
        (vec!["--limiter", "fixed-window"], "--limiter"),
        (vec!["--window", "1m"], "--window"),
        (vec!["--burst", "3"], "--burst"),
        (vec!["--key", "header:X-Api-Key"], "--key"),
        (vec!["--cost", "2"], "--cost"),
    ] {
        let mut args = vec!["--config", config];
        args.extend(extra.iter().copied());
        let (out, code) = common::output_until_listening("serve", &args);
        assert!(code.is_some_and(|c| c != 0), "{args:?} started: {out}");
        assert!(
            out.contains("--config") && out.contains(says),
            "{args:?}: {out}"
        );
    }
    let (out, code) = common::output_until_listening("serve", &["--max-keys", "0"]);
    assert!(code.is_some_and(|c| c != 0), "--max-keys 0 started: {out}");
    assert!(
        out.contains("--max-keys") && out.contains("at least 1"),
        "{out}"
    );
}

#[test]
fn serve_trust_proxy_everyone_starts_with_a_loud_warning() {
    for everyone in ["0.0.0.0/0", "::/0"] {
        let (out, code) =
            common::output_until_listening("serve", &["--limit", "5", "--trust-proxy", everyone]);
        assert_eq!(code, None, "{out}");
        assert!(
            out.contains(&format!(
                "WARNING: --trust-proxy {everyone} trusts every peer"
            )),
            "{out}"
        );
        assert!(out.contains("every client can choose its address"), "{out}");
    }
    let (out, _) =
        common::output_until_listening("serve", &["--limit", "5", "--trust-proxy", "10.0.0.0/8"]);
    assert!(!out.contains("WARNING"), "{out}");
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_state_that_cannot_be_saved_at_shutdown_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let state = sub.join("state.json");
    let server = Server::start(&["--limit", "5", "--state", state.to_str().unwrap()], false);
    let r = client()
        .get(format!("{}/", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // The directory becomes a file while the server runs.
    std::fs::remove_dir_all(&sub).unwrap();
    std::fs::write(&sub, "in the way").unwrap();
    server.signal("TERM");
    assert_ne!(
        server.wait(),
        0,
        "the state was lost and the exit code said 0"
    );
}
