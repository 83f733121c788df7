//! A key's state is as large as the largest single-rate state kept inline:
//! what every tracked key costs. Several rates, and the sliding
//! log's entries, live behind one pointer and still decide the same.

use limits::{Algorithm, KeyState, Rule};

#[test]
fn a_key_state_is_four_words() {
    assert_eq!(std::mem::size_of::<KeyState>(), 32);
}

#[test]
fn states_round_trip_through_the_codec_inline_and_out_of_line() {
    for algorithm in Algorithm::ALL {
        for rates in ["3/s", "3/s; 5/minute"] {
            let rule = Rule::new(algorithm, rates.parse().unwrap());
            let mut state = rule.new_state();
            for t in [0, 1, 2, 3, 400_000_000] {
                rule.check(&mut state, t, 1);
            }
            let words = rule.encode_state(&state);
            let mut back = rule.decode_state(&words).unwrap();
            assert_eq!(rule.encode_state(&back), words, "{algorithm} {rates}");
            let now = 500_000_000;
            assert_eq!(
                rule.check(&mut back, now, 1),
                rule.check(&mut state, now, 1),
                "{algorithm} {rates}"
            );
            assert_eq!(rule.encode_state(&back), rule.encode_state(&state));
        }
    }
}

#[test]
fn a_state_of_another_shape_is_replaced_not_misread() {
    let one = Rule::new(Algorithm::SlidingLog, "2/s".parse().unwrap());
    let two = Rule::new(Algorithm::SlidingLog, "2/s; 3/minute".parse().unwrap());
    let mut state = one.new_state();
    one.check(&mut state, 0, 2);
    assert!(!one.check(&mut state, 1, 1).allowed);
    // Under the two-rate rule the one-rate state is not its own: fresh.
    let d = two.check(&mut state, 1, 1);
    assert!(d.allowed);
    assert_eq!(d.remaining, 1);
    // Tag, two rates, then each rate's one entry: at 1, of cost 1.
    let tag = two.encode_state(&two.new_state())[0];
    assert_eq!(two.encode_state(&state), [tag, 2, 1, 1, 1, 1, 1, 1]);
}
