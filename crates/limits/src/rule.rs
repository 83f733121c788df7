//! A rule: one algorithm, one or more rates, decided all-or-nothing.
//!
//! Several rates on one rule ("10/second; 1000/hour") are checked together:
//! the request is allowed only if every rate allows it, and only then does
//! every rate record it; a denial records nothing anywhere. Each algorithm's
//! "allowed if nothing else arrives" only ever turns from no to yes, so the
//! longest of the rates' waits is the exact wait of the rule.

use crate::algorithms::rate_decision;
use crate::algorithms::{
    FixedWindow, LeakyBucket, NoLimit, RateAlgorithm, SlidingLog, SlidingWindow, SmoothedRate,
    TokenBucket,
};
pub use crate::state_kinds::KeyState;
use crate::state_kinds::{Engines, with_engines, with_one_engine};
use crate::{Algorithm, Decision, Mode, Rates, Receipt, RetryAfter, Settlement};
use std::time::Duration;

mod decide_any;

/// An algorithm with its rates; the pure decision function for one key.
///
/// ```
/// use limits::{Algorithm, Mode, Rule};
/// let rule = Rule::new(Algorithm::SlidingLog, "2/s".parse().unwrap());
/// let mut state = rule.new_state();
/// assert!(rule.check(&mut state, 0, 1).allowed);
/// assert!(rule.check(&mut state, 1, 1).allowed);
/// let denied = rule.check(&mut state, 2, 1);
/// assert!(!denied.allowed);
/// // The oldest entry (t = 0) leaves the window (t - 1s, t] at t = 1s.
/// assert_eq!(denied.retry_after.duration().unwrap().as_nanos(), 1_000_000_000 - 2);
/// ```
#[derive(Clone, Debug)]
pub struct Rule {
    algorithm: Algorithm,
    rates: Rates,
    burst: Option<u64>,
    engines: Engines,
}

/// Two rules are the same if they have the same algorithm, rates and burst:
/// then a key's state under one means the same under the other.
impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        (self.algorithm, &self.rates, self.burst) == (other.algorithm, &other.rates, other.burst)
    }
}

impl Eq for Rule {}

impl Rule {
    /// A rule applying `algorithm` to every one of `rates`.
    pub fn new(algorithm: Algorithm, rates: Rates) -> Rule {
        let mut rule = Rule {
            algorithm,
            rates,
            burst: None,
            engines: Engines::None(Vec::new()),
        };
        rule.engines = rule.build_engines();
        rule
    }

    /// Sets the leaky bucket's queue capacity (nginx's `burst`) for every
    /// rate; by default it is each rate's limit. Other algorithms ignore it.
    ///
    /// ```
    /// use limits::{Algorithm, Rule};
    /// let rule = Rule::new(Algorithm::LeakyBucket, "10/s".parse().unwrap()).with_burst(0);
    /// let mut state = rule.new_state();
    /// assert!(rule.check(&mut state, 0, 1).allowed);   // leaves at once
    /// assert!(!rule.check(&mut state, 0, 1).allowed);  // no room to wait
    /// ```
    pub fn with_burst(mut self, burst: u64) -> Rule {
        self.burst = Some(burst);
        self.engines = self.build_engines();
        self
    }

    /// A rule of `algorithm` at `rates`, with the leaky bucket's burst if
    /// one is given: how every front end (flags, config file) builds one.
    ///
    /// ```
    /// use limits::{Algorithm, Rule};
    /// let rates: limits::Rates = "10/s".parse().unwrap();
    /// assert_eq!(Rule::build(Algorithm::LeakyBucket, rates.clone(), Some(4)).burst(), Some(4));
    /// assert_eq!(Rule::build(Algorithm::LeakyBucket, rates, None).burst(), None);
    /// ```
    pub fn build(algorithm: Algorithm, rates: Rates, burst: Option<u64>) -> Rule {
        let rule = Rule::new(algorithm, rates);
        match burst {
            Some(burst) => rule.with_burst(burst),
            None => rule,
        }
    }

