//! Bans for repeat offenders: a key its rule denied `after` times within
//! `within` is refused outright for `ban`, longer on each repeat offence if
//! the penalty escalates.
//!
//! A [`Penalty`] is a rule's setting; a [`PenaltyState`] is what one key
//! keeps of it; [`Penalty::decide`] is the whole decision, the rule's own
//! decision passed in as a closure, so every store wraps its rule the same
//! way. What counts, exactly:
//!
//! - **A denial** is a recorded decision the rule denied ([`Mode::Record`]
//!   or [`Mode::RecordAlways`]), other than for a cost the rule can never
//!   admit (which says nothing of the key). A peek counts nothing, and
//!   neither does a refusal for a ban.
//! - **An offence**: the `after`-th denial whose time is within `within` of
//!   the first of them, that is, `after` denials in `(t - within, t]`. The
//!   ban starts at that denial's time `t` (that request is refused for the
//!   ban), and the denials counted so far are cleared: the next offence needs
//!   `after` new ones, after the ban.
//! - **While banned** (`t < end`) every request is refused and the rule is
//!   not charged: it is only looked at (a peek), so that the wait given is
//!   the later of the ban's end and the rule's own wait.
//! - **Escalation**: offence `n` of a streak (counting from 0) bans for
//!   `ban × escalate^n`, at most [`MAX_BAN`]. A streak ends when an offence
//!   comes at or after the last ban's end plus that ban's length again: a
//!   clean period as long as the last ban resets the count to offence 0.

mod book;
mod state;

pub(crate) use book::PenaltyBook;
pub use state::PenaltyState;

use crate::{Decision, MAX_WINDOW, Mode, RetryAfter, format_duration};
use std::fmt;
use std::time::Duration;

/// The longest ban, escalated or not: 2^62 ns (about 146 years), the
/// longest window, so that a ban's end never overflows a time.
pub const MAX_BAN: Duration = MAX_WINDOW;

/// The most denials a penalty may count to (`after`): a key keeps the time
/// of each denial until the count is reached or they leave `within`.
pub const MAX_AFTER: u32 = 10_000;

/// A rule's penalty: `after` denials within `within` ban the key for
/// `ban`, multiplied by `escalate` for each repeat offence (see the module
/// documentation for what counts).
///
/// ```
/// use limits::Penalty;
/// use std::time::Duration;
///
/// let penalty = Penalty::new(5, Duration::from_secs(60), Duration::from_secs(900), Some(2)).unwrap();
/// assert_eq!(penalty.to_string(), "after 5 within 1m ban 15m escalate 2");
/// assert_eq!(penalty.ban_for(0), Duration::from_secs(900));
/// assert_eq!(penalty.ban_for(2), Duration::from_secs(3600), "the third offence in a row: 15m x 2 x 2");
/// assert!(Penalty::new(0, Duration::from_secs(60), Duration::from_secs(900), None).is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Penalty {
    after: u32,
    within: u64,
    ban: u64,
    escalate: Option<u32>,
}

/// Why a [`Penalty`] cannot be made: the field and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PenaltyError {
    /// The field: `after`, `within`, `ban` or `escalate`.
    pub field: &'static str,
    /// What is wrong with its value.
    pub reason: String,
}

impl fmt::Display for PenaltyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

impl std::error::Error for PenaltyError {}

/// A ban in force on a key: what a refused decision carries
/// ([`Verdict::ban`](crate::Verdict::ban)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ban {
    /// When the ban ends, on the store's time scale (nanoseconds): the
    /// first instant the key is decided by its rule again.
    pub until: u64,
    /// How long this ban lasts in all.
    pub length: Duration,
    /// Which offence of the streak it punishes, from 1 (escalation counts
    /// from the second).
    pub offence: u32,
}

