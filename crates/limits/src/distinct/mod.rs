//! A limit on distinct values per key: at most N different values in any
//! window of W, whatever the request rate. Credential stuffing tries many
//! usernames from one address, a scraper many product pages: counting
//! requests would limit a user who retries one password, or one page;
//! counting distinct values limits the spread and leaves repeats free.
//!
//! Exact: a key keeps each value it was admitted with (as a 64-bit hash,
//! seeded per limiter so that nobody can pick values that collide) and the
//! last time it was asked for, at most N of them. A value counts while it
//! was asked for within the last W (the window slides, to the
//! nanosecond). A value held is free and refreshed; a new one passes while
//! fewer than N are held, and is refused otherwise, until the value asked
//! for longest ago leaves the window: the exact wait.
//!
//! ```
//! use limits::{Distinct, DistinctLimiter, ManualClock};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new(0);
//! let rule = Distinct::new(2, Duration::from_secs(3600)).unwrap();
//! let logins = DistinctLimiter::with_clock(rule, clock.clone());
//! assert!(logins.check("203.0.113.7", "alice").allowed);
//! assert!(logins.check("203.0.113.7", "bob").allowed);
//! assert!(logins.check("203.0.113.7", "alice").allowed, "a value held is free");
//! let third = logins.check("203.0.113.7", "carol");
//! assert!(!third.allowed);
//! assert_eq!(third.retry_after.duration(), Some(Duration::from_secs(3600)));
//! assert!(logins.check("198.51.100.1", "carol").allowed, "another key");
//! ```

mod keyed;
mod seen;

pub use keyed::DistinctLimiter;
pub use seen::Seen;

use crate::{Decision, Mode, Rate, RateError, RetryAfter};
use std::time::Duration;

/// At most `at_most` distinct values per key in any window of `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Distinct {
    at_most: u64,
    window: u64,
}

impl Distinct {
    /// At most `at_most` distinct values in any `window`; refused as a
    /// rate of `at_most` per `window` would be (zero, or past the bounds).
    ///
    /// ```
    /// use limits::Distinct;
    /// use std::time::Duration;
    ///
    /// assert!(Distinct::new(20, Duration::from_secs(3600)).is_ok());
    /// assert!(Distinct::new(0, Duration::from_secs(3600)).is_err());
    /// ```
    pub fn new(at_most: u64, window: Duration) -> Result<Distinct, RateError> {
        Rate::new(at_most, window).map(Distinct::from)
    }

    /// The most distinct values in a window.
    pub fn at_most(&self) -> u64 {
        self.at_most
    }

    /// The window, in nanoseconds.
    pub fn window_nanos(&self) -> u64 {
        self.window
    }

    /// Decides the value whose hash is `value` for a key whose values are
    /// `seen`, at `now`: held (refreshed, unless `mode` is a peek), new and
    /// admitted (held from now, unless a peek), or refused. Values that
    /// left the window are forgotten first.
    ///
    /// ```
    /// use limits::{Distinct, Mode, Seen};
    /// use std::time::Duration;
    ///
    /// let rule = Distinct::new(1, Duration::from_nanos(100)).unwrap();
    /// let mut seen = Seen::default();
    /// assert!(rule.decide(&mut seen, 7, 0, Mode::Record).allowed);
    /// let refused = rule.decide(&mut seen, 8, 40, Mode::Record);
    /// assert_eq!(refused.retry_after.duration(), Some(Duration::from_nanos(60)));
    /// assert!(rule.decide(&mut seen, 8, 100, Mode::Record).allowed, "7 left at 100");
    /// ```
    pub fn decide(&self, seen: &mut Seen, value: u64, now: u64, mode: Mode) -> Decision {
        let now = seen.forget_before(now, self.window);
        let record = mode != Mode::Peek;
        let allowed = match seen.find(value) {
            Some(i) => {
                if record {
                    seen.refresh(i, now);
                }
                true
            }
            None if (seen.len() as u64) < self.at_most => {
                if record {
                    seen.hold(value, now);
                }
                true
            }
            None => false,
        };
        let held = seen.len() as u64;
        // How long until `at` leaves the window (`at + W`), from now.
        let until =
            |at: u64| Duration::from_nanos(at.saturating_add(self.window).saturating_sub(now));
        let oldest = seen.oldest().map_or(Duration::ZERO, until);
        // A peek of a new value held nothing, so the room it saw is still there.
        let remaining = self.at_most - held.min(self.at_most);
        Decision {
            allowed,
            remaining,
            retry_after: match allowed {
                true => RetryAfter::ZERO,
                false => RetryAfter::After(oldest),
            },
            reset_after: seen.newest().map_or(Duration::ZERO, until),
            delay: Duration::ZERO,
            refill_after: oldest,
        }
    }
}

impl From<Rate> for Distinct {
    /// `L` per `W` as at most L distinct values in any W.
    fn from(rate: Rate) -> Distinct {
        Distinct {
            at_most: rate.limit(),
            window: rate.window_nanos(),
        }
    }
}
