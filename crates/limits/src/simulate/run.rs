//! Runs limiters over a trace and measures each: allowed, rejected, the worst
//! window, memory, and how its decisions differ from the exact sliding log.

use super::{Arrival, WorstWindow};
use crate::{Algorithm, KeyState, Rule};

/// What one arrival got from one limiter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Whether it was allowed.
    pub allowed: bool,
    /// When it was released: its arrival plus its delay (leaky bucket), in ns.
    pub release: u64,
}

/// One limiter's results on a trace.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The limiter.
    pub algorithm: Algorithm,
    /// Requests allowed.
    pub allowed: u64,
    /// Requests rejected.
    pub rejected: u64,
    /// The most cost one key had allowed in any half-open window [s, s + W),
    /// counted at release time (the leaky bucket's departures).
    pub worst_window: u64,
    /// Allowed here but denied by a sliding log run alongside.
    pub false_allows: u64,
    /// Denied here but allowed by the sliding log run alongside.
    pub false_denies: u64,
    /// The most bytes one key's state held at any moment (inline + heap).
    pub peak_bytes_per_key: usize,
    /// Every arrival's verdict, in the trace's order.
    pub verdicts: Vec<Verdict>,
}

/// Runs each rule over `arrivals` (sorted by time; keys below `keys`) and
/// measures it, with worst windows of `window` ns.
///
/// ```
/// use limits::simulate::{run, Pattern};
/// use limits::{Algorithm, Rule};
/// let second = 1_000_000_000;
/// let arrivals = Pattern::Edge.arrivals(10, second, 1);
/// let rules: Vec<Rule> = [Algorithm::FixedWindow, Algorithm::SlidingLog]
///     .into_iter()
///     .map(|a| Rule::new(a, "10/s".parse().unwrap()))
///     .collect();
/// let out = run(&rules, &arrivals, 1, second);
/// assert_eq!((out[0].allowed, out[0].worst_window), (20, 20)); // fixed window leaks
/// assert_eq!((out[1].allowed, out[1].worst_window), (10, 10)); // sliding log does not
/// assert_eq!(out[0].false_allows, 10);
/// ```
pub fn run(rules: &[Rule], arrivals: &[Arrival], keys: u32, window: u64) -> Vec<Outcome> {
    rules
        .iter()
        .map(|rule| run_one(rule, arrivals, keys, window))
        .collect()
}

fn run_one(rule: &Rule, arrivals: &[Arrival], keys: u32, window: u64) -> Outcome {
    let exact = Rule::new(Algorithm::SlidingLog, rule.rates().clone());
    let mut states: Vec<KeyState> = (0..keys).map(|_| rule.new_state()).collect();
    let mut exact_states: Vec<KeyState> = (0..keys).map(|_| exact.new_state()).collect();
    let mut worst = WorstWindow::new(window);
    let mut out = Outcome {
        algorithm: rule.algorithm(),
        allowed: 0,
        rejected: 0,
        worst_window: 0,
        false_allows: 0,
        false_denies: 0,
        peak_bytes_per_key: 0,
        verdicts: Vec::with_capacity(arrivals.len()),
    };
    let inline = std::mem::size_of::<KeyState>();
    for a in arrivals {
        let k = a.key as usize;
        if k >= states.len() {
            states.resize_with(k + 1, || rule.new_state());
            exact_states.resize_with(k + 1, || exact.new_state());
        }
        let d = rule.check(&mut states[k], a.t, a.cost);
        let reference = exact.check(&mut exact_states[k], a.t, a.cost).allowed;
        let release = a.t.saturating_add(crate::duration::nanos_of(d.delay));
        if d.allowed {
            out.allowed += 1;
            worst.add(&a.key, release, a.cost);
            out.false_allows += u64::from(!reference);
        } else {
            out.rejected += 1;
            out.false_denies += u64::from(reference);
        }
        out.peak_bytes_per_key = out
            .peak_bytes_per_key
            .max(inline + rule.heap_bytes(&states[k]));
        out.verdicts.push(Verdict {
            allowed: d.allowed,
            release,
        });
    }
    out.worst_window = worst.worst();
    out
}
