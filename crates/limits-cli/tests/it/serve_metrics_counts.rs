//! `limits_decisions_total` counts every decision exactly, each rule's
//! series resolved once per policy (`Observer::rule_observer`): N requests
//! read N, a series appears with its first decision (no other outcome's
//! line), and a rule of the same name keeps counting into its series
//! across a reload that moves it to another place in the rules.

use crate::common;

use common::server::Server;
use common::{client, write};

/// Every `limits_decisions_total` line of /metrics, sorted.
async fn decision_lines(server: &Server) -> Vec<String> {
    let admin = server.admin.as_ref().expect("started with --admin");
    let text = reqwest::get(format!("{admin}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("limits_decisions_total"))
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

/// The statuses of `n` GETs of `path`, counted by status.
async fn send(server: &Server, path: &str, n: usize) -> (usize, usize) {
    let http = client();
    let (mut ok, mut limited) = (0, 0);
    for _ in 0..n {
        let r = http
            .get(format!("{}{path}", server.url))
            .send()
            .await
            .unwrap();
        match r.status().as_u16() {
            200 => ok += 1,
            429 => limited += 1,
            other => panic!("status {other}"),
        }
    }
    (ok, limited)
}

#[tokio::test(flavor = "multi_thread")]
async fn n_requests_are_n_decisions_each_series_appearing_with_its_first() {
    let server = Server::start(&["--limit", "40", "--window", "1h"], true);
    assert_eq!(decision_lines(&server).await, Vec::<String>::new());
    assert_eq!(send(&server, "/", 37).await, (37, 0));
    assert_eq!(
        decision_lines(&server).await,
        [r#"limits_decisions_total{rule="default",outcome="allowed"} 37"#]
    );
    assert_eq!(send(&server, "/", 8).await, (3, 5));
    assert_eq!(
        decision_lines(&server).await,
        [
            r#"limits_decisions_total{rule="default",outcome="allowed"} 40"#,
            r#"limits_decisions_total{rule="default",outcome="limited"} 5"#,
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rule_keeps_its_series_across_a_reload_that_moves_it() {
    let dir = tempfile::tempdir().unwrap();
    let one = "[[rule]]\nname = \"all\"\nrates = \"3/hour\"\n\
               [[rule]]\nname = \"items\"\npath = \"/items\"\nrates = \"100/hour\"\n";
    let config = write(dir.path(), "rules.toml", one);
    let server = Server::start(&["--config", config.to_str().unwrap()], true);
    assert_eq!(send(&server, "/", 4).await, (3, 1));
    assert_eq!(send(&server, "/items", 2).await, (0, 2));
    // "items" first now, "all" second with a new rate (and a new state).
    let two = "[[rule]]\nname = \"items\"\npath = \"/items\"\nrates = \"100/hour\"\n\
               [[rule]]\nname = \"all\"\nrates = \"2/hour\"\n";
    write(dir.path(), "rules.toml", two);
    server.signal("HUP");
    server.wait_for_line("config reloaded (2 rules, 1 kept their state)");
    assert_eq!(send(&server, "/", 3).await, (2, 1));
    // "items" allows each, then "all" (spent) limits each.
    assert_eq!(send(&server, "/items", 3).await, (0, 3));
    assert_eq!(
        decision_lines(&server).await,
        [
            r#"limits_decisions_total{rule="all",outcome="allowed"} 5"#,
            r#"limits_decisions_total{rule="all",outcome="limited"} 7"#,
            r#"limits_decisions_total{rule="items",outcome="allowed"} 3"#,
        ]
    );
}