    fn build_engines(&self) -> Engines {
        let rates = self.rates.iter().copied();
        match self.algorithm {
            Algorithm::None => Engines::None(rates.map(NoLimit::new).collect()),
            Algorithm::FixedWindow => Engines::Fixed(rates.map(FixedWindow::new).collect()),
            Algorithm::SlidingLog => Engines::Log(rates.map(SlidingLog::new).collect()),
            Algorithm::TokenBucket => Engines::Token(rates.map(TokenBucket::new).collect()),
            Algorithm::SlidingWindow => Engines::Window(rates.map(SlidingWindow::new).collect()),
            Algorithm::LeakyBucket => Engines::Leaky(
                rates
                    .map(|r| LeakyBucket::new(r, self.burst.unwrap_or(r.limit())))
                    .collect(),
            ),
            Algorithm::SmoothedRate => Engines::Smoothed(rates.map(SmoothedRate::new).collect()),
        }
    }

    /// The algorithm.
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The rates, in the order given.
    pub fn rates(&self) -> &Rates {
        &self.rates
    }

    /// The leaky bucket's burst, if one was set.
    pub fn burst(&self) -> Option<u64> {
        self.burst
    }

    /// The largest cost a request can ever pass with: the smallest limit (for
    /// the leaky bucket, the smallest burst + 1). Larger costs are denied with
    /// [`RetryAfter::Never`].
    pub fn max_cost(&self) -> u64 {
        self.engines.max_cost()
    }

    /// Whether a request of `cost` can ever pass this rule.
    pub fn is_valid_cost(&self, cost: u64) -> bool {
        cost <= self.max_cost()
    }

    /// The state of a key never seen.
    pub fn new_state(&self) -> KeyState {
        KeyState(self.engines.new_state())
    }

    /// Decides a request of `cost` at `now` and records it if allowed.
    pub fn check(&self, state: &mut KeyState, now: u64, cost: u64) -> Decision {
        self.decide(state, now, cost, Mode::Record, |_| {})
    }

    /// [`check`](Rule::check)'s verdict alone ([`Decision::verdict`]):
    /// `Ok(delay)` if the request passes, `Err(retry_after)` if not.
    ///
    /// ```
    /// use limits::{Algorithm, RetryAfter, Rule};
    /// use std::time::Duration;
    /// let rule = Rule::new(Algorithm::TokenBucket, "2/s".parse().unwrap());
    /// let mut state = rule.new_state();
    /// assert_eq!(rule.allow(&mut state, 0, 2), Ok(Duration::ZERO));
    /// // One token comes back every 500 ms.
    /// let wait = RetryAfter::After(Duration::from_millis(500));
    /// assert_eq!(rule.allow(&mut state, 0, 1), Err(wait));
    /// assert_eq!(rule.allow(&mut state, 0, 3), Err(RetryAfter::Never));
    /// ```
    pub fn allow(&self, state: &mut KeyState, now: u64, cost: u64) -> Result<Duration, RetryAfter> {
        self.check(state, now, cost).verdict()
    }

    /// [`check`](Rule::check), and the receipt of the request if it was
    /// admitted at a cost of 1 or more: what [`settle`](Rule::settle) takes
    /// once its real cost is known. The receipt's time is the time the rule
    /// decided at (`now`, or the key's latest time if that is later).
    ///
    /// ```
    /// use limits::{Algorithm, Rule};
    /// let rule = Rule::new(Algorithm::FixedWindow, "2/s".parse().unwrap());
    /// let mut state = rule.new_state();
    /// let (first, receipt) = rule.check_with_receipt(&mut state, 0, 1);
    /// assert!(first.allowed);
    /// rule.check(&mut state, 1, 1);
    /// assert!(!rule.check(&mut state, 2, 1).allowed);
    /// // The first request failed upstream: it costs nothing after all.
    /// rule.settle(&mut state, 3, receipt.unwrap(), 0);
    /// assert!(rule.check(&mut state, 4, 1).allowed);
    /// ```
    pub fn check_with_receipt(
        &self,
        state: &mut KeyState,
        now: u64,
        cost: u64,
    ) -> (Decision, Option<Receipt>) {
        let (decision, at) = self.decide_timed(state, now, cost, Mode::Record, |_| {});
        let receipt = (decision.allowed && cost > 0).then_some(Receipt { at, cost });
        (decision, receipt)
    }

