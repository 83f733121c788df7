//! `limits simulate`, run as a real binary: the seed chapter's tables.

use crate::common;

use common::limits;

/// The first four columns of each table row, by limiter.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(3)
        .map(|l| l.split_whitespace().take(4).map(String::from).collect())
        .collect()
}

#[test]
fn simulate_steady_prints_the_chapter_table() {
    let (out, err, code) = limits(&["simulate", "--pattern", "steady"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "pattern steady: 60 requests, limit 10 per second");
    assert_eq!(lines[1], "");
    assert!(lines[2].starts_with("limiter        allowed  rejected  worst 1s"));
    // The chapter's rows, column for column and space for space.
    for row in [
        "none                60         0        20",
        "fixed-window        30        30        10",
        "sliding-log         30        30        10",
        "token-bucket        39        21        19",
    ] {
        assert!(
            lines.iter().any(|l| l.starts_with(row)),
            "missing {row:?} in\n{out}"
        );
    }
    let order: Vec<String> = rows(&out).into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(
        order,
        [
            "none",
            "fixed-window",
            "sliding-log",
            "token-bucket",
            "sliding-window",
            "leaky-bucket",
            "smoothed-rate"
        ]
    );
}

#[test]
fn simulate_edge_shows_the_fixed_window_hole_closed_by_the_sliding_log() {
    let (out, err, code) = limits(&["simulate", "--pattern", "edge"]);
    assert_eq!(code, 0, "{err}");
    let rows = rows(&out);
    let row = |name: &str| rows.iter().find(|r| r[0] == name).unwrap().clone();
    assert_eq!(row("sliding-log"), ["sliding-log", "10", "10", "10"]);
    assert_eq!(row("fixed-window")[1], "20");
    assert_eq!(row("fixed-window")[3], "20");
}

#[test]
fn simulate_sliding_log_never_shows_a_worst_window_above_the_limit() {
    for pattern in ["steady", "edge", "burst", "random", "ramp"] {
        for window in ["1s", "1.5s", "7ms"] {
            let (out, err, code) = limits(&[
                "simulate",
                "--pattern",
                pattern,
                "--window",
                window,
                "--limit",
                "7",
                "--limiter",
                "sliding-log",
                "--format",
                "csv",
            ]);
            assert_eq!(code, 0, "{err}");
            let row = out.lines().nth(1).unwrap();
            let worst: u64 = row.split(',').nth(3).unwrap().parse().unwrap();
            assert!(worst <= 7, "{pattern} {window}: {row}");
        }
    }
}

#[test]
fn simulate_names_worst_column_and_header_after_the_window() {
    let (out, _, _) = limits(&[
        "simulate",
        "--pattern",
        "burst",
        "--limit",
        "4",
        "--window",
        "1.5s",
    ]);
    assert!(
        out.starts_with("pattern burst: 24 requests, limit 4 per 1.5s\n"),
        "{out}"
    );
    assert!(out.contains("worst 1.5s"));
}

#[test]
fn simulate_keys_multiply_requests_not_per_key_results() {
    let (out, _, code) = limits(&[
        "simulate",
        "--pattern",
        "edge",
        "--keys",
        "3",
        "--limiter",
        "sliding-log",
    ]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("pattern edge: 60 requests from 3 clients"),
        "{out}"
    );
    assert_eq!(rows(&out)[0], ["sliding-log", "30", "30", "10"]);
}

#[test]
fn simulate_json_and_csv_carry_the_same_numbers() {
    let (json, _, _) = limits(&["simulate", "--format", "json", "--limiter", "token-bucket"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["limiters"][0]["limiter"], "token-bucket");
    assert_eq!(v["limiters"][0]["allowed"], 39);
    let (csv, _, _) = limits(&["simulate", "--format", "csv", "--limiter", "token-bucket"]);
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with("token-bucket,39,21,19,"),
        "{csv}"
    );
}

#[test]
fn simulate_random_is_reproducible_from_its_seed() {
    let a = limits(&["simulate", "--pattern", "random", "--seed", "9"]).0;
    let b = limits(&["simulate", "--pattern", "random", "--seed", "9"]).0;
    let c = limits(&["simulate", "--pattern", "random", "--seed", "10"]).0;
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn simulate_bad_flags_exit_non_zero_with_a_message() {
    for (args, says) in [
        (vec!["simulate", "--pattern", "wave"], "unknown pattern"),
        (vec!["simulate", "--limiter", "gcra"], "sliding-log"),
        (vec!["simulate", "--limit", "0"], "at least 1"),
        (vec!["simulate", "--window", "soon"], "--window"),
        (vec!["simulate", "--keys", "0"], "--keys"),
        (vec!["simulate", "--limit", "10000000"], "at most"),
        (vec!["simulate", "--format", "xml"], "xml"),
    ] {
        let (_, err, code) = limits(&args);
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn simulate_sketch_is_the_sliding_window_while_roomy_and_denies_more_when_crowded() {
    let table = |size: &str| {
        let (out, err, code) = limits(&[
            "simulate",
            "--pattern",
            "random",
            "--keys",
            "500",
            "--limiter",
            "sliding-window",
            "--sketch",
            size,
        ]);
        assert_eq!(code, 0, "{err}");
        out
    };
    // The last six columns: the sketch's name has a number in it.
    let numbers = |line: &str| -> Vec<u64> {
        let columns: Vec<&str> = line.split_whitespace().collect();
        columns[columns.len() - 6..]
            .iter()
            .map(|n| n.parse().unwrap())
            .collect()
    };
    let roomy = table("1MiB");
    let lines: Vec<&str> = roomy.lines().collect();
    assert!(lines[4].starts_with("sketch 1 MiB"), "{roomy}");
    let (window, sketch) = (numbers(lines[3]), numbers(lines[4]));
    assert_eq!(window[..5], sketch[..5], "{roomy}");
    assert_eq!(
        sketch[5],
        (1 << 20) / 500 + 1,
        "its memory over the clients: {roomy}"
    );

    let crowded = table("2KiB");
    let sketch = numbers(crowded.lines().nth(4).unwrap());
    assert!(sketch[1] > window[1] * 3 / 2, "{crowded}");
    assert!(sketch[4] > window[4], "{crowded}");
    assert_eq!(sketch[5], 2048 / 500 + 1, "{crowded}");
}
