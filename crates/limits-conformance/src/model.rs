//! The reference limiter for one rate of one key: the plainest form of each
//! algorithm (a Vec of every admitted request, counts per window index,
//! tokens and departures as exact rationals), whole history kept.
//!
//! A model only answers "would this cost pass at t?" and "record it", plus the
//! leaky bucket's delay; every other field of a decision is derived from that
//! by definition in [`RuleModel`](crate::RuleModel).

use crate::Q;
use limits::algorithms::{smoothed_decay, SmoothedRate, TICKS_PER_HALF_LIFE};
use limits::{Algorithm, Rate};
use std::collections::BTreeMap;
use std::time::Duration;

/// A reference limiter for one rate (`l` per `w` nanoseconds) and one key.
#[derive(Clone, Debug)]
pub enum Model {
    /// Fixed window: window index -> cost admitted in it.
    Fixed {
        /// The limit.
        l: u64,
        /// The window, in nanoseconds.
        w: u64,
        /// Cost admitted per window index `t / w`.
        counts: BTreeMap<u64, u64>,
    },
    /// Sliding log: every admitted request ever, with its cost.
    Log {
        /// The limit.
        l: u64,
        /// The window, in nanoseconds.
        w: u64,
        /// (time, cost) per admitted request, never pruned: a request's
        /// units live and expire together, so one entry holds them all.
        log: Vec<(u64, u64)>,
    },
    /// Sliding window counter: counts per window index, a rational estimate.
    Window {
        /// The limit.
        l: u64,
        /// The window, in nanoseconds.
        w: u64,
        /// Cost admitted per window index `t / w`.
        counts: BTreeMap<u64, u64>,
    },
    /// Token bucket: tokens as a rational, refilled continuously since `last`.
    Token {
        /// The limit (the bucket's size).
        l: u64,
        /// The window: `l` tokens refill per `w` nanoseconds.
        w: u64,
        /// Tokens at `last`.
        tokens: Q,
        /// The time of the last admitted request.
        last: Option<u64>,
    },
    /// Leaky bucket as a queue: the departure time of the last admitted unit.
    Leaky {
        /// The limit: `l` departures per `w` nanoseconds.
        l: u64,
        /// The window, in nanoseconds.
        w: u64,
        /// How many units may wait behind the one departing.
        burst: u64,
        /// When the last admitted unit departs, exactly.
        last_departure: Option<Q>,
    },
    /// Smoothed rate: the estimate as last written, in units of `2^scale`
    /// per request, decayed by [`smoothed_decay`] per whole tick since.
    Smoothed {
        /// The limit.
        l: u64,
        /// The half-life in nanoseconds (the window times ln 2, as the
        /// core's engine states it).
        half_life: u64,
        /// The estimate counts `2^scale` per unit of cost (as the engine
        /// states it).
        scale: u32,
        /// The estimate when last written.
        estimate: u64,
        /// When it was last written.
        at: u64,
    },
}

impl Model {
    /// The model of `algorithm` for the rate `l` per `w` ns. Panics for
    /// [`Algorithm::None`], which has nothing to model.
    pub fn new(algorithm: Algorithm, l: u64, w: u64, burst: Option<u64>) -> Model {
        match algorithm {
            Algorithm::FixedWindow => Model::Fixed {
                l,
                w,
                counts: BTreeMap::new(),
            },
            Algorithm::SlidingLog => Model::Log {
                l,
                w,
                log: Vec::new(),
            },
            Algorithm::SlidingWindow => Model::Window {
                l,
                w,
                counts: BTreeMap::new(),
            },
            Algorithm::TokenBucket => Model::Token {
                l,
                w,
                tokens: Q::int(l),
                last: None,
            },
            Algorithm::LeakyBucket => Model::Leaky {
                l,
                w,
                burst: burst.unwrap_or(l),
                last_departure: None,
            },
            Algorithm::SmoothedRate => {
                let rate = Rate::new(l, Duration::from_nanos(w)).expect("a valid rate");
                let engine = SmoothedRate::new(rate);
                Model::Smoothed {
                    l,
                    half_life: engine.half_life_nanos(),
                    scale: engine.scale(),
                    estimate: 0,
                    at: 0,
                }
            }
            Algorithm::None => panic!("no model for none"),
        }
    }

    /// The most that can pass at one instant from scratch.
    pub fn capacity(&self) -> u64 {
        match self {
            Model::Leaky { burst, .. } => burst + 1,
            Model::Fixed { l, .. }
            | Model::Log { l, .. }
            | Model::Window { l, .. }
            | Model::Token { l, .. }
            | Model::Smoothed { l, .. } => *l,
        }
    }