    /// [`decide`](Rule::decide), and the time it decided at: `now`, or the
    /// key's latest time if that is later (a key's time never runs
    /// backwards). A store that keeps the state elsewhere gives it as its
    /// verdict's time ([`Verdict::decided_at`](crate::Verdict::decided_at)),
    /// the [`Receipt::at`] its request is settled by.
    ///
    /// ```
    /// use limits::{Algorithm, Mode, Rule};
    /// let rule = Rule::new(Algorithm::SlidingLog, "2/s".parse().unwrap());
    /// let mut state = rule.new_state();
    /// let (_, at) = rule.decide_timed(&mut state, 50, 1, Mode::Record, |_| {});
    /// assert_eq!(at, 50);
    /// // An earlier time is decided at the key's latest.
    /// let (_, at) = rule.decide_timed(&mut state, 10, 1, Mode::Record, |_| {});
    /// assert_eq!(at, 50);
    /// ```
    pub fn decide_timed(
        &self,
        state: &mut KeyState,
        now: u64,
        cost: u64,
        mode: Mode,
        each: impl FnMut(Decision),
    ) -> (Decision, u64) {
        if !self.owns(state) {
            *state = self.new_state();
        }
        let at = self.advance(state, now);
        (self.decide(state, now, cost, mode, each), at)
    }

    /// Brings every rate's state up to `now` and returns the time to act
    /// at: `now`, or the key's latest time if that is later.
    fn advance(&self, state: &mut KeyState, now: u64) -> u64 {
        with_engines!(
            &self.engines,
            &mut state.0,
            |e, s| e
                .iter()
                .zip(s.iter_mut())
                .map(|(a, s)| a.advance(s, now))
                .max()
                .unwrap_or(now),
            now
        )
    }

    /// Settles a request this rule admitted (its `receipt`) to its real
    /// `cost`, at `now`: a lower cost gives back the difference, a higher
    /// one takes the rest whether or not it fits (the debt the next
    /// requests wait for), as each algorithm's
    /// [`refund`](RateAlgorithm::refund) and
    /// [`charge`](RateAlgorithm::charge) say, on every rate. A state of
    /// another rule holds nothing of the request and is left as it is.
    pub fn settle(&self, state: &mut KeyState, now: u64, receipt: Receipt, cost: u64) {
        if !self.owns(state) {
            return;
        }
        with_engines!(
            &self.engines,
            &mut state.0,
            |e, s| for (a, s) in e.iter().zip(s.iter_mut()) {
                a.settle(s, now, receipt, cost);
            },
            ()
        )
    }

