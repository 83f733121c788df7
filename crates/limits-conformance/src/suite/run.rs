//! One case of the suite, against one store: the trace replayed at its
//! explicit times, and every answer held to the models or to the promises.

use super::{Config, Mismatch, Property};
use crate::{check_rate, Case, Event, RuleModel};
use limits::{Algorithm, Decision, Mode, RetryAfter, Rule, Store, Verdict};
use std::collections::BTreeMap;
use std::future::Future;

/// Runs `property` on `case` with stores made by `make`.
pub(super) async fn check_case<S, F, Fut>(
    make: &F,
    algorithm: Algorithm,
    property: Property,
    case: &Case,
    config: &Config,
) -> Result<(), Mismatch>
where
    S: Store,
    F: Fn(Rule) -> Fut,
    Fut: Future<Output = S>,
{
    let rule = case.rule(algorithm);
    match property {
        Property::MatchesModels => {
            matches_models(&make(rule).await, algorithm, case, config, Mode::Record).await
        }
        Property::CountsDenied => {
            matches_models(
                &make(rule).await,
                algorithm,
                case,
                config,
                Mode::RecordAlways,
            )
            .await
        }
        Property::RetryAfterExact => retry_after_is_exact(make, &rule, case, config).await,
        Property::Invariants if algorithm == Algorithm::LeakyBucket => {
            // Its promise is about departures of single units.
            let mut unit = case.clone();
            unit.events.iter_mut().for_each(|e| e.cost = e.cost.min(1));
            invariants(&make(rule).await, algorithm, &unit).await
        }
        Property::Invariants => invariants(&make(rule).await, algorithm, case).await,
        Property::Settles => Err(super::suite_error(
            "settlements run through check_settle, on traces of their own".to_owned(),
        )),
        Property::Penalizes => Err(super::suite_error(
            "penalties run through check_penalty, with a penalty of their own".to_owned(),
        )),
    }
}

/// The name a store sees for a trace's key.
pub(crate) fn key_name(key: u8) -> String {
    format!("k{key}")
}

async fn decide<S: Store>(store: &S, e: &Event, at: u64, mode: Mode) -> Result<Verdict, Mismatch> {
    store
        .decide_at(&key_name(e.key), at, e.cost, mode)
        .await
        .map_err(|err| Mismatch {
            field: "error".to_owned(),
            detail: format!("the store failed on {e:?} at {at} ({mode:?}): {err}"),
        })
}

/// Every answer, peeks included, field by field with the models, each
/// request recorded in the mode `record`.
async fn matches_models<S: Store>(
    store: &S,
    algorithm: Algorithm,
    case: &Case,
    config: &Config,
    record: Mode,
) -> Result<(), Mismatch> {
    let mut models: BTreeMap<u8, RuleModel> = BTreeMap::new();
    for (i, e) in case.events.iter().enumerate() {
        let model = models
            .entry(e.key)
            .or_insert_with(|| RuleModel::new(algorithm, &case.rates, case.burst));
        let mut modes = vec![record];
        if config.peeks {
            modes.insert(0, Mode::Peek);
        }
        for mode in modes {
            let got = decide(store, e, e.t, mode).await?;
            let want = model.decide_each(e.t, e.cost, mode);
            compare(&got, &want).map_err(|m| m.at(format!("event #{i} {e:?} ({mode:?})")))?;
        }
    }
    Ok(())
}

