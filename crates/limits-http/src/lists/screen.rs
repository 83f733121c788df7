//! The lists applied to a request before any rule decides: a deny list
//! (the layer's, or a matching rule's) refuses it; an allow list takes the
//! rules it exempts out of the ones that decide.

use super::ListKind;
use crate::policy::Policy;
use http::HeaderMap;
use smallvec::SmallVec;
use std::net::IpAddr;

/// What the lists made of a request.
pub(crate) enum Screened {
    /// Decided by the rules left (none: it passes untouched).
    Rules,
    /// On a deny list: the global one (`None`), or the rule's of this
    /// index.
    Denied(Option<usize>),
}

/// Applies the layer's lists and those of the matching `rules` (indexes
/// into the policy, in order) to a request from `client` with `headers`:
/// a deny list first, whoever's, then the allow lists, which remove the
/// rules they exempt from `rules`. Every hit is told to the observer; in a
/// dry run a deny-list hit is told and logged, and the rules decide.
pub(crate) fn screen<S, K>(
    policy: &Policy<S, K>,
    rules: &mut SmallVec<[usize; 4]>,
    client: Option<IpAddr>,
    headers: &HeaderMap,
) -> Screened {
    let global = &policy.options.lists;
    let observer = &*policy.observer;
    let on = |lists: &super::Lists, kind| {
        let list = lists.list(kind);
        !list.is_empty() && list.matches(kind, client, headers)
    };
    let mut denied = on(global, ListKind::Deny).then_some(None);
    if denied.is_none() {
        denied = rules
            .iter()
            .find(|&&i| on(&policy.rules[i].lists, ListKind::Deny))
            .map(|&i| Some(i));
    }
    if let Some(rule) = denied {
        let name = rule.map(|i| policy.rules[i].name.as_str());
        observer.listed(ListKind::Deny, name);
        if !policy.options.dry_run {
            tracing::debug!(rule = ?name, "on a deny list: 403");
            return Screened::Denied(rule);
        }
        tracing::info!(rule = ?name, "dry run: on a deny list, would refuse");
    }
    let all = on(global, ListKind::Allow);
    rules.retain(|&mut i| {
        let rule = &policy.rules[i];
        let exempt = all || on(&rule.lists, ListKind::Allow);
        if exempt {
            observer.listed(ListKind::Allow, Some(&rule.name));
        }
        !exempt
    });
    Screened::Rules
}
