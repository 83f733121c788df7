//! What every check returns.

use std::fmt;
use std::time::Duration;

/// How long a denied request must wait before the same request would be
/// allowed, if nothing else arrives.
///
/// `Never` is the answer for a request whose cost exceeds what the limiter can
/// ever hold. The order is the order of waiting: any `After` is less than
/// `Never`, so the longest wait over several rates is their maximum.
///
/// ```
/// use limits::RetryAfter;
/// use std::time::Duration;
/// let soon = RetryAfter::After(Duration::from_millis(5));
/// assert!(soon < RetryAfter::Never);
/// assert_eq!(soon.max(RetryAfter::ZERO), soon);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RetryAfter {
    /// Allowed once this much time has passed.
    After(Duration),
    /// Never allowed: the cost is larger than the limit.
    Never,
}

impl RetryAfter {
    /// No wait at all: what an allowed request carries.
    pub const ZERO: RetryAfter = RetryAfter::After(Duration::ZERO);

    /// The wait, or `None` for never.
    pub fn duration(self) -> Option<Duration> {
        match self {
            RetryAfter::After(d) => Some(d),
            RetryAfter::Never => None,
        }
    }

    /// Whether the request can never pass.
    pub fn is_never(self) -> bool {
        self == RetryAfter::Never
    }

    pub(crate) fn from_nanos(nanos: u64) -> RetryAfter {
        RetryAfter::After(Duration::from_nanos(nanos))
    }
}

impl fmt::Display for RetryAfter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryAfter::After(d) => write!(f, "{d:?}"),
            RetryAfter::Never => f.write_str("never"),
        }
    }
}

/// Whether a decision records the request (a check) or only looks (a peek).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Record the request if it is allowed.
    Record,
    /// Decide without recording anything: for headers and dashboards.
    Peek,
    /// Record the request whether or not it is allowed, as a counter that
    /// adds every hit does (envoyproxy/ratelimit's Redis counter): an
    /// admitted request as [`Mode::Record`] records it; a denied one adds
    /// its cost to the fixed window's count, or the sliding window
    /// counter's current count, up to the limit. Up to the limit is exact
    /// for the fixed window: a count past the limit denies every request
    /// until the window ends, as a count at the limit does. The limiters
    /// that keep no count (the log and the buckets) have no such record,
    /// and record as [`Mode::Record`] does.
    RecordAlways,
}

impl Mode {
    /// Whether an admitted request is recorded: in every mode but a peek.
    #[inline]
    pub fn records(self) -> bool {
        self != Mode::Peek
    }

    /// Of a request decided all or nothing, whose decisions each first
    /// only looked (a peek): whether one in this mode then decides again,
    /// in this mode. Every one does when every look admitted; when one was
    /// denied, the admitted ones record nothing, and a denied one decides
    /// again only if this mode records a denial ([`Mode::RecordAlways`]).
    ///
    /// ```
    /// use limits::Mode;
    /// assert!(Mode::Record.decides_after_looks(true, true));
    /// assert!(!Mode::Record.decides_after_looks(false, true));
    /// assert!(!Mode::Record.decides_after_looks(false, false));
    /// assert!(Mode::RecordAlways.decides_after_looks(false, false));
    /// assert!(!Mode::RecordAlways.decides_after_looks(false, true));
    /// ```
    pub fn decides_after_looks(self, every_one_admitted: bool, this_one_admitted: bool) -> bool {
        every_one_admitted || (self == Mode::RecordAlways && !this_one_admitted)
    }
}

/// What settling a granted request needs: when it was counted and what it
/// was counted for. A decision that admitted a request of cost 1 or more
/// gives one ([`Rule::check_with_receipt`](crate::Rule::check_with_receipt),
/// [`KeyedLimiter::check_with_receipt`](crate::KeyedLimiter::check_with_receipt),
/// [`Verdict::receipt`](crate::Verdict::receipt)); settling it to the
/// request's real cost refunds what it took beyond that cost, or charges
/// the rest. Settle a receipt once: a second settle of the same receipt
/// acts as one of another request counted at the same time would.
///
/// `at` also identifies the sliding log's entry of the request: entries
/// of one time expire together, so which of them gives back a unit
/// changes no decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Receipt {
    /// The time the request was counted at (nanoseconds on the store's
    /// time scale): the window it was counted in, the sliding log's entry.
    pub at: u64,
    /// The cost it was counted for.
    pub cost: u64,
}

/// What a granted request is settled to ([`Receipt::settle_by`],
/// [`Rule::settle_as`](crate::Rule::settle_as)): its real cost, or renewed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Settlement {
    /// To this cost: what the request took beyond it is given back, or the
    /// rest taken.
    To(u64),
    /// Renewed: all it took given back and taken again at the settlement's
    /// time ([`Receipt::renew_with`]).
    Renew,
}

impl Receipt {
    /// Settles the request as `settlement` says, through `settle` (called
    /// with a receipt and the cost to settle it to), a renewal at `at`:
    /// the receipt that settles the request from now on.
    ///
    /// ```
    /// use limits::{Receipt, Settlement};
    ///
    /// let receipt = Receipt { at: 10, cost: 2 };
    /// let mut settled = Vec::new();
    /// assert_eq!(receipt.settle_by(50, Settlement::To(1), |r, c| settled.push((r, c))), receipt);
    /// assert_eq!(settled, [(receipt, 1)]);
    /// let renewed = receipt.settle_by(50, Settlement::Renew, |_, _| {});
    /// assert_eq!(renewed, Receipt { at: 50, cost: 2 });
    /// ```
    pub fn settle_by(
        self,
        at: u64,
        settlement: Settlement,
        mut settle: impl FnMut(Receipt, u64),
    ) -> Receipt {
        match settlement {
            Settlement::To(cost) => {
                settle(self, cost);
                self
            }
            Settlement::Renew => self.renew_with(at, settle),
        }
    }

