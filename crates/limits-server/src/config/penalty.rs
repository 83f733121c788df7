//! A rule's `penalty = { after, within, ban, escalate }`: each field
//! checked with its line, and the store it needs (one that keeps the
//! penalty states: every store).

use super::raw::RawPenalty;
use super::Problems;
use crate::store::RuleStore;
use limits::{parse_duration, Penalty, MAX_AFTER};
use serde_spanned::Spanned;
use std::ops::Range;
use std::time::Duration;

/// The penalty the table describes, or `None` with its problems added.
pub(super) fn penalty(raw: Spanned<RawPenalty>, p: &mut Problems<'_>) -> Option<Penalty> {
    let table = raw.span();
    let raw = raw.into_inner();
    let before = p.found.len();
    let after = match raw.after {
        None => {
            p.add(
                &table,
                "penalty needs after = N: how many denials ban a key",
            );
            None
        }
        Some(after) => match u32::try_from(after.get_ref().0) {
            Ok(n @ 1..=MAX_AFTER) => Some(n),
            _ => {
                let problem = format!(
                    "penalty's after {} is not 1 to {MAX_AFTER} denials",
                    after.get_ref().0
                );
                p.add(&after.span(), problem);
                None
            }
        },
    };
    let required = |field: &str, value: Option<Spanned<String>>, p: &mut Problems<'_>| {
        let Some(value) = value else {
            let problem = format!("penalty needs {field} = \"DURATION\" (such as \"15m\")");
            p.add(&table, problem);
            return None;
        };
        duration(field, value, p)
    };
    let within = required("within", raw.within, p);
    let ban = required("ban", raw.ban, p);
    let escalate = raw.escalate.map(|e| match u32::try_from(e.get_ref().0) {
        Ok(n) if n >= 2 => Some(n),
        _ => {
            let problem = format!(
                "penalty's escalate {} is not a factor of 2 or more (leave it out for bans of one length)",
                e.get_ref().0
            );
            p.add(&e.span(), problem);
            None
        }
    });
    if p.found.len() != before {
        return None;
    }
    let (Some(after), Some(within), Some(ban)) = (after, within, ban) else {
        return None;
    };
    Penalty::new(after, within, ban, escalate.flatten())
        .map_err(|e| p.add(&table, format!("penalty's {e}")))
        .ok()
}

/// A duration field of the penalty.
fn duration(field: &str, value: Spanned<String>, p: &mut Problems<'_>) -> Option<Duration> {
    match parse_duration(value.get_ref()) {
        Ok(d) if !d.is_zero() => Some(d),
        Ok(_) => {
            p.add(
                &value.span(),
                format!("penalty's {field} must be longer than 0"),
            );
            None
        }
        Err(e) => {
            let problem = format!("penalty's {field} {:?}: {e}", value.get_ref());
            p.add(&value.span(), problem);
            None
        }
    }
}

/// `store` with `penalty`: every store keeps each key's standing beside its
/// state (Redis and memcached for every instance alike). None, the problem
/// added at the `penalty` table's line (`span`), for a penalty the store
/// cannot keep (Redis: not whole microseconds; memcached: a standing that
/// could outgrow an item).
pub(super) fn with_penalty(
    store: RuleStore,
    penalty: Penalty,
    span: &Range<usize>,
    p: &mut Problems<'_>,
) -> Option<RuleStore> {
    match store {
        RuleStore::Memory(limiter) => Some(RuleStore::Memory(limiter.with_penalty(penalty))),
        RuleStore::Redis(redis) => redis
            .with_penalty(penalty)
            .map(RuleStore::Redis)
            .map_err(|e| p.add(span, e.to_string()))
            .ok(),
        RuleStore::Memcached(memcached) => memcached
            .with_penalty(penalty)
            .map(RuleStore::Memcached)
            .map_err(|e| p.add(span, e.to_string()))
            .ok(),
        RuleStore::Sketch(_) => {
            p.add(span, "a penalty bans keys one by one, and a sketch (memory) keeps no key: leave one of them out");
            None
        }
        RuleStore::Distinct(_) | RuleStore::RedisDistinct(_) | RuleStore::MemcachedDistinct(_) => {
            p.add(span, "a penalty counts a key's denials, and a limit on distinct values (distinct) keeps none: leave one of them out");
            None
        }
    }
}
