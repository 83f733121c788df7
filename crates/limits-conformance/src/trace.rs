//! Random rule shapes and multi-key traces with explicit times, made to land
//! on the edge cases: ties at one nanosecond, times exactly on window edges,
//! costs above one and above the limit, several rates per rule.

use limits::{Algorithm, Rate, Rates, Rule};
use proptest::prelude::*;
use std::time::Duration;

/// One request of a trace.
#[derive(Clone, Copy, Debug)]
pub struct Event {
    /// Which key (a store sees it as `k0`, `k1`, ...).
    pub key: u8,
    /// When, in nanoseconds; never decreasing along a trace.
    pub t: u64,
    /// The request's cost.
    pub cost: u64,
}

/// A random rule shape and a trace to run through it.
#[derive(Clone, Debug)]
pub struct Case {
    /// (limit, window in nanoseconds), in the rule's rate order.
    pub rates: Vec<(u64, u64)>,
    /// The leaky bucket's burst, if set.
    pub burst: Option<u64>,
    /// The requests, in time order.
    pub events: Vec<Event>,
}

impl Case {
    /// The rule of this shape for `algorithm`.
    pub fn rule(&self, algorithm: Algorithm) -> Rule {
        let rates: Vec<Rate> = self
            .rates
            .iter()
            .map(|&(l, w)| {
                Rate::new(l, Duration::from_nanos(w)).expect("generated rates are valid")
            })
            .collect();
        let rule = Rule::new(algorithm, Rates::new(rates).expect("at least one rate"));
        match self.burst {
            Some(b) => rule.with_burst(b),
            None => rule,
        }
    }
}

impl Case {
    /// The same case with every window and time multiplied by `step`: a
    /// trace for a store whose time has that resolution (ns).
    ///
    /// ```
    /// use limits_conformance::{Case, Event};
    /// let case = Case { rates: vec![(2, 7)], burst: None, events: vec![Event { key: 0, t: 3, cost: 1 }] };
    /// let us = case.scaled(1000);
    /// assert_eq!((us.rates[0].1, us.events[0].t), (7000, 3000));
    /// ```
    pub fn scaled(mut self, step: u64) -> Case {
        for rate in &mut self.rates {
            rate.1 *= step;
        }
        for event in &mut self.events {
            event.t *= step;
        }
        self
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

fn rule_shape(max_rates: usize) -> impl Strategy<Value = (Vec<(u64, u64)>, Option<u64>)> {
    let rates = prop::collection::vec((1u64..=6, window()), 1..=max_rates);
    let burst = prop_oneof![3 => Just(None), 1 => (0u64..=4).prop_map(Some)];
    (rates, burst)
}

/// Random rule shapes with `max_rates` rates at most, and traces over them
/// with bursts at one instant, gaps of exactly one window, costs above 1 and
/// above the limit, on up to three keys.
pub fn case(max_rates: usize) -> impl Strategy<Value = Case> {
    rule_shape(max_rates).prop_flat_map(|(rates, burst)| {
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

/// How the next request's time follows the last one's.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// This many nanoseconds later (0: a tie).
    Gap(u64),
    /// On the next edge of rate `rate`'s windows (a multiple of its window,
    /// strictly later), moved by `shift` nanoseconds (-1, 0 or +1).
    Edge { rate: usize, shift: i8 },
}

/// The steps for one rule shape: every rate's window, one off either side,
/// and its windows' edges, as well as ties and random gaps.
fn step(rates: &[(u64, u64)]) -> impl Strategy<Value = Step> {
    let windows: Vec<u64> = rates.iter().map(|&(_, w)| w).collect();
    let longest = windows.iter().copied().max().unwrap_or(1);
    let n = rates.len();
    prop_oneof![
        4 => Just(Step::Gap(0)),
        2 => (prop::sample::select(windows), -1i64..=1)
            .prop_map(|(w, s)| Step::Gap(w.saturating_add_signed(s))),
        2 => (0..n, -1i8..=1).prop_map(|(rate, shift)| Step::Edge { rate, shift }),
        1 => Just(Step::Gap(1)),
        3 => (0..=longest * 3 / 2 + 1).prop_map(Step::Gap),
    ]
}

/// Traces made for a store's conformance: several rates per rule (up to
/// `max_rates`), up to `max_events` requests on three keys, with ties,
/// gaps of exactly one window of any rate (and one nanosecond either side),
/// times exactly on any rate's window edges (and one either side), and costs
/// of zero, one, above one and above the smallest limit.
pub fn edge_case(max_rates: usize, max_events: usize) -> impl Strategy<Value = Case> {
    rule_shape(max_rates).prop_flat_map(move |(rates, burst)| {
        let smallest = rates.iter().map(|&(l, _)| l).min().unwrap_or(1);
        let largest = rates.iter().map(|&(l, _)| l).max().unwrap_or(1);
        let cost = prop_oneof![
            6 => Just(1u64),
            3 => 2..=largest + 1,
            1 => Just(0u64),
            1 => smallest + 1..=largest + 3,
        ];
        let steps = prop::collection::vec((0u8..3, step(&rates), cost), 1..=max_events.max(1));
        steps.prop_map(move |steps| Case {
            events: timed(&rates, steps),
            rates: rates.clone(),
            burst,
        })
    })
}

/// Turns steps into events with absolute, non-decreasing times.
fn timed(rates: &[(u64, u64)], steps: Vec<(u8, Step, u64)>) -> Vec<Event> {
    let mut t = 0u64;
    steps
        .into_iter()
        .map(|(key, step, cost)| {
            t = match step {
                Step::Gap(gap) => t + gap,
                Step::Edge { rate, shift } => {
                    let w = rates[rate].1;
                    let edge = (t / w + 1) * w;
                    edge.saturating_add_signed(i64::from(shift)).max(t)
                }
            };
            Event { key, t, cost }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    /// The edges the suite promises to visit, counted over many traces.
    #[test]
    fn edge_cases_visit_ties_edges_and_heavy_costs() {
        let mut runner = TestRunner::deterministic();
        let strategy = edge_case(3, 40);
        let (mut ties, mut edges, mut heavy, mut several_rates) = (0, 0, 0, 0);
        for _ in 0..200 {
            let case = strategy.new_tree(&mut runner).expect("a case").current();
            several_rates += usize::from(case.rates.len() > 1);
            for pair in case.events.windows(2) {
                ties += usize::from(pair[0].t == pair[1].t);
            }
            for e in &case.events {
                edges += usize::from(e.t > 0 && case.rates.iter().any(|&(_, w)| e.t % w == 0));
                heavy += usize::from(e.cost > 1);
            }
        }
        assert!(
            several_rates > 80,
            "{several_rates} rules with several rates"
        );
        assert!(ties > 800, "{ties} ties");
        assert!(edges > 500, "{edges} times on a window's edge");
        assert!(heavy > 800, "{heavy} costs above one");
    }
}
