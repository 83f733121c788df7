//! The keys refused most right now, in fixed memory whatever the number
//! of keys: a space-saving top-k (a newcomer to a full table takes the
//! place of the least-refused entry and inherits its count, so a key
//! refused more than 1/32 of all refusals is never missed) whose counts
//! halve every half-life, so that a flood that ended gives way to the one
//! going on. The page is shown what each key surely had: its count less
//! what it inherited.

use limits::RetryAfter;
use serde::Serialize;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Entries kept: what the page shows, and some room for newcomers.
const CAPACITY: usize = 32;
/// How often every count is halved.
const HALF_LIFE: Duration = Duration::from_secs(30);
/// An entry refused longer ago than this is not "right now".
const RECENT: Duration = Duration::from_secs(60);

/// The most-refused keys of every rule (see the module).
pub(crate) struct TopLimited {
    inner: Mutex<Top>,
}

struct Top {
    entries: Vec<Entry>,
    halved_at: Instant,
}

struct Entry {
    rule: String,
    key: String,
    /// Refusals counted, with those inherited from the entry it replaced.
    refusals: u64,
    /// Of them, inherited: the key may not have had those.
    inherited: u64,
    last: Instant,
    /// When it may pass again; `None`: never (a cost above the limit).
    retry: Option<Instant>,
}

/// One of the keys refused most, as the dashboard's JSON shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct LimitedKey {
    pub rule: String,
    pub key: String,
    /// Refusals it surely had since it came in (halved every 30 seconds).
    pub refusals: u64,
    /// Seconds since its last refusal.
    pub last_seconds_ago: f64,
    /// Seconds until it may pass again (0: it may now); `None`: never.
    pub retry_in_seconds: Option<f64>,
}

impl TopLimited {
    pub(crate) fn new(now: Instant) -> TopLimited {
        TopLimited {
            inner: Mutex::new(Top {
                entries: Vec::with_capacity(CAPACITY),
                halved_at: now,
            }),
        }
    }

    /// Counts a refusal of `key` by `rule` at `now`, which may pass again
    /// after `retry_after`.
    pub(crate) fn refused(&self, rule: &str, key: &str, retry_after: RetryAfter, now: Instant) {
        let retry = retry_after.duration().map(|d| now + d);
        let mut top = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if now.duration_since(top.halved_at) >= HALF_LIFE {
            top.halved_at = now;
            for e in &mut top.entries {
                (e.refusals, e.inherited) = (e.refusals / 2, e.inherited / 2);
            }
            top.entries.retain(|e| e.refusals > 0);
        }
        let entries = &mut top.entries;
        if let Some(e) = entries.iter_mut().find(|e| e.key == key && e.rule == rule) {
            (e.refusals, e.last, e.retry) = (e.refusals + 1, now, retry);
            return;
        }
        let entry = |inherited| Entry {
            rule: rule.to_string(),
            key: key.to_string(),
            refusals: inherited + 1,
            inherited,
            last: now,
            retry,
        };
        if entries.len() < CAPACITY {
            entries.push(entry(0));
        } else if let Some(least) = entries.iter_mut().min_by_key(|e| e.refusals) {
            *least = entry(least.refusals);
        }
    }

    /// At most `n` keys refused within the last minute, most refused first.
    pub(crate) fn most(&self, n: usize, now: Instant) -> Vec<LimitedKey> {
        let top = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut recent: Vec<&Entry> = (top.entries.iter())
            .filter(|e| now.saturating_duration_since(e.last) <= RECENT)
            .collect();
        let surely = |e: &Entry| e.refusals - e.inherited;
        recent.sort_by(|a, b| surely(b).cmp(&surely(a)).then(b.last.cmp(&a.last)));
        (recent.into_iter().take(n))
            .map(|e| LimitedKey {
                rule: e.rule.clone(),
                key: e.key.clone(),
                refusals: surely(e),
                last_seconds_ago: now.saturating_duration_since(e.last).as_secs_f64(),
                retry_in_seconds: e
                    .retry
                    .map(|r| r.saturating_duration_since(now).as_secs_f64()),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn a_flooding_key_leads_and_a_flood_of_others_cannot_push_it_out() {
        let t0 = Instant::now();
        let top = TopLimited::new(t0);
        let wait = RetryAfter::After(SECOND);
        // More than a 32nd of all refusals: kept, whatever comes after.
        for _ in 0..400 {
            top.refused("api", "ip=203.0.113.7", wait, t0);
        }
        for i in 0..10_000 {
            top.refused("api", &format!("ip=10.0.{}.{}", i / 256, i % 256), wait, t0);
        }
        let most = top.most(5, t0);
        assert_eq!(most.len(), 5);
        assert_eq!(
            (most[0].key.as_str(), most[0].refusals),
            ("ip=203.0.113.7", 400)
        );
        assert!(
            most[1..].iter().all(|k| k.refusals == 1),
            "one-offs show what they surely had"
        );
        assert_eq!(most[0].retry_in_seconds, Some(1.0));
        assert_eq!(
            top.inner.lock().unwrap().entries.len(),
            CAPACITY,
            "fixed memory"
        );
    }

    #[test]
    fn counts_halve_and_old_refusals_are_not_right_now() {
        let t0 = Instant::now();
        let top = TopLimited::new(t0);
        for _ in 0..8 {
            top.refused("login", "user=alice", RetryAfter::Never, t0);
        }
        top.refused("login", "user=bob", RetryAfter::Never, t0 + HALF_LIFE);
        let most = top.most(10, t0 + HALF_LIFE);
        assert_eq!(most[0].refusals, 4, "halved once");
        assert_eq!(most[0].retry_in_seconds, None, "never");
        assert_eq!(most[1].key, "user=bob");
        let later = t0 + HALF_LIFE + RECENT + SECOND;
        assert!(
            top.most(10, later).is_empty(),
            "nothing refused in the last minute"
        );
    }
}
