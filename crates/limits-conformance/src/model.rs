//! Reference models: plain, obviously-correct limiters (a Vec of timestamps,
//! rational arithmetic, whole history kept), and the driver that compares the
//! real limiters with them decision by decision.
//!
//! A model only answers "would this cost pass at t?" and "record it". Every
//! other field of a decision is derived from that by definition, not by
//! formula: `remaining` by recording cost-1 requests on a copy until one is
//! denied, `retry_after`, `reset_after` and `refill_after` by searching for the
//! first nanosecond at which the defining condition holds.

#![allow(dead_code)]

use limits::{
    Algorithm, Decision, KeyedLimiter, ManualClock, Options, Rate, Rates, RetryAfter, Rule,
};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;

/// An exact non-negative rational number.
#[derive(Clone, Copy, Debug)]
pub struct Q {
    n: i128,
    d: i128,
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

impl Q {
    pub fn new(n: i128, d: i128) -> Q {
        let g = gcd(n, d).max(1);
        Q { n: n / g, d: d / g }
    }
    pub fn int(n: u64) -> Q {
        Q::new(n as i128, 1)
    }
    pub fn add(self, o: Q) -> Q {
        Q::new(self.n * o.d + o.n * self.d, self.d * o.d)
    }
    pub fn sub(self, o: Q) -> Q {
        Q::new(self.n * o.d - o.n * self.d, self.d * o.d)
    }
    pub fn mul(self, o: Q) -> Q {
        Q::new(self.n * o.n, self.d * o.d)
    }
    pub fn le(self, o: Q) -> bool {
        self.n * o.d <= o.n * self.d
    }
    pub fn max(self, o: Q) -> Q {
        if self.le(o) {
            o
        } else {
            self
        }
    }
    pub fn min(self, o: Q) -> Q {
        if self.le(o) {
            self
        } else {
            o
        }
    }
    pub fn floor(self) -> i128 {
        self.n.div_euclid(self.d)
    }
    pub fn ceil(self) -> i128 {
        -(-self.n).div_euclid(self.d)
    }
}

/// A reference limiter for one rate and one key.
#[derive(Clone, Debug)]
pub enum Model {
    /// Window index -> cost admitted in it.
    Fixed {
        l: u64,
        w: u64,
        counts: BTreeMap<u64, u64>,
    },
    /// Every admitted timestamp ever, one per unit of cost.
    Log { l: u64, w: u64, log: Vec<u64> },
    /// Window index -> cost admitted in it; the estimate is rational.
    Window {
        l: u64,
        w: u64,
        counts: BTreeMap<u64, u64>,
    },
    /// Tokens as a rational, refilled continuously since `last`.
    Token {
        l: u64,
        w: u64,
        tokens: Q,
        last: Option<u64>,
    },
    /// The departure time of the last admitted unit, rational.
    Leaky {
        l: u64,
        w: u64,
        burst: u64,
        last_departure: Option<Q>,
    },
}

impl Model {
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
            | Model::Token { l, .. } => *l,
        }
    }

    pub fn allows(&self, t: u64, c: u64) -> bool {
        match self {
            Model::Fixed { l, w, counts } => counts.get(&(t / w)).unwrap_or(&0) + c <= *l,
            Model::Log { l, w, log } => {
                // The window is (t - W, t]: an entry counts while e + W > t.
                let live = log.iter().filter(|&&e| e + w > t).count() as u64;
                live + c <= *l
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
                let estimate = Q::new((prev * (w - elapsed)) as i128, *w as i128).add(Q::int(curr));
                estimate.add(Q::int(c)).le(Q::int(*l))
            }
            Model::Token { .. } => Q::int(c).le(self.tokens_at(t)),
            Model::Leaky { burst, w, l, .. } => {
                let (_, departs) = self.departure(t, c);
                departs
                    .sub(Q::int(t))
                    .le(Q::new((*burst * *w) as i128, *l as i128))
            }
        }
    }

    fn tokens_at(&self, t: u64) -> Q {
        match self {
            Model::Token { l, w, tokens, last } => match last {
                None => Q::int(*l),
                Some(last) => {
                    let refill = Q::new(((t - last) as i128) * (*l as i128), *w as i128);
                    tokens.add(refill).min(Q::int(*l))
                }
            },
            _ => unreachable!(),
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
                    Some(d) => Q::int(t).max(d.add(period)),
                };
                let last = first.add(period.mul(Q::int(c.saturating_sub(1))));
                (first, last)
            }
            _ => unreachable!(),
        }
    }

    pub fn record(&mut self, t: u64, c: u64) {
        let after = match self {
            Model::Token { .. } => Some(self.tokens_at(t).sub(Q::int(c))),
            _ => None,
        };
        let departs = match self {
            Model::Leaky { .. } => Some(self.departure(t, c).1),
            _ => None,
        };
        match self {
            Model::Fixed { w, counts, .. } | Model::Window { w, counts, .. } => {
                *counts.entry(t / *w).or_default() += c
            }
            Model::Log { log, .. } => log.extend(std::iter::repeat_n(t, c as usize)),
            Model::Token { tokens, last, .. } => {
                *tokens = after.unwrap();
                *last = Some(t);
            }
            Model::Leaky { last_departure, .. } => *last_departure = departs,
        }
    }

    /// Nanoseconds an admitted request of c waits before it departs.
    pub fn delay(&self, t: u64, c: u64) -> u64 {
        match self {
            Model::Leaky { .. } => self.departure(t, c).1.sub(Q::int(t)).ceil() as u64,
            _ => 0,
        }
    }
}

