//! The penalty suite, apart from the rest (only a store that bans is run
//! on it): the suite's traces under a random penalty, every decision held
//! to [`PenaltyModel`] field by field (and the ban's end), peeks too, and
//! two promises checked on the store's answers alone: nothing is admitted
//! while a ban the store gave lasts, and a ban starts exactly at the
//! `after`-th counted denial within `within`.

use super::run::{compare, key_name};
use super::{check_extended, Config, ExtendedCase, Failure, Mismatch, Property};
use crate::{edge_case, Case, PenaltyModel, RuleModel};
use limits::{Algorithm, Mode, Penalty, RetryAfter, Rule, Store, Verdict};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

/// A trace and the penalty its rule has.
#[derive(Clone, Debug)]
pub struct PenaltyCase {
    /// The rule shape and the requests.
    pub case: Case,
    /// The penalty.
    pub penalty: Penalty,
}

/// Traces of [`edge_case`] under a penalty of 1 to 4 denials within a
/// span around the rule's first window, banning for up to three windows,
/// escalating or not.
pub fn penalty_case(max_rates: usize, max_events: usize) -> impl Strategy<Value = PenaltyCase> {
    edge_case(max_rates, max_events).prop_flat_map(|case| {
        let w = case.rates.first().map_or(1, |&(_, w)| w).max(2);
        let escalate = prop_oneof![Just(None), (2u32..=3).prop_map(Some)];
        (1u32..=4, 1..=w * 2, 1..=w * 3, escalate).prop_map(move |(after, within, ban, e)| {
            let ns = Duration::from_nanos;
            let penalty = Penalty::new(after, ns(within), ns(ban), e).expect("in range");
            PenaltyCase {
                case: case.clone(),
                penalty,
            }
        })
    })
}

/// Holds stores made by `make` for rules of `algorithm` with a penalty to
/// [`PenaltyModel`] on `config.cases` random traces.
///
/// ```
/// use limits::{Algorithm, KeyedLimiter, ManualClock, Penalty, Rule};
/// use limits_conformance::{check_penalty, Config};
///
/// let memory = |rule: Rule, penalty: Penalty| async move {
///     KeyedLimiter::<String, ManualClock>::with_clock(rule, ManualClock::new(0)).with_penalty(penalty)
/// };
/// let config = Config { cases: 20, ..Config::default() };
/// check_penalty(memory, Algorithm::TokenBucket, &config).unwrap();
/// ```
pub fn check_penalty<S, F, Fut>(
    make: F,
    algorithm: Algorithm,
    config: &Config,
) -> Result<(), Failure>
where
    S: Store,
    F: Fn(Rule, Penalty) -> Fut,
    Fut: Future<Output = S>,
{
    let one = |runtime: &tokio::runtime::Runtime, case: &PenaltyCase| {
        runtime.block_on(async {
            let store = make(case.case.rule(algorithm), case.penalty).await;
            penalizes_as_models(&store, algorithm, case, config).await
        })
    };
    let strategy = penalty_case(config.max_rates, config.max_events);
    check_extended(algorithm, Property::Penalizes, config, strategy, one)
}

impl ExtendedCase for PenaltyCase {
    fn trace(&mut self) -> &mut Case {
        &mut self.case
    }

    fn extra(&self) -> String {
        format!("penalty {}", self.penalty)
    }

    /// The trace and the penalty's spans scaled alike.
    fn scaled(self, step: u64) -> PenaltyCase {
        let p = self.penalty;
        let longer = |d: Duration| d.saturating_mul(u32::try_from(step).unwrap_or(u32::MAX));
        let penalty = Penalty::new(p.after(), longer(p.within()), longer(p.ban()), p.escalate())
            .expect("a penalty of the suite, scaled");
        PenaltyCase {
            case: self.case.scaled(step),
            penalty,
        }
    }
}

