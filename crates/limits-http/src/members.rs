//! The RateLimit list members of a response: each rule that decided it, by
//! its index in the policy, with each of its rates' decisions; and a rule's
//! rates as the headers name them.

use crate::headers::{Member, MemberName, PolicyMember};
use crate::policy::{HttpRule, Policy};
use limits::Store;
use smallvec::SmallVec;

/// Each rate's decision, in the order of the rule's rates.
pub(crate) type PerRate = SmallVec<[limits::Decision; 2]>;

/// The statuses of the rules that decided, in order.
pub(crate) type Statuses = SmallVec<[Counted; 2]>;

/// One rule's contribution to the RateLimit headers: the rule (its index in
/// the policy, which names it and its rates) and each rate's decision.
pub(crate) struct Counted {
    pub rule: usize,
    pub per_rate: PerRate,
}

/// The RateLimit list members of `statuses`, as
/// [`RuleStatus::new`](crate::headers::RuleStatus::new) names them: the
/// rule's name, or `NAME-WINDOW` for each rate of a rule with several.
pub(crate) fn members<'a, S: Store, K>(
    policy: &'a Policy<S, K>,
    statuses: &'a [Counted],
) -> impl Iterator<Item = Member<'a>> + Clone {
    statuses.iter().flat_map(move |c| {
        policy_members(&policy.rules[c.rule])
            .zip(&c.per_rate)
            .map(|(rate, decision)| Member { rate, decision })
    })
}

/// The RateLimit-Policy list members of `rule`.
pub(crate) fn policy_members<S: Store, K>(
    rule: &HttpRule<S, K>,
) -> impl Iterator<Item = PolicyMember<'_>> + Clone {
    let rates = rule.store.rule().rates();
    let name = if rates.len() > 1 {
        MemberName::Windowed(&rule.name)
    } else {
        MemberName::Whole(&rule.name)
    };
    rates.iter().map(move |r| PolicyMember {
        name,
        limit: r.limit(),
        window: r.window(),
    })
}
