//! The scripts' layout holds every state the core reaches at microsecond
//! times: written and read back, it is the same state (the sliding log's:
//! one that decides the same), so a key decided by the module and then by
//! a script (or the other way) loses nothing; junk never panics.

mod common;

use limits::{Algorithm, Mode, Rule};
use limits_redis_module::layout;
use proptest::prelude::*;

/// What a state decides from `now` on: peeks a little and a window later.
fn looks(rule: &Rule, state: &limits::KeyState, now: u64) -> Vec<limits::Decision> {
    let longest = rule
        .rates()
        .iter()
        .map(|r| r.window_nanos())
        .max()
        .unwrap_or(0);
    [0, 1_000, longest / 2, longest, longest + 1_000]
        .iter()
        .map(|later| rule.peek(&mut state.clone(), now + later, 1))
        .collect()
}

proptest! {
    #[test]
    fn every_state_reached_at_microsecond_times_reads_back_the_same(
        rule in common::rule(50),
        trace in prop::collection::vec((prop_oneof![Just(0u64), 0u64..2_000_000], 0u64..60, any::<bool>()), 1..40),
    ) {
        let mut state = rule.new_state();
        let mut now = 1_700_000_000_000_000u64;
        let mut before: Vec<Vec<u8>> = Vec::new();
        for (step, cost, always) in trace {
            now += step;
            let mode = if always { Mode::RecordAlways } else { Mode::Record };
            rule.decide(&mut state, now * 1000, cost % (rule.max_cost() + 2), mode, |_| {});
            let previous: Vec<Option<&[u8]>> = before.iter().map(|v| Some(v.as_slice())).collect();
            let stored = layout::write(&rule, &state, &previous);
            prop_assert_eq!(stored.len(), layout::keys(&rule));
            let values: Vec<Option<&[u8]>> = stored.iter().map(|v| Some(v.as_slice())).collect();
            let back = layout::read(&rule, &values);
            if rule.algorithm() == Algorithm::SlidingLog {
                // Requests of one instant are one entry in a ring.
                prop_assert_eq!(looks(&rule, &back, now * 1000), looks(&rule, &state, now * 1000));
            } else {
                prop_assert_eq!(rule.encode_state(&back), rule.encode_state(&state));
            }
            before = stored;
        }
    }

    #[test]
    fn a_value_of_another_shape_reads_as_a_fresh_state(rule in common::rule(50), junk in prop::collection::vec(any::<u8>(), 0..64)) {
        let fresh = rule.encode_state(&rule.new_state());
        let values = vec![Some(junk.as_slice()); layout::keys(&rule)];
        let read = rule.encode_state(&layout::read(&rule, &values));
        // Junk of a state's length may hold valid numbers; any other
        // length is fresh.
        let sizes = layout::write(&rule, &rule.new_state(), &vec![None; layout::keys(&rule)]);
        if rule.algorithm() != Algorithm::SlidingLog && junk.len() != sizes[0].len() {
            prop_assert_eq!(read, fresh);
        }
    }
}
