//! A key's state as plain numbers, so that a server can save its limits on
//! shutdown and read them back on start (`limits serve --state FILE`):
//! a restart must not hand every client a fresh limit.
//!
//! Layout: `[tag, rates, ...per rate]` with, per rate, fixed window
//! `[index, count]`, sliding log `[entries, (time, cost)...]`, sliding
//! window `[index, previous, current]`, buckets `[high, low]` of the scaled
//! time, smoothed rate `[estimate, time]`. Times are the clock's nanoseconds (Unix epoch for the system
//! clock). A sliding log's words of the earlier layout, one time per unit
//! of cost (`[len, times...]` under [`UNIT_LOG`]), are still read.

use crate::algorithms::{
    FixedWindowState, LeakyBucketState, ScaledTime, SlidingLogState, SlidingWindowState,
    SmoothedRate, SmoothedRateState, TokenBucketState,
};
use crate::state_kinds::{ManyStates, StateKind, StatesRef};
use crate::{KeyState, Rule};

impl Rule {
    /// The state as numbers; [`decode_state`](Rule::decode_state) reads them back.
    ///
    /// ```
    /// use limits::{Algorithm, Rule};
    /// let rule = Rule::new(Algorithm::SlidingLog, "3/s".parse().unwrap());
    /// let mut state = rule.new_state();
    /// rule.check(&mut state, 5, 2);
    /// let words = rule.encode_state(&state);
    /// let mut back = rule.decode_state(&words).unwrap();
    /// assert_eq!(rule.check(&mut back, 6, 1).remaining, 0);
    /// assert!(!rule.check(&mut back, 7, 1).allowed);
    /// ```
    pub fn encode_state(&self, state: &KeyState) -> Vec<u64> {
        let mut out = vec![tag(state.0.view())];
        match state.0.view() {
            StatesRef::None(s) => out.push(s.len() as u64),
            StatesRef::Fixed(s) => {
                out.push(s.len() as u64);
                s.iter().for_each(|f| out.extend([f.index, f.count]));
            }
            StatesRef::Log(s) => {
                out.push(s.len() as u64);
                for log in s {
                    out.push(log.len() as u64);
                    log.iter().for_each(|(t, cost)| out.extend([t, cost]));
                }
            }
            StatesRef::Window(s) => {
                out.push(s.len() as u64);
                s.iter()
                    .for_each(|w| out.extend([w.index, w.previous, w.current]));
            }
            StatesRef::Token(s) => {
                out.push(s.len() as u64);
                s.iter().for_each(|t| out.extend(t.full_at.0));
            }
            StatesRef::Leaky(s) => {
                out.push(s.len() as u64);
                s.iter().for_each(|l| out.extend(l.next_slot.0));
            }
            StatesRef::Smoothed(s) => {
                out.push(s.len() as u64);
                s.iter().for_each(|e| out.extend([e.estimate, e.at]));
            }
        }
        out
    }

