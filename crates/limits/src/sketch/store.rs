//! A sketch as a [`Store`]: what `serve` and `replay` decide with, in
//! memory and at once. It does not settle: see the [module](super).

use super::Sketch;
use crate::{Clock, Mode, Rule, Store, StoreError, Verdict};
use smallvec::SmallVec;
use std::future::Future;

impl<C: Clock + 'static> Store for Sketch<C> {
    fn rule(&self) -> &Rule {
        Sketch::rule(self)
    }

    /// Decides in memory, at once: never an error.
    ///
    /// ```
    /// use limits::{Algorithm, Mode, Rule, Sketch, SketchOptions, Store};
    ///
    /// let rule = Rule::new(Algorithm::SlidingWindow, "1/s; 10/m".parse().unwrap());
    /// let store = Sketch::new(rule, SketchOptions::new(1 << 20)).unwrap();
    /// let verdict = store.decide_now("alice", 1, Mode::Record).unwrap().unwrap();
    /// assert_eq!(verdict.per_rate.len(), 2);
    /// assert_eq!(verdict.decided_at, None, "a sketch cannot settle: no receipt");
    /// assert!(!store.decide_now("alice", 1, Mode::Record).unwrap().unwrap().decision.allowed);
    /// ```
    fn decide(
        &self,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        std::future::ready(Ok(self.verdict(key, None, cost, mode)))
    }

    fn decide_now(&self, key: &str, cost: u64, mode: Mode) -> Option<Result<Verdict, StoreError>> {
        Some(Ok(self.verdict(key, None, cost, mode)))
    }

    fn decide_at(
        &self,
        key: &str,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        std::future::ready(Ok(self.verdict(key, Some(now), cost, mode)))
    }
}

impl<C: Clock> Sketch<C> {
    /// The verdict on `key` at `now` (or the clock's time), with every
    /// rate's decision and no receipt (a sketch does not settle).
    fn verdict(&self, key: &str, now: Option<u64>, cost: u64, mode: Mode) -> Verdict {
        let mut per_rate = SmallVec::new();
        let (decision, _) = self.decide(key, now, cost, mode, |d| per_rate.push(d));
        Verdict {
            decision,
            per_rate,
            decided_at: None,
            ban: None,
        }
    }
}
