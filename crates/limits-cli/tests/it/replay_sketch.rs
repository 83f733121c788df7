//! `limits replay --sketch SIZE`: the sliding-window counter in a sketch's
//! fixed memory, a row beside the others. Roomy, it decides as the
//! sliding window; crowded, it denies more, and never less.

use crate::common::{limits, write};

/// `keys` clients, each sending a request every 50-150 ms for ten
/// seconds, as a CSV trace in time order.
fn trace(keys: u64) -> String {
    let mut state = 1u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut events = Vec::new();
    for key in 0..keys {
        let mut t = next() % 100_000_000;
        while t < 10_000_000_000 {
            events.push((t, key));
            t += 50_000_000 + next() % 100_000_000;
        }
    }
    events.sort();
    let lines: Vec<String> = (events.iter())
        .map(|(t, key)| format!("{}.{:09},c{key}", t / 1_000_000_000, t % 1_000_000_000))
        .collect();
    lines.join("\n") + "\n"
}

/// The numbers of the row that starts with `name`.
fn row(out: &str, name: &str) -> Vec<u64> {
    let line = out
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("no {name} row:\n{out}"));
    line[name.len()..]
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect()
}

#[test]
fn a_roomy_sketch_replays_as_the_sliding_window_and_a_crowded_one_denies_more() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "t.csv", &trace(500));
    let replay = |size: &str| {
        let (out, err, code) = limits(&[
            "replay",
            "--limiter",
            "sliding-window",
            "--limit",
            "8",
            "--top",
            "0",
            "--sketch",
            size,
            trace.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        out
    };
    let roomy = replay("1MiB");
    let window = row(&roomy, "sliding-window");
    assert!(
        window[1] > 1_000,
        "the trace is over the limit often: {roomy}"
    );
    assert_eq!(row(&roomy, "sketch 1 MiB"), window, "{roomy}");

    // 500 clients in 4 rows of 16 cells.
    let crowded = replay("1KiB");
    let sketch = row(&crowded, "sketch 1 KiB");
    let [allowed, rejected, _, false_allows, false_denies] = sketch[..] else {
        panic!("{crowded}")
    };
    assert_eq!(allowed + rejected, window[0] + window[1]);
    assert!(rejected > window[1] * 2, "{crowded}");
    assert!(false_denies > window[4] * 2, "{crowded}");
    assert!(false_allows <= window[3], "collisions only deny: {crowded}");
}

#[test]
fn a_sketch_size_that_is_not_one_or_too_small_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(dir.path(), "t.csv", "0,a\n");
    let trace = trace.to_str().unwrap();
    let (_, err, code) = limits(&["replay", "--limit", "5", "--sketch", "lots", trace]);
    assert_ne!(code, 0);
    assert!(
        err.contains("memory \"lots\" is not a size such as \"16MB\""),
        "{err}"
    );
    let (_, err, code) = limits(&["replay", "--limit", "5", "--sketch", "10", trace]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--sketch: a sketch of 10 bytes holds less than one cell per row"),
        "{err}"
    );
}
