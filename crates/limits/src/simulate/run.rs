//! Runs limiters over a trace and measures each: allowed, rejected, the worst
//! window, memory, and how its decisions differ from the exact sliding log.
//!
//! One pass: every limiter and the sliding log it is compared with see each
//! arrival as it comes (in blocks of 65,536, for the cache), and nothing per
//! request is kept unless asked ([`Keep`]), so a run's memory follows its
//! keys (their states, and the releases of their last window), not its
//! length.

use super::{Arrival, Tally};
use crate::{Algorithm, KeyState, ManualClock, Rule, Sketch, SketchOptions, UnsupportedRule};

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunResult {
    /// The limiter.
    pub algorithm: Algorithm,
    /// The bytes of the sketch it decided in ([`Runner::add_sketch`]), or
    /// `None` for a state per key.
    pub sketch: Option<usize>,
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
    /// The most bytes one key's state held at any moment (inline + heap);
    /// for a sketch, its memory over the keys seen.
    pub peak_bytes_per_key: usize,
    /// What every kept arrival got (see [`Keep`]; all of them from [`run`]),
    /// in the trace's order.
    pub judged: Vec<Judged>,
}

/// Which arrivals a [`Runner`] keeps, with what each limiter did to them:
/// the tallies never need them, a picture of one client does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Every arrival: memory grows with the trace.
    All,
    /// The arrivals of this key only.
    Key(u32),
    /// None: memory follows the keys alone.
    Nothing,
}

impl Keep {
    fn keeps(self, key: u32) -> bool {
        match self {
            Keep::All => true,
            Keep::Key(k) => k == key,
            Keep::Nothing => false,
        }
    }
}

/// Runs each rule over `arrivals` (sorted by time; keys below `keys`) and
/// measures it, with worst windows of `window` ns; every arrival's
/// [`Judged`] is kept.
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
    let mut runner = Runner::new(rules, keys, window, Keep::All);
    for &a in arrivals {
        runner.feed(a);
    }
    runner.finish().1
}

/// The streaming engine behind [`run`] and [`Simulation`](super::Simulation):
/// feed it arrivals in non-decreasing time, then [`finish`](Runner::finish).
///
/// ```
/// use limits::simulate::{Keep, Pattern, Runner};
/// use limits::{Algorithm, Rule};
/// let second = 1_000_000_000;
/// let rules = [Rule::new(Algorithm::FixedWindow, "10/s".parse().unwrap())];
/// let mut runner = Runner::new(&rules, 100_000, second, Keep::Key(7));
/// for a in Pattern::Edge.stream(10, second, 100_000) {
///     runner.feed(a);
/// }
/// let (kept, results) = runner.finish();
/// assert_eq!(kept.len(), 20); // key 7's arrivals, and what each got
/// assert_eq!(results[0].judged.len(), 20);
/// assert_eq!(results[0].allowed, 2_000_000);
/// assert_eq!(results[0].false_allows, 1_000_000);
/// ```
#[derive(Debug)]
pub struct Runner {
    lanes: Vec<Lane>,
    references: Vec<Reference>,
    keep: Keep,
    kept: Vec<Arrival>,
    block: Vec<Arrival>,
}

/// Arrivals run together, each rule over all of them in turn: a rule's
/// states and worst-window records of the keys in a block stay in the cache,
/// where running every rule on each arrival would cycle through all of them.
const BLOCK: usize = 1 << 16;

/// One rule under test: its keys' states and its tally.
#[derive(Debug)]
struct Lane {
    rule: Rule,
    states: States,
    tally: Tally<u32>,
    peak_bytes_per_key: usize,
    /// Which of the runner's references it is compared with.
    reference: usize,
    judged: Vec<Judged>,
}

/// Where a lane keeps its keys' states.
#[derive(Debug)]
enum States {
    /// One per key, by key number.
    PerKey(Vec<KeyState>),
    /// All of them in a sketch's fixed memory.
    Sketch(Box<Sketch<ManualClock>>),
}

/// An exact sliding log for one set of rates, shared by every rule with
/// those rates: its decisions do not depend on the rule beside it.
#[derive(Debug)]
struct Reference {
    log: Rule,
    states: Vec<KeyState>,
    /// What it decided for each arrival of the block.
    allowed: Vec<bool>,
}

impl Runner {
    /// A runner of `rules` for keys below `keys` (a larger key grows the
    /// states), with worst windows of `window` ns, keeping `keep`.
    pub fn new(rules: &[Rule], keys: u32, window: u64, keep: Keep) -> Runner {
        let mut runner = Runner {
            lanes: Vec::new(),
            references: Vec::new(),
            keep,
            kept: Vec::new(),
            block: Vec::with_capacity(BLOCK),
        };
        for rule in rules {
            let states = States::PerKey((0..keys).map(|_| rule.new_state()).collect());
            runner.add_lane(rule, states, keys, window);
        }
        runner
    }

