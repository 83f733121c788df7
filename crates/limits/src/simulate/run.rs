//! Runs limiters over a trace and measures each: allowed, rejected, the worst
//! window, memory, and how its decisions differ from the exact sliding log.

use super::{Arrival, Pattern, Tally};
use crate::{Algorithm, KeyState, Rates, Rule};

/// What one arrival got from one limiter in a simulation (not to be
/// confused with [`crate::Verdict`], a store's answer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Judged {
    /// Whether it was allowed.
    pub allowed: bool,
    /// When it was released: its arrival plus its delay (leaky bucket), in ns.
    pub release: u64,
}

/// One limiter's results on a trace.
#[derive(Clone, Debug)]
pub struct RunResult {
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
    /// What every arrival got, in the trace's order.
    pub judged: Vec<Judged>,
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
pub fn run(rules: &[Rule], arrivals: &[Arrival], keys: u32, window: u64) -> Vec<RunResult> {
    rules
        .iter()
        .map(|rule| run_one(rule, arrivals, keys, window))
        .collect()
}

fn run_one(rule: &Rule, arrivals: &[Arrival], keys: u32, window: u64) -> RunResult {
    let exact = Rule::new(Algorithm::SlidingLog, rule.rates().clone());
    let mut states: Vec<KeyState> = (0..keys).map(|_| rule.new_state()).collect();
    let mut exact_states: Vec<KeyState> = (0..keys).map(|_| exact.new_state()).collect();
    let mut tally = Tally::new(window);
    let mut peak_bytes_per_key = 0;
    let mut judged = Vec::with_capacity(arrivals.len());
    let inline = std::mem::size_of::<KeyState>();
    for a in arrivals {
        let k = a.key as usize;
        if k >= states.len() {
            states.resize_with(k + 1, || rule.new_state());
            exact_states.resize_with(k + 1, || exact.new_state());
        }
        let d = rule.check(&mut states[k], a.t, a.cost);
        let reference = exact.check(&mut exact_states[k], a.t, a.cost).allowed;
        let release = tally.count(&a.key, a.t, a.cost, &d, reference);
        peak_bytes_per_key = peak_bytes_per_key.max(inline + rule.heap_bytes(&states[k]));
        judged.push(Judged {
            allowed: d.allowed,
            release,
        });
    }
    RunResult {
        algorithm: rule.algorithm(),
        allowed: tally.allowed,
        rejected: tally.rejected,
        worst_window: tally.worst_window(),
        false_allows: tally.false_allows,
        false_denies: tally.false_denies,
        peak_bytes_per_key,
        judged,
    }
}

/// A finished simulation: the pattern and rates it ran, its arrivals, and
/// what each limiter did with them. Plain data, for whatever reports it (a
/// table, JSON, a picture).
#[derive(Clone, Debug)]
pub struct Simulation {
    /// The traffic pattern.
    pub pattern: Pattern,
    /// The rates every limiter ran; the first sets the pattern's pace and
    /// the worst window's length.
    pub rates: Rates,
    /// Clients: every one receives the whole pattern.
    pub keys: u32,
    /// The trace, sorted by time.
    pub arrivals: Vec<Arrival>,
    /// One result per rule, in the rules' order.
    pub results: Vec<RunResult>,
}

impl Simulation {
    /// Runs `rules` over `pattern` for the first of `rates`, sent by `keys`
    /// clients.
    ///
    /// ```
    /// use limits::simulate::{Pattern, Simulation};
    /// use limits::{Algorithm, Rule};
    /// let rates: limits::Rates = "10/s".parse().unwrap();
    /// let rules = [Rule::new(Algorithm::SlidingLog, rates.clone())];
    /// let sim = Simulation::new(Pattern::Edge, rates, 2, &rules);
    /// assert_eq!(sim.arrivals.len(), 40);
    /// assert_eq!(sim.results[0].allowed, 20);
    /// assert_eq!((sim.limit(), sim.window()), (10, 1_000_000_000));
    /// ```
    pub fn new(pattern: Pattern, rates: Rates, keys: u32, rules: &[Rule]) -> Simulation {
        let first = rates.as_slice()[0];
        let arrivals = pattern.arrivals(first.limit(), first.window_nanos(), keys);
        let results = run(rules, &arrivals, keys, first.window_nanos());
        Simulation {
            pattern,
            rates,
            keys,
            arrivals,
            results,
        }
    }

    /// The first rate's limit: the pattern's and a plot's limit line.
    pub fn limit(&self) -> u64 {
        self.rates.as_slice()[0].limit()
    }

    /// The first rate's window: the pattern's and the worst window's.
    pub fn window(&self) -> u64 {
        self.rates.as_slice()[0].window_nanos()
    }
}