/// Every denial's wait, to the nanosecond: on a fresh store given the same
/// key's history, the request is denied at now + wait - 1 and passes at
/// now + wait.
async fn retry_after_is_exact<S, F, Fut>(
    make: &F,
    rule: &Rule,
    case: &Case,
    config: &Config,
) -> Result<(), Mismatch>
where
    S: Store,
    F: Fn(Rule) -> Fut,
    Fut: Future<Output = S>,
{
    let store = make(rule.clone()).await;
    let probe_mode = if config.peeks {
        Mode::Peek
    } else {
        Mode::Record
    };
    let wrong = |detail: String| Mismatch {
        field: "retry_after".to_owned(),
        detail,
    };
    for (i, e) in case.events.iter().enumerate() {
        let d = decide(&store, e, e.t, Mode::Record).await?.decision;
        let wait = match d.retry_after {
            _ if d.allowed => continue,
            RetryAfter::Never if e.cost > rule.max_cost() => continue,
            RetryAfter::Never => return Err(wrong(format!("never, for {e:?} that can pass"))),
            RetryAfter::After(wait) => wait.as_nanos() as u64,
        };
        if wait == 0 {
            return Err(wrong(format!("zero on the denial of event #{i} {e:?}")));
        }
        // Peeking ahead must not disturb the trace: a fresh store per probe.
        let probe = make(rule.clone()).await;
        for earlier in case.events[..i].iter().filter(|x| x.key == e.key) {
            decide(&probe, earlier, earlier.t, Mode::Record).await?;
        }
        // The last time the store can be told before the wait is over, and
        // the first at or after it (one nanosecond apart unless the store
        // keeps a coarser time).
        let step = config.time_step.max(1);
        let (before, after) = (
            (e.t + wait - 1) / step * step,
            (e.t + wait).div_ceil(step) * step,
        );
        if decide(&probe, e, before, probe_mode)
            .await?
            .decision
            .allowed
        {
            return Err(wrong(format!(
                "{wait} ns for event #{i} {e:?}, but it passes sooner, at {before}"
            )));
        }
        if !decide(&probe, e, after, probe_mode).await?.decision.allowed {
            return Err(wrong(format!(
                "{wait} ns for event #{i} {e:?}, but it is still denied at {after}"
            )));
        }
    }
    Ok(())
}

/// The algorithm's promise over what the store let through, key by key and
/// rate by rate.
async fn invariants<S: Store>(
    store: &S,
    algorithm: Algorithm,
    case: &Case,
) -> Result<(), Mismatch> {
    let mut allowed: BTreeMap<u8, Vec<(u64, u64)>> = BTreeMap::new();
    for e in &case.events {
        let d = decide(store, e, e.t, Mode::Record).await?.decision;
        if d.allowed && e.cost > 0 {
            let departs = e.t + d.delay.as_nanos() as u64;
            allowed.entry(e.key).or_default().push((departs, e.cost));
        }
    }
    for (key, mut passed) in allowed {
        passed.sort_unstable();
        for &(limit, window) in &case.rates {
            check_rate(algorithm, &passed, limit, window).map_err(|detail| Mismatch {
                field: "allowed".to_owned(),
                detail: format!("key {}: {detail}", key_name(key)),
            })?;
        }
    }
    Ok(())
}

/// The combined decision, then each rate's, field by field.
pub(super) fn compare(got: &Verdict, want: &(Decision, Vec<Decision>)) -> Result<(), Mismatch> {
    compare_decision(&got.decision, &want.0, "")?;
    if got.per_rate.len() != want.1.len() {
        return Err(Mismatch {
            field: "per_rate".to_owned(),
            detail: format!(
                "{} decisions for {} rates",
                got.per_rate.len(),
                want.1.len()
            ),
        });
    }
    for (i, (g, w)) in got.per_rate.iter().zip(&want.1).enumerate() {
        compare_decision(g, w, &format!("per_rate[{i}]."))?;
    }
    Ok(())
}

fn compare_decision(got: &Decision, want: &Decision, prefix: &str) -> Result<(), Mismatch> {
    let ns = |d: std::time::Duration| format!("{} ns", d.as_nanos());
    let retry = |r: RetryAfter| r.duration().map_or_else(|| "never".to_owned(), ns);
    let fields = [
        ("allowed", got.allowed.to_string(), want.allowed.to_string()),
        (
            "remaining",
            got.remaining.to_string(),
            want.remaining.to_string(),
        ),
        (
            "retry_after",
            retry(got.retry_after),
            retry(want.retry_after),
        ),
        ("reset_after", ns(got.reset_after), ns(want.reset_after)),
        ("refill_after", ns(got.refill_after), ns(want.refill_after)),
        ("delay", ns(got.delay), ns(want.delay)),
    ];
    match fields.into_iter().find(|(_, g, w)| g != w) {
        None => Ok(()),
        Some((name, g, w)) => Err(Mismatch {
            field: format!("{prefix}{name}"),
            detail: format!("the store says {g}, the models say {w}"),
        }),
    }
}
