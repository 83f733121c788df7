//! Each rule's decisions per second over the last five minutes: sampled
//! once a second from the rules' running totals, so that a page opened
//! during an incident shows how it began.

use serde::Serialize;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Seconds kept per rule.
pub(crate) const SECONDS: usize = 300;

/// Allowed and refused (limited or banned) in one second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Second {
    pub allowed: u64,
    pub limited: u64,
}

/// The per-second counts of every rule in force.
#[derive(Default)]
pub(crate) struct History {
    rules: Mutex<HashMap<String, Ring>>,
}

#[derive(Default)]
struct Ring {
    /// The totals at the last sample: a second's counts are the change.
    totals: Second,
    seconds: VecDeque<Second>,
}

impl History {
    /// Takes one second's sample: `totals` are the running (allowed,
    /// refused) totals of each rule in force. A rule no longer in force is
    /// dropped; a total that went down (a rule replaced by a reload starts
    /// again) counts from its new value.
    pub(crate) fn sample(&self, totals: impl IntoIterator<Item = (String, Second)>) {
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        let mut kept = HashMap::with_capacity(rules.len());
        for (name, total) in totals {
            let mut ring = rules.remove(&name).unwrap_or_else(|| Ring {
                totals: total,
                seconds: VecDeque::with_capacity(SECONDS),
            });
            let since = |now: u64, then: u64| now.checked_sub(then).unwrap_or(now);
            let second = Second {
                allowed: since(total.allowed, ring.totals.allowed),
                limited: since(total.limited, ring.totals.limited),
            };
            if ring.seconds.len() == SECONDS {
                ring.seconds.pop_front();
            }
            ring.seconds.push_back(second);
            ring.totals = total;
            kept.insert(name, ring);
        }
        *rules = kept;
    }

    /// The last seconds of `rule`, oldest first.
    pub(crate) fn of(&self, rule: &str) -> Vec<Second> {
        let rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        rules
            .get(rule)
            .map_or_else(Vec::new, |r| r.seconds.iter().copied().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(allowed: u64, limited: u64) -> Second {
        Second { allowed, limited }
    }

    #[test]
    fn seconds_are_the_changes_of_the_totals_for_five_minutes() {
        let history = History::default();
        history.sample([("api".to_string(), total(10, 0))]);
        history.sample([("api".to_string(), total(15, 2))]);
        assert_eq!(history.of("api"), [total(0, 0), total(5, 2)]);
        for n in 0..400 {
            history.sample([("api".to_string(), total(15 + n, 2))]);
        }
        let kept = history.of("api");
        assert_eq!(kept.len(), SECONDS);
        assert_eq!(kept[SECONDS - 1], total(1, 0));
    }

    #[test]
    fn a_rule_gone_is_dropped_and_a_restarted_total_counts_afresh() {
        let history = History::default();
        history.sample([
            ("a".to_string(), total(10, 0)),
            ("b".to_string(), total(1, 1)),
        ]);
        history.sample([("a".to_string(), total(3, 0))]);
        assert_eq!(history.of("a").last(), Some(&total(3, 0)));
        assert!(history.of("b").is_empty());
    }
}
