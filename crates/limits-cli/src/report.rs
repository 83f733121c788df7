//! The comparison table shared by `simulate` and `replay`: the chapter's
//! columns (`limiter  allowed  rejected  worst 1s`), then ours.

use limits::format_seconds;
use serde::Serialize;
use std::time::Duration;

/// One limiter's line.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub limiter: &'static str,
    pub allowed: u64,
    pub rejected: u64,
    pub worst_window: u64,
    pub false_allows: u64,
    pub false_denies: u64,
    #[serde(rename = "peak_bytes_per_key", skip_serializing_if = "Option::is_none")]
    pub bytes_per_key: Option<usize>,
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
pub fn table(title: &str, window_ns: u64, rows: &[Row]) -> String {
    let worst = format!("worst {}s", format_seconds(Duration::from_nanos(window_ns)));
    let w = (worst.len() + 2).max(10);
    let line = |cells: [&str; 7]| {
        let mut s = format!(
            "{:<15}{:>7}{:>10}{:>w$}{:>13}{:>12}",
            cells[0], cells[1], cells[2], cells[3], cells[4], cells[5]
        );
        if !cells[6].is_empty() {
            s += &format!("{:>11}", cells[6]);
        }
        s + "\n"
    };
    let bytes = rows.iter().any(|r| r.bytes_per_key.is_some());
    let mut out = format!("{title}\n\n");
    out += &line([
        "limiter",
        "allowed",
        "rejected",
        &worst,
        "false-allow",
        "false-deny",
        if bytes { "bytes/key" } else { "" },
    ]);
    for r in rows {
        let b = r.bytes_per_key.map_or(String::new(), |b| b.to_string());
        out += &line([
            r.limiter,
            &r.allowed.to_string(),
            &r.rejected.to_string(),
            &r.worst_window.to_string(),
            &r.false_allows.to_string(),
            &r.false_denies.to_string(),
            &b,
        ]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_with_the_chapter() {
        let row = Row {
            limiter: "none",
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
}