    /// Renews the request at `at` (a time no earlier than any the key has
    /// seen) through `settle`, called with a receipt and the cost to settle
    /// it to: the request gives back all it took, then takes it again at
    /// `at`, as a charge does (the sliding log: its entry moves to `at`, if
    /// there is room for it). Returns the renewed request's receipt.
    ///
    /// ```
    /// use limits::Receipt;
    ///
    /// let mut settled = Vec::new();
    /// let renewed = Receipt { at: 10, cost: 2 }.renew_with(50, |r, cost| settled.push((r, cost)));
    /// assert_eq!(renewed, Receipt { at: 50, cost: 2 });
    /// assert_eq!(settled, [(Receipt { at: 10, cost: 2 }, 0), (Receipt { at: 50, cost: 0 }, 2)]);
    /// ```
    pub fn renew_with(self, at: u64, mut settle: impl FnMut(Receipt, u64)) -> Receipt {
        settle(self, 0);
        let renewed = Receipt { at, cost: 0 };
        settle(renewed, self.cost);
        Receipt { at, ..self }
    }
}

/// The outcome of one check of one key.
///
/// For a rule with several rates this is their combination: allowed only if
/// every rate allows; `remaining` is the minimum over the rates, `retry_after`,
/// `reset_after` and `delay` the maximum.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decision {
    /// Whether the request passes (and was recorded, unless this was a peek).
    pub allowed: bool,
    /// How many further cost-1 requests would pass at this same instant, after
    /// this decision.
    pub remaining: u64,
    /// Zero when allowed; otherwise the exact earliest wait after which the
    /// same request would be allowed if nothing else arrives.
    pub retry_after: RetryAfter,
    /// Time until the key is back to its full limit if nothing else arrives.
    pub reset_after: Duration,
    /// Time an admitted request must be held before it is served: non-zero
    /// only for the leaky bucket, which shapes traffic as a queue.
    pub delay: Duration,
    /// When more quota frees up (the RateLimit header's `t`): the wait of a
    /// cost-1 request when `remaining` is 0, otherwise the time until
    /// `remaining` next grows; zero when the limit is full.
    pub refill_after: Duration,
}

impl Decision {
    /// A decision that allows with `remaining` left and nothing to wait for.
    pub fn allow(remaining: u64) -> Decision {
        Decision {
            allowed: true,
            remaining,
            retry_after: RetryAfter::ZERO,
            reset_after: Duration::ZERO,
            delay: Duration::ZERO,
            refill_after: Duration::ZERO,
        }
    }

    /// The verdict alone: `Ok(delay)` if the request passes (the time to
    /// hold it: zero but for the leaky bucket), `Err(retry_after)` if not.
    ///
    /// ```
    /// use limits::{Decision, RetryAfter};
    /// use std::time::Duration;
    ///
    /// assert_eq!(Decision::allow(3).verdict(), Ok(Duration::ZERO));
    /// let denied = Decision { allowed: false, retry_after: RetryAfter::Never, ..Decision::allow(0) };
    /// assert_eq!(denied.verdict(), Err(RetryAfter::Never));
    /// ```
    pub fn verdict(&self) -> Result<Duration, RetryAfter> {
        if self.allowed {
            Ok(self.delay)
        } else {
            Err(self.retry_after)
        }
    }

    /// Folds `other` (the decision of another rate of the same rule) into
    /// `self`, as the combined decision of both.
    pub fn combine(self, other: Decision) -> Decision {
        use std::cmp::Ordering::*;
        let refill_after = match self.remaining.cmp(&other.remaining) {
            Less => self.refill_after,
            Greater => other.refill_after,
            // A rate at its full limit (refill zero) caps the combined
            // remaining for good: it will not grow.
            Equal if self.refill_after.is_zero() || other.refill_after.is_zero() => Duration::ZERO,
            Equal => self.refill_after.max(other.refill_after),
        };
        Decision {
            allowed: self.allowed && other.allowed,
            remaining: self.remaining.min(other.remaining),
            retry_after: self.retry_after.max(other.retry_after),
            reset_after: self.reset_after.max(other.reset_after),
            delay: self.delay.max(other.delay),
            refill_after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combining_takes_the_tightest_rate() {
        let ms = Duration::from_millis;
        let a = Decision {
            allowed: true,
            remaining: 3,
            retry_after: RetryAfter::ZERO,
            reset_after: ms(10),
            delay: ms(0),
            refill_after: ms(4),
        };
        let b = Decision {
            allowed: false,
            remaining: 0,
            retry_after: RetryAfter::After(ms(7)),
            reset_after: ms(5),
            delay: ms(1),
            refill_after: ms(7),
        };
        let c = a.combine(b);
        assert!(!c.allowed);
        assert_eq!(c.remaining, 0);
        assert_eq!(c.retry_after, RetryAfter::After(ms(7)));
        assert_eq!(c.reset_after, ms(10));
        assert_eq!(c.delay, ms(1));
        // The combined remaining grows when the tightest rate's does.
        assert_eq!(c.refill_after, ms(7));
    }
}
