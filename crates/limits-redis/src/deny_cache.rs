//! The exact local deny cache: a flooding client costs Redis nothing until
//! it could pass again.
//!
//! After Redis denies a request of cost c with retry_after R, the same key
//! is denied here, for any cost >= c, until R has passed since the request
//! was *sent*. Redis decided at or after that moment, and nothing but time
//! or a refund turns a denial into an allow (more requests only take more;
//! a larger cost only needs more), so this never denies what Redis would
//! allow: a refund this instance makes forgets the key's denial. (Another
//! instance's refund is not seen here: the denial holds until its retry
//! time, which is the most it can.) The
//! answer's waits are Redis's, less the time passed on this host's
//! monotonic clock.

use limits::{Decision, RetryAfter, Verdict};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

struct Denial {
    sent: Instant,
    until: Instant,
    cost: u64,
    verdict: Verdict,
}

/// Recent denials by key, at most `capacity` of them.
pub(crate) struct DenyCache {
    capacity: usize,
    denials: Mutex<HashMap<String, Denial>>,
}

impl DenyCache {
    pub fn new(capacity: usize) -> DenyCache {
        DenyCache {
            capacity,
            denials: Mutex::new(HashMap::new()),
        }
    }

    /// The denial of `key` at `cost` now, if Redis's last answer implies it.
    pub fn check(&self, key: &str, cost: u64) -> Option<Verdict> {
        if self.capacity == 0 {
            return None;
        }
        let now = Instant::now();
        let mut denials = self.denials.lock().unwrap_or_else(|e| e.into_inner());
        let denial = denials.get(key)?;
        if now >= denial.until {
            denials.remove(key);
            return None;
        }
        if cost < denial.cost {
            return None;
        }
        let passed = now - denial.sent;
        let mut verdict = denial.verdict.clone();
        verdict.decision = later(verdict.decision, passed);
        for d in &mut verdict.per_rate {
            *d = later(*d, passed);
        }
        Some(verdict)
    }

    /// Remembers Redis's denial of `key` at `cost`, for a request sent at
    /// `sent`.
    pub fn remember(&self, key: &str, cost: u64, sent: Instant, verdict: &Verdict) {
        let Some(wait) = verdict.decision.retry_after.duration() else {
            return; // never: the cost alone decides, at once, with no state
        };
        if self.capacity == 0 || verdict.decision.allowed || wait.is_zero() {
            return;
        }
        let mut denials = self.denials.lock().unwrap_or_else(|e| e.into_inner());
        if denials.len() >= self.capacity && !denials.contains_key(key) {
            let now = Instant::now();
            denials.retain(|_, d| d.until > now);
            if denials.len() >= self.capacity {
                return; // full of live denials: Redis decides this one
            }
        }
        let until = sent + wait;
        denials.insert(
            key.to_owned(),
            Denial {
                sent,
                until,
                cost,
                verdict: verdict.clone(),
            },
        );
    }

    /// Forgets `key`'s denial: a refund may let through what it refuses.
    pub fn forget(&self, key: &str) {
        if self.capacity == 0 {
            return;
        }
        let mut denials = self.denials.lock().unwrap_or_else(|e| e.into_inner());
        denials.remove(key);
    }
}

/// `d` as it reads `passed` later: every wait shorter by that much.
fn later(mut d: Decision, passed: Duration) -> Decision {
    let less = |x: Duration| x.saturating_sub(passed);
    if let RetryAfter::After(w) = d.retry_after {
        // Still denied here, so still a wait: at least one nanosecond.
        d.retry_after = RetryAfter::After(less(w).max(Duration::from_nanos(1)));
    }
    d.reset_after = less(d.reset_after);
    d.refill_after = less(d.refill_after);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denial(wait: Duration) -> Verdict {
        let decision = Decision {
            allowed: false,
            remaining: 0,
            retry_after: RetryAfter::After(wait),
            reset_after: wait * 2,
            delay: Duration::ZERO,
            refill_after: wait,
        };
        Verdict {
            decision,
            per_rate: [decision].into_iter().collect(),
            decided_at: None,
            ban: None,
        }
    }

    #[test]
    fn a_denial_holds_for_larger_costs_until_its_wait_has_passed() {
        let cache = DenyCache::new(10);
        let sent = Instant::now();
        cache.remember("k", 2, sent, &denial(Duration::from_millis(200)));
        assert!(cache.check("k", 1).is_none(), "a smaller cost may pass");
        assert!(cache.check("other", 5).is_none());
        let hit = cache.check("k", 3).expect("a larger cost is denied too");
        assert!(!hit.decision.allowed);
        let wait = hit.decision.retry_after.duration().unwrap();
        assert!(wait <= Duration::from_millis(200) && wait > Duration::ZERO);
        std::thread::sleep(Duration::from_millis(210));
        assert!(
            cache.check("k", 2).is_none(),
            "after the wait, Redis decides"
        );
    }

    #[test]
    fn a_forgotten_denial_is_decided_by_redis_again() {
        let cache = DenyCache::new(10);
        cache.remember("k", 1, Instant::now(), &denial(Duration::from_secs(5)));
        cache.remember("j", 1, Instant::now(), &denial(Duration::from_secs(5)));
        cache.forget("k");
        assert!(cache.check("k", 1).is_none(), "forgotten");
        assert!(cache.check("j", 1).is_some(), "another key's denial holds");
    }

    #[test]
    fn nothing_is_cached_when_off_or_never_or_full() {
        let off = DenyCache::new(0);
        off.remember("k", 1, Instant::now(), &denial(Duration::from_secs(5)));
        assert!(off.check("k", 1).is_none());
        let cache = DenyCache::new(1);
        let mut never = denial(Duration::from_secs(5));
        never.decision.retry_after = RetryAfter::Never;
        cache.remember("k", 9, Instant::now(), &never);
        assert!(cache.check("k", 9).is_none());
        cache.remember("a", 1, Instant::now(), &denial(Duration::from_secs(5)));
        cache.remember("b", 1, Instant::now(), &denial(Duration::from_secs(5)));
        assert!(cache.check("a", 1).is_some());
        assert!(cache.check("b", 1).is_none(), "full of live denials");
    }
}
