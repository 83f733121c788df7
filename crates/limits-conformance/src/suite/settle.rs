//! The settle suite, apart from the rest (a store that cannot settle yet
//! is simply not run on it): the suite's traces with settlements among
//! the requests. Before some requests, an earlier admitted request (of any
//! key, each settled once) is settled to a real cost: nothing, less, the
//! same, or more than it was counted for; or it is renewed, and stays to
//! be settled or renewed again. Every decision is held to the models
//! settled alike ([`RuleModel::settle`], [`RuleModel::renew`]), field by
//! field, and with peeks, so is a look at the settled key right after each
//! settlement.

use super::run::{compare, key_name};
use super::{check_extended, Config, ExtendedCase, Failure, Mismatch, Property};
use crate::{edge_case, Case, RuleModel};
use limits::{Algorithm, Mode, Receipt, Rule, Store};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::future::Future;

/// A request settled to its real cost, relative to what it was counted for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SettleTo {
    /// Nothing: the whole cost given back.
    Nothing,
    /// This much less (at least nothing).
    Less(u64),
    /// This much more.
    More(u64),
    /// Not settled but renewed ([`Store::renew`]): given back and taken
    /// again now, still to be settled.
    Renewed,
}

impl SettleTo {
    /// The real cost of a request counted for `counted`.
    pub fn cost(self, counted: u64) -> u64 {
        match self {
            SettleTo::Nothing => 0,
            SettleTo::Less(less) => counted.saturating_sub(less),
            SettleTo::More(more) => counted + more,
            SettleTo::Renewed => counted,
        }
    }
}

/// A trace with settlements: before event `i`, `settles[i]` (if any)
/// settles the pending receipt `n % pending` to its real cost.
#[derive(Clone, Debug)]
pub struct SettleCase {
    /// The rule shape and the requests.
    pub case: Case,
    /// Per event, a settlement made at its time before it is decided.
    pub settles: Vec<Option<(usize, SettleTo)>>,
}

/// Traces of [`edge_case`] with settlements before about a third of the
/// requests: whole refunds, partial ones, and charges past the limit.
pub fn settle_case(max_rates: usize, max_events: usize) -> impl Strategy<Value = SettleCase> {
    edge_case(max_rates, max_events).prop_flat_map(|case| {
        let largest = case.rates.iter().map(|&(l, _)| l).max().unwrap_or(1);
        let to = prop_oneof![
            3 => Just(SettleTo::Nothing),
            2 => (1..=largest).prop_map(SettleTo::Less),
            2 => (1..=largest * 3).prop_map(SettleTo::More),
            2 => Just(SettleTo::Renewed),
        ];
        let settle = prop_oneof![2 => Just(None), 1 => (0usize..8, to).prop_map(Some)];
        let n = case.events.len();
        prop::collection::vec(settle, n).prop_map(move |settles| SettleCase {
            case: case.clone(),
            settles,
        })
    })
}

/// Holds stores made by `make` for rules of `algorithm` to the models on
/// `config.cases` random traces with settlements; the error names the field
/// and the smallest trace found.
///
/// ```
/// use limits::{Algorithm, KeyedLimiter, ManualClock, Rule};
/// use limits_conformance::{check_settle, Config};
///
/// let memory = |rule: Rule| async move {
///     KeyedLimiter::<String, ManualClock>::with_clock(rule, ManualClock::new(0))
/// };
/// let config = Config { cases: 20, ..Config::default() };
/// check_settle(memory, Algorithm::SlidingLog, &config).unwrap();
/// ```
pub fn check_settle<S, F, Fut>(
    make: F,
    algorithm: Algorithm,
    config: &Config,
) -> Result<(), Failure>
where
    S: Store,
    F: Fn(Rule) -> Fut,
    Fut: Future<Output = S>,
{
    let one = |runtime: &tokio::runtime::Runtime, case: &SettleCase| {
        runtime.block_on(async {
            let store = make(case.case.rule(algorithm)).await;
            settles_as_models(&store, algorithm, case, config).await
        })
    };
    let strategy = settle_case(config.max_rates, config.max_events);
    check_extended(algorithm, Property::Settles, config, strategy, one)
}

