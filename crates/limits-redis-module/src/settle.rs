//! `LIMITS.SETTLE`: a request the rule admitted, settled to its real cost
//! after its response (the core's [`Rule::settle`] and [`Rule::renew`]),
//! with `settle.lua`'s arguments and answer, on the scripts' layout.

use crate::decide::written;
use crate::layout;
use crate::request::{number, BadArgument, Shared};
use limits::{Decision, Mode, Receipt, Rule};
use std::rc::Rc;

/// What is done to the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settling {
    /// Give back units of the request counted at its time.
    Refund,
    /// Take units more, now, whether or not they fit.
    Charge,
    /// Give back all it took, and take it again now.
    Renew,
}

/// One settlement asked of the module.
#[derive(Clone, Debug)]
pub struct Settle {
    /// The rule.
    pub rule: Rc<Rule>,
    /// The time in microseconds, or `None` for Redis's own clock.
    pub now: Option<u64>,
    /// The units refunded, charged or renewed.
    pub units: u64,
    /// What is done with them.
    pub settling: Settling,
    /// The time the request was counted at, in microseconds.
    pub at: u64,
    /// The keys' least time to live in milliseconds.
    pub ttl_floor_ms: u64,
    /// How many keys hold the state.
    pub keys: usize,
}

/// What a settlement does to Redis: the time it settled at (µs: the
/// renewed request's time from now on) and what to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settled {
    /// The time it settled at, in microseconds.
    pub at: u64,
    /// Each key's new value and its time to live in milliseconds, when
    /// something changed (else none).
    pub writes: Vec<(Vec<u8>, u64)>,
}

impl Settle {
    /// Reads `LIMITER NOW UNITS HOW FLOOR N (LIMIT WINDOW BURST)... AT
    /// [KEY...]` (after the first key): `HOW` is `refund`, `charge` or
    /// `renew`, `AT` the request's time in microseconds.
    ///
    /// ```
    /// use limits_redis_module::{Settle, Settling};
    ///
    /// let args: Vec<&[u8]> = "fixed-window 5 2 refund 0 1 10 1000000 0 3"
    ///     .split(' ')
    ///     .map(str::as_bytes)
    ///     .collect();
    /// let settle = Settle::parse(&args).unwrap();
    /// assert_eq!((settle.units, settle.settling, settle.at), (2, Settling::Refund, 3));
    /// assert!(Settle::parse(&args[..9]).unwrap_err().0.contains("missing"));
    /// ```
    pub fn parse(args: &[&[u8]]) -> Result<Settle, BadArgument> {
        let shared = Shared::parse("LIMITS.SETTLE", args, (1, 0))?;
        let settling = match args[3] {
            b"refund" => Settling::Refund,
            b"charge" => Settling::Charge,
            b"renew" => Settling::Renew,
            other => {
                return Err(BadArgument(format!(
                    "LIMITS.SETTLE: a request is settled by refund, charge or renew, not {:?}",
                    String::from_utf8_lossy(other)
                )))
            }
        };
        Ok(Settle {
            rule: shared.rule,
            now: shared.now,
            units: number(args[2], "units")?,
            settling,
            at: number(args[shared.rates_end], "request's time")?,
            ttl_floor_ms: shared.ttl_floor_ms,
            keys: shared.keys,
        })
    }
}

/// Settles `request` at `now` (microseconds) on its keys' `stored` values.
///
/// ```
/// use limits_redis_module::{decide, settle, Request, Settle};
///
/// let words = |text: &'static str| -> Vec<&'static [u8]> { text.split(' ').map(str::as_bytes).collect() };
/// let check = Request::parse(&words("fixed-window 5 1 1 0 1 1 1000000 0")).unwrap();
/// let taken = decide(&check, &[None], 5);
/// let stored = &taken.writes[0].0;
/// assert!(decide(&check, &[Some(stored)], 6).writes.is_empty(), "the window is full");
/// // The request failed upstream: its unit comes back.
/// let refund = Settle::parse(&words("fixed-window 7 1 refund 0 1 1 1000000 0 5")).unwrap();
/// let settled = settle(&refund, &[Some(stored)], 7);
/// assert_eq!(settled.at, 7);
/// assert!(!decide(&check, &[Some(&settled.writes[0].0)], 8).writes.is_empty());
/// ```
pub fn settle(request: &Settle, stored: &[Option<&[u8]>], now: u64) -> Settled {
    let rule = &request.rule;
    let now_ns = now.saturating_mul(1000);
    let mut state = layout::read(rule, stored);
    // The state at now, before the settlement: what changed is written.
    let (_, latest) = rule.decide_timed(&mut state, now_ns, 0, Mode::Peek, |_| {});
    let before = rule.encode_state(&state);
    let receipt = |cost| Receipt {
        at: request.at.saturating_mul(1000),
        cost,
    };
    let at = match request.settling {
        Settling::Refund => {
            rule.settle(&mut state, now_ns, receipt(request.units), 0);
            latest
        }
        Settling::Charge => {
            rule.settle(&mut state, now_ns, receipt(0), request.units);
            latest
        }
        Settling::Renew => rule.renew(&mut state, now_ns, receipt(request.units)).at,
    };
    if rule.encode_state(&state) == before {
        return Settled {
            at: at / 1000,
            writes: Vec::new(),
        };
    }
    let mut rows: Vec<Decision> = Vec::with_capacity(rule.rates().len());
    let looked = rule.decide(&mut state.clone(), now_ns, 0, Mode::Peek, |d| rows.push(d));
    let writes = written(rule, &state, stored, (looked, &rows), request.ttl_floor_ms);
    Settled {
        at: at / 1000,
        writes,
    }
}