    /// Whether a request of cost `c` would pass at `t`.
    pub fn allows(&self, t: u64, c: u64) -> bool {
        match self {
            Model::Fixed { l, w, counts } => {
                counts.get(&(t / w)).unwrap_or(&0).saturating_add(c) <= *l
            }
            Model::Log { l, w, log } => {
                // The window is (t - W, t]: an entry counts while e + W > t.
                let live: u64 = log
                    .iter()
                    .filter(|&&(e, _)| e + w > t)
                    .map(|&(_, c)| c)
                    .sum();
                live.saturating_add(c) <= *l
            }
            Model::Window { l, w, counts } => {
                let idx = t / w;
                let prev = if idx == 0 {
                    0
                } else {
                    *counts.get(&(idx - 1)).unwrap_or(&0)
                };
                let curr = *counts.get(&idx).unwrap_or(&0);
                let elapsed = t - idx * w;
                let estimate = Q::new(i128::from(prev) * i128::from(w - elapsed), i128::from(*w))
                    + Q::int(curr);
                (estimate + Q::int(c)).le(Q::int(*l))
            }
            Model::Token { .. } => Q::int(c).le(self.tokens_at(t)),
            &Model::Smoothed { l, scale, .. } => {
                let counted = u128::from(self.smoothed_at(t)) + (u128::from(c) << scale);
                counted <= u128::from(l) << scale
            }
            Model::Leaky { burst, w, l, .. } => {
                let (_, departs) = self.departure(t, c);
                let most = Q::new(i128::from(*burst) * i128::from(*w), i128::from(*l));
                (departs - Q::int(t)).le(most)
            }
        }
    }

    fn tokens_at(&self, t: u64) -> Q {
        match self {
            Model::Token { l, w, tokens, last } => match last {
                None => Q::int(*l),
                Some(last) => {
                    let refill = Q::new(((t - last) as i128) * (*l as i128), *w as i128);
                    (*tokens + refill).min(Q::int(*l))
                }
            },
            _ => unreachable!(),
        }
    }

    /// The smoothed estimate at `t`, as it counts: decayed by every whole
    /// tick (a 65,536th of the half-life) since it was written, and zero
    /// below a sixteenth of a request.
    fn smoothed_at(&self, t: u64) -> u64 {
        match *self {
            Model::Smoothed {
                half_life,
                scale,
                estimate,
                at,
                ..
            } => {
                let decayed = smoothed_decay(estimate, ticks_in(t.saturating_sub(at), half_life));
                counted(decayed, scale)
            }
            _ => unreachable!(),
        }
    }

    /// The smoothed estimate set to `to(estimate at t, units per request)`
    /// at `t`.
    fn set_smoothed(&mut self, t: u64, to: impl FnOnce(u64, u64) -> u64) {
        let now = self.smoothed_at(t);
        if let Model::Smoothed {
            scale,
            estimate,
            at,
            ..
        } = self
        {
            *estimate = counted(to(now, 1 << *scale), *scale);
            *at = t;
        }
    }

    /// (first unit's departure, last unit's departure) for a request of c.
    fn departure(&self, t: u64, c: u64) -> (Q, Q) {
        match self {
            Model::Leaky {
                l,
                w,
                last_departure,
                ..
            } => {
                let period = Q::new(*w as i128, *l as i128);
                let first = match last_departure {
                    None => Q::int(t),
                    Some(d) => Q::int(t).max(*d + period),
                };
                let last = first + period * Q::int(c.saturating_sub(1));
                (first, last)
            }
            _ => unreachable!(),
        }
    }

    /// Records an admitted request of cost `c` at `t`.
    pub fn record(&mut self, t: u64, c: u64) {
        let tokens_after = match self {
            Model::Token { .. } => self.tokens_at(t) - Q::int(c),
            _ => Q::int(0),
        };
        let departs = match self {
            Model::Leaky { .. } => Some(self.departure(t, c).1),
            _ => None,
        };
        match self {
            Model::Fixed { w, counts, .. } | Model::Window { w, counts, .. } => {
                *counts.entry(t / *w).or_default() += c
            }
            Model::Log { log, .. } => log.push((t, c)),
            Model::Token { tokens, last, .. } => {
                *tokens = tokens_after;
                *last = Some(t);
            }
            Model::Leaky { last_departure, .. } => *last_departure = departs,
            Model::Smoothed { .. } => self.set_smoothed(t, |e, unit| e + c * unit),
        }
    }

    /// Records a denied request of cost `c` at `t`, as
    /// [`Mode::RecordAlways`](limits::Mode) does. The fixed window adds
    /// every hit, as envoyproxy/ratelimit's counter does (`INCRBY`, past
    /// the limit); the sliding window counter adds it up to the limit (its
    /// previous count weighs in the next window, so a count past the
    /// limit would decide differently there); the log and the buckets keep
    /// no count and record nothing.
    pub fn record_denied(&mut self, t: u64, c: u64) {
        match self {
            Model::Fixed { w, counts, .. } => {
                let count = counts.entry(t / *w).or_default();
                *count = count.saturating_add(c);
            }
            Model::Window { l, w, counts } => {
                let count = counts.entry(t / *w).or_default();
                *count = count.saturating_add(c).min(*l);
            }
            Model::Log { .. }
            | Model::Token { .. }
            | Model::Leaky { .. }
            | Model::Smoothed { .. } => {}
        }
    }