    /// Reads numbers written by [`encode_state`](Rule::encode_state) for a
    /// rule of the same algorithm and rates; `None` if they do not fit this
    /// rule (another algorithm, other rates, counts above the limit).
    pub fn decode_state(&self, words: &[u64]) -> Option<KeyState> {
        let fresh = self.new_state();
        let (&tag_word, rest) = words.split_first()?;
        let unit_log = tag_word == UNIT_LOG && matches!(fresh.0.view(), StatesRef::Log(_));
        if tag_word != tag(fresh.0.view()) && !unit_log {
            return None;
        }
        let (&rates, rest) = rest.split_first()?;
        if rates != self.rates().len() as u64 {
            return None;
        }
        let mut words = Words(rest);
        // A window index whose start is past the end of time (u64
        // nanoseconds) can only come from a damaged or forged file.
        let in_time = |index: u64, window: u64| index.checked_mul(window).is_some();
        let kind = match fresh.0.view() {
            StatesRef::None(s) => ManyStates::None(s.into()),
            StatesRef::Fixed(_) => ManyStates::Fixed(self.each_rate(|_, limit, window| {
                let w = words.take(2)?;
                (w[1] <= limit && in_time(w[0], window)).then_some(FixedWindowState {
                    index: w[0],
                    count: w[1],
                })
            })?),
            StatesRef::Log(_) if unit_log => ManyStates::Log(self.each_rate(|_, limit, _| {
                let len = *words.take(1)?.first()?;
                if len > limit {
                    return None;
                }
                let times = words.take(usize::try_from(len).ok()?)?;
                // Times in the order they were admitted.
                (!times.windows(2).any(|p| p[0] > p[1]))
                    .then(|| times.iter().copied().collect::<SlidingLogState>())
            })?),
            StatesRef::Log(_) => ManyStates::Log(self.each_rate(|_, limit, _| {
                let len = *words.take(1)?.first()?;
                if len > limit {
                    return None;
                }
                let pairs = words.take(usize::try_from(len).ok()?.checked_mul(2)?)?;
                let entries: Vec<(u64, u64)> = pairs.chunks(2).map(|p| (p[0], p[1])).collect();
                // Times in the order they were admitted, each entry at least
                // one unit, all of them within the limit.
                let ordered = !entries.windows(2).any(|p| p[0].0 > p[1].0);
                let units = entries.iter().try_fold(0u64, |sum, &(_, cost)| {
                    sum.checked_add(cost).filter(|_| cost > 0)
                });
                (ordered && units.is_some_and(|u| u <= limit))
                    .then(|| entries.into_iter().collect::<SlidingLogState>())
            })?),
            StatesRef::Window(_) => ManyStates::Window(self.each_rate(|_, limit, window| {
                let w = words.take(3)?;
                let valid = w[1] <= limit && w[2] <= limit && in_time(w[0], window);
                valid.then_some(SlidingWindowState {
                    index: w[0],
                    previous: w[1],
                    current: w[2],
                })
            })?),
            StatesRef::Token(_) => ManyStates::Token(self.each_rate(|i, limit, _| {
                let full_at = self.scaled_time(i, words.take(2)?, limit)?;
                Some(TokenBucketState { full_at })
            })?),
            StatesRef::Leaky(_) => ManyStates::Leaky(self.each_rate(|i, limit, _| {
                // The engine's burst: the rule's, or the limit; at most MAX_LIMIT.
                let burst = self.burst().unwrap_or(limit).min(crate::MAX_LIMIT);
                let next_slot = self.scaled_time(i, words.take(2)?, burst + 1)?;
                Some(LeakyBucketState { next_slot })
            })?),
            StatesRef::Smoothed(_) => ManyStates::Smoothed(self.each_rate(|i, _, _| {
                let w = words.take(2)?;
                let engine = SmoothedRate::new(*self.rates().as_slice().get(i)?);
                engine.holds(w[0]).then_some(SmoothedRateState {
                    estimate: w[0],
                    at: w[1],
                })
            })?),
        };
        let kind = StateKind::from_many(kind);
        words.0.is_empty().then_some(KeyState(kind))
    }

    /// `read` for each rate (its index, limit and window in nanoseconds), in
    /// order; `None` if any rate's words are not a state.
    fn each_rate<T, C: FromIterator<T>>(
        &self,
        mut read: impl FnMut(usize, u64, u64) -> Option<T>,
    ) -> Option<C> {
        self.rates()
            .iter()
            .enumerate()
            .map(|(i, r)| read(i, r.limit(), r.window_nanos()))
            .collect()
    }
}

/// The words of a state not read yet.
struct Words<'a>(&'a [u64]);

impl<'a> Words<'a> {
    /// The next `n` words, if there are that many.
    fn take(&mut self, n: usize) -> Option<&'a [u64]> {
        let (head, tail) = self.0.split_at_checked(n)?;
        self.0 = tail;
        Some(head)
    }
}

impl Rule {
    /// A bucket's scaled time for rate `i`, if it is one a clock could have
    /// produced: at most (u64::MAX + 2W) x L, or u64::MAX x L + `slots` x W
    /// if that is more (a leaky bucket schedules up to burst + 1 slots of
    /// W / L ahead, more than 2W when its burst is above 2L - 1), so that the
    /// arithmetic on it cannot overflow and every state a rule decides into
    /// loads again.
    fn scaled_time(&self, i: usize, w: &[u64], slots: u64) -> Option<ScaledTime> {
        let rate = self.rates().as_slice().get(i)?;
        let t = ScaledTime([w[0], w[1]]);
        let (end, window) = (u128::from(u64::MAX), u128::from(rate.window_nanos()));
        let limit = u128::from(rate.limit());
        let most = ((end + 2 * window) * limit).max(end * limit + u128::from(slots) * window);
        (t.get() <= most).then_some(t)
    }
}

