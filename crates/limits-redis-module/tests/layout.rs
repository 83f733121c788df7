//! The scripts' layout holds every state the core reaches at microsecond
//! times: written and read back, it is the same state, so a key decided by
//! the module and then by a script (or the other way) loses nothing.

use limits::{Algorithm, Mode, Rule};
use limits_redis_module::{layout, DECIDED};
use proptest::prelude::*;

fn rule() -> impl Strategy<Value = Rule> {
    let rate = (
        1u64..50,
        prop::sample::select(vec![1u64, 7, 1_000, 250_000, 3_300_007]),
    );
    (
        prop::sample::select(DECIDED.to_vec()),
        prop::collection::vec(rate, 1..4),
        prop::option::of(0u64..6),
    )
        .prop_map(|(algorithm, rates, burst)| {
            let rates: Vec<String> = rates
                .iter()
                .map(|(limit, us)| format!("{limit}/{us}us"))
                .collect();
            let rule = Rule::new(algorithm, rates.join("; ").parse().unwrap());
            match (algorithm, burst) {
                (Algorithm::LeakyBucket, Some(burst)) => rule.with_burst(burst),
                _ => rule,
            }
        })
}

proptest! {
    #[test]
    fn every_state_reached_at_microsecond_times_reads_back_the_same(
        rule in rule(),
        trace in prop::collection::vec((0u64..2_000_000, 0u64..60, any::<bool>()), 1..40),
    ) {
        let mut state = rule.new_state();
        let mut now = 1_700_000_000_000_000u64;
        for (step, cost, always) in trace {
            now += step;
            let mode = if always { Mode::RecordAlways } else { Mode::Record };
            rule.decide(&mut state, now * 1000, cost % (rule.max_cost() + 2), mode, |_| {});
            let stored = layout::write(&rule, &state);
            let back = layout::read(&rule, Some(&stored));
            prop_assert_eq!(rule.encode_state(&back), rule.encode_state(&state));
        }
    }

    #[test]
    fn a_value_of_another_shape_reads_as_a_fresh_state(rule in rule(), junk in prop::collection::vec(any::<u8>(), 0..64)) {
        let fresh = rule.encode_state(&rule.new_state());
        let read = rule.encode_state(&layout::read(&rule, Some(&junk)));
        // Junk of the state's length may hold valid numbers; any other
        // length is fresh.
        if junk.len() != layout::write(&rule, &rule.new_state()).len() {
            prop_assert_eq!(read, fresh);
        }
    }
}