    /// Gives back `units` at `t` of a request admitted at `at` (settled to
    /// a lower cost). Fixed window: from the count of the request's
    /// window, if that is `t`'s; sliding window: if it is `t`'s or the one
    /// before; log: from the entries at `at`, while they are in the window
    /// (entries of one time expire together, so which one gives the units
    /// back is no matter); token bucket: tokens back, at most `l`; leaky
    /// bucket: the queue shortened, never below empty.
    pub fn refund(&mut self, t: u64, at: u64, units: u64) {
        match self {
            Model::Fixed { w, counts, .. } => {
                if at / *w == t / *w {
                    take(counts.entry(at / *w).or_default(), units);
                }
            }
            Model::Window { w, counts, .. } => {
                if at / *w + 1 >= t / *w {
                    take(counts.entry(at / *w).or_default(), units);
                }
            }
            Model::Log { w, log, .. } => {
                if at + *w > t {
                    let mut left = units;
                    for (_, cost) in log.iter_mut().filter(|(e, _)| *e == at) {
                        let given = left.min(*cost);
                        *cost -= given;
                        left -= given;
                    }
                }
            }
            &mut Model::Token { l, .. } => {
                let tokens = (self.tokens_at(t) + Q::int(units)).min(Q::int(l));
                self.set_tokens(t, tokens);
            }
            Model::Leaky { .. } => self.move_queue_end(|end, period| {
                end.map(|end| (end - period * Q::int(units)).max(Q::int(t)))
            }),
            &mut Model::Smoothed { half_life, .. } => {
                let ticks = ticks_in(t.saturating_sub(at), half_life);
                self.set_smoothed(t, |e, unit| {
                    e.saturating_sub(smoothed_decay(units * unit, ticks))
                })
            }
        }
    }

    /// Takes `units` more at `t` (settled to a higher cost), whether or not
    /// they fit: the fixed and sliding windows' count of `t`'s window and
    /// the log's live units go up to `l` (the log's as a new entry at `t`);
    /// the buckets go at most `l` tokens into debt, or `2 l` units queued.
    pub fn charge(&mut self, t: u64, units: u64) {
        match self {
            Model::Fixed { l, w, counts } | Model::Window { l, w, counts } => {
                let count = counts.entry(t / *w).or_default();
                *count = count.saturating_add(units).min(*l);
            }
            Model::Log { l, w, log } => {
                let live: u64 = log.iter().filter(|&&(e, _)| e + *w > t).map(|e| e.1).sum();
                let added = units.min(l.saturating_sub(live));
                if added > 0 {
                    log.push((t, added));
                }
            }
            &mut Model::Token { l, .. } => {
                let debt = Q::new(-i128::from(l), 1);
                let tokens = (self.tokens_at(t) - Q::int(units)).max(debt);
                self.set_tokens(t, tokens);
            }
            &mut Model::Leaky { w, .. } => self.move_queue_end(|end, period| {
                let end = end.map_or(Q::int(t), |end| end.max(Q::int(t)));
                let most = Q::int(t) + Q::int(2) * Q::int(w);
                Some((end + period * Q::int(units)).min(most))
            }),
            &mut Model::Smoothed { l, .. } => self.set_smoothed(t, |e, unit| {
                let most = u128::from(2 * l) * u128::from(unit);
                (u128::from(e) + u128::from(units) * u128::from(unit)).min(most) as u64
            }),
        }
    }

    /// The token bucket's tokens set to `tokens` at `t`.
    fn set_tokens(&mut self, t: u64, tokens: Q) {
        if let Model::Token {
            tokens: held, last, ..
        } = self
        {
            *held = tokens;
            *last = Some(t);
        }
    }

    /// The leaky bucket's queue end (one period after its last unit
    /// departs; `None` if none ever did) moved as `to` says, given the
    /// period.
    fn move_queue_end(&mut self, to: impl FnOnce(Option<Q>, Q) -> Option<Q>) {
        if let Model::Leaky {
            l,
            w,
            last_departure,
            ..
        } = self
        {
            let period = Q::new(i128::from(*w), i128::from(*l));
            let end = to(last_departure.map(|d| d + period), period);
            *last_departure = end.map(|end| end - period);
        }
    }

    /// Nanoseconds an admitted request of c waits before it departs.
    pub fn delay(&self, t: u64, c: u64) -> u64 {
        match self {
            Model::Leaky { .. } => (self.departure(t, c).1 - Q::int(t)).ceil() as u64,
            _ => 0,
        }
    }
}

/// Whole ticks of the smoothed rate's decay (a 65,536th of `half_life`)
/// in `elapsed` nanoseconds.
fn ticks_in(elapsed: u64, half_life: u64) -> u64 {
    let ticks = u128::from(elapsed) * u128::from(TICKS_PER_HALF_LIFE) / u128::from(half_life);
    u64::try_from(ticks).unwrap_or(u64::MAX)
}

/// A smoothed estimate as it counts, in units of `2^scale` a request:
/// nothing below a sixteenth of one.
fn counted(estimate: u64, scale: u32) -> u64 {
    if estimate < 1 << scale.saturating_sub(4) {
        0
    } else {
        estimate
    }
}

/// Takes up to `units` from `count`.
fn take(count: &mut u64, units: u64) {
    *count -= units.min(*count);
}
