//! The Lua scripts' layout of a key's state, read into the core's state
//! and written back, so that a deployment moves between the scripts and
//! the module without losing a count: the counters' doubles in one string
//! ([`counters`]), the sliding log's ring per rate ([`ring`]). Both go
//! through the core's own words ([`Rule::encode_state`]).

mod counters;
mod ring;

use limits::{Algorithm, KeyState, Rule};

/// The core's words of a rule: its state's tag and number of rates first.
const HEAD: usize = 2;

/// How many Redis keys hold a state of `rule`: one per rate for the
/// sliding log, one for the others.
pub fn keys(rule: &Rule) -> usize {
    match rule.algorithm() {
        Algorithm::SlidingLog => rule.rates().len(),
        _ => 1,
    }
}

/// The core's state of `rule` from its keys' values (`stored`, one per
/// key, `None` for a key that does not exist): a fresh state for values
/// the scripts would not read as this rule's either (another length), or
/// that the core does not accept (counts above the limit).
///
/// ```
/// use limits::{Algorithm, Rule};
/// use limits_redis_module::layout;
///
/// let rule = Rule::new(Algorithm::FixedWindow, "2/s".parse().unwrap());
/// let mut state = rule.new_state();
/// rule.check(&mut state, 3_000_000_000, 1);
/// let stored = layout::write(&rule, &state, &[None]);
/// assert_eq!(stored[0].len(), 16); // the window's index and count, as doubles
/// let mut back = layout::read(&rule, &[Some(&stored[0])]);
/// assert!(rule.check(&mut back, 3_000_000_000, 1).allowed);
/// assert!(!rule.check(&mut back, 3_000_000_000, 1).allowed);
/// ```
pub fn read(rule: &Rule, stored: &[Option<&[u8]>]) -> KeyState {
    let mut words = rule.encode_state(&rule.new_state());
    words.truncate(HEAD);
    let read = match (rule.algorithm(), stored) {
        (Algorithm::SlidingLog, _) => ring::read(rule, stored, &mut words),
        (_, [Some(value)]) => counters::read(rule, value, &mut words),
        _ => None,
    };
    read.and_then(|()| rule.decode_state(&words))
        .unwrap_or_else(|| rule.new_state())
}

/// `state` as its keys' values, one per key; `stored`, the values read
/// before, gives the sliding log's rings their room.
pub fn write(rule: &Rule, state: &KeyState, stored: &[Option<&[u8]>]) -> Vec<Vec<u8>> {
    let words = rule.encode_state(state);
    match rule.algorithm() {
        Algorithm::SlidingLog => ring::write(rule, &words[HEAD..], stored),
        _ => vec![counters::write(rule, &words[HEAD..])],
    }
}