    /// Renews a request this rule admitted (its `receipt`) at `now` (or the
    /// key's latest time, if later), as one step: it gives back what it
    /// took and takes it again then ([`Receipt::renew_with`]). What a
    /// request that lasts is counted by: a sliding log's entry of a request
    /// still under way moves to now, so it stays in the window (a cap on
    /// requests in flight holds its slot past one window). Returns the
    /// renewed receipt. A state of another rule is left as it is.
    ///
    /// ```
    /// use limits::{Algorithm, Mode, Receipt, Rule};
    ///
    /// let rule = Rule::new(Algorithm::SlidingLog, "1/s".parse().unwrap());
    /// let mut state = rule.new_state();
    /// let (_, at) = rule.decide_timed(&mut state, 0, 1, Mode::Record, |_| {});
    /// let renewed = rule.renew(&mut state, 900_000_000, Receipt { at, cost: 1 });
    /// assert_eq!(renewed.at, 900_000_000);
    /// // A second after it was admitted, the request still holds its place.
    /// assert!(!rule.peek(&mut state, 1_000_000_000, 1).allowed);
    /// assert!(rule.peek(&mut state, 1_900_000_000, 1).allowed);
    /// ```
    pub fn renew(&self, state: &mut KeyState, now: u64, receipt: Receipt) -> Receipt {
        if !self.owns(state) {
            return Receipt { at: now, ..receipt };
        }
        let at = self.advance(state, now);
        receipt.renew_with(at, |r, cost| self.settle(state, at, r, cost))
    }

    /// Settles a request this rule admitted (its `receipt`) as `settlement`
    /// says: [`settle`](Self::settle) to a cost, or [`renew`](Self::renew).
    /// Returns the receipt that settles it from now on.
    ///
    /// ```
    /// use limits::{Algorithm, Receipt, Rule, Settlement};
    ///
    /// let rule = Rule::new(Algorithm::TokenBucket, "2/s".parse().unwrap());
    /// let mut state = rule.new_state();
    /// rule.check(&mut state, 0, 2);
    /// let receipt = Receipt { at: 0, cost: 2 };
    /// assert_eq!(rule.settle_as(&mut state, 0, receipt, Settlement::To(1)), receipt);
    /// assert_eq!(rule.peek(&mut state, 0, 1).remaining, 1);
    /// ```
    pub fn settle_as(
        &self,
        state: &mut KeyState,
        now: u64,
        receipt: Receipt,
        settlement: Settlement,
    ) -> Receipt {
        match settlement {
            Settlement::To(cost) => {
                self.settle(state, now, receipt, cost);
                receipt
            }
            Settlement::Renew => self.renew(state, now, receipt),
        }
    }

    /// Decides without recording: `allowed` and `retry_after` say what a check
    /// would answer; `remaining` and the other fields describe the state as it
    /// is. (`state` is `&mut` only to drop what has expired.)
    pub fn peek(&self, state: &mut KeyState, now: u64, cost: u64) -> Decision {
        self.decide(state, now, cost, Mode::Peek, |_| {})
    }

    /// Decides, calling `each` with every rate's own decision in order, and
    /// returns the combined one. Its `reset_after` is zero exactly when
    /// [`is_idle`](Rule::is_idle) would say so of the state at `now` after
    /// the decision (each rate's reset is zero exactly when it is idle, and
    /// the combined reset is the longest), so a caller need not ask again.
    #[inline]
    pub fn decide(
        &self,
        state: &mut KeyState,
        now: u64,
        cost: u64,
        mode: Mode,
        mut each: impl FnMut(Decision),
    ) -> Decision {
        // A single-rate rule's own state (the usual case): one match on the
        // rule, one on the state (also the ownership test), one call.
        with_one_engine!(
            &self.engines,
            |e, pick| match pick(&mut state.0) {
                Some(one) => {
                    let decision = e.decide_one(one, now, cost, mode);
                    each(decision);
                    decision
                }
                None => self.decide_any(state, now, cost, mode, &mut each),
            },
            self.decide_any(state, now, cost, mode, &mut each)
        )
    }

    /// Whether `state` can no longer affect any decision at or after `now`,
    /// so that forgetting it is lossless.
    pub fn is_idle(&self, state: &mut KeyState, now: u64) -> bool {
        with_engines!(
            &self.engines,
            &mut state.0,
            |e, s| all_idle(e, s, now),
            true
        )
    }

    /// Bytes of heap memory `state` holds beyond its inline size.
    pub fn heap_bytes(&self, state: &KeyState) -> usize {
        state.0.heap_bytes()
    }

