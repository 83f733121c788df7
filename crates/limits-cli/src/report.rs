//! The comparison table shared by `simulate` and `replay`: the chapter's
//! columns (`limiter  allowed  rejected  worst 1s`), then ours.

use limits::format_seconds;
use serde::Serialize;
use std::time::Duration;

/// One limiter's line.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub limiter: String,
    pub allowed: u64,
    pub rejected: u64,
    pub worst_window: u64,
    pub false_allows: u64,
    pub false_denies: u64,
    #[serde(rename = "peak_bytes_per_key", skip_serializing_if = "Option::is_none")]
    pub bytes_per_key: Option<usize>,
}

/// A limiter's row name: its algorithm's, or `sketch SIZE` for the
/// sliding-window counter in a sketch of SIZE bytes.
pub fn limiter_name(algorithm: limits::Algorithm, sketch: Option<usize>) -> String {
    match sketch {
        Some(memory) => format!("sketch {}", limits_server::format_memory(memory)),
        None => algorithm.name().to_string(),
    }
}

/// "second" for one second, else "1.5s", "5s", "0.25s".
pub fn window_name(window_ns: u64) -> String {
    if window_ns == 1_000_000_000 {
        "second".to_string()
    } else {
        format!("{}s", format_seconds(Duration::from_nanos(window_ns)))
    }
}

/// "10 per second; 1000 per 3600s": the rates as the table titles say them.
pub fn limits_phrase(rates: &limits::Rates) -> String {
    let phrases: Vec<String> = rates
        .iter()
        .map(|r| format!("{} per {}", r.limit(), window_name(r.window_nanos())))
        .collect();
    phrases.join("; ")
}

/// `title`, a blank line, and the table; worst windows of `window_ns`.
/// Columns keep their usual widths and widen for longer numbers, two
/// spaces at least between any two.
pub fn table(title: &str, window_ns: u64, rows: &[Row]) -> String {
    let worst = format!("worst {}s", format_seconds(Duration::from_nanos(window_ns)));
    let bytes = rows.iter().any(|r| r.bytes_per_key.is_some());
    let header: Vec<String> = [
        "limiter",
        "allowed",
        "rejected",
        &worst,
        "false-allow",
        "false-deny",
        if bytes { "bytes/key" } else { "" },
    ]
    .map(String::from)
    .to_vec();
    let mut lines = vec![header];
    for r in rows {
        lines.push(vec![
            r.limiter.to_string(),
            r.allowed.to_string(),
            r.rejected.to_string(),
            r.worst_window.to_string(),
            r.false_allows.to_string(),
            r.false_denies.to_string(),
            r.bytes_per_key.map_or(String::new(), |b| b.to_string()),
        ]);
    }
    let mut widths = [15, 7, 10, (worst.len() + 2).max(10), 13, 12, 11];
    for line in &lines[1..] {
        for (i, cell) in line.iter().enumerate() {
            let gap = if i == 0 { 0 } else { 2 };
            widths[i] = widths[i].max(cell.len() + gap);
        }
    }
    let mut out = format!("{title}\n\n");
    for line in &lines {
        out += &format!("{:<w$}", line[0], w = widths[0]);
        for (cell, &w) in line.iter().zip(&widths).skip(1) {
            if !cell.is_empty() {
                out += &format!("{cell:>w$}");
            }
        }
        out += "\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_with_the_chapter() {
        let row = Row {
            limiter: "none".into(),
            allowed: 60,
            rejected: 0,
            worst_window: 20,
            false_allows: 30,
            false_denies: 0,
            bytes_per_key: None,
        };
        let t = table("t", 1_000_000_000, &[row]);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[2].starts_with("limiter        allowed  rejected  worst 1s"));
        assert!(lines[3].starts_with("none                60         0        20"));
        assert_eq!(window_name(1_500_000_000), "1.5s");
    }

    #[test]
    fn columns_past_seven_digits_still_line_up() {
        let row = |limiter: &str, n: u64| Row {
            limiter: limiter.into(),
            allowed: n,
            rejected: n,
            worst_window: n,
            false_allows: n,
            false_denies: n,
            bytes_per_key: Some(n as usize),
        };
        let t = table(
            "t",
            1_000_000_000,
            &[row("none", 7), row("sliding-log", 123_456_789_012)],
        );
        let lines: Vec<&str> = t.lines().skip(2).collect();
        // Every column of every line ends where the header's does (cells
        // are apart by two spaces or more; "worst 1s" is one cell).
        let ends = |line: &str| -> Vec<usize> {
            let b = line.as_bytes();
            let space = |i: usize| i >= b.len() || b[i] == b' ';
            (1..=b.len())
                .filter(|&i| b[i - 1] != b' ' && space(i) && space(i + 1))
                .collect()
        };
        let header = ends(lines[0]);
        assert_eq!(header.len(), 7, "{t}");
        for line in &lines[1..] {
            // The first column is left-aligned: compare the six numbers.
            assert_eq!(ends(line)[1..], header[1..], "{t}");
        }
        assert!(lines[2].contains(" 123456789012 "), "{t}");
    }
}
