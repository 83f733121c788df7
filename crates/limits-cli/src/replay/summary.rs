//! The summary a replay prints: the limiters' table, who was limited most,
//! and the lines skipped (the report, `report_html.rs`, shows the same).

use super::keys::Keys;
use super::{BadLines, Replayed};
use crate::report::{self, limits_phrase, Row};

/// What the summary reports: the trace, its limit, and every limiter's tally.
pub(super) struct Summary<'a> {
    pub name: &'a str,
    pub requests: u64,
    pub rates: &'a limits::Rates,
    pub window: u64,
    pub replayed: &'a [Replayed],
    pub keys: &'a Keys,
}

impl Summary<'_> {
    /// "replay NAME: N requests, limit ...".
    pub fn title(&self) -> String {
        format!(
            "replay {}: {} requests, limit {}",
            self.name,
            self.requests,
            limits_phrase(self.rates)
        )
    }

    /// Each limiter's line of the table.
    pub fn rows(&self) -> Vec<Row> {
        self.replayed
            .iter()
            .map(|r| Row {
                limiter: r.name.clone(),
                allowed: r.tally.allowed,
                rejected: r.tally.rejected,
                worst_window: r.tally.worst_window(),
                false_allows: r.tally.false_allows,
                false_denies: r.tally.false_denies,
                bytes_per_key: None,
            })
            .collect()
    }

    pub fn print(&self, bad: &BadLines, top: usize) {
        let Summary {
            name,
            window,
            replayed,
            keys,
            ..
        } = *self;
        print!("{}", report::table(&self.title(), window, &self.rows()));
        if top > 0 {
            println!();
            for r in replayed {
                let most = r.rejected.most(keys, top);
                if most.is_empty() {
                    println!("limited most ({}): nobody", r.name);
                    continue;
                }
                let names: Vec<String> = most
                    .iter()
                    .map(|(k, r)| format!("{k} ({} rejected)", r.count))
                    .collect();
                println!("limited most ({}): {}", r.name, names.join(", "));
            }
        }
        print_bad(name, bad);
    }
}

fn print_bad(name: &str, bad: &BadLines) {
    if bad.total > 0 {
        println!();
        let s = if bad.total == 1 { "" } else { "s" };
        println!("skipped {} bad line{s}:", bad.total);
        for e in &bad.first {
            println!("  {name}:{}: {}", e.line, e.message);
        }
        if bad.total > bad.first.len() as u64 {
            println!("  ... and {} more", bad.total - bad.first.len() as u64);
        }
    }
}