    /// Also runs `rule` (a sliding-window counter) in a sketch of `options`
    /// ([`Sketch`]), after the rules given to [`new`](Runner::new): its
    /// result comes last. Fails as [`Sketch::with_clock`] does.
    ///
    /// ```
    /// use limits::simulate::{Keep, Pattern, Runner};
    /// use limits::{Algorithm, Rule, SketchOptions};
    ///
    /// let second = 1_000_000_000;
    /// let rule = Rule::new(Algorithm::SlidingWindow, "10/s".parse().unwrap());
    /// let mut runner = Runner::new(&[rule.clone()], 1_000, second, Keep::Nothing);
    /// let tiny = SketchOptions { seed: Some(1), ..SketchOptions::new(1024) };
    /// runner.add_sketch(&rule, tiny).unwrap();
    /// for a in Pattern::Steady.stream(10, second, 1_000) {
    ///     runner.feed(a);
    /// }
    /// let (_, results) = runner.finish();
    /// assert_eq!(results[1].sketch, Some(1024));
    /// assert!(results[1].false_denies > results[0].false_denies, "1,000 clients in 64 cells");
    /// ```
    pub fn add_sketch(
        &mut self,
        rule: &Rule,
        options: SketchOptions,
    ) -> Result<(), UnsupportedRule> {
        let sketch = Sketch::with_clock(rule.clone(), options, ManualClock::new(0))?;
        let keys = self.references.first().map_or(0, |r| r.states.len() as u32);
        let window = rule.rates().as_slice()[0].window_nanos();
        self.add_lane(rule, States::Sketch(Box::new(sketch)), keys, window);
        Ok(())
    }

    /// A lane for `rule` keeping `states`, compared with the sliding log of
    /// its rates (made for `keys` keys if no lane has its rates yet).
    fn add_lane(&mut self, rule: &Rule, states: States, keys: u32, window: u64) {
        let references = &mut self.references;
        let reference = match references
            .iter()
            .position(|r| r.log.rates() == rule.rates())
        {
            Some(i) => i,
            None => {
                let log = Rule::new(Algorithm::SlidingLog, rule.rates().clone());
                let states = (0..keys).map(|_| log.new_state()).collect();
                references.push(Reference {
                    log,
                    states,
                    allowed: Vec::with_capacity(BLOCK),
                });
                references.len() - 1
            }
        };
        self.lanes.push(Lane {
            rule: rule.clone(),
            states,
            tally: Tally::new(window),
            peak_bytes_per_key: 0,
            reference,
            judged: Vec::new(),
        });
    }

    /// Runs every rule, and the sliding logs they are compared with, on `a`
    /// (arrivals are run in blocks of 65,536).
    pub fn feed(&mut self, a: Arrival) {
        self.block.push(a);
        if self.block.len() == BLOCK {
            self.run_block();
        }
    }

    /// Runs the block through the sliding logs, then through each rule in
    /// turn: one rule's keys at a time stay in the cache.
    fn run_block(&mut self) {
        for r in &mut self.references {
            r.allowed.clear();
            for a in &self.block {
                let k = a.key as usize;
                if k >= r.states.len() {
                    r.states.resize_with(k + 1, || r.log.new_state());
                }
                let d = r.log.check(&mut r.states[k], a.t, a.cost);
                r.allowed.push(d.allowed);
            }
        }
        let keep = self.keep;
        self.kept
            .extend(self.block.iter().filter(|a| keep.keeps(a.key)));
        let inline = std::mem::size_of::<KeyState>();
        for lane in &mut self.lanes {
            let exact = &self.references[lane.reference].allowed;
            for (a, &exact) in self.block.iter().zip(exact) {
                let k = a.key as usize;
                let (d, bytes) = match &mut lane.states {
                    States::PerKey(states) => {
                        if k >= states.len() {
                            states.resize_with(k + 1, || lane.rule.new_state());
                        }
                        let d = lane.rule.check(&mut states[k], a.t, a.cost);
                        (d, inline + lane.rule.heap_bytes(&states[k]))
                    }
                    States::Sketch(sketch) => {
                        let keys = self.references[lane.reference].states.len().max(1);
                        (
                            sketch.check_at(&a.key, a.t, a.cost),
                            sketch.memory().div_ceil(keys),
                        )
                    }
                };
                let release = lane.tally.count(&a.key, a.t, a.cost, &d, exact);
                lane.peak_bytes_per_key = lane.peak_bytes_per_key.max(bytes);
                if keep.keeps(a.key) {
                    lane.judged.push(Judged {
                        allowed: d.allowed,
                        release,
                    });
                }
            }
        }
        self.block.clear();
    }

    /// The kept arrivals, and one result per rule, in the rules' order.
    pub fn finish(mut self) -> (Vec<Arrival>, Vec<RunResult>) {
        self.run_block();
        let results = (self.lanes.into_iter())
            .map(|lane| RunResult {
                algorithm: lane.rule.algorithm(),
                sketch: match &lane.states {
                    States::PerKey(_) => None,
                    States::Sketch(sketch) => Some(sketch.memory()),
                },
                allowed: lane.tally.allowed,
                rejected: lane.tally.rejected,
                worst_window: lane.tally.worst_window(),
                false_allows: lane.tally.false_allows,
                false_denies: lane.tally.false_denies,
                peak_bytes_per_key: lane.peak_bytes_per_key,
                judged: lane.judged,
            })
            .collect();
        (self.kept, results)
    }
}