/// The reference for one key of a rule: one model per rate, all-or-nothing.
#[derive(Clone, Debug)]
pub struct RuleModel(pub Vec<Model>);

impl RuleModel {
    pub fn new(algorithm: Algorithm, rates: &[(u64, u64)], burst: Option<u64>) -> RuleModel {
        RuleModel(
            rates
                .iter()
                .map(|&(l, w)| Model::new(algorithm, l, w, burst))
                .collect(),
        )
    }

    fn capacity(&self) -> u64 {
        self.0.iter().map(Model::capacity).min().unwrap()
    }

    pub fn allows(&self, t: u64, c: u64) -> bool {
        self.0.iter().all(|m| m.allows(t, c))
    }

    fn record(&mut self, t: u64, c: u64) {
        for m in &mut self.0 {
            m.record(t, c);
        }
    }

    /// Cost-1 requests that would pass at t, one after another.
    pub fn remaining(&self, t: u64) -> u64 {
        let mut copy = self.clone();
        let mut n = 0;
        while n <= self.capacity() && copy.allows(t, 1) {
            copy.record(t, 1);
            n += 1;
        }
        n
    }

    /// Every rate back to its full limit: the state of a key never seen.
    fn is_full(&self, t: u64) -> bool {
        self.0
            .iter()
            .all(|m| RuleModel(vec![m.clone()]).remaining(t) == m.capacity())
    }

    /// The decision, every field derived from `allows` by definition.
    pub fn decide(&mut self, t: u64, c: u64) -> Decision {
        let allowed = c == 0 || self.allows(t, c);
        let retry_after = if allowed {
            RetryAfter::ZERO
        } else if c > self.capacity() {
            RetryAfter::Never
        } else {
            RetryAfter::After(ns(first_after(t, |at| self.allows(at, c))))
        };
        let delay = if allowed && c > 0 {
            self.0.iter().map(|m| m.delay(t, c)).max().unwrap()
        } else {
            0
        };
        if allowed && c > 0 {
            self.record(t, c);
        }
        let remaining = self.remaining(t);
        let reset_after = if self.is_full(t) {
            0
        } else {
            first_after(t, |at| self.is_full(at))
        };
        let refill_after = if remaining == self.capacity() {
            0
        } else {
            first_after(t, |at| self.remaining(at) > remaining)
        };
        Decision {
            allowed,
            remaining,
            retry_after,
            reset_after: ns(reset_after),
            delay: ns(delay),
            refill_after: ns(refill_after),
        }
    }
}

fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