impl Ban {
    /// The decision of a request refused for this ban at `now`, given what
    /// the rule would answer it (`rule`, a look that recorded nothing, or
    /// the denial that started the ban): refused with nothing remaining,
    /// the waits the later of the ban's end and the rule's own, as the rule
    /// is not charged while the ban lasts.
    ///
    /// ```
    /// use limits::{Ban, Decision, RetryAfter};
    /// use std::time::Duration;
    ///
    /// let ban = Ban { until: 100, length: Duration::from_nanos(60), offence: 1 };
    /// let banned = ban.refuse(40, Decision::allow(3));
    /// assert!(!banned.allowed);
    /// assert_eq!(banned.remaining, 0);
    /// assert_eq!(banned.retry_after, RetryAfter::After(Duration::from_nanos(60)));
    /// assert_eq!(banned.reset_after, Duration::from_nanos(60));
    /// ```
    pub fn refuse(&self, now: u64, rule: Decision) -> Decision {
        let wait = Duration::from_nanos(self.until.saturating_sub(now));
        // A cost-1 request waits for the ban, and for the rule only when
        // the rule has nothing left either.
        let refill_after = if rule.remaining == 0 {
            wait.max(rule.refill_after)
        } else {
            wait
        };
        Decision {
            allowed: false,
            remaining: 0,
            retry_after: RetryAfter::After(wait).max(rule.retry_after),
            reset_after: wait.max(rule.reset_after),
            delay: Duration::ZERO,
            refill_after,
        }
    }

    /// Whether the decision at `now` started this ban (it began then): the
    /// one decision per ban a store counts as a ban started, whichever
    /// instance made it.
    ///
    /// ```
    /// use limits::Ban;
    /// use std::time::Duration;
    ///
    /// let ban = Ban { until: 100, length: Duration::from_nanos(60), offence: 1 };
    /// assert!(ban.started_at(40));
    /// assert!(!ban.started_at(41), "a later refusal for the ban in force");
    /// ```
    pub fn started_at(&self, now: u64) -> bool {
        self.until
            .checked_sub(crate::duration::nanos_of(self.length))
            == Some(now)
    }
}

impl Penalty {
    /// A penalty: `after` denials (1 to [`MAX_AFTER`]) within `within`
    /// ban for `ban` (both at least 1 ns and at most [`MAX_BAN`]), times
    /// `escalate` (2 or more) per repeat offence if given.
    pub fn new(
        after: u32,
        within: Duration,
        ban: Duration,
        escalate: Option<u32>,
    ) -> Result<Penalty, PenaltyError> {
        let err = |field, reason: &str| {
            Err(PenaltyError {
                field,
                reason: reason.to_owned(),
            })
        };
        if after == 0 || after > MAX_AFTER {
            return err("after", &format!("must be 1 to {MAX_AFTER} denials"));
        }
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let longest = nanos(MAX_BAN);
        let (within, ban) = (nanos(within), nanos(ban));
        if within == 0 || within > longest {
            return err("within", "must be longer than 0 and at most 146 years");
        }
        if ban == 0 || ban > longest {
            return err("ban", "must be longer than 0 and at most 146 years");
        }
        if escalate.is_some_and(|e| e < 2) {
            return err(
                "escalate",
                "must be 2 or more (leave it out for bans of one length)",
            );
        }
        Ok(Penalty {
            after,
            within,
            ban,
            escalate,
        })
    }

    /// How many denials make an offence.
    pub fn after(&self) -> u32 {
        self.after
    }

    /// The span the denials of one offence fall within.
    pub fn within(&self) -> Duration {
        Duration::from_nanos(self.within)
    }

    /// The first offence's ban.
    pub fn ban(&self) -> Duration {
        Duration::from_nanos(self.ban)
    }

    /// The factor a repeat offence multiplies the ban by, if any.
    pub fn escalate(&self) -> Option<u32> {
        self.escalate
    }

    /// The ban of offence `n` of a streak, counting from 0: `ban ×
    /// escalate^n`, at most [`MAX_BAN`].
    pub fn ban_for(&self, n: u32) -> Duration {
        Duration::from_nanos(self.ban_nanos(n))
    }

    fn ban_nanos(&self, n: u32) -> u64 {
        let longest = u64::try_from(MAX_BAN.as_nanos()).unwrap_or(u64::MAX);
        let factor = match self.escalate {
            Some(e) => u64::from(e).checked_pow(n).unwrap_or(u64::MAX),
            None => 1,
        };
        self.ban.saturating_mul(factor).min(longest)
    }

    /// A key never denied.
    pub fn new_state(&self) -> PenaltyState {
        PenaltyState::default()
    }

