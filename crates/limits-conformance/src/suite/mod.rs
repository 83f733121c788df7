//! The conformance suite any [`Store`] can run: fixed traces of costs as
//! large as the limit ([`large_cost_cases`]), then random multi-key traces
//! with explicit times (ties at one nanosecond, times on window edges, costs
//! above one, several rates per rule), every answer compared with the
//! reference models field by field, combined and per rate, plus each
//! algorithm's promises as properties.
//!
//! Stores are async; the suite drives them on a current-thread tokio runtime
//! of its own (I/O and timers enabled), one per check, and calls `make` on it,
//! so a store that connects somewhere can connect in `make`. Call it from a
//! plain `#[test]`, not from inside another runtime.
//!
//! `make` is called with the rule to decide for and must return a store with
//! no state: it is called once per case and again for every probe of a
//! denial's wait, so a shared backend needs a fresh key prefix per call.

mod penalty;
mod run;
mod settle;

pub use penalty::{assert_penalizes, check_penalty, penalty_case, PenaltyCase};
pub use settle::{assert_settles, check_settle, settle_case, SettleCase, SettleTo};

use crate::{edge_case, large_cost_cases, Case, LARGE_COST_LIMIT};
use limits::{Algorithm, Rule, Store};
use proptest::strategy::Strategy;
use proptest::test_runner::{Config as ProptestConfig, TestCaseError, TestError, TestRunner};
use std::fmt;
use std::future::Future;

/// The algorithms the suite holds a store to: all but `none`.
pub const ALGORITHMS: [Algorithm; 6] = [
    Algorithm::FixedWindow,
    Algorithm::SlidingLog,
    Algorithm::TokenBucket,
    Algorithm::SlidingWindow,
    Algorithm::LeakyBucket,
    Algorithm::SmoothedRate,
];

/// How much the suite tries.
#[derive(Clone, Debug)]
pub struct Config {
    /// Random cases per algorithm and property.
    pub cases: u32,
    /// The most rates a generated rule has.
    pub max_rates: usize,
    /// The most requests in a generated trace.
    pub max_events: usize,
    /// Whether the store answers peeks ([`Mode::Peek`](limits::Mode)): then
    /// every request is peeked before it is recorded, the peek compared with
    /// the models too, and a denial's wait is probed with peeks.
    pub peeks: bool,
    /// The store's resolution in nanoseconds: every window and time in the
    /// traces is a multiple of it (1000 for a store that keeps
    /// microseconds, as Redis does), and a denial's wait is probed at the
    /// last such time before it and the first at or after it. Default 1.
    pub time_step: u64,
    /// The limit of the large-cost cases: [`LARGE_COST_LIMIT`], or the
    /// largest a store takes for every algorithm (the Memcached store
    /// refuses a sliding log whose entries could outgrow an item).
    pub large_cost_limit: u64,
    /// The algorithms the store refuses every rule of (the Redis store has
    /// no script for the smoothed rate): the suite passes them without
    /// making a store, and the store's own tests show the refusal.
    pub refused: Vec<Algorithm>,
}

impl Default for Config {
    /// 200 cases of up to 3 rates and 40 requests, peeks on: a few seconds
    /// for the in-memory store.
    fn default() -> Config {
        Config {
            cases: 200,
            max_rates: 3,
            max_events: 40,
            peeks: true,
            time_step: 1,
            large_cost_limit: LARGE_COST_LIMIT,
            refused: Vec::new(),
        }
    }
}

/// What the suite checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Property {
    /// Every decision's allowed, remaining, retry_after, reset_after,
    /// refill_after and delay, combined and per rate, equal the models'.
    MatchesModels,
    /// Every denial's retry_after is exact to the nanosecond.
    RetryAfterExact,
    /// What the algorithm promises over any window holds for what passed:
    /// at most L in any (t - W, t] for the sliding log (and the leaky
    /// bucket's departures), 2L for the fixed and sliding windows, and
    /// L + L * t / W over any span t for the token bucket.
    Invariants,
    /// As `MatchesModels`, every request recorded with
    /// [`Mode::RecordAlways`](limits::Mode): the fixed window counts every
    /// hit, denied or not, as envoyproxy/ratelimit's counter does, the
    /// sliding window counter up to its limit, and the other limiters
    /// record as with `Mode::Record`.
    CountsDenied,
    /// As `MatchesModels`, with earlier admitted requests settled to their
    /// real cost among the requests ([`check_settle`]): not in
    /// [`Property::ALL`], as a store that cannot settle is not run on it.
    Settles,
    /// As `MatchesModels`, for a rule with a penalty ([`check_penalty`]):
    /// bans start at the same denials and refuse alike; not in
    /// [`Property::ALL`], as only a store that bans is run on it.
    Penalizes,
}

