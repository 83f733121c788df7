//! What one key keeps of its rule's penalty: the times of its recent
//! denials, and its last ban.

use super::{Ban, Penalty};
use std::collections::VecDeque;
use std::time::Duration;

/// One key's standing under a [`Penalty`]: the times of the denials it
/// counts toward the next offence (fewer than `after`, oldest first), and
/// the last ban (its end and length, and the offences of its streak).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PenaltyState {
    denials: VecDeque<u64>,
    until: u64,
    length: u64,
    offences: u32,
}

impl PenaltyState {
    /// The ban in force at `now`, if any.
    pub fn ban_at(&self, now: u64) -> Option<Ban> {
        (now < self.until).then(|| Ban {
            until: self.until,
            length: Duration::from_nanos(self.length),
            offence: self.offences.max(1),
        })
    }

    /// How many denials count toward the next offence.
    pub(super) fn denials(&self) -> usize {
        self.denials.len()
    }

    /// Forgets the denials no longer within `within` of `now`: those at
    /// or before `now - within`.
    pub(super) fn forget_denials(&mut self, now: u64, within: u64) {
        while self
            .denials
            .front()
            .is_some_and(|&d| d.saturating_add(within) <= now)
        {
            self.denials.pop_front();
        }
    }

    pub(super) fn push_denial(&mut self, now: u64) {
        self.denials.push_back(now);
    }

    /// The offences of the streak an offence at `now` continues: none once
    /// a clean period as long as the last ban has followed it.
    pub(super) fn streak_at(&self, now: u64) -> u32 {
        let clean_from = self.until.saturating_add(self.length);
        if now >= clean_from { 0 } else { self.offences }
    }

    /// Starts a ban of `length` at `now`, the `offences`-th of its streak
    /// (0 when the penalty does not escalate); the denials counted so far
    /// are spent on it.
    pub(super) fn start_ban(&mut self, now: u64, length: u64, offences: u32) -> Ban {
        self.denials.clear();
        self.until = now.saturating_add(length);
        self.length = length;
        self.offences = offences;
        Ban {
            until: self.until,
            length: Duration::from_nanos(length),
            offence: offences.max(1),
        }
    }

    /// Whether nothing of this state can change a decision at `now` or
    /// later (see [`Penalty::is_idle`]).
    pub(super) fn is_idle(&self, now: u64, within: u64) -> bool {
        now >= self.idle_from(within)
    }

    /// The first time nothing of this state can change a decision: the
    /// ban's end, the newest denial's leaving `within`, and (after an
    /// offence that escalates) the end of the clean period after the ban.
    pub(super) fn idle_from(&self, within: u64) -> u64 {
        let denials = self.denials.back().map_or(0, |&d| d.saturating_add(within));
        let streak = match self.offences {
            0 => 0,
            _ => self.until.saturating_add(self.length),
        };
        self.until.max(denials).max(streak)
    }

    /// The latest time this state was written at: its newest denial, or
    /// its last ban's start. State saved with a later time than a host's
    /// clock came from a clock ahead of it.
    pub fn latest(&self) -> u64 {
        let ban_start = self.until.saturating_sub(self.length);
        self.denials.back().copied().unwrap_or(0).max(ban_start)
    }
}

impl Penalty {
    /// A key's penalty state as numbers, `[until, length, offences, n,
    /// denials...]`, for a state file; [`decode_state`](Penalty::decode_state)
    /// reads them back.
    ///
    /// ```
    /// use limits::{Decision, Mode, Penalty, RetryAfter};
    /// use std::time::Duration;
    ///
    /// let penalty = Penalty::new(3, Duration::from_secs(1), Duration::from_secs(5), Some(2)).unwrap();
    /// let mut state = penalty.new_state();
    /// let denied = Decision { allowed: false, retry_after: RetryAfter::After(Duration::from_millis(1)), ..Decision::allow(0) };
    /// penalty.count(&mut state, 7, Mode::Record, &denied);
    /// let back = penalty.decode_state(&penalty.encode_state(&state)).unwrap();
    /// assert_eq!(back, state);
    /// assert!(penalty.decode_state(&[0, 0, 0, 3, 1, 2, 3]).is_none(), "3 denials would have been an offence");
    /// ```
    pub fn encode_state(&self, state: &PenaltyState) -> Vec<u64> {
        let mut out = vec![
            state.until,
            state.length,
            u64::from(state.offences),
            state.denials.len() as u64,
        ];
        out.extend(state.denials.iter().copied());
        out
    }

    /// Reads numbers written by [`encode_state`](Penalty::encode_state);
    /// `None` if they cannot be this penalty's (as many denials as make an
    /// offence, denials out of order, a ban longer than it can be).
    pub fn decode_state(&self, words: &[u64]) -> Option<PenaltyState> {
        let (&[until, length, offences, n], rest) = words.split_first_chunk::<4>()?;
        let offences = u32::try_from(offences).ok()?;
        let longest = self.ban_nanos(offences.saturating_sub(1));
        if n >= u64::from(self.after)
            || rest.len() as u64 != n
            || length > longest
            || (offences > 0 && self.escalate.is_none())
            || rest.windows(2).any(|w| w[0] > w[1])
        {
            return None;
        }
        Some(PenaltyState {
            denials: rest.iter().copied().collect(),
            until,
            length,
            offences,
        })
    }
}
