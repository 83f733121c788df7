//! The replay's memory follows the active keys: on a trace where almost
//! every key is seen once, the keys held (names, slots, numbers) stay near
//! the number active within a window, through the real decision path of
//! every limiter, while the few hot keys are remembered and limited.

use super::keys::Keys;
use super::trace::Event;
use super::{ReplayArgs, Run};
use clap::Parser;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ReplayArgs,
}

/// `limits replay --limiter all --limit 10/s` run over `events` (time in ns,
/// key), as the command decides them; the keys afterwards, the most held
/// at once, and the run.
fn replay(events: impl Iterator<Item = (u64, String)>) -> (Keys, usize, Run) {
    let cli =
        Cli::try_parse_from(["replay", "--limiter", "all", "--limit", "10/s", "t.csv"]).unwrap();
    let rates = cli.args.rate.rates().unwrap();
    let window = rates.as_slice()[0].window_nanos();
    let mut run = Run::new(&cli.args, &rates, window, Arc::new(AtomicU64::new(0))).unwrap();
    let mut keys = Keys::default();
    let mut peak = 0;
    for (seq, (t, name)) in (0..).zip(events) {
        let key = keys.intern(&name).unwrap();
        keys.hold(key, t);
        let e = Event {
            line: seq + 1,
            t,
            key,
            cost: 1,
            value: None,
        };
        run.decide(seq, e, &mut keys).unwrap();
        peak = peak.max(keys.live());
    }
    (keys, peak, run)
}

#[test]
fn one_off_keys_are_forgotten_and_hot_keys_kept() {
    // 200,000 requests at 1,000/s: 9 in 10 from a key never seen again,
    // 1 in 10 from one of 5 hot keys (20/s each, twice the limit).
    let lines = 200_000u64;
    let events = (0..lines).map(|i| {
        let name = if i % 10 == 0 {
            format!("hot{}", i / 10 % 5)
        } else {
            format!("once-{i}")
        };
        (i * 1_000_000, name)
    });
    let (keys, peak, run) = replay(events);
    // A second's worth of requests (the window): 900 one-off keys and 5 hot.
    // The smoothed rate forgets a one-off key last, after four half-lives
    // (2.8 windows), and the sweep comes by some time after that.
    let active = 905;
    assert!(peak <= 5 * active, "{peak} keys held at most");
    assert!(
        keys.live() <= 5 * active,
        "{} keys held at the end",
        keys.live()
    );
    let (_, _, replayed) = run.finish().unwrap();
    for r in &replayed {
        let most = r.rejected.most(&keys, 6);
        if r.algorithm == limits::Algorithm::None {
            assert!(most.is_empty());
            continue;
        }
        let names: Vec<&str> = most.iter().map(|(k, _)| *k).collect();
        assert_eq!(names.len(), 5, "{}: {most:?}", r.algorithm);
        assert!(
            names.iter().all(|k| k.starts_with("hot")),
            "{}: {most:?}",
            r.algorithm
        );
        // Each hot key sends 4,000 requests and is allowed about half.
        let total: u64 = most.iter().map(|(_, r)| r.count).sum();
        assert!(
            (9_000..=11_000).contains(&total),
            "{}: {most:?}",
            r.algorithm
        );
    }
}

#[test]
fn a_key_back_after_idling_is_held_again_without_growing() {
    // One key at a time, ten a second, each coming back every 10 s (idle
    // by then) for 50 rounds: never more than the keys of the last few
    // seconds held (the smoothed rate's 2.8, and the sweep's lag after).
    let events = (0..50u64).flat_map(|round| {
        (0..100u64).map(move |k| ((round * 100 + k) * 100_000_000, format!("k{k}")))
    });
    let (_, peak, _) = replay(events);
    assert!(peak <= 60, "{peak} keys held at most");
}
