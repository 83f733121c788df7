//! A distinct-values limiter as a [`Store`]: what `serve` decides a
//! `distinct` rule with, in memory and at once. It is asked with a value
//! ([`Store::decide_value`]); asked without one, it has nothing to count
//! and says so.

use super::DistinctLimiter;
use crate::{Clock, LocalStore, Mode, Rule, Store, StoreError, Verdict};
use std::future::Future;
use std::net::IpAddr;

impl<C: Clock + 'static> Store for DistinctLimiter<String, C> {
    /// The limit as a sliding log of `at_most` per window: what the
    /// RateLimit headers announce.
    fn rule(&self) -> &Rule {
        &self.limit
    }

    fn decide(
        &self,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        let _ = (key, cost, mode);
        std::future::ready(Err(StoreError::no_value()))
    }

    fn decide_now(&self, key: &str, cost: u64, mode: Mode) -> Option<Result<Verdict, StoreError>> {
        let _ = (key, cost, mode);
        Some(Err(StoreError::no_value()))
    }

    /// Decides in memory, at once: never an error.
    ///
    /// ```
    /// use limits::{Algorithm, Distinct, DistinctLimiter, Mode, Rule, Store};
    /// use std::future::Future;
    /// use std::task::{Context, Poll, Waker};
    /// use std::time::Duration;
    ///
    /// let pages: DistinctLimiter<String> = DistinctLimiter::new(Distinct::new(2, Duration::from_secs(60)).unwrap());
    /// let mut fut = std::pin::pin!(Store::decide_value(&pages, None, "198.51.100.9", "/p/1", Mode::Record));
    /// let Poll::Ready(Ok(verdict)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
    ///     panic!("in memory: ready");
    /// };
    /// assert_eq!(verdict.decision.remaining, 1);
    /// assert_eq!(Store::rule(&pages), &Rule::new(Algorithm::SlidingLog, "2/m".parse().unwrap()));
    /// ```
    fn decide_value(
        &self,
        client: Option<IpAddr>,
        key: &str,
        value: &str,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        let _ = client;
        std::future::ready(Ok(Verdict::of(self.decide(key, value, None, mode))))
    }

    fn decide_value_now(
        &self,
        client: Option<IpAddr>,
        key: &str,
        value: &str,
        mode: Mode,
    ) -> Option<Result<Verdict, StoreError>> {
        let _ = client;
        Some(Ok(Verdict::of(self.decide(key, value, None, mode))))
    }

    fn local(&self) -> Option<&dyn LocalStore> {
        Some(self)
    }
}

/// Sweeps and counts its keys. Its values are hashes seeded per limiter,
/// meaningless to another process: they are not saved
/// ([`export`](LocalStore::export) gives none), and a restart starts every
/// key afresh.
impl<C: Clock + 'static> LocalStore for DistinctLimiter<String, C> {
    fn sweep(&self) -> usize {
        DistinctLimiter::sweep(self)
    }

    fn export(&self) -> Vec<(String, Vec<u64>)> {
        Vec::new()
    }

    fn import(&self, entries: Vec<(String, Vec<u64>)>) -> usize {
        let _ = entries;
        0
    }

    fn len(&self) -> usize {
        DistinctLimiter::len(self)
    }

    /// None: keys are never evicted, only swept once they hold no value.
    fn evictions(&self) -> u64 {
        0
    }

    fn limited_evictions(&self) -> u64 {
        0
    }
}
