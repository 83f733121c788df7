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
//! Approximate past a threshold ([`Distinct::with_sketch`]), for an N too
//! large to keep every value: a key that comes to hold `from` values turns
//! them into HyperLogLogs of m registers, one per sub-window (the window
//! cut into k), and their union kept as registers rise: a count within
//! 1.04 / sqrt(m) of the true one (standard error), in (k + 1) * m bytes
//! whatever N, beside the last `from` values exactly. A repeat of one of those is free; any other
//! value passes only while the count has room for one more, whether or
//! not it moves a register: a sketch cannot tell a repeat from a new value
//! whose registers happen to be set, and passing those for free would let
//! a flood of new values through past the limit. So its error is the
//! sketch's on the count, plus denials of repeats older than the last
//! `from` values at the limit; the window is whole sub-windows (between
//! W - W/k and W), and a refused value waits until the oldest sub-window
//! leaves.
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

mod hll;
mod keyed;
mod seen;
mod sketches;
mod store;

pub use keyed::DistinctLimiter;
pub use seen::Seen;

use crate::{Decision, Mode, Rate, RateError, RetryAfter};
use seen::Held;
use sketches::Sketches;
use std::time::Duration;

/// At most `at_most` distinct values per key in any window of `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Distinct {
    rate: Rate,
    sketch: Option<DistinctSketch>,
}

