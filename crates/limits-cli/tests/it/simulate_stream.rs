//! `limits simulate` with many clients: the run streams, so the request
//! count is bounded by time, not memory; the picture still shows key 0.

use crate::common;

use common::limits;

/// The first four columns of the row of `limiter`.
fn row(table: &str, limiter: &str) -> Vec<String> {
    let line = (table.lines())
        .find(|l| l.starts_with(&format!("{limiter} ")))
        .unwrap_or_else(|| panic!("no {limiter} row in\n{table}"));
    line.split_whitespace().take(4).map(String::from).collect()
}

#[test]
fn simulate_many_clients_multiplies_the_one_client_table() {
    let args = ["simulate", "--pattern", "edge", "--limiter", "sliding-log"];
    let (one, err, code) = limits(&args);
    assert_eq!(code, 0, "{err}");
    let (many, err, code) = limits(&[&args[..], &["--keys", "20000"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(
        many.starts_with("pattern edge: 400000 requests from 20000 clients, limit 10 per second"),
        "{many}"
    );
    assert_eq!(row(&one, "sliding-log"), ["sliding-log", "10", "10", "10"]);
    assert_eq!(
        row(&many, "sliding-log"),
        ["sliding-log", "200000", "200000", "10"]
    );
    // Not a terminal: no progress line.
    assert!(err.is_empty(), "{err}");
}

#[test]
fn simulate_refuses_too_many_requests_per_client_or_in_all() {
    for (args, says) in [
        (
            vec!["simulate", "--limit", "10000000"],
            "60000000 requests per client; the simulator takes at most 20000000",
        ),
        (
            vec!["simulate", "--limit", "4611686018427387904"],
            "18446744073709551615 requests per client",
        ),
        (
            vec!["simulate", "--keys", "100000", "--limit", "10000"],
            "6000000000 requests; the simulator takes at most 1000000000",
        ),
    ] {
        let (out, err, code) = limits(&args);
        assert_ne!(code, 0, "{args:?}");
        assert!(out.is_empty(), "{args:?}: {out}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn simulate_plot_of_many_clients_draws_key_0_with_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("run.svg");
    let (out, err, code) = limits(&[
        "simulate",
        "--pattern",
        "steady",
        "--keys",
        "5000",
        "--limiter",
        "token-bucket",
        "--plot",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        row(&out, "token-bucket"),
        ["token-bucket", "195000", "105000", "19"]
    );
    let svg = std::fs::read_to_string(&svg).unwrap();
    assert!(svg.contains("pattern steady: 60 requests per client, 5000 clients (key 0 shown)"));
    assert!(svg.contains("arrivals to key 0: 60 requests, worst 1s = 20"));
    assert!(svg.contains("token-bucket: 39 allowed, 21 rejected, worst 1s = 19"));
}