/// [`check_penalty`], panicking with the failure: the body of one test.
pub fn assert_penalizes<S, F, Fut>(make: F, algorithm: Algorithm, config: &Config)
where
    S: Store,
    F: Fn(Rule, Penalty) -> Fut,
    Fut: Future<Output = S>,
{
    if let Err(failure) = check_penalty(make, algorithm, config) {
        panic!("the store does not ban as the models do: {failure}");
    }
}

/// What the store's own answers say of one key: the end of the last ban
/// it gave, and the times of the denials it counted since.
#[derive(Default)]
struct Seen {
    until: u64,
    denials: Vec<u64>,
}

/// One trace on one store, beside the models.
async fn penalizes_as_models<S: Store>(
    store: &S,
    algorithm: Algorithm,
    case: &PenaltyCase,
    config: &Config,
) -> Result<(), Mismatch> {
    let rates = &case.case.rates;
    let penalty = case.penalty;
    let mut models: BTreeMap<u8, PenaltyModel> = BTreeMap::new();
    let mut seen: BTreeMap<u8, Seen> = BTreeMap::new();
    let failed = |field: &str, what: String| Mismatch {
        field: field.to_owned(),
        detail: what,
    };
    for (i, e) in case.case.events.iter().enumerate() {
        let model = models.entry(e.key).or_insert_with(|| {
            PenaltyModel::new(RuleModel::new(algorithm, rates, case.case.burst), penalty)
        });
        let key = key_name(e.key);
        let modes: &[Mode] = if config.peeks {
            &[Mode::Peek, Mode::Record]
        } else {
            &[Mode::Record]
        };
        for &mode in modes {
            let got = store
                .decide_at(&key, e.t, e.cost, mode)
                .await
                .map_err(|err| failed("error", format!("the store failed on {e:?}: {err}")))?;
            let (want, until) = model.decide_each(e.t, e.cost, mode);
            let at = || format!("event #{i} {e:?} ({mode:?})");
            compare(&got, &want).map_err(|m| m.at(at()))?;
            let got_until = got.ban.map(|b| b.until);
            if got_until != until {
                return Err(failed(
                    "ban",
                    format!(
                        "banned until {got_until:?}, expected {until:?}, at {}",
                        at()
                    ),
                ));
            }
            if mode == Mode::Record {
                promises(seen.entry(e.key).or_default(), &got, e.t, &penalty)
                    .map_err(|m| m.at(at()))?;
            }
        }
    }
    Ok(())
}

/// The two promises, on the store's answers alone.
fn promises(seen: &mut Seen, got: &Verdict, t: u64, penalty: &Penalty) -> Result<(), Mismatch> {
    let broken = |what: String| {
        Err(Mismatch {
            field: "allowed".to_owned(),
            detail: what,
        })
    };
    if t < seen.until {
        if got.decision.allowed {
            return broken(format!("admitted at {t}, banned until {}", seen.until));
        }
        return Ok(());
    }
    let d = &got.decision;
    let counted = !d.allowed
        && got
            .ban
            .is_none_or(|b| b.until - b.length.as_nanos() as u64 == t);
    let never = d.retry_after == RetryAfter::Never && got.ban.is_none();
    if !counted || never {
        return Ok(());
    }
    seen.denials.push(t);
    let within = penalty.within().as_nanos();
    let recent = seen
        .denials
        .iter()
        .filter(|&&d| u128::from(d) + within > u128::from(t))
        .count();
    let offence = recent >= penalty.after() as usize;
    match (offence, got.ban) {
        (true, Some(ban)) => {
            seen.until = ban.until;
            seen.denials.clear();
            Ok(())
        }
        (false, None) => Ok(()),
        (true, None) => broken(format!(
            "the denial #{recent} within {within} ns at {t} banned nothing"
        )),
        (false, Some(_)) => broken(format!(
            "banned at {t} after {recent} denials within {within} ns"
        )),
    }
}
