//! Parsers fed arbitrary text never panic, and valid rates round-trip.

use limits::{Algorithm, MAX_LIMIT, MAX_WINDOW, Rate, Rates, parse_duration};
use proptest::prelude::*;
use std::time::Duration;

fn unit() -> impl Strategy<Value = (&'static str, u64)> {
    prop::sample::select(vec![
        ("ns", 1),
        ("us", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("sec", 1_000_000_000),
        ("seconds", 1_000_000_000),
        ("m", 60_000_000_000),
        ("minute", 60_000_000_000),
        ("h", 3_600_000_000_000),
        ("hours", 3_600_000_000_000),
        ("d", 86_400_000_000_000),
        ("day", 86_400_000_000_000),
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn parsers_never_panic_on_arbitrary_text(s in any::<String>()) {
        if let Err(e) = s.parse::<Rates>() {
            prop_assert!(e.column() >= 1 && e.column() <= s.chars().count() + 1);
            prop_assert!(!e.to_string().is_empty());
        }
        let _ = s.parse::<Rate>();
        let _ = parse_duration(&s);
        let _ = s.parse::<Algorithm>();
    }

    #[test]
    fn parsers_never_panic_on_rate_like_text(s in "[0-9 ./;,a-z]{0,24}") {
        let _ = s.parse::<Rates>();
        let _ = parse_duration(&s);
    }

    #[test]
    fn rates_round_trip_through_display(
        rates in prop::collection::vec((1..=MAX_LIMIT, 1..=MAX_WINDOW.as_nanos() as u64), 1..4)
    ) {
        let rates: Vec<Rate> = rates
            .into_iter()
            .map(|(l, w)| Rate::new(l, Duration::from_nanos(w)).unwrap())
            .collect();
        let rates = Rates::new(rates).unwrap();
        let text = rates.to_string();
        prop_assert_eq!(text.parse::<Rates>(), Ok(rates), "{}", text);
    }

    #[test]
    fn every_spelling_of_a_rate_parses_to_the_same_rate(
        limit in 1u64..100_000,
        count in 1u64..1000,
        (name, nanos) in unit(),
        per in prop::bool::ANY,
        space in prop::bool::ANY,
    ) {
        let sep = if per { " per " } else { "/" };
        let gap = if space { " " } else { "" };
        let text = format!("{limit}{sep}{count}{gap}{name}");
        let rate: Rate = text.parse().unwrap();
        prop_assert_eq!(rate.limit(), limit);
        prop_assert_eq!(rate.window_nanos(), count * nanos);
    }
}

#[test]
fn zero_limits_and_windows_are_errors_that_say_so() {
    for (text, problem) in [
        ("0/s", "the limit must be at least 1"),
        ("10/0s", "a duration must be greater than zero"),
        ("10/0.0s", "a duration must be greater than zero"),
    ] {
        let err = text.parse::<Rates>().unwrap_err();
        assert_eq!(err.problem(), problem, "{text}");
    }
}