    /// The whole decision of a request at `now` in `mode` for a key whose
    /// penalty state is `state`: banned, the rule is asked to look only
    /// (`rule(Mode::Peek)`) and the request refused for the ban;
    /// otherwise the rule decides (`rule(mode)`), and a denial is counted,
    /// which may start a ban. Returns the decision and the ban it was
    /// refused for, if any.
    ///
    /// ```
    /// use limits::{Algorithm, Mode, Penalty, RetryAfter, Rule};
    /// use std::time::Duration;
    ///
    /// let rule = Rule::new(Algorithm::FixedWindow, "1/s".parse().unwrap());
    /// let penalty = Penalty::new(2, Duration::from_secs(10), Duration::from_secs(60), None).unwrap();
    /// let (mut key, mut banned) = (rule.new_state(), penalty.new_state());
    /// let mut at = |now: u64| penalty.decide(&mut banned, now, Mode::Record, |mode| rule.decide(&mut key, now, 1, mode, |_| {}));
    /// assert!(at(0).0.allowed);
    /// assert_eq!(at(1).1, None, "the first denial");
    /// let (refused, ban) = at(2);
    /// assert_eq!(ban.unwrap().until, 2 + 60_000_000_000, "the second bans from its own time");
    /// assert_eq!(refused.retry_after, RetryAfter::After(Duration::from_secs(60)));
    /// assert!(!at(30_000_000_000).0.allowed, "the rule would admit, the ban refuses");
    /// assert!(at(60_000_000_002).0.allowed);
    /// ```
    pub fn decide(
        &self,
        state: &mut PenaltyState,
        now: u64,
        mode: Mode,
        rule: impl FnOnce(Mode) -> Decision,
    ) -> (Decision, Option<Ban>) {
        if let Some(ban) = state.ban_at(now) {
            return (ban.refuse(now, rule(Mode::Peek)), Some(ban));
        }
        let decision = rule(mode);
        match self.count(state, now, mode, &decision) {
            Some(ban) => (ban.refuse(now, decision), Some(ban)),
            None => (decision, None),
        }
    }

    /// Counts the rule's `decision` at `now` in `mode` if it is a denial
    /// (see the module documentation), and starts a ban if it is the
    /// `after`-th within `within`: the ban, if one starts.
    pub fn count(
        &self,
        state: &mut PenaltyState,
        now: u64,
        mode: Mode,
        decision: &Decision,
    ) -> Option<Ban> {
        let counts = mode.records() && !decision.allowed && !decision.retry_after.is_never();
        if !counts {
            return None;
        }
        state.forget_denials(now, self.within);
        if state.denials() + 1 < self.after as usize {
            state.push_denial(now);
            return None;
        }
        let streak = state.streak_at(now);
        let length = self.ban_nanos(streak);
        // Without escalation every ban is the first of its streak.
        let counted = match self.escalate {
            Some(_) => streak.saturating_add(1),
            None => 0,
        };
        Some(state.start_ban(now, length, counted))
    }

    /// Whether `state` can no longer change a decision at `now` or later:
    /// no ban in force, no denial still within `within`, and (if the
    /// penalty escalates) the streak over. Such a state is dropped.
    pub fn is_idle(&self, state: &PenaltyState, now: u64) -> bool {
        state.is_idle(now, self.within)
    }

    /// The first time `state` is idle ([`is_idle`](Penalty::is_idle)):
    /// how long a store must keep it.
    ///
    /// ```
    /// use limits::{Decision, Mode, Penalty, RetryAfter};
    /// use std::time::Duration;
    ///
    /// let penalty = Penalty::new(2, Duration::from_nanos(10), Duration::from_nanos(100), None).unwrap();
    /// let mut state = penalty.new_state();
    /// assert_eq!(penalty.idle_from(&state), 0);
    /// let denied = Decision { allowed: false, retry_after: RetryAfter::After(Duration::from_nanos(1)), ..Decision::allow(0) };
    /// penalty.count(&mut state, 5, Mode::Record, &denied);
    /// assert_eq!(penalty.idle_from(&state), 15, "its denial leaves `within`");
    /// penalty.count(&mut state, 7, Mode::Record, &denied);
    /// assert_eq!(penalty.idle_from(&state), 107, "the ban ends");
    /// assert!(!penalty.is_idle(&state, 106) && penalty.is_idle(&state, 107));
    /// ```
    pub fn idle_from(&self, state: &PenaltyState) -> u64 {
        state.idle_from(self.within)
    }
}

/// Prints the penalty as [`Penalty::new`]'s fields: `after 5 within 1m
/// ban 15m escalate 2` (the last only if given).
impl fmt::Display for Penalty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "after {} within {} ban {}",
            self.after,
            format_duration(self.within()),
            format_duration(self.ban())
        )?;
        if let Some(e) = self.escalate {
            write!(f, " escalate {e}")?;
        }
        Ok(())
    }
}
