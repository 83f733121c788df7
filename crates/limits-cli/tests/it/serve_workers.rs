//! `limits serve --workers N`: one worker serves everything on one thread
//! (a current-thread runtime), several share the work, in one runtime or
//! (`--runtime per-core`) each in its own; any way the limit is the same
//! exact count, and a bad count or runtime is a clear error.

use crate::common;

use common::server::Server;
use common::{client, limits};

/// 12 requests at once, 5 per hour: exactly 5 pass, whatever the workers
/// (`runtime`: the rest of the flags). Returns the server's threads
/// afterwards.
async fn five_of_twelve_pass(workers: &str, runtime: &[&str]) -> usize {
    let mut args = vec![
        "--limiter",
        "sliding-log",
        "--limit",
        "5",
        "--window",
        "1h",
        "--workers",
        workers,
    ];
    args.extend(runtime);
    let server = Server::start(&args, false);
    let http = client();
    let requests: Vec<_> = (0..12)
        .map(|_| tokio::spawn(http.get(format!("{}/api/items", server.url)).send()))
        .collect();
    let mut statuses = Vec::new();
    for r in requests {
        statuses.push(r.await.unwrap().unwrap().status().as_u16());
    }
    let passed = statuses.iter().filter(|&&s| s == 200).count();
    let limited = statuses.iter().filter(|&&s| s == 429).count();
    assert_eq!(
        (passed, limited),
        (5, 7),
        "--workers {workers}: {statuses:?}"
    );
    threads(server.pid())
}

/// The threads of process `pid`, from /proc.
fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn one_worker_counts_concurrent_requests_exactly() {
    // The runtime's one thread is the main thread.
    assert_eq!(five_of_twelve_pass("1", &["--runtime", "shared"]).await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn three_workers_count_concurrent_requests_exactly() {
    // The main thread and the three workers.
    assert!(five_of_twelve_pass("3", &["--runtime", "shared"]).await >= 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn three_workers_per_core_count_concurrent_requests_exactly() {
    // The main thread and three workers, each a runtime of its own.
    assert_eq!(
        five_of_twelve_pass("3", &["--runtime", "per-core"]).await,
        4
    );
}

#[test]
fn an_unknown_runtime_is_an_error_that_names_the_flag_and_the_choices() {
    let (_, stderr, code) = limits(&["serve", "--runtime", "threads"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--runtime"), "{stderr}");
    assert!(
        stderr.contains("per-core") && stderr.contains("shared"),
        "{stderr}"
    );
}

#[test]
fn zero_workers_is_an_error_that_names_the_flag() {
    let (_, stderr, code) = limits(&["serve", "--workers", "0"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--workers"), "{stderr}");
}