impl ExtendedCase for SettleCase {
    fn trace(&mut self) -> &mut Case {
        &mut self.case
    }

    fn extra(&self) -> String {
        format!("settlements {:?}", self.settles)
    }
}

/// [`check_settle`], panicking with the failure: the body of one generated
/// test.
pub fn assert_settles<S, F, Fut>(make: F, algorithm: Algorithm, config: &Config)
where
    S: Store,
    F: Fn(Rule) -> Fut,
    Fut: Future<Output = S>,
{
    if let Err(failure) = check_settle(make, algorithm, config) {
        panic!("the store does not settle as the models do: {failure}");
    }
}

/// A request admitted and not settled yet: its key, the store's receipt,
/// and the models'.
struct Pending {
    key: u8,
    store: Receipt,
    model: Receipt,
}

/// One trace on one store, beside the models.
async fn settles_as_models<S: Store>(
    store: &S,
    algorithm: Algorithm,
    case: &SettleCase,
    config: &Config,
) -> Result<(), Mismatch> {
    let rates = &case.case.rates;
    let mut models: BTreeMap<u8, RuleModel> = BTreeMap::new();
    let mut pending: Vec<Pending> = Vec::new();
    let failed = |what: String| Mismatch {
        field: "error".to_owned(),
        detail: what,
    };
    for (i, e) in case.case.events.iter().enumerate() {
        if let (Some((n, to)), false) = (case.settles[i], pending.is_empty()) {
            let p = pending.remove(n % pending.len());
            let cost = to.cost(p.model.cost);
            let key = key_name(p.key);
            let model = models
                .entry(p.key)
                .or_insert_with(|| RuleModel::new(algorithm, rates, case.case.burst));
            if to == SettleTo::Renewed {
                let store = store
                    .renew(&key, Some(e.t), p.store)
                    .await
                    .map_err(|err| failed(format!("renewing {key}'s request at {}: {err}", e.t)))?;
                let model = model.renew(e.t, p.model);
                pending.push(Pending { store, model, ..p });
            } else {
                store
                    .settle(&key, Some(e.t), p.store, cost)
                    .await
                    .map_err(|err| failed(format!("settling {key} to {cost} at {}: {err}", e.t)))?;
                model.settle(e.t, p.model, cost);
            }
            if config.peeks {
                let got = store
                    .decide_at(&key, e.t, 1, Mode::Peek)
                    .await
                    .map_err(|err| failed(format!("peeking at {key}: {err}")))?;
                let want = model.decide_each(e.t, 1, Mode::Peek);
                compare(&got, &want).map_err(|m| {
                    m.at(format!(
                        "a peek at {key} after settling it to {cost} ({to:?}) before event #{i}"
                    ))
                })?;
            }
        }
        let model = models
            .entry(e.key)
            .or_insert_with(|| RuleModel::new(algorithm, rates, case.case.burst));
        let key = key_name(e.key);
        let got = store
            .decide_at(&key, e.t, e.cost, Mode::Record)
            .await
            .map_err(|err| failed(format!("the store failed on {e:?}: {err}")))?;
        let want = model.decide_each(e.t, e.cost, Mode::Record);
        compare(&got, &want).map_err(|m| m.at(format!("event #{i} {e:?}")))?;
        if let Some(receipt) = got.receipt(e.cost) {
            pending.push(Pending {
                key: e.key,
                store: receipt,
                model: Receipt {
                    at: e.t,
                    cost: e.cost,
                },
            });
        } else if got.decision.allowed && e.cost > 0 {
            return Err(failed(format!(
                "no receipt for the admitted event #{i} {e:?}: the store cannot settle"
            )));
        }
    }
    Ok(())
}
