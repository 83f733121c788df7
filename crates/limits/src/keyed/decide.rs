//! The keyed limiter's whole decision, [`KeyedLimiter::check`] and its
//! kin: the key's slot found (or a new key's state made), the rule's
//! decision on it, the key's marks, and a step of the shard's sweep; and
//! its verdict alone, [`KeyedLimiter::allow`].

use super::kind::Kind;
use super::shard::Shard;
use super::slot::{Held, Slot};
use super::tables::with_table;
use super::{KeyedLimiter, Padded, SWEEP_PER_OPERATION};
use crate::{Clock, Decision, Mode, Receipt, RetryAfter, Settlement};
use parking_lot::Mutex;
use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::time::Duration;

impl<K: Hash + Eq + Send, C: Clock> KeyedLimiter<K, C> {
    /// Checks a request of `cost` for `key` now, recording it if allowed.
    pub fn check<Q>(&self, key: &Q, cost: u64) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.decide(key, None, cost, Mode::Record, |_| {})
    }

    /// Checks a request of `cost` for `key` at `now` (nanoseconds on the
    /// limiter's time scale), recording it if allowed.
    ///
    /// A `now` earlier than the latest time the key's shard has decided at
    /// is decided at that latest time, as a clock reading is: time never
    /// runs backwards within a shard, which is what makes forgetting an
    /// idle key lossless.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Rule};
    /// let rule = Rule::new(Algorithm::FixedWindow, "1/s".parse().unwrap());
    /// let limiter: KeyedLimiter<u64> = KeyedLimiter::new(rule);
    /// assert!(limiter.check_at(&7, 5_000_000_000, 1).allowed);
    /// // Half a second earlier is decided at 5 s, in the same window.
    /// assert!(!limiter.check_at(&7, 4_500_000_000, 1).allowed);
    /// ```
    pub fn check_at<Q>(&self, key: &Q, now: u64, cost: u64) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.decide(key, Some(now), cost, Mode::Record, |_| {})
    }

    /// What a check would answer now, without recording anything.
    pub fn peek<Q>(&self, key: &Q, cost: u64) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.decide(key, None, cost, Mode::Peek, |_| {})
    }

    /// What a check at `now` would answer, without recording anything (a
    /// `now` earlier than the shard's latest time is read as that time, as
    /// in [`check_at`](Self::check_at)).
    pub fn peek_at<Q>(&self, key: &Q, now: u64, cost: u64) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.decide(key, Some(now), cost, Mode::Peek, |_| {})
    }

    /// [`check`](Self::check)'s verdict alone
    /// ([`Decision::verdict`](crate::Decision::verdict)): `Ok(delay)` if
    /// the request passes (the time to hold it: zero but for the leaky
    /// bucket), `Err(retry_after)` if not.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, ManualClock, RetryAfter, Rule};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new(0);
    /// let rule = Rule::new(Algorithm::TokenBucket, "2/s".parse().unwrap());
    /// let limiter: KeyedLimiter<u64, _> = KeyedLimiter::with_clock(rule, clock.clone());
    /// assert!(limiter.allow(&7, 1).is_ok());
    /// assert!(limiter.allow(&7, 1).is_ok());
    /// let wait = limiter.allow(&7, 1).unwrap_err();
    /// assert_eq!(wait, RetryAfter::After(Duration::from_millis(500)));
    /// clock.advance(Duration::from_millis(500));
    /// assert_eq!(limiter.allow(&7, 1), Ok(Duration::ZERO));
    /// ```
    pub fn allow<Q>(&self, key: &Q, cost: u64) -> Result<Duration, RetryAfter>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.check(key, cost).verdict()
    }

    /// [`allow`](Self::allow) at `now` (nanoseconds on the limiter's time
    /// scale), as [`check_at`](Self::check_at).
    pub fn allow_at<Q>(&self, key: &Q, now: u64, cost: u64) -> Result<Duration, RetryAfter>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.check_at(key, now, cost).verdict()
    }

    /// The general form: decides at `now` (when `None`, the clock's reading,
    /// taken under the shard's lock), or at the latest time the shard
    /// decided at if that is later, so that one key's times never run
    /// backwards; calls `each` with every rate's own decision.
    // Written out: as a hint, this step of `check` stayed a call.
    #[inline(always)]
    pub fn decide<Q>(
        &self,
        key: &Q,
        now: Option<u64>,
        cost: u64,
        mode: Mode,
        mut each: impl FnMut(Decision),
    ) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        if let Some(book) = &self.penalty {
            return self
                .decide_penalized(book, key, now, cost, mode, &mut each)
                .0;
        }
        // The time decided at is not wanted here: its store is dead code.
        let mut at = 0;
        with_table!(self, |kind, shards| self
            .decide_in(kind, shards, key, now, cost, mode, each, &mut at))
    }

    /// [`check`](Self::check), and the receipt of the request if it was
    /// admitted at a cost of 1 or more: what [`settle`](Self::settle)
    /// takes once its real cost is known.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, ManualClock, Rule};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new(0);
    /// let rule = Rule::new(Algorithm::SlidingLog, "2/minute".parse().unwrap());
    /// let limiter: KeyedLimiter<String, _> = KeyedLimiter::with_clock(rule, clock.clone());
    /// let (_, receipt) = limiter.check_with_receipt("alice", 1);
    /// limiter.check("alice", 1);
    /// assert!(!limiter.check("alice", 1).allowed);
    /// clock.advance(Duration::from_secs(1));
    /// // The first request turned out not to count: its entry is dropped.
    /// limiter.settle("alice", receipt.unwrap(), 0);
    /// assert!(limiter.check("alice", 1).allowed);
    /// ```
    pub fn check_with_receipt<Q>(&self, key: &Q, cost: u64) -> (Decision, Option<Receipt>)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.decide_with_receipt(key, None, cost, Mode::Record, |_| {})
    }

    /// [`decide`](Self::decide), and the receipt of the request if it was
    /// admitted and recorded at a cost of 1 or more.
    pub fn decide_with_receipt<Q>(
        &self,
        key: &Q,
        now: Option<u64>,
        cost: u64,
        mode: Mode,
        each: impl FnMut(Decision),
    ) -> (Decision, Option<Receipt>)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let (decision, at) = self.decide_timed(key, now, cost, mode, each);
        let counted = decision.allowed && mode.records() && cost > 0;
        (decision, counted.then_some(Receipt { at, cost }))
    }

    /// [`decide`](Self::decide), and the time it decided at.
    // Written out: as a hint, this step of `check` stayed a call.
    #[inline(always)]
    pub(crate) fn decide_timed<Q>(
        &self,
        key: &Q,
        now: Option<u64>,
        cost: u64,
        mode: Mode,
        each: impl FnMut(Decision),
    ) -> (Decision, u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let (decision, at, _) = self.decide_banned(key, now, cost, mode, each);
        (decision, at)
    }

    /// [`decide_timed`](Self::decide_timed) by the rule alone, whatever
    /// its penalty.
    #[inline(always)]
    pub(crate) fn decide_plain<Q>(
        &self,
        key: &Q,
        now: Option<u64>,
        cost: u64,
        mode: Mode,
        each: impl FnMut(Decision),
    ) -> (Decision, u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let mut at = 0;
        let decision = with_table!(self, |kind, shards| self
            .decide_in(kind, shards, key, now, cost, mode, each, &mut at));
        (decision, at)
    }

    /// Settles a request admitted for `key` (its `receipt`) to its real
    /// `cost`, now: [`Rule::settle`](crate::Rule::settle) on the key's
    /// state. A key no longer held (idle, or evicted) holds nothing of the
    /// request: a charge then starts it afresh.
    pub fn settle<Q>(&self, key: &Q, receipt: Receipt, cost: u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.settle_in_time(key, None, receipt, cost);
    }

    /// [`settle`](Self::settle) at `now` (a `now` earlier than the shard's
    /// latest time is read as that time, as in [`check_at`](Self::check_at)).
    pub fn settle_at<Q>(&self, key: &Q, now: u64, receipt: Receipt, cost: u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.settle_in_time(key, Some(now), receipt, cost);
    }

    /// [`settle`](Self::settle) at `now`, or the clock's reading.
    fn settle_in_time<Q>(&self, key: &Q, now: Option<u64>, receipt: Receipt, cost: u64)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.settle_key(key, now, receipt, Settlement::To(cost));
    }

    /// Renews a request admitted for `key` (its `receipt`) now:
    /// [`Rule::renew`](crate::Rule::renew) on the key's state. Returns the
    /// renewed receipt, which is what settles the request from now on.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, ManualClock, Rule};
    ///
    /// let clock = ManualClock::new(0);
    /// let rule = Rule::new(Algorithm::SlidingLog, "1/s".parse().unwrap());
    /// let limiter = KeyedLimiter::<String, _>::with_clock(rule, clock.clone());
    /// let (_, receipt) = limiter.check_with_receipt("alice", 1);
    /// clock.set(900_000_000);
    /// let renewed = limiter.renew("alice", receipt.unwrap());
    /// clock.set(1_500_000_000);
    /// assert!(!limiter.check("alice", 1).allowed, "still held, renewed");
    /// limiter.settle("alice", renewed, 0);
    /// assert!(limiter.check("alice", 1).allowed);
    /// ```
    pub fn renew<Q>(&self, key: &Q, receipt: Receipt) -> Receipt
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.settle_key(key, None, receipt, Settlement::Renew)
    }

    /// [`renew`](Self::renew) at `now` (a `now` earlier than the shard's
    /// latest time is read as that time).
    pub fn renew_at<Q>(&self, key: &Q, now: u64, receipt: Receipt) -> Receipt
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.settle_key(key, Some(now), receipt, Settlement::Renew)
    }

    /// Settles the request of `receipt` for `key` at `now` (or the clock's
    /// reading) as `settlement` says: the receipt it is settled by from now
    /// on. A key no longer held (idle, or evicted)
    /// holds nothing of the request: a charge then starts it afresh.
    fn settle_key<Q>(
        &self,
        key: &Q,
        now: Option<u64>,
        receipt: Receipt,
        settlement: Settlement,
    ) -> Receipt
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        with_table!(self, |kind, shards| {
            let hash = self.hasher.hash_one(key);
            let mut guard = self.shard(shards, hash);
            let shard = &mut *guard;
            let now = shard.at_least_latest(now.unwrap_or_else(|| self.clock.now()));
            let settle = |held: &mut _| {
                receipt.settle_by(now, settlement, |r, cost| kind.settle(held, now, r, cost))
            };
            match shard.find(hash, key) {
                Some(idx) => {
                    let slot = &mut shard.slots[idx];
                    let settled = settle(&mut slot.state);
                    if kind.is_idle(&mut slot.state, now) {
                        shard.remove(idx);
                    }
                    settled
                }
                None => {
                    let mut state = kind.fresh();
                    let settled = settle(&mut state);
                    if !kind.is_idle(&mut state, now) {
                        let slot = Slot::new(hash, key.to_owned(), state, false);
                        self.insert(shard, kind, hash, slot, now);
                    }
                    settled
                }
            }
        })
    }

    /// [`decide`](Self::decide) in the limiter's shards, of its rule's kind;
    /// the time it decided at is written to `at` (an out-parameter: a
    /// returned pair cost a copy of the decision on the check's path).
    #[allow(clippy::too_many_arguments)]
    // Written out: as a hint, this step of `check` stayed a call.
    #[inline(always)]
    fn decide_in<Q, H: Held>(
        &self,
        kind: &impl Kind<Held = H>,
        shards: &[Padded<Mutex<Shard<K, H>>>],
        key: &Q,
        now: Option<u64>,
        cost: u64,
        mode: Mode,
        each: impl FnMut(Decision),
        at: &mut u64,
    ) -> Decision
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let mut guard = self.shard(shards, hash);
        let shard = &mut *guard;
        let now = shard.at_least_latest(now.unwrap_or_else(|| self.clock.now()));
        let mut added = false;
        let decision = match shard.find(hash, key) {
            Some(idx) => {
                let slot = &mut shard.slots[idx];
                slot.marks().set_referenced(true);
                let d = kind.decide(&mut slot.state, now, cost, mode, each);
                if mode.records() && limits_the_key(&d) {
                    slot.marks().set_denied(true);
                }
                // The decision's reset is zero exactly when the state is
                // idle (`Rule::decide`): no second look at the state.
                if d.reset_after.is_zero() {
                    shard.remove(idx);
                }
                d
            }
            None => {
                let mut state = kind.fresh();
                let d = kind.decide(&mut state, now, cost, mode, each);
                if mode.records() && !d.reset_after.is_zero() {
                    let slot = Slot::new(hash, key.to_owned(), state, limits_the_key(&d));
                    self.insert(shard, kind, hash, slot, now);
                    added = true;
                }
                d
            }
        };
        shard.sweep(kind, now, SWEEP_PER_OPERATION, !added);
        *at = now;
        decision
    }
}

/// Whether a recorded decision marks the key as limited: denied, other than
/// for a cost no state could ever admit (which says nothing of the key).
fn limits_the_key(d: &Decision) -> bool {
    !d.allowed && !d.retry_after.is_never()
}