impl Property {
    /// Every property, in the order the suite runs them.
    pub const ALL: [Property; 4] = [
        Property::MatchesModels,
        Property::RetryAfterExact,
        Property::Invariants,
        Property::CountsDenied,
    ];
}

/// Where a store's answer and the suite's expectation part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The field that differs: `remaining`, `per_rate[1].retry_after`,
    /// `allowed` (an invariant broken), `error` (the store failed).
    pub field: String,
    /// What was said and expected, and where in the trace.
    pub detail: String,
}

impl Mismatch {
    fn at(mut self, place: String) -> Mismatch {
        self.detail = format!("{}, at {place}", self.detail);
        self
    }
}

/// A store failed the suite: the property, the field, and the smallest trace
/// found that shows it.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The algorithm of the rule.
    pub algorithm: Algorithm,
    /// The property that failed.
    pub property: Property,
    /// What differs.
    pub mismatch: Mismatch,
    /// The rule shape and trace, shrunk by proptest (none if the suite could
    /// not start).
    pub case: Option<Case>,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Mismatch { field, detail } = &self.mismatch;
        write!(
            f,
            "{} {:?}: {field}: {detail}",
            self.algorithm, self.property
        )?;
        if let Some(case) = &self.case {
            write!(f, "\nminimal case: {case:?}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failure {}

/// Checks one property of stores made by `make` for rules of `algorithm`,
/// over the large-cost cases at `config.large_cost_limit` and then
/// `config.cases` random cases; the error names the field.
///
/// ```
/// use limits::{Algorithm, KeyedLimiter, ManualClock, Rule};
/// use limits_conformance::{check, Config, Property};
///
/// let memory = |rule: Rule| async move {
///     KeyedLimiter::<String, ManualClock>::with_clock(rule, ManualClock::new(0))
/// };
/// let config = Config { cases: 20, ..Config::default() };
/// check(memory, Algorithm::SlidingLog, Property::MatchesModels, &config).unwrap();
/// ```
pub fn check<S, F, Fut>(
    make: F,
    algorithm: Algorithm,
    property: Property,
    config: &Config,
) -> Result<(), Failure>
where
    S: Store,
    F: Fn(Rule) -> Fut,
    Fut: Future<Output = S>,
{
    let failure = |mismatch, case| Failure {
        algorithm,
        property,
        mismatch,
        case,
    };
    if config.refused.contains(&algorithm) {
        return Ok(());
    }
    let large = large_cost_cases(config.large_cost_limit);
    check_cases(&make, algorithm, property, &large, config)?;
    let runtime = runtime().map_err(|e| failure(suite_error(e), None))?;
    let one =
        |case: &Case| runtime.block_on(run::check_case(&make, algorithm, property, case, config));
    let step = config.time_step.max(1);
    let strategy =
        edge_case(config.max_rates, config.max_events).prop_map(move |case| case.scaled(step));
    run_cases(config, strategy, one).map_err(|(mismatch, case)| failure(mismatch, case))
}

/// Runs `one` on `config.cases` cases of `strategy`: the failure's
/// mismatch and the smallest case proptest found (none if it aborted).
fn run_cases<C: Clone + fmt::Debug>(
    config: &Config,
    strategy: impl Strategy<Value = C>,
    one: impl Fn(&C) -> Result<(), Mismatch>,
) -> Result<(), (Mismatch, Option<C>)> {
    let mut runner = TestRunner::new(ProptestConfig {
        cases: config.cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    match runner.run(&strategy, |case| {
        one(&case).map_err(|m| TestCaseError::fail(format!("{}: {}", m.field, m.detail)))
    }) {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, case)) => {
            // Run the smallest case once more for the structured mismatch.
            let mismatch = one(&case)
                .err()
                .unwrap_or_else(|| suite_error(reason.to_string()));
            Err((mismatch, Some(case)))
        }
        Err(TestError::Abort(reason)) => Err((suite_error(reason.to_string()), None)),
    }
}

/// A trace of [`edge_case`] with more in it (settlements, a penalty):
/// what [`check_extended`] needs of such a case.
trait ExtendedCase: Clone + fmt::Debug {
    /// The trace itself.
    fn trace(&mut self) -> &mut Case;
    /// What the case adds to its trace, for a failure's detail.
    fn extra(&self) -> String;
    /// The case with its times and durations `step` times longer.
    fn scaled(mut self, step: u64) -> Self {
        let trace = self.trace();
        *trace = trace.clone().scaled(step);
        self
    }
}

/// Checks `property` of `algorithm` on `config.cases` cases of `strategy`
/// (their traces scaled by `config.time_step`), each run by `one` on the
/// suite's runtime: the driver of the suites run apart from the rest.
fn check_extended<C: ExtendedCase>(
    algorithm: Algorithm,
    property: Property,
    config: &Config,
    strategy: impl Strategy<Value = C>,
    one: impl Fn(&tokio::runtime::Runtime, &C) -> Result<(), Mismatch>,
) -> Result<(), Failure> {
    let failure = |mismatch, case| Failure {
        algorithm,
        property,
        mismatch,
        case,
    };
    if config.refused.contains(&algorithm) {
        return Ok(());
    }
    let runtime = runtime().map_err(|e| failure(suite_error(e), None))?;
    let step = config.time_step.max(1);
    let strategy = strategy.prop_map(move |c| c.scaled(step));
    run_cases(config, strategy, |case| one(&runtime, case)).map_err(|(mismatch, case)| match case {
        Some(mut case) => {
            let detail = format!("{}, {}", mismatch.detail, case.extra());
            failure(Mismatch { detail, ..mismatch }, Some(case.trace().clone()))
        }
        None => failure(mismatch, None),
    })
}

/// Checks one property of stores made by `make` for rules of `algorithm` on
/// the given named cases (their times and windows scaled by
/// `config.time_step`), stopping at the first that fails, whose name the
/// failure's detail ends with: [`check`]'s fixed part, for a store that can
/// also run the cases at other sizes.
pub fn check_cases<S, F, Fut>(
    make: F,
    algorithm: Algorithm,
    property: Property,
    cases: &[(&str, Case)],
    config: &Config,
) -> Result<(), Failure>
where
    S: Store,
    F: Fn(Rule) -> Fut,
    Fut: Future<Output = S>,
{
    let failure = |mismatch, case| Failure {
        algorithm,
        property,
        mismatch,
        case,
    };
    let runtime = runtime().map_err(|e| failure(suite_error(e), None))?;
    let step = config.time_step.max(1);
    for (name, case) in cases {
        let case = case.clone().scaled(step);
        let checked = run::check_case(&make, algorithm, property, &case, config);
        if let Err(mut mismatch) = runtime.block_on(checked) {
            mismatch.detail = format!("{}, in the case \"{name}\"", mismatch.detail);
            return Err(failure(mismatch, Some(case)));
        }
    }
    Ok(())
}

/// A failure of the suite itself, not of the store.
fn suite_error(detail: String) -> Mismatch {
    Mismatch {
        field: "suite".to_owned(),
        detail,
    }
}

/// The runtime one check drives its stores on.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime: {e}"))
}

/// Runs the whole suite (every algorithm, every property) on stores made by
/// `make`, stopping at the first failure.
pub fn run_suite<S, F, Fut>(make: F, config: &Config) -> Result<(), Failure>
where
    S: Store,
    F: Fn(Rule) -> Fut,
    Fut: Future<Output = S>,
{
    for algorithm in ALGORITHMS {
        for property in Property::ALL {
            check(&make, algorithm, property, config)?;
        }
    }
    Ok(())
}

/// [`check`], panicking with the failure: the body of one generated test.
pub fn assert_conforms<S, F, Fut>(
    make: F,
    algorithm: Algorithm,
    property: Property,
    config: &Config,
) where
    S: Store,
    F: Fn(Rule) -> Fut,
    Fut: Future<Output = S>,
{
    if let Err(failure) = check(make, algorithm, property, config) {
        panic!("the store does not conform: {failure}");
    }
}