impl Rule {
    /// Whether `state` holds a time that no clock reading at or before
    /// `latest` (nanoseconds) could have written: a sliding-log entry after
    /// `latest`, a window index after that of `latest`, or a bucket scheduled
    /// further ahead of `latest` than the rule ever schedules (one window for
    /// the token bucket, burst + 1 slots for the leaky bucket).
    ///
    /// Saved state from a clock that ran ahead would otherwise deny a key
    /// until that time comes, while its Retry-After promises far less; a
    /// loader passes `now` plus its clock tolerance and drops such keys.
    ///
    /// ```
    /// use limits::{Algorithm, Rule};
    /// let rule = Rule::new(Algorithm::SlidingLog, "3/s".parse().unwrap());
    /// let mut state = rule.new_state();
    /// rule.check(&mut state, 5_000, 1);
    /// assert!(!rule.is_state_later_than(&state, 5_000));
    /// assert!(rule.is_state_later_than(&state, 4_999));
    /// ```
    pub fn is_state_later_than(&self, state: &KeyState, latest: u64) -> bool {
        let rates = self.rates().as_slice();
        let index_after = |i: usize, index: u64| {
            rates
                .get(i)
                .is_some_and(|r| index > latest / r.window_nanos().max(1))
        };
        // Latest scaled time a bucket of rate `i` may hold: (latest + slots x
        // W / L) x L, where W / L is one slot.
        let scaled_after = |i: usize, t: ScaledTime, slots: u64| {
            rates.get(i).is_some_and(|r| {
                let ahead = u128::from(slots).saturating_mul(u128::from(r.window_nanos()));
                let most = u128::from(latest)
                    .saturating_mul(u128::from(r.limit()))
                    .saturating_add(ahead);
                t.get() > most
            })
        };
        match state.0.view() {
            StatesRef::None(_) => false,
            StatesRef::Fixed(s) => s.iter().enumerate().any(|(i, f)| index_after(i, f.index)),
            StatesRef::Log(s) => s.iter().any(|log| log.back().is_some_and(|t| t > latest)),
            StatesRef::Window(s) => s.iter().enumerate().any(|(i, w)| index_after(i, w.index)),
            StatesRef::Token(s) => s.iter().enumerate().any(|(i, t)| {
                let limit = rates.get(i).map_or(0, |r| r.limit());
                scaled_after(i, t.full_at, limit)
            }),
            StatesRef::Leaky(s) => s.iter().enumerate().any(|(i, l)| {
                let burst = rates.get(i).map_or(0, |r| {
                    self.burst().unwrap_or(r.limit()).min(crate::MAX_LIMIT)
                });
                scaled_after(i, l.next_slot, burst.saturating_add(1))
            }),
            StatesRef::Smoothed(s) => s.iter().any(|e| e.at > latest),
        }
    }
}

/// The sliding log's tag in the earlier layout: one time per unit.
const UNIT_LOG: u64 = 2;

/// The tag of a state's kind. A tag is never reused: saved files carry it.
fn tag(kind: StatesRef<'_>) -> u64 {
    match kind {
        StatesRef::None(_) => 0,
        StatesRef::Fixed(_) => 1,
        StatesRef::Log(_) => 6,
        StatesRef::Token(_) => 3,
        StatesRef::Window(_) => 4,
        StatesRef::Leaky(_) => 5,
        StatesRef::Smoothed(_) => 7,
    }
}

#[cfg(test)]
mod tests {
    use crate::{Algorithm, Rule};

    const SECOND: u64 = 1_000_000_000;
    const AT: u64 = 10 * SECOND + SECOND / 2;

    /// A key of `algorithm` at 4/s that took everything it could at `AT`.
    fn filled(algorithm: Algorithm) -> (Rule, crate::KeyState) {
        let rule = Rule::new(algorithm, "4/s".parse().unwrap());
        let mut state = rule.new_state();
        for _ in 0..10 {
            rule.check(&mut state, AT, 1);
        }
        (rule, state)
    }

    #[test]
    fn state_written_at_a_time_is_never_later_than_that_time() {
        for algorithm in Algorithm::ALL {
            let (rule, state) = filled(algorithm);
            assert!(!rule.is_state_later_than(&state, AT), "{algorithm}");
            assert!(!rule.is_state_later_than(&state, u64::MAX), "{algorithm}");
            assert!(
                !rule.is_state_later_than(&rule.new_state(), 0),
                "{algorithm}"
            );
        }
    }

    #[test]
    fn state_from_a_clock_ahead_is_later() {
        for algorithm in Algorithm::ALL {
            let (rule, state) = filled(algorithm);
            let later = rule.is_state_later_than(&state, AT - SECOND);
            assert_eq!(later, algorithm != Algorithm::None, "{algorithm}");
        }
        // Times, not windows: one nanosecond is enough for these.
        for algorithm in [
            Algorithm::SlidingLog,
            Algorithm::TokenBucket,
            Algorithm::LeakyBucket,
            Algorithm::SmoothedRate,
        ] {
            let (rule, state) = filled(algorithm);
            assert!(rule.is_state_later_than(&state, AT - 1), "{algorithm}");
        }
    }

    #[test]
    fn decoded_state_from_the_year_2100_is_later_than_now() {
        let rule = Rule::new(Algorithm::SlidingLog, "2/s".parse().unwrap());
        let year_2100 = 4_102_444_800 * SECOND;
        let state = rule.decode_state(&[6, 1, 1, year_2100, 1]).unwrap();
        assert!(rule.is_state_later_than(&state, 1_800_000_000 * SECOND));
        assert!(!rule.is_state_later_than(&state, year_2100));
    }
}