/// When and how a key's values turn into sketches ([`Distinct::with_sketch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistinctSketch {
    /// Values a key holds exactly before it turns to sketches.
    pub from: usize,
    /// Registers per sketch, m: a power of two from 16 to 65,536; the
    /// standard error is 1.04 / sqrt(m) (3.25% at 1,024).
    pub registers: usize,
    /// Sketches per window, k, from 2 to 64: each a k-th of the window.
    pub sub_windows: usize,
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

    /// The same limit, with a key's values kept as sketches once it holds
    /// `sketch.from` of them; or why the sketch cannot be.
    ///
    /// ```
    /// use limits::{Distinct, DistinctSketch};
    /// use std::time::Duration;
    ///
    /// let pages = Distinct::new(10_000, Duration::from_secs(3600)).unwrap();
    /// let sketch = DistinctSketch { from: 256, registers: 1024, sub_windows: 8 };
    /// assert!(pages.with_sketch(sketch).is_ok());
    /// let odd = DistinctSketch { registers: 1000, ..sketch };
    /// assert!(pages.with_sketch(odd).unwrap_err().contains("power of two"));
    /// ```
    pub fn with_sketch(self, sketch: DistinctSketch) -> Result<Distinct, String> {
        let DistinctSketch {
            from,
            registers,
            sub_windows,
        } = sketch;
        if !registers.is_power_of_two() || !(16..=65_536).contains(&registers) {
            return Err(format!(
                "registers must be a power of two from 16 to 65536, not {registers}"
            ));
        }
        if !(2..=64).contains(&sub_windows) {
            return Err(format!(
                "sub_windows must be from 2 to 64, not {sub_windows}"
            ));
        }
        if self.window_nanos() < sub_windows as u64 {
            return Err(format!(
                "a window of {} ns cannot be cut into {sub_windows}",
                self.window_nanos()
            ));
        }
        if from == 0 {
            return Err("from must be at least 1 value".into());
        }
        Ok(Distinct {
            sketch: Some(sketch),
            ..self
        })
    }

    /// The most distinct values in a window.
    pub fn at_most(&self) -> u64 {
        self.rate.limit()
    }

    /// The window, in nanoseconds.
    pub fn window_nanos(&self) -> u64 {
        self.rate.window_nanos()
    }

    /// The limit as a rate, `at_most` per window: what the RateLimit
    /// headers announce for it.
    ///
    /// ```
    /// use limits::Distinct;
    /// use std::time::Duration;
    ///
    /// let usernames = Distinct::new(20, Duration::from_secs(3600)).unwrap();
    /// assert_eq!(usernames.rate().to_string(), "20/h");
    /// ```
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// The sketch past the threshold, if any.
    pub fn sketch(&self) -> Option<DistinctSketch> {
        self.sketch
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
        let now = seen.advance(now);
        self.forget(seen.held(), now);
        let record = mode != Mode::Peek;
        if let (Held::Exact(values), Some(sketch)) = (seen.held(), self.sketch) {
            let new = !values.iter().any(|&(v, _)| v == value);
            if record && new && values.len() >= sketch.from {
                *seen.held() = self.sketched(values, sketch, now);
            }
        }
        match seen.held() {
            Held::Exact(values) => self.decide_exact(values, value, now, record),
            Held::Sketched { sketches, recent } => {
                self.decide_sketched(sketches, recent, value, now, record)
            }
        }
    }

    /// Forgets the values (or sub-windows) that left the window at `now`;
    /// whether nothing is left.
    pub(crate) fn forget_at(&self, seen: &mut Seen, now: u64) -> bool {
        let now = seen.advance(now);
        self.forget(seen.held(), now);
        seen.is_empty()
    }

    fn forget(&self, held: &mut Held, now: u64) {
        match held {
            Held::Exact(values) => {
                let gone = values
                    .partition_point(|&(_, at)| at.saturating_add(self.window_nanos()) <= now);
                values.drain(..gone);
            }
            Held::Sketched { sketches, recent } => {
                let (sub, k) = self.sub_window();
                // Sub-window i is in the window while i + k > now / sub.
                sketches.keep_from((now / sub + 1).saturating_sub(k));
                let gone = recent
                    .partition_point(|&(_, at)| at.saturating_add(self.window_nanos()) <= now);
                recent.drain(..gone);
            }
        }
    }

    fn decide_exact(
        &self,
        values: &mut Vec<(u64, u64)>,
        value: u64,
        now: u64,
        record: bool,
    ) -> Decision {
        let allowed = match values.iter().position(|&(v, _)| v == value) {
            Some(i) => {
                if record {
                    values.remove(i);
                    values.push((value, now));
                }
                true
            }
            None if (values.len() as u64) < self.at_most() => {
                if record {
                    values.push((value, now));
                }
                true
            }
            None => false,
        };
        let left = |at: u64| at.saturating_add(self.window_nanos());
        let oldest = values.first().map(|&(_, at)| left(at));
        let newest = values.last().map(|&(_, at)| left(at));
        self.answer(allowed, values.len() as u64, oldest, newest, now)
    }

    fn decide_sketched(
        &self,
        sketches: &mut Sketches,
        recent: &mut Vec<(u64, u64)>,
        value: u64,
        now: u64,
        record: bool,
    ) -> Decision {
        let Some(sketch) = self.sketch else {
            return self.answer(false, self.at_most(), None, None, now);
        };
        let (sub, k) = self.sub_window();
        let count = sketches.estimate();
        let repeat = recent.iter().position(|&(v, _)| v == value);
        let allowed = repeat.is_some() || count + 1.0 <= self.at_most() as f64;
        if allowed && record {
            match repeat {
                Some(i) => {
                    recent.remove(i);
                }
                None if recent.len() >= sketch.from => {
                    recent.remove(0);
                }
                None => {}
            }
            recent.push((value, now));
            sketches.add(now / sub, value);
        }
        let added = u64::from(allowed && repeat.is_none() && record);
        let leaves = |i: u64| i.saturating_add(k).saturating_mul(sub);
        let span = sketches.span();
        let oldest = span.map(|(first, _)| leaves(first));
        let newest = span.map(|(_, last)| leaves(last));
        let counted = (count.ceil() as u64).saturating_add(added);
        self.answer(allowed, counted, oldest, newest, now)
    }

    /// A decision from whether it passed, the values counted after it, and
    /// when the oldest and newest of them leave the window.
    fn answer(
        &self,
        allowed: bool,
        counted: u64,
        oldest: Option<u64>,
        newest: Option<u64>,
        now: u64,
    ) -> Decision {
        let until = |at: Option<u64>| {
            at.map_or(Duration::ZERO, |at| {
                Duration::from_nanos(at.saturating_sub(now))
            })
        };
        self.decision(allowed, counted, until(oldest), until(newest))
    }

    /// The decision on a value, from whether it passed, the values counted
    /// after it, and how long until the oldest and the newest of them leave
    /// the window (zero with none): what every store of this limit answers
    /// (a refused value waits for the oldest).
    ///
    /// ```
    /// use limits::Distinct;
    /// use std::time::Duration;
    ///
    /// let rule = Distinct::new(2, Duration::from_secs(60)).unwrap();
    /// let refused = rule.decision(false, 2, Duration::from_secs(5), Duration::from_secs(50));
    /// assert_eq!((refused.remaining, refused.retry_after.duration()), (0, Some(Duration::from_secs(5))));
    /// ```
    pub fn decision(
        &self,
        allowed: bool,
        counted: u64,
        oldest: Duration,
        newest: Duration,
    ) -> Decision {
        Decision {
            allowed,
            remaining: self.at_most().saturating_sub(counted),
            retry_after: match allowed {
                true => RetryAfter::ZERO,
                false => RetryAfter::After(oldest),
            },
            reset_after: newest,
            delay: Duration::ZERO,
            refill_after: oldest,
        }
    }

    /// A sub-window's length in ns, and how many make the window.
    fn sub_window(&self) -> (u64, u64) {
        let k = self.sketch.map_or(1, |s| s.sub_windows as u64);
        (self.window_nanos() / k, k)
    }

    /// `values` as sketches, each in the sub-window of its last use.
    fn sketched(&self, values: &[(u64, u64)], sketch: DistinctSketch, now: u64) -> Held {
        let (sub, k) = self.sub_window();
        let mut sketches = Sketches::new(sketch.registers);
        for &(value, at) in values {
            let index = at / sub;
            if index + k > now / sub {
                sketches.add(index, value);
            }
        }
        Held::Sketched {
            sketches,
            recent: values.to_vec(),
        }
    }
}

impl From<Rate> for Distinct {
    /// `L` per `W` as at most L distinct values in any W, kept exactly.
    fn from(rate: Rate) -> Distinct {
        Distinct { rate, sketch: None }
    }
}
