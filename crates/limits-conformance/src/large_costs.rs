//! Fixed traces whose costs are as large as the limit: a store that keeps a
//! sliding log must decide them in the memory and time of any other request,
//! and every store must give them the models' exact answers.
//!
//! Each trace is written against a limit `l` and a window of
//! [`LARGE_COST_WINDOW`] time units, so the same shapes run at any size: the
//! suite runs them at [`LARGE_COST_LIMIT`].

use crate::{Case, Event};

/// The limit of the large-cost cases every store runs in the suite (see
/// [`check`](crate::check)): costs up to it and a little above. `u32::MAX`
/// is the largest `hits_addend` an Envoy client can send.
pub const LARGE_COST_LIMIT: u64 = u32::MAX as u64;

/// The window of the large-cost cases, in time units (nanoseconds, or the
/// store's own step: see [`Config::time_step`](crate::Config)).
pub const LARGE_COST_WINDOW: u64 = 1_000_000;

/// The large-cost cases for the limit `l` (at least 8): each named by what it
/// holds a store to.
///
/// - `cost equal to the limit`: the whole limit at once, then units at the
///   instant after, at the window's last instant and on its edge.
/// - `cost above the limit`: denied for ever, and nothing recorded: the next
///   unit request is decided as if it had not come, and so is a cost that
///   then fills the limit exactly.
/// - `cost just below the limit`: one unit of room left, taken, then waited
///   for.
/// - `huge and unit costs`: units, one cost filling what is left, and
///   denials that wait for the first, the third and the last unit, across
///   expiry.
/// - `two rates near the limit`: a rule of `l` per window and `l - 2` per
///   half window, both nearly filled by single requests.
pub fn large_cost_cases(l: u64) -> Vec<(&'static str, Case)> {
    assert!(l >= 8, "the large-cost cases need a limit of 8 at least");
    let w = LARGE_COST_WINDOW;
    let one = |rates: &[(u64, u64)], events: &[(u8, u64, u64)]| Case {
        rates: rates.to_vec(),
        burst: None,
        events: events
            .iter()
            .map(|&(key, t, cost)| Event { key, t, cost })
            .collect(),
    };
    let single = [(l, w)];
    vec![
        (
            "cost equal to the limit",
            one(
                &single,
                &[
                    (0, 0, l),
                    (0, 1, 1),
                    (0, w - 1, 1),
                    (0, w, 1),
                    (0, w, l - 1),
                    (0, w, 1),
                    (1, w, l),
                    (1, 2 * w - 1, l),
                ],
            ),
        ),
        (
            "cost above the limit",
            one(
                &single,
                &[
                    (0, 0, l + 1),
                    (0, 0, 1),
                    (0, 1, 2 * l + 3),
                    (0, 1, l + 2),
                    (0, 2, l - 1),
                    (0, 3, 1),
                    (0, 3, l + 1),
                    (0, w + 2, l),
                    (0, w + 2, 1),
                ],
            ),
        ),
        (
            "cost just below the limit",
            one(
                &single,
                &[
                    (0, 0, l - 1),
                    (0, 1, 2),
                    (0, 1, 1),
                    (0, 2, 1),
                    (0, w - 1, l - 1),
                    (0, w, l - 1),
                    (0, w + 1, 1),
                    (0, w + 1, 2),
                ],
            ),
        ),
        (
            "huge and unit costs",
            one(
                &single,
                &[
                    (0, 0, 1),
                    (0, 1, 1),
                    (0, 2, 1),
                    (0, 2, 1),
                    (0, 4, 1),
                    (0, 5, l - 7),
                    (0, 6, 1),
                    (0, 6, 1),
                    (0, 7, 1),
                    (0, 8, 3),
                    (0, 9, l),
                    (0, w + 1, 3),
                    (0, w + 2, 2),
                    (0, w + 3, 4),
                    (0, w + 3, l - 6),
                    (0, w + 5, l - 6),
                    (0, 2 * w + 5, l),
                ],
            ),
        ),
        (
            "two rates near the limit",
            one(
                &[(l, w), (l - 2, w / 2)],
                &[
                    (0, 0, l - 2),
                    (0, 1, 1),
                    (0, 2, 2),
                    (0, w / 2, l - 3),
                    (0, w / 2, 1),
                    (0, w / 2 + 1, 1),
                    (0, w + 1, l - 2),
                    (0, w + 1, l),
                    (0, w + 2, l - 1),
                ],
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RuleModel;
    use limits::{Algorithm, RetryAfter};
    use std::time::Duration;

    /// Each event's (allowed, wait in time units, or None for never) in the
    /// sliding log's model.
    fn answers(name: &str, l: u64) -> Vec<(bool, Option<u64>)> {
        let (_, case) = large_cost_cases(l)
            .into_iter()
            .find(|(n, _)| *n == name)
            .expect("a case of that name");
        let mut model = RuleModel::new(Algorithm::SlidingLog, &case.rates, None);
        case.events
            .iter()
            .map(|e| {
                let d = model.decide(e.t, e.cost);
                let wait = d.retry_after.duration().map(|w| w.as_nanos() as u64);
                (d.allowed, wait)
            })
            .collect()
    }

    /// The cases say what their names say, in the model: worked out by hand.
    #[test]
    fn the_cases_hold_what_their_names_say() {
        let (l, w) = (1000, LARGE_COST_WINDOW);
        let pass = (true, Some(0));
        let wait = |t: u64| (false, Some(t));
        let never = (false, None);
        assert_eq!(
            answers("cost above the limit", l),
            [
                never,
                pass,
                never,
                never,
                pass,
                wait(w - 3),
                never,
                pass,
                wait(w)
            ]
        );
        assert_eq!(
            answers("huge and unit costs", l),
            [
                pass,
                pass,
                pass,
                pass,
                pass,
                pass,
                pass,
                pass,
                // The first unit (at 0), the third (at 2), the last (at 6).
                wait(w - 7),
                wait(w - 6),
                wait(w - 3),
                // Units at 0 and 1 gone: the oldest left is at 2.
                wait(1),
                pass,
                // The second oldest unit is the cost at 5.
                wait(2),
                wait(2),
                pass,
                pass,
            ]
        );
        let mut first = RuleModel::new(Algorithm::SlidingLog, &[(l, w)], None);
        let after_above = first.decide(0, l + 1);
        assert_eq!(after_above.retry_after, RetryAfter::Never);
        let unit = first.decide(0, 1);
        assert_eq!((unit.allowed, unit.remaining), (true, l - 1));
        assert_eq!(unit.reset_after, Duration::from_nanos(w));
    }
}
