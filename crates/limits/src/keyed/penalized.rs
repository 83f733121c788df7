//! A keyed limiter whose rule has a [`Penalty`]: each decision goes through
//! the key's penalty state (the `penalty` module's book, beside the
//! limiter's table), which bans repeat offenders.

use super::KeyedLimiter;
use crate::penalty::PenaltyBook;
use crate::{Ban, Clock, Decision, Mode, Penalty};
use smallvec::SmallVec;
use std::borrow::Borrow;
use std::hash::Hash;

impl<K: Hash + Eq + Send, C: Clock> KeyedLimiter<K, C> {
    /// This limiter with `penalty`: a key its rule denies `penalty.after()`
    /// times within `penalty.within()` is refused outright for the ban
    /// ([`Penalty`] says exactly what counts). Every decision of the
    /// limiter ([`check`](Self::check), [`peek`](Self::peek), a
    /// [`Store`](crate::Store)'s) goes through it. The penalty states count
    /// against no key cap of the limiter's, but are capped at as many.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, ManualClock, Penalty, RetryAfter, Rule};
    /// use std::time::Duration;
    ///
    /// let clock = ManualClock::new(0);
    /// let rule = Rule::new(Algorithm::SlidingLog, "1/s".parse().unwrap());
    /// let penalty = Penalty::new(3, Duration::from_secs(10), Duration::from_secs(60), None).unwrap();
    /// let limiter: KeyedLimiter<String, _> = KeyedLimiter::with_clock(rule, clock.clone()).with_penalty(penalty);
    /// assert!(limiter.check("mallory", 1).allowed);
    /// limiter.check("mallory", 1);
    /// limiter.check("mallory", 1);
    /// let banned = limiter.check("mallory", 1); // the third denial within 10 s
    /// assert_eq!(banned.retry_after, RetryAfter::After(Duration::from_secs(60)));
    /// clock.advance(Duration::from_secs(30));
    /// assert!(!limiter.check("mallory", 1).allowed, "still banned");
    /// assert_eq!(limiter.bans(), 1);
    /// clock.advance(Duration::from_secs(30));
    /// assert!(limiter.check("mallory", 1).allowed);
    /// ```
    pub fn with_penalty(mut self, penalty: Penalty) -> Self {
        let shards = self.shard_count();
        let max_keys = (self.per_shard_cap != usize::MAX)
            .then(|| self.per_shard_cap * shards + self.shards_with_one_more);
        self.penalty = Some(Box::new(PenaltyBook::new(penalty, shards, max_keys)));
        self
    }

    /// The limiter's penalty, if it has one.
    pub fn penalty(&self) -> Option<&Penalty> {
        self.penalty.as_deref().map(PenaltyBook::penalty)
    }

    /// Bans started so far (zero without a penalty).
    pub fn bans(&self) -> u64 {
        self.penalty.as_deref().map_or(0, PenaltyBook::bans)
    }

    /// Penalty states not kept for want of room (the cap was full of
    /// states that still matter): each a key whose denials went uncounted.
    pub fn untracked_penalties(&self) -> u64 {
        self.penalty.as_deref().map_or(0, PenaltyBook::untracked)
    }

    /// Keys holding a penalty state: denied lately, or banned.
    pub fn penalized_keys(&self) -> usize {
        self.penalty.as_deref().map_or(0, PenaltyBook::len)
    }

    /// Every penalty state that still matters, as numbers
    /// ([`Penalty::encode_state`]): saved beside [`export`](Self::export).
    pub fn export_penalties(&self) -> Vec<(K, Vec<u64>)>
    where
        K: Clone,
    {
        let now = self.clock.now();
        self.penalty
            .as_deref()
            .map_or_else(Vec::new, |book| book.export(now))
    }

    /// Loads penalty states written by
    /// [`export_penalties`](Self::export_penalties); returns how many were
    /// loaded (none without a penalty).
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, ManualClock, Penalty, Rule};
    /// use std::time::Duration;
    ///
    /// let rule = Rule::new(Algorithm::FixedWindow, "1/s".parse().unwrap());
    /// let penalty = Penalty::new(1, Duration::from_secs(1), Duration::from_secs(60), None).unwrap();
    /// let make = || KeyedLimiter::<String, _>::with_clock(rule.clone(), ManualClock::new(0)).with_penalty(penalty);
    /// let before = make();
    /// before.check("mallory", 1);
    /// before.check("mallory", 1); // denied: banned for a minute
    /// let after = make();
    /// after.clock().set(5_000_000_000);
    /// assert_eq!(after.import_penalties(before.export_penalties()), 1);
    /// assert!(!after.check("mallory", 1).allowed, "the ban survived the restart");
    /// ```
    pub fn import_penalties(&self, entries: impl IntoIterator<Item = (K, Vec<u64>)>) -> usize {
        let now = self.clock.now();
        self.penalty
            .as_deref()
            .map_or(0, |book| book.import(entries, now))
    }

    /// [`decide_timed`](Self::decide_timed), and the ban that refused the
    /// request, if one did.
    pub(crate) fn decide_banned<Q>(
        &self,
        key: &Q,
        now: Option<u64>,
        cost: u64,
        mode: Mode,
        mut each: impl FnMut(Decision),
    ) -> (Decision, u64, Option<Ban>)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        match &self.penalty {
            Some(book) => self.decide_penalized(book, key, now, cost, mode, &mut each),
            None => {
                let (decision, at) = self.decide_plain(key, now, cost, mode, each);
                (decision, at, None)
            }
        }
    }

    /// The decision through `book`: the ban first, then the rule (every
    /// rate's decision handed to `each`, the banned form of it when a ban
    /// refuses); the time decided at and the ban, if one refused.
    // Out of line, and `each` behind a reference: one copy of the rule's
    // decision per key type, not one more in every caller of `decide`.
    #[inline(never)]
    pub(crate) fn decide_penalized<Q>(
        &self,
        book: &PenaltyBook<K>,
        key: &Q,
        now: Option<u64>,
        cost: u64,
        mode: Mode,
        each: &mut dyn FnMut(Decision),
    ) -> (Decision, u64, Option<Ban>)
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let now = now.unwrap_or_else(|| self.clock.now());
        let mut rates: SmallVec<[Decision; 2]> = SmallVec::new();
        let mut at = now;
        let (decision, ban, now) = book.decide(key, now, mode, |t, m| {
            let (d, decided_at) = self.decide_plain(key, Some(t), cost, m, |d| rates.push(d));
            at = decided_at;
            d
        });
        match ban {
            Some(ban) => rates.into_iter().for_each(|d| each(ban.refuse(now, d))),
            None => rates.into_iter().for_each(each),
        }
        (decision, at, ban)
    }

    /// The number of shards.
    fn shard_count(&self) -> usize {
        1usize.checked_shl(64 - self.shard_shift).unwrap_or(1)
    }

    /// Drops the penalty states that can no longer change a decision.
    pub(super) fn sweep_penalties(&self, now: u64) -> usize {
        self.penalty.as_deref().map_or(0, |book| book.sweep(now))
    }
}
