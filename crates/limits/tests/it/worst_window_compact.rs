//! The worst window keeps each key's recent releases as varint gaps (and
//! costs other than 1) in a byte ring: it must count exactly what a naive
//! record of every (time, cost) counts, after every event, on traces with
//! bursts at one instant, gaps from 0 to near u64::MAX, costs 0, 1 and
//! large, windows from 1 ns to u64::MAX, and keys forgotten between events.

use limits::simulate::WorstWindow;
use proptest::prelude::*;

/// Every event of every key, and the worst window counted by brute force.
struct Naive {
    window: u64,
    events: Vec<(u64, u8, u64)>,
    worst: u64,
}

impl Naive {
    fn add(&mut self, key: u8, t: u64, cost: u64) {
        self.events.push((t, key, cost));
        // The windows [s, s + W) that hold t: s an event of the key at or
        // before t, with t < s + W.
        for &(s, k, _) in &self.events {
            if k != key || s > t || t - s >= self.window {
                continue;
            }
            let sum: u64 = (self.events.iter())
                .filter(|&&(e, k, _)| k == key && e >= s && e - s < self.window)
                .map(|&(_, _, c)| c)
                .sum();
            self.worst = self.worst.max(sum);
        }
    }

    /// Keys whose newest event shares a window with `t`.
    fn live(&self, t: u64) -> usize {
        let mut keys: Vec<u8> = (self.events.iter())
            .filter(|&&(e, _, _)| t - e < self.window)
            .map(|&(_, k, _)| k)
            .collect();
        keys.sort();
        keys.dedup();
        keys.len()
    }
}

/// One step: a gap from the event before (0 makes a burst), a key, a cost,
/// and what to forget at the event's time first (0: nothing, 1: every key
/// that cannot share a window with it, 2: those looked at a window ago).
fn step() -> impl Strategy<Value = (u64, u8, u64, u8)> {
    let gap = prop_oneof![
        4 => Just(0u64),
        6 => 1u64..30,
        2 => 1_000u64..2_000_000_000,
        1 => (1u64 << 40)..(1u64 << 62),
    ];
    let cost =
        prop_oneof![6 => Just(1u64), 2 => Just(0u64), 2 => 2u64..5, 1 => 1u64 << 40..1u64 << 41];
    let forget = prop_oneof![8 => Just(0u8), 1 => Just(1u8), 3 => Just(2u8)];
    (gap, 0u8..4, cost, forget)
}

fn window() -> impl Strategy<Value = u64> {
    prop_oneof![
        1u64..=50,
        Just(1_000_000_000u64),
        Just(1u64 << 61),
        Just(u64::MAX),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_compact_record_counts_as_a_naive_one(
        start in prop_oneof![Just(0u64), 0u64..1 << 62],
        steps in prop::collection::vec(step(), 0..120),
        window in window(),
    ) {
        let mut worst = WorstWindow::new(window);
        let mut naive = Naive { window, events: Vec::new(), worst: 0 };
        let mut t = start;
        for (gap, key, cost, forget) in steps {
            t = t.saturating_add(gap);
            match forget {
                1 => worst.forget_before(t),
                2 => worst.forget_expired(t),
                _ => {}
            }
            worst.add(&key, t, cost);
            naive.add(key, t, cost);
            prop_assert_eq!(worst.worst(), naive.worst, "at {} key {} cost {}", t, key, cost);
            // Forgetting keeps whatever can still share a window with t;
            // forget_before keeps nothing else.
            let live = naive.live(t);
            prop_assert!(worst.keys() >= live, "{} keys for {} live", worst.keys(), live);
            if forget == 1 {
                prop_assert_eq!(worst.keys(), live);
            }
        }
        // A window after the last release, every key is looked at and
        // forgotten.
        if let Some(later) = t.checked_add(window) {
            worst.forget_expired(later);
            prop_assert_eq!(worst.keys(), 0);
        }
    }
}