    /// How much of its quota `state` has used at `now`, in thousandths of the
    /// most used rate's capacity: 0 for a key that is back to full (or whose
    /// state belongs to another rule), 1000 only when some rate has nothing
    /// left (the next request of cost 1 would be denied). It is what
    /// forgetting the key would give back, as a share of the limit.
    ///
    /// ```
    /// use limits::{Algorithm, Rule};
    /// let rule = Rule::new(Algorithm::SlidingLog, "10/minute; 4/s".parse().unwrap());
    /// let mut state = rule.new_state();
    /// assert_eq!(rule.used_permille(&mut state, 0), 0);
    /// rule.check(&mut state, 0, 1);
    /// assert_eq!(rule.used_permille(&mut state, 0), 250); // 1 of 4 per second
    /// rule.check(&mut state, 0, 3);
    /// assert_eq!(rule.used_permille(&mut state, 0), 1000);
    /// assert_eq!(rule.used_permille(&mut state, 1_000_000_000), 400); // 4 of 10
    /// ```
    pub fn used_permille(&self, state: &mut KeyState, now: u64) -> u16 {
        fn used<A: RateAlgorithm>(engines: &[A], states: &mut [A::State], now: u64) -> u16 {
            let mut most = 0;
            for (a, s) in engines.iter().zip(states.iter_mut()) {
                let t = a.advance(s, now);
                if a.reset_after(s, t) == 0 {
                    continue; // back to full: nothing used
                }
                let capacity = a.capacity().max(1);
                let left = a.remaining(s, t).min(capacity);
                let share = u128::from(capacity - left) * 1000 / u128::from(capacity);
                most = most.max(u16::try_from(share).unwrap_or(1000));
            }
            most
        }
        with_engines!(&self.engines, &mut state.0, |e, s| used(e, s, now), 0)
    }

    /// The per-rate algorithms (the keyed table picks its slot type by them).
    pub(crate) fn engines(&self) -> &Engines {
        &self.engines
    }

    /// Whether `state` was made by a rule of this shape.
    fn owns(&self, state: &KeyState) -> bool {
        self.engines.owns(&state.0)
    }
}

/// Whether every rate's state is idle at `now`; one rate without the
/// iterators (the sweep asks this of one or two keys at a time).
fn all_idle<A: RateAlgorithm>(engines: &[A], states: &mut [A::State], now: u64) -> bool {
    match (engines, states) {
        ([a], [s]) => a.is_idle(s, now),
        (e, s) => e.iter().zip(s.iter_mut()).all(|(a, s)| a.is_idle(s, now)),
    }
}

/// The all-or-nothing decision over one algorithm's rates.
fn decide_rates<A: RateAlgorithm>(
    engines: &[A],
    states: &mut [A::State],
    now: u64,
    cost: u64,
    mode: Mode,
    each: &mut impl FnMut(Decision),
) -> Decision {
    // One rate, the usual rule (reached here from a state of another shape).
    if let ([a], [s]) = (engines, &mut *states) {
        let decision = a.decide_one(s, now, cost, mode);
        each(decision);
        return decision;
    }
    let allowed = cost == 0
        || engines.iter().zip(states.iter_mut()).all(|(a, s)| {
            let t = a.advance(s, now);
            a.check(s, t, cost).is_ok()
        });
    let mut combined: Option<Decision> = None;
    for (a, s) in engines.iter().zip(states.iter_mut()) {
        let t = a.advance(s, now);
        let verdict = if allowed {
            Ok(())
        } else {
            // Some rate denies; this one's own wait (zero if it would allow).
            Err(a.check(s, t, cost).err().unwrap_or(RetryAfter::ZERO))
        };
        let decision = rate_decision(a, s, t, cost, mode, verdict);
        each(decision);
        combined = Some(combined.map_or(decision, |c| c.combine(decision)));
    }
    combined.unwrap_or(Decision::allow(0))
}
