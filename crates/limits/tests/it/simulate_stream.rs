//! The streaming simulator equals the collect-everything one it replaced:
//! the old engine (every arrival in a `Vec`, one limiter at a time, each with
//! its own sliding log) and the old pattern generator are kept here as
//! reference models, and every table figure and every kept verdict must match.

use limits::simulate::{Arrival, Judged, Keep, Pattern, RunResult, Simulation, Tally, run};
use limits::{Algorithm, KeyState, Rate, Rates, Rule};
use proptest::prelude::*;
use std::time::Duration;

/// The old engine: one rule over the whole trace, its own sliding log beside it.
fn reference_run_one(rule: &Rule, arrivals: &[Arrival], keys: u32, window: u64) -> RunResult {
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
        sketch: None,
        allowed: tally.allowed,
        rejected: tally.rejected,
        worst_window: tally.worst_window(),
        false_allows: tally.false_allows,
        false_denies: tally.false_denies,
        peak_bytes_per_key,
        judged,
    }
}

fn reference_run(rules: &[Rule], arrivals: &[Arrival], keys: u32, window: u64) -> Vec<RunResult> {
    (rules.iter())
        .map(|r| reference_run_one(r, arrivals, keys, window))
        .collect()
}

/// The old generator: one key's times all at once, then every key per time.
fn reference_arrivals(pattern: Pattern, limit: u64, window: u64, keys: u32) -> Vec<Arrival> {
    let (l, w) = (u128::from(limit), u128::from(window));
    let at = |x: u128| u64::try_from(x).unwrap_or(u64::MAX);
    let times: Vec<u64> = match pattern {
        Pattern::Steady => (0..6 * l).map(|i| at(i * w / (2 * l))).collect(),
        Pattern::Edge => {
            let before = (0..l).map(|i| at(9 * w / 10 + i * w / (10 * l)));
            let after = (0..l).map(|i| at(w + i * w / (10 * l)));
            before.chain(after).collect()
        }
        Pattern::Burst => [0, 3 * w / 2, 3 * w]
            .into_iter()
            .flat_map(|t| std::iter::repeat_n(at(t), 2 * limit as usize))
            .collect(),
        Pattern::Random { seed } => {
            let mut state = seed;
            let mut times: Vec<u64> = (0..6 * l)
                .map(|_| {
                    // SplitMix64, then multiply-shift into [0, 3W).
                    state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
                    let mut z = state;
                    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                    z ^= z >> 31;
                    let span = u64::try_from(3 * w).unwrap_or(u64::MAX);
                    at((u128::from(z) * u128::from(span)) >> 64)
                })
                .collect();
            times.sort_unstable();
            times
        }
        Pattern::Ramp => (0..8 * l)
            .map(|i| {
                let square = (2 * i)
                    .checked_mul(w)
                    .and_then(|x| x.checked_mul(w))
                    .map_or(u128::MAX, |x| x / l);
                at(square.isqrt())
            })
            .collect(),
    };
    let mut out = Vec::new();
    for t in times {
        out.extend((0..keys).map(|key| Arrival { t, key, cost: 1 }));
    }
    out
}

fn pattern() -> impl Strategy<Value = Pattern> {
    prop_oneof![
        Just(Pattern::Steady),
        Just(Pattern::Edge),
        Just(Pattern::Burst),
        Just(Pattern::Ramp),
        any::<u64>().prop_map(|seed| Pattern::Random { seed }),
    ]
}

fn window() -> impl Strategy<Value = u64> {
    prop_oneof![
        1u64..=100,
        Just(999_999_937u64),
        Just(1_000_000_000),
        Just(1_500_000_000)
    ]
}

/// One or two rates, the first with `limit` per `window`.
fn rates(limit: u64, window: u64, second: Option<(u64, u64)>) -> Rates {
    let mut all = vec![Rate::new(limit, Duration::from_nanos(window)).unwrap()];
    if let Some((l, w)) = second {
        all.push(Rate::new(l, Duration::from_nanos(w)).unwrap());
    }
    Rates::new(all).unwrap()
}

/// Some limiters (repeats allowed), on the given rates or on the first rate
/// alone, so that the runner's shared sliding logs see several rate sets.
fn rules() -> impl Strategy<Value = Vec<(usize, bool, Option<u64>)>> {
    prop::collection::vec(
        (
            0..Algorithm::ALL.len(),
            any::<bool>(),
            prop::option::of(0u64..5),
        ),
        1..5,
    )
}

