//! Per-limiter tallies of a replay: allowed, rejected, the worst window, how
//! the decisions differ from the exact sliding log, and who was limited most.

use limits::simulate::WorstWindow;
use limits::{Algorithm, Decision};
use std::collections::HashMap;

/// How often (in events) keys that can no longer matter are forgotten.
const FORGET_EVERY: u64 = 1 << 13;

pub struct Scoreboard {
    pub algorithm: Algorithm,
    pub allowed: u64,
    pub rejected: u64,
    pub false_allows: u64,
    pub false_denies: u64,
    worst: WorstWindow<String>,
    rejected_by_key: HashMap<String, u64>,
    seen: u64,
}

impl Scoreboard {
    pub fn new(algorithm: Algorithm, window: u64) -> Scoreboard {
        Scoreboard {
            algorithm,
            allowed: 0,
            rejected: 0,
            false_allows: 0,
            false_denies: 0,
            worst: WorstWindow::new(window),
            rejected_by_key: HashMap::new(),
            seen: 0,
        }
    }

    /// Counts one decision at `t`, next to what the sliding log decided.
    pub fn count(&mut self, key: &str, t: u64, cost: u64, d: &Decision, exact_allowed: bool) {
        if d.allowed {
            self.allowed += 1;
            let release = t.saturating_add(u64::try_from(d.delay.as_nanos()).unwrap_or(u64::MAX));
            self.worst.add(&key.to_string(), release, cost);
            self.false_allows += u64::from(!exact_allowed);
        } else {
            self.rejected += 1;
            self.false_denies += u64::from(exact_allowed);
            *self.rejected_by_key.entry(key.to_string()).or_default() += 1;
        }
        self.seen += 1;
        if self.seen % FORGET_EVERY == 0 {
            self.worst.forget_before(t);
        }
    }

    pub fn worst_window(&self) -> u64 {
        self.worst.worst()
    }

    /// The `n` keys with the most rejections, most first (ties by key).
    pub fn limited_most(&self, n: usize) -> Vec<(&str, u64)> {
        let mut keys: Vec<(&str, u64)> = self
            .rejected_by_key
            .iter()
            .map(|(k, &c)| (k.as_str(), c))
            .collect();
        keys.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        keys.truncate(n);
        keys
    }
}
