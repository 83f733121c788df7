//! The reference for one key of a rule: one [`Model`] per rate, decided
//! all-or-nothing, with every field of a decision derived by definition.
//!
//! `remaining` is the most cost-1 requests that would pass one after another
//! (found as the largest cost that passes at once: see
//! [`RuleModel::remaining`]); `retry_after`, `reset_after` and
//! `refill_after` by searching for the first nanosecond at which the
//! defining condition holds. No formula of
//! the real limiters is repeated here, so the two cannot share a mistake.

use crate::Model;
use limits::{Algorithm, Decision, Mode, Receipt, RetryAfter};
use std::time::Duration;

/// One key of a rule: its rates' models, in the rule's rate order.
#[derive(Clone, Debug)]
pub struct RuleModel(pub Vec<Model>);

impl RuleModel {
    /// A key never seen, for `algorithm` with `rates` as (limit, window ns).
    pub fn new(algorithm: Algorithm, rates: &[(u64, u64)], burst: Option<u64>) -> RuleModel {
        RuleModel(
            rates
                .iter()
                .map(|&(l, w)| Model::new(algorithm, l, w, burst))
                .collect(),
        )
    }

    /// The largest cost that can ever pass: the smallest rate's capacity.
    pub fn capacity(&self) -> u64 {
        self.0.iter().map(Model::capacity).min().unwrap_or(u64::MAX)
    }

    /// Whether every rate would let a request of cost `c` pass at `t`. A
    /// request of cost 0 asks for nothing, so it always passes (a single
    /// leaky-bucket model would queue it as one unit).
    pub fn allows(&self, t: u64, c: u64) -> bool {
        c == 0 || self.0.iter().all(|m| m.allows(t, c))
    }

    fn record(&mut self, t: u64, c: u64) {
        for m in &mut self.0 {
            m.record(t, c);
        }
    }

    /// Settles at `t` a request admitted with `receipt` to its real `cost`:
    /// every rate refunds the difference ([`Model::refund`]) or charges it
    /// ([`Model::charge`]).
    pub fn settle(&mut self, t: u64, receipt: Receipt, cost: u64) {
        for m in &mut self.0 {
            if cost < receipt.cost {
                m.refund(t, receipt.at, receipt.cost - cost);
            } else if cost > receipt.cost {
                m.charge(t, cost - receipt.cost);
            }
        }
    }

    /// Renews at `t` a request admitted with `receipt`: settled to nothing,
    /// then charged its cost again at `t`. Returns its receipt from now on.
    pub fn renew(&mut self, t: u64, receipt: Receipt) -> Receipt {
        self.settle(t, receipt, 0);
        self.settle(t, Receipt { at: t, cost: 0 }, receipt.cost);
        Receipt { at: t, ..receipt }
    }

    /// Cost-1 requests that would pass at t, one after another. In every
    /// model, recording n requests of cost 1 at one instant is recording one
    /// of cost n, and what passes at a cost passes at any smaller one: so
    /// this is the largest cost (at most the capacity) that passes at t,
    /// found by bisection rather than by recording a unit at a time (which
    /// would cost the limit's worth of steps per decision).
    pub fn remaining(&self, t: u64) -> u64 {
        let (mut lo, mut hi) = (0, self.capacity());
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.allows(t, mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// Every rate back to its full limit: the state of a key never seen.
    fn is_full(&self, t: u64) -> bool {
        self.rates().all(|one| one.remaining(t) == one.capacity())
    }

    /// Each rate alone, as a rule of one rate.
    fn rates(&self) -> impl Iterator<Item = RuleModel> + '_ {
        self.0.iter().map(|m| RuleModel(vec![m.clone()]))
    }

    /// The wait until a request of `c` passes at `t` if nothing else arrives.
    fn wait(&self, t: u64, c: u64) -> RetryAfter {
        if self.allows(t, c) {
            RetryAfter::ZERO
        } else if c > self.capacity() {
            RetryAfter::Never
        } else {
            RetryAfter::After(ns(first_after(t, |at| self.allows(at, c))))
        }
    }

    /// The decision, every field derived from `allows` by definition.
    pub fn decide(&mut self, t: u64, c: u64) -> Decision {
        self.decide_each(t, c, Mode::Record).0
    }

    /// The combined decision and each rate's own, as a
    /// [`Verdict`](limits::Verdict) has them: every rate carries the combined
    /// `allowed`, its own wait when the rule denies, and its own remaining,
    /// reset and refill after the request. A peek records nothing; with
    /// [`Mode::RecordAlways`] a denial is recorded as each rate's
    /// [`Model::record_denied`] says, and the waits are those after it.
    pub fn decide_each(&mut self, t: u64, c: u64, mode: Mode) -> (Decision, Vec<Decision>) {
        let allowed = self.allows(t, c);
        let delays: Vec<u64> = self
            .0
            .iter()
            .map(|m| if allowed && c > 0 { m.delay(t, c) } else { 0 })
            .collect();
        if allowed && c > 0 && mode.records() {
            self.record(t, c);
        }
        if !allowed && mode == Mode::RecordAlways {
            for m in &mut self.0 {
                m.record_denied(t, c);
            }
        }
        let retry: Vec<RetryAfter> = self.rates().map(|one| one.wait(t, c)).collect();
        let combined_retry = self.wait(t, c);
        let combined = self.describe(t, allowed, combined_retry, delays.iter().copied().max());
        let each = self
            .rates()
            .zip(retry.into_iter().zip(delays))
            .map(|(one, (retry, delay))| one.describe(t, allowed, retry, Some(delay)))
            .collect();
        (combined, each)
    }

    /// A decision at `t` on this state (after any recording).
    fn describe(&self, t: u64, allowed: bool, retry: RetryAfter, delay: Option<u64>) -> Decision {
        let remaining = self.remaining(t);
        let reset_after = if self.is_full(t) {
            0
        } else {
            first_after(t, |at| self.is_full(at))
        };
        let refill_after = if remaining == self.capacity() {
            0
        } else {
            first_after(t, |at| self.remaining(at) > remaining)
        };
        Decision {
            allowed,
            remaining,
            retry_after: if allowed { RetryAfter::ZERO } else { retry },
            reset_after: ns(reset_after),
            delay: ns(delay.unwrap_or(0)),
            refill_after: ns(refill_after),
        }
    }
}

fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

/// The smallest d >= 1 with `holds(t + d)`, for a condition that, once true,
/// stays true. Panics if there is none within 2^50 ns.
pub fn first_after(t: u64, holds: impl Fn(u64) -> bool) -> u64 {
    let mut hi = 1u64;
    while !holds(t + hi) {
        hi *= 2;
        assert!(hi < 1 << 50, "condition never holds after t={t}");
    }
    let mut lo = hi / 2; // holds(t + lo) is false, or lo == 0
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if holds(t + mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}