fn build(picks: &[(usize, bool, Option<u64>)], all: &Rates) -> Vec<Rule> {
    (picks.iter())
        .map(|&(i, first_only, burst)| {
            let rates = if first_only {
                all.as_slice()[0].into()
            } else {
                all.clone()
            };
            Rule::build(Algorithm::ALL[i], rates, burst)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    /// The lazy generator makes the old trace, arrival for arrival, and says
    /// how long it is.
    #[test]
    fn the_stream_is_the_old_trace(
        pattern in pattern(), limit in 1u64..=30, window in window(), keys in 0u32..=4,
    ) {
        let old = reference_arrivals(pattern, limit, window, keys);
        let stream = pattern.stream(limit, window, keys);
        prop_assert_eq!(stream.len(), old.len());
        prop_assert_eq!(stream.collect::<Vec<_>>(), old.clone());
        prop_assert_eq!(pattern.arrivals(limit, window, keys), old);
    }

    /// Every figure and every verdict of a streamed simulation equals the old
    /// engine's; keeping one key keeps exactly its verdicts, keeping nothing
    /// changes no figure.
    #[test]
    fn a_streamed_simulation_equals_the_old_engine(
        pattern in pattern(), limit in 1u64..=12, window in window(), keys in 1u32..=3,
        second in prop::option::of((1u64..=30, 1u64..=5_000_000_000)), picks in rules(),
    ) {
        let rates = rates(limit, window, second);
        let rules = build(&picks, &rates);
        let trace = reference_arrivals(pattern, limit, window, keys);
        let want = reference_run(&rules, &trace, keys, window);

        let all = Simulation::new(pattern, rates.clone(), keys, &rules);
        prop_assert_eq!(&all.arrivals, &trace);
        prop_assert_eq!(&all.results, &want);
        prop_assert_eq!(all.requests, trace.len() as u64);

        let mut calls = Vec::new();
        let none = Simulation::streamed(pattern, rates.clone(), keys, &rules, Keep::Nothing, |n| calls.push(n));
        prop_assert_eq!(calls, vec![trace.len() as u64]);
        prop_assert!(none.arrivals.is_empty());
        for (got, want) in none.results.iter().zip(&want) {
            prop_assert!(got.judged.is_empty());
            prop_assert_eq!(got, &RunResult { judged: Vec::new(), ..want.clone() });
        }

        let key = keys - 1;
        let one = Simulation::streamed(pattern, rates, keys, &rules, Keep::Key(key), |_| {});
        let mine: Vec<bool> = trace.iter().map(|a| a.key == key).collect();
        let kept: Vec<Arrival> = trace.iter().copied().filter(|a| a.key == key).collect();
        prop_assert_eq!(&one.arrivals, &kept);
        for (got, want) in one.results.iter().zip(&want) {
            let judged: Vec<Judged> = (want.judged.iter().zip(&mine))
                .filter(|&(_, &m)| m)
                .map(|(j, _)| *j)
                .collect();
            prop_assert_eq!(got, &RunResult { judged, ..want.clone() });
        }
    }

    /// Any trace, not only the patterns: costs above one, keys beyond
    /// `keys` (their states are grown), several arrivals at one instant.
    #[test]
    fn run_equals_the_old_engine_on_any_trace(
        mut events in prop::collection::vec((0u64..3_000, 0u32..5, 1u64..4), 0..150),
        limit in 1u64..=6, window in 1u64..=1_000, keys in 0u32..=3,
        second in prop::option::of((1u64..=10, 1u64..=3_000)), picks in rules(),
    ) {
        events.sort_by_key(|e| e.0);
        let trace: Vec<Arrival> = (events.iter())
            .map(|&(t, key, cost)| Arrival { t, key, cost })
            .collect();
        let rates = rates(limit, window, second);
        let rules = build(&picks, &rates);
        prop_assert_eq!(run(&rules, &trace, keys, window), reference_run(&rules, &trace, keys, window));
    }
}

/// Many clients, none of whose arrivals is kept: the figures are the
/// one-client figures times the clients (every client gets the same trace).
#[test]
fn many_clients_stream_with_the_one_client_figures_multiplied() {
    let rates: Rates = "10/s".parse().unwrap();
    let rules: Vec<Rule> = (Algorithm::ALL.iter())
        .map(|&a| Rule::new(a, rates.clone()))
        .collect();
    let keys = 10_000;
    let one = Simulation::new(Pattern::Random { seed: 3 }, rates.clone(), 1, &rules);
    let many = Simulation::streamed(
        Pattern::Random { seed: 3 },
        rates,
        keys,
        &rules,
        Keep::Nothing,
        |_| {},
    );
    assert_eq!(many.requests, 60 * u64::from(keys));
    for (m, o) in many.results.iter().zip(&one.results) {
        let k = u64::from(keys);
        assert_eq!(m.algorithm, o.algorithm);
        assert_eq!((m.allowed, m.rejected), (k * o.allowed, k * o.rejected));
        assert_eq!(
            (m.false_allows, m.false_denies),
            (k * o.false_allows, k * o.false_denies)
        );
        assert_eq!(
            (m.worst_window, m.peak_bytes_per_key),
            (o.worst_window, o.peak_bytes_per_key)
        );
    }
}
