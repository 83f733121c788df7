//! A whole simulation: a pattern sent by some clients, run through some
//! limiters in one streaming pass, as plain data for whatever reports it.

use super::{Arrival, Keep, Pattern, RunResult, Runner};
use crate::{Rates, Rule};

/// How many arrivals pass between two calls of a progress callback.
const PROGRESS_EVERY: u64 = 1 << 16;

/// A finished simulation: the pattern and rates it ran, the arrivals it kept,
/// and what each limiter did with them. Plain data, for whatever reports it
/// (a table, JSON, a picture).
#[derive(Clone, Debug)]
pub struct Simulation {
    /// The traffic pattern.
    pub pattern: Pattern,
    /// The rates every limiter ran; the first sets the pattern's pace and
    /// the worst window's length.
    pub rates: Rates,
    /// Clients: every one receives the whole pattern.
    pub keys: u32,
    /// Requests run, all clients together.
    pub requests: u64,
    /// The kept part of the trace, sorted by time: all of it from
    /// [`new`](Simulation::new), what [`Keep`] says from
    /// [`streamed`](Simulation::streamed).
    pub arrivals: Vec<Arrival>,
    /// One result per rule, in the rules' order; their `judged` follow
    /// `arrivals`.
    pub results: Vec<RunResult>,
}

impl Simulation {
    /// Runs `rules` over `pattern` for the first of `rates`, sent by `keys`
    /// clients, keeping every arrival and what it got.
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
        Simulation::streamed(pattern, rates, keys, rules, Keep::All, |_| {})
    }

    /// Like [`new`](Simulation::new), keeping only what `keep` says, so that
    /// memory follows the clients, not the requests; `progress` is called
    /// with the number of arrivals run so far, every 65,536 and at the end.
    ///
    /// ```
    /// use limits::simulate::{Keep, Pattern, Simulation};
    /// use limits::{Algorithm, Rule};
    /// let rates: limits::Rates = "10/s".parse().unwrap();
    /// let rules = [Rule::new(Algorithm::TokenBucket, rates.clone())];
    /// let mut done = 0;
    /// let sim = Simulation::streamed(Pattern::Steady, rates, 100_000, &rules, Keep::Nothing, |n| {
    ///     done = n
    /// });
    /// assert_eq!((sim.requests, done), (6_000_000, 6_000_000));
    /// assert!(sim.arrivals.is_empty() && sim.results[0].judged.is_empty());
    /// assert_eq!(sim.results[0].allowed, 3_900_000); // 39 per client
    /// ```
    pub fn streamed(
        pattern: Pattern,
        rates: Rates,
        keys: u32,
        rules: &[Rule],
        keep: Keep,
        progress: impl FnMut(u64),
    ) -> Simulation {
        let window = rates.as_slice()[0].window_nanos();
        let runner = Runner::new(rules, keys, window, keep);
        Simulation::with_runner(pattern, rates, keys, runner, progress)
    }

    /// Like [`streamed`](Simulation::streamed), through a runner made for
    /// `keys` keys and worst windows of the first rate's window (one with
    /// a sketch added, [`Runner::add_sketch`]).
    ///
    /// ```
    /// use limits::simulate::{Keep, Pattern, Runner, Simulation};
    /// use limits::{Algorithm, Rule, SketchOptions};
    /// let rates: limits::Rates = "10/s".parse().unwrap();
    /// let rule = Rule::new(Algorithm::SlidingWindow, rates.clone());
    /// let mut runner = Runner::new(&[], 2, 1_000_000_000, Keep::Nothing);
    /// runner.add_sketch(&rule, SketchOptions::new(1 << 20)).unwrap();
    /// let sim = Simulation::with_runner(Pattern::Steady, rates, 2, runner, |_| {});
    /// assert_eq!(sim.results[0].sketch, Some(1 << 20));
    /// ```
    pub fn with_runner(
        pattern: Pattern,
        rates: Rates,
        keys: u32,
        mut runner: Runner,
        mut progress: impl FnMut(u64),
    ) -> Simulation {
        let first = rates.as_slice()[0];
        let (limit, window) = (first.limit(), first.window_nanos());
        let mut requests = 0u64;
        for a in pattern.stream(limit, window, keys) {
            runner.feed(a);
            requests += 1;
            if requests % PROGRESS_EVERY == 0 {
                progress(requests);
            }
        }
        progress(requests);
        let (arrivals, results) = runner.finish();
        Simulation {
            pattern,
            rates,
            keys,
            requests,
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