/// The smallest d >= 1 with `holds(t + d)`, for a condition that, once true,
/// stays true. Panics if there is none within 2^50 ns.
pub fn first_after(t: u64, holds: impl Fn(u64) -> bool) -> u64 {
    let mut hi = 1u64;
    while !holds(t + hi) {
        hi *= 2;
        assert!(hi < 1 << 50, "condition never holds after t={t}");
    }
    let mut lo = hi / 2; // holds(t + lo) is false, or lo == 0
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if holds(t + mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// One request of a trace.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub key: u8,
    pub t: u64,
    pub cost: u64,
}

/// A random rule shape and a trace to run through it.
#[derive(Clone, Debug)]
pub struct Case {
    pub rates: Vec<(u64, u64)>,
    pub burst: Option<u64>,
    pub events: Vec<Event>,
}

impl Case {
    pub fn rule(&self, algorithm: Algorithm) -> Rule {
        let rates: Vec<Rate> = self
            .rates
            .iter()
            .map(|&(l, w)| Rate::new(l, Duration::from_nanos(w)).unwrap())
            .collect();
        let rule = Rule::new(algorithm, Rates::new(rates).unwrap());
        match self.burst {
            Some(b) => rule.with_burst(b),
            None => rule,
        }
    }
}

/// Windows that make edge cases likely: tiny ones where W is not divisible by
/// L, a prime number of nanoseconds, and one second.
pub fn window() -> impl Strategy<Value = u64> {
    prop_oneof![
        1u64..=12,
        13u64..=1000,
        Just(999_999_937),
        Just(1_000_000_000)
    ]
}

/// Random rule shapes with `max_rates` rates at most, and traces over them
/// with bursts at one instant, gaps of exactly one window, costs above 1 and
/// above the limit, on up to three keys.
pub fn case(max_rates: usize) -> impl Strategy<Value = Case> {
    let rates = prop::collection::vec((1u64..=6, window()), 1..=max_rates);
    let burst = prop_oneof![3 => Just(None), 1 => (0u64..=4).prop_map(Some)];
    (rates, burst).prop_flat_map(|(rates, burst)| {
        let (l, w) = rates[0];
        let gap = prop_oneof![
            4 => Just(0u64),
            2 => Just(w),
            1 => Just(w.saturating_sub(1)),
            1 => Just(w + 1),
            1 => Just((w / l).max(1)),
            1 => Just(1u64),
            4 => 0..=w * 3 / 2 + 1,
        ];
        let cost =
            prop_oneof![6 => Just(1u64), 2 => 2..=l + 1, 1 => Just(0u64), 1 => l + 1..=l + 3];
        let step = (0u8..3, gap, cost);
        prop::collection::vec(step, 1..60).prop_map(move |steps| {
            let mut t = 0;
            let events = steps
                .into_iter()
                .map(|(key, gap, cost)| {
                    t += gap;
                    Event { key, t, cost }
                })
                .collect();
            Case {
                rates: rates.clone(),
                burst,
                events,
            }
        })
    })
}

/// A keyed limiter for `case` with few shards and a manual clock.
pub fn limiter(case: &Case, algorithm: Algorithm) -> KeyedLimiter<u8, ManualClock> {
    let options = Options {
        max_keys: None,
        shards: 2,
    };
    KeyedLimiter::with_options(case.rule(algorithm), ManualClock::new(0), options)
}

/// Runs `case` through the real keyed limiter and through the reference
/// models, and fails at the first decision where any field differs.
pub fn compare_with_model(algorithm: Algorithm, case: &Case) -> Result<(), TestCaseError> {
    let real = limiter(case, algorithm);
    let mut models: BTreeMap<u8, RuleModel> = BTreeMap::new();
    for (i, e) in case.events.iter().enumerate() {
        let got = real.check_at(&e.key, e.t, e.cost);
        let model = models
            .entry(e.key)
            .or_insert_with(|| RuleModel::new(algorithm, &case.rates, case.burst));
        let want = model.decide(e.t, e.cost);
        prop_assert_eq!(got, want, "event #{} {:?} of {:?}", i, e, case);
    }
    Ok(())
}

/// Checks, for every denial in `case`, that the same request passes at exactly
/// now + retry_after and not one nanosecond earlier, with nothing else arriving.
pub fn check_retry_is_exact(algorithm: Algorithm, case: &Case) -> Result<(), TestCaseError> {
    let rule = case.rule(algorithm);
    let mut states: BTreeMap<u8, limits::KeyState> = BTreeMap::new();
    for e in &case.events {
        let state = states.entry(e.key).or_insert_with(|| rule.new_state());
        let d = rule.check(state, e.t, e.cost);
        if d.allowed {
            continue;
        }
        match d.retry_after {
            RetryAfter::Never => prop_assert!(e.cost > rule.max_cost()),
            RetryAfter::After(wait) => {
                let wait = wait.as_nanos() as u64;
                prop_assert!(wait >= 1);
                let mut later = state.clone();
                prop_assert!(
                    rule.peek(&mut later, e.t + wait, e.cost).allowed,
                    "{:?} at +{}",
                    e,
                    wait
                );
                let mut sooner = state.clone();
                prop_assert!(
                    !rule.peek(&mut sooner, e.t + wait - 1, e.cost).allowed,
                    "{:?} at +{}-1",
                    e,
                    wait
                );
            }
        }
    }
    Ok(())
}

/// Per key, the (time, cost) of every allowed request of `case`.
pub fn allowed_by_key(algorithm: Algorithm, case: &Case) -> BTreeMap<u8, Vec<(u64, u64)>> {
    let real = limiter(case, algorithm);
    let mut out: BTreeMap<u8, Vec<(u64, u64)>> = BTreeMap::new();
    for e in &case.events {
        let d = real.check_at(&e.key, e.t, e.cost);
        if d.allowed && e.cost > 0 {
            out.entry(e.key)
                .or_default()
                .push((e.t + d.delay.as_nanos() as u64, e.cost));
        }
    }
    out
}

/// The most cost in any half-open window [s, s + w) over sorted (time, cost).
pub fn worst_window(events: &[(u64, u64)], w: u64) -> u64 {
    let mut worst = 0;
    let mut start = 0;
    let mut sum = 0;
    for &(t, c) in events {
        sum += c;
        while events[start].0 + w <= t {
            sum -= events[start].1;
            start += 1;
        }
        worst = worst.max(sum);
    }
    worst
}

/// Proptest settings for these suites.
pub fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 300,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}
