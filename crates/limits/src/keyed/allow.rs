//! The keyed limiter's verdict-only check, [`KeyedLimiter::allow`]: the
//! same key lookup, bookkeeping and sweep as [`KeyedLimiter::check`], with
//! [`Rule::allow`](crate::Rule::allow)'s verdict in place of the whole
//! decision (see `rule/allow.rs` for what that saves and why it is exact).

use super::kind::Kind;
use super::shard::Shard;
use super::slot::{Held, Slot};
use super::tables::with_table;
use super::{KeyedLimiter, Padded, SWEEP_PER_OPERATION};
use crate::{Clock, RetryAfter};
use parking_lot::Mutex;
use std::borrow::Borrow;
use std::hash::{BuildHasher, Hash};
use std::time::Duration;

impl<K: Hash + Eq + Send, C: Clock> KeyedLimiter<K, C> {
    /// Checks a request of `cost` for `key` now, recording it if allowed,
    /// like [`check`](Self::check), but answers only the verdict: `Ok(delay)`
    /// if it passes (the time to hold it: zero but for the leaky bucket),
    /// `Err(retry_after)` if not. Each equals the field of the [`Decision`]
    /// that `check` would have returned, to the nanosecond, and the key's
    /// state is left the same; `remaining`, `reset_after` and
    /// `refill_after` (for headers) are not computed, which makes it the
    /// cheaper call for a caller that does not send them.
    ///
    /// [`Decision`]: crate::Decision
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
        self.admit(key, None, cost)
    }

    /// [`allow`](Self::allow) at `now` (nanoseconds on the limiter's time
    /// scale), as [`check_at`](Self::check_at).
    pub fn allow_at<Q>(&self, key: &Q, now: u64, cost: u64) -> Result<Duration, RetryAfter>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.admit(key, Some(now), cost)
    }

    /// The steps of [`decide`](Self::decide) in Record mode, with
    /// `Rule::admit` (the verdict of [`Rule::allow`](crate::Rule::allow)) in place of `Rule::decide`: its `idle`
    /// is what the decision's zero `reset_after` says, so the same keys are
    /// dropped, tracked and marked limited. (Kept apart from `decide` rather
    /// than shared through closures: sharing cost `check` 10 instructions.)
    #[inline(always)]
    fn admit<Q>(&self, key: &Q, now: Option<u64>, cost: u64) -> Result<Duration, RetryAfter>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        with_table!(self, |kind, shards| self
            .admit_in(kind, shards, key, now, cost))
    }

    /// [`admit`](Self::admit) in the limiter's shards, of its rule's kind.
    #[inline(always)]
    fn admit_in<Q, H: Held>(
        &self,
        kind: &impl Kind<Held = H>,
        shards: &[Padded<Mutex<Shard<K, H>>>],
        key: &Q,
        now: Option<u64>,
        cost: u64,
    ) -> Result<Duration, RetryAfter>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let mut guard = self.shard(shards, hash);
        let shard = &mut *guard;
        let now = match now {
            Some(now) => now,
            None => shard.at_least_latest(self.clock.now()),
        };
        let mut added = false;
        let admission = match shard.find(hash, key) {
            Some(idx) => {
                let slot = &mut shard.slots[idx];
                slot.marks().set_referenced(true);
                let a = kind.admit(&mut slot.state, &mut shard.store, now, cost);
                if a.limits_the_key() {
                    slot.marks().set_denied(true);
                }
                if a.idle {
                    shard.remove(idx);
                }
                a
            }
            None => {
                let mut state = kind.fresh();
                let a = kind.admit(&mut state, &mut shard.store, now, cost);
                if !a.idle {
                    let slot = Slot::new(hash, key.to_owned(), state, a.limits_the_key());
                    self.insert(shard, kind, hash, slot, now);
                    added = true;
                } else {
                    state.release(&mut shard.store);
                }
                a
            }
        };
        shard.sweep(kind, now, SWEEP_PER_OPERATION, !added);
        admission.verdict
    }
}
