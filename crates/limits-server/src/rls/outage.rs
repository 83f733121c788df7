//! A store outage as `limits rls` logs it: once when the first call cannot
//! be decided, once when a store decides again, with how many calls were
//! answered by the failure policy in between. A store that is down fails
//! every call, so a line per call would bury everything else in the log
//! (the per-call counts are in the `store_errors` metric).
//!
//! An unreachable store and a full one are two kinds of outage with two
//! policies (`--on-store-error`, `--on-store-full`): each has its own
//! tracker, so the end of one is not mistaken for the end of the other.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// One kind of outage: whether one is going on, and the calls it answered.
#[derive(Debug)]
pub struct Outage {
    /// What the log calls it ("unreachable", "full").
    kind: &'static str,
    /// The flag `--on-store-...` that answers it, for the log.
    policy_flag: &'static str,
    going_on: AtomicBool,
    /// Calls answered by the policy since the outage began.
    answered: AtomicU64,
    /// The limit and the error that began it, for the closing line.
    began_with: Mutex<Option<String>>,
}

/// What one failed call asks to be logged.
#[derive(Debug, PartialEq, Eq)]
pub enum Began {
    /// The first failure of an outage: log it.
    Now,
    /// Another call of an outage already logged.
    Already,
}

impl Outage {
    /// No outage going on.
    pub const fn new(kind: &'static str, policy_flag: &'static str) -> Outage {
        Outage {
            kind,
            policy_flag,
            going_on: AtomicBool::new(false),
            answered: AtomicU64::new(0),
            began_with: Mutex::new(None),
        }
    }

    /// A call that the store of `limit` could not decide, answered by the
    /// policy `answer`; logs the outage when it is the first such call.
    pub fn failed(&self, limit: &str, error: &dyn std::fmt::Display, answer: &str) -> Began {
        self.answered.fetch_add(1, Ordering::Relaxed);
        if self.going_on.swap(true, Ordering::AcqRel) {
            return Began::Already;
        }
        *self.began_with.lock().unwrap_or_else(|e| e.into_inner()) = Some(limit.to_string());
        tracing::warn!(
            limit = %limit,
            error = %error,
            "rate limit store {}: answering calls per {} ({answer}) until it decides again; \
             logged once per outage",
            self.kind,
            self.policy_flag,
        );
        Began::Now
    }

    /// A call a store decided: ends the outage going on, if any, logging
    /// it with the calls it answered; those calls, when it ended here.
    pub fn decided(&self) -> Option<u64> {
        // The load keeps the common case (no outage) a read, not a write.
        if !self.going_on.load(Ordering::Acquire) || !self.going_on.swap(false, Ordering::AcqRel) {
            return None;
        }
        let answered = self.answered.swap(0, Ordering::Relaxed);
        let began = self
            .began_with
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default();
        tracing::warn!(
            calls = answered,
            began_with = %began,
            "rate limit store no longer {}: it decides again; {answered} calls were answered \
             per {} during the outage",
            self.kind,
            self.policy_flag,
        );
        Some(answered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_logged_once_and_its_end_once_with_the_calls_it_answered() {
        let outage = Outage::new("unreachable", "--on-store-error");
        assert_eq!(outage.decided(), None, "no outage yet");
        assert_eq!(outage.failed("shop.user", &"refused", "allow"), Began::Now);
        for _ in 0..4 {
            assert_eq!(
                outage.failed("shop.user", &"refused", "allow"),
                Began::Already
            );
        }
        assert_eq!(outage.decided(), Some(5));
        assert_eq!(outage.decided(), None, "ended once");
        // The next outage counts afresh.
        assert_eq!(outage.failed("shop.cart", &"timeout", "deny"), Began::Now);
        assert_eq!(outage.decided(), Some(1));
    }

    #[test]
    fn concurrent_failures_begin_one_outage_and_count_every_call() {
        let outage = std::sync::Arc::new(Outage::new("unreachable", "--on-store-error"));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let outage = outage.clone();
                std::thread::spawn(move || {
                    (0..250)
                        .filter(|_| outage.failed("l", &"e", "deny") == Began::Now)
                        .count()
                })
            })
            .collect();
        let began: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(began, 1);
        assert_eq!(outage.decided(), Some(1000));
    }
}
