//! The matching rules' verdicts, folded in order into what the service
//! carries out: the first refusal, or every status and the longest delay.
//!
//! Two loops walk the rules, one source of truth for each rule's step (its
//! key, then [`fold`]: the observer, the logs, the failure policy, the
//! verdict folded in). [`decide_now`] runs in the service's `call`, asking
//! each store for a decision without waiting ([`Store::decide_now`]): with
//! in-memory stores it decides the whole request at once, and the service
//! needs no boxed future for it. When a store cannot answer at once, it
//! stops at that rule and hands [`decide_rest`] (async) what it has, which
//! goes on from there (with [`Store::decide_in_order`] for a store that
//! cannot answer at once, and the rules after it whose stores share its
//! round trip: one round trip for a request's rules on one Redis): each
//! rule still decides exactly once, in order.
//! `decide_rest` also reads the body first when a key needs it (then
//! [`decide_now`], the first loop, is never run).

use crate::body::{BodyError, Reservation, read_bounded};
use crate::in_flight::Slots;
use crate::in_force::InForce;
use crate::members::{Counted, Statuses};
use crate::method::MethodCase;
use crate::path::PathError;
use crate::policy::{FailurePolicy, HttpRule, LayerOptions, Outcome, Policy};
use crate::prepare::Matched;
use crate::settle::{Settlements, Unsettled, settle_by_response};
use crate::{Key, KeyError, KeyExtractor};
use bytes::Bytes;
use http::StatusCode;
use http::request::Parts;
use http_body::Body;
use limits::{Asked, Ban, Mode, RetryAfter, Store, StoreError, StoreErrorKind, Until, Verdict};
use smallvec::SmallVec;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// What the rules that let a request through said: the RateLimit status of
/// each, how long to hold the request first (leaky bucket), and what the
/// rules that count only some responses may refund.
#[derive(Default)]
pub(crate) struct Passed {
    pub statuses: Statuses,
    pub delay: Duration,
    pub unsettled: Settlements,
    /// The slots taken in rules that cap requests in flight.
    pub slots: Slots,
}

/// A request the rules let through.
pub(crate) struct Admitted<B> {
    /// The body, rebuilt if it was read for a key.
    pub body: B,
    /// What the rules said.
    pub passed: Passed,
    /// The body's charge to the shared budget, given back when dropped: keep
    /// it until the request is done.
    pub held: Option<Reservation>,
}

/// Why we answer a request ourselves.
// `Limited` is large (the statuses, inline), the others small: boxing it
// would cost an allocation per 429, the answer given most under attack. A
// `Result` with it is returned through the caller's slot, where an `Ok`
// writes only its own value: the admitted request copies none of it (hence
// the `result_large_err` allowances below).
#[allow(clippy::large_enum_variant)]
pub(crate) enum Refusal {
    /// The path is one we refuse to interpret (400).
    Path(PathError),
    /// The method is a standard one in another case (400).
    Method(MethodCase),
    /// The body a key needs could not be read (413, 408, 400, 503).
    Body(BodyError),
    /// A rule found no key for the request (400).
    Key { rule: String, error: KeyError },
    /// A store could not decide and the failure policy denies (503).
    StoreDown,
    /// On a deny list: the layer's (`None`) or this rule's (403).
    Denied(Option<usize>),
    /// A rule denied it (429).
    Limited(Limited),
}

/// A rule's denial: the statuses of the rules that decided (the 429's
/// RateLimit headers), the denying rule's last, and the wait it asks for.
/// Made only by [`Limited::new`], so that the rule named is always the one
/// whose status is last.
pub(crate) struct Limited {
    rule: usize,
    statuses: Statuses,
    retry_after: RetryAfter,
    ban: Option<Ban>,
}

impl Limited {
    /// The denial of the rule whose status is `denying`, after the rules
    /// before it said `before`.
    fn new(
        mut before: Statuses,
        denying: Counted,
        retry_after: RetryAfter,
        ban: Option<Ban>,
    ) -> Limited {
        let rule = denying.rule;
        before.push(denying);
        Limited {
            rule,
            statuses: before,
            retry_after,
            ban,
        }
    }

    /// The ban the key was refused for, if a penalty refused it.
    pub(crate) fn ban(&self) -> Option<&Ban> {
        self.ban.as_ref()
    }

    /// The index in the policy of the rule that denied.
    pub(crate) fn rule(&self) -> usize {
        self.rule
    }

    /// The statuses of the rules that decided, the denying rule's last.
    pub(crate) fn statuses(&self) -> &[Counted] {
        &self.statuses
    }

    /// How long the denying rule asks the client to wait.
    pub(crate) fn retry_after(&self) -> RetryAfter {
        self.retry_after
    }
}

/// Where the decision of a request stands after [`decide_now`].
// `Wait` is large (the statuses so far, inline), the others small: it is
// returned in place, once, and boxing it would cost an allocation per
// request decided by a store over the network.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Step {
    /// Every matching rule let it through (what they said is in the
    /// caller's [`Passed`]).
    Passed,
    /// A rule refused it (or found no key, or its store failed under a
    /// failure policy that denies).
    Refused(Refusal),
    /// A store cannot decide without waiting: [`decide_rest`] goes on.
    Wait(Resume),
}

/// Where [`decide_rest`] starts: at the rule `at` of the matching rules,
/// with its key (and value) if made already, on top of what the rules
/// before it said.
pub(crate) struct Resume {
    at: usize,
    made: Option<Made>,
    passed: Passed,
}

/// What a rule decides a request by: its key, and the request's value when
/// the rule counts distinct values ([`HttpRule::distinct`]).
pub(crate) struct Made {
    key: Key,
    value: Option<Key>,
}

impl Made {
    /// The rule's verdict on it, if its store answers without waiting.
    fn decide_now<S: Store, K>(
        &self,
        rule: &HttpRule<S, K>,
        client: Option<IpAddr>,
    ) -> Option<Result<Verdict, StoreError>> {
        let (store, key) = (&rule.store, self.key.as_str());
        match &self.value {
            Some(value) => store.decide_value_now(client, key, value.as_str(), Mode::Record),
            None => store.decide_now_from(client, key, rule.cost, Mode::Record),
        }
    }

    /// It asked of the rule's store, in a round trip with others.
    fn asked<'a, S, K>(&'a self, rule: &'a HttpRule<S, K>, client: Option<IpAddr>) -> Asked<'a, S> {
        Asked {
            store: &*rule.store,
            client,
            key: self.key.as_str(),
            cost: rule.cost,
            value: self.value.as_ref().map(Key::as_str),
            mode: Mode::Record,
        }
    }
}

impl Resume {
    /// Before any rule (the body is read first if a key needs it).
    pub(crate) fn start() -> Resume {
        Resume {
            at: 0,
            made: None,
            passed: Passed::default(),
        }
    }

    /// After every rule of `matched` let the request through: only its
    /// delay is left to wait.
    pub(crate) fn done(matched: &Matched, passed: Passed) -> Resume {
        Resume {
            at: matched.rules.len(),
            made: None,
            passed,
        }
    }
}

/// Decides a request whose keys need no body, without waiting, for as long
/// as the stores answer at once, folding what the rules say into `passed`
/// (the caller's, so that the statuses, held inline, are not moved out of
/// here and into the response future's headers on the common path).
pub(crate) fn decide_now<S: Store, K: KeyExtractor>(
    in_force: &InForce<S, K>,
    matched: &Matched,
    parts: &Parts,
    passed: &mut Passed,
) -> Step {
    let policy = &*in_force.policy;
    for (at, &index) in matched.rules.iter().enumerate() {
        let rule = &policy.rules[index];
        let made = match key(rule, parts, matched.client, None) {
            Ok(made) => made,
            Err(refusal) => return Step::Refused(refusal),
        };
        let Some(verdict) = made.decide_now(rule, matched.client) else {
            let made = Some(made);
            let passed = std::mem::take(passed);
            return Step::Wait(Resume { at, made, passed });
        };
        if let Err(refusal) = fold(in_force, index, &made.key, verdict, None, passed) {
            return Step::Refused(refusal);
        }
    }
    Step::Passed
}

/// Decides a request from `resume` on, reading its body first if a key
/// needs it.
pub(crate) async fn decide_rest<S, K, B>(
    in_force: &InForce<S, K>,
    matched: &Matched,
    parts: &Parts,
    body: B,
    resume: Resume,
) -> Result<Admitted<B>, Refusal>
where
    S: Store,
    K: KeyExtractor,
    B: Body<Data = Bytes> + From<Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let policy = &*in_force.policy;
    one_content_type(policy, matched, parts)?;
    let (body, bytes, held) = read_if_needed(policy, matched, body)
        .await
        .map_err(Refusal::Body)?;
    let Resume {
        mut at,
        mut made,
        mut passed,
    } = resume;
    let client = matched.client;
    // A dry run logs a denial and goes on to the rules after it.
    let until = match policy.options.dry_run {
        true => Until::Failed,
        false => Until::Denied,
    };
    while let Some(&index) = matched.rules.get(at) {
        let rule = &policy.rules[index];
        let asked = match made.take() {
            Some(made) => made,
            None => key(rule, parts, client, bytes.as_deref())?,
        };
        // A store that answers at once does so here too (after a body read,
        // or after a rule whose store waited): untimed, as in `decide_now`.
        if let Some(verdict) = asked.decide_now(rule, client) {
            fold(in_force, index, &asked.key, verdict, None, &mut passed)?;
            at += 1;
            continue;
        }
        // The rules after it whose stores share its round trip wait with
        // it, each with its key (a rule without one ends them: its 400
        // comes in its turn); the store decides them in order, up to the
        // first denial, and the loop goes on from the first not decided.
        let mut waiting: SmallVec<[(usize, Made); 4]> = SmallVec::new();
        waiting.push((index, asked));
        for &next in &matched.rules[at + 1..] {
            let other = &policy.rules[next];
            if !other.store.shares_round_trip(&rule.store) {
                break;
            }
            let Ok(made) = make(other, parts, client, bytes.as_deref()) else {
                break;
            };
            waiting.push((next, made));
        }
        let asked: SmallVec<[Asked<'_, S>; 4]> = waiting
            .iter()
            .map(|(index, made)| made.asked(&policy.rules[*index], client))
            .collect();
        let started = Instant::now();
        let mut answers = S::decide_in_order(&asked[..], until).await.into_iter();
        // The first is always answered: a store that answered none would
        // otherwise be asked again for ever.
        let first = answers.next().unwrap_or_else(|| {
            Err(StoreError::new(
                "the store answered none of the rules it was asked",
            ))
        });
        for ((index, made), verdict) in waiting.iter().zip(std::iter::once(first).chain(answers)) {
            fold(
                in_force,
                *index,
                &made.key,
                verdict,
                Some(started),
                &mut passed,
            )?;
            at += 1;
        }
    }
    Ok(Admitted { body, passed, held })
}

/// The key (and value) of `rule` for a request (a key reads Content-Type,
/// the body's charset, from `parts`), or the 400 of a request it has none
/// for.
#[allow(clippy::result_large_err)] // see `Refusal`
fn key<S, K: KeyExtractor>(
    rule: &HttpRule<S, K>,
    parts: &Parts,
    client: Option<IpAddr>,
    body: Option<&[u8]>,
) -> Result<Made, Refusal> {
    make(rule, parts, client, body).map_err(|error| {
        tracing::debug!(rule = %rule.name, error = %error, "no key: 400");
        let rule = rule.name.clone();
        Refusal::Key { rule, error }
    })
}

/// The key (and value) of `rule` for a request, or why it has none.
fn make<S, K: KeyExtractor>(
    rule: &HttpRule<S, K>,
    parts: &Parts,
    client: Option<IpAddr>,
    body: Option<&[u8]>,
) -> Result<Made, KeyError> {
    let key = rule.key.key(parts, client, body)?;
    let value = (rule.distinct.as_ref())
        .map(|of| of.key(parts, client, body))
        .transpose()?;
    Ok(Made { key, value })
}

/// Folds the verdict of rule `index` on `key` into `passed`, telling the
/// observer the outcome (with the time since `started` when the store was
/// awaited; a decision made at once is not timed): `Err` with the refusal
/// when it denies (or its store failed and the failure policy denies). A
/// denial takes the statuses folded so far, its own last, for the 429.
#[allow(clippy::result_large_err)] // see `Refusal`
fn fold<S: Store, K>(
    in_force: &InForce<S, K>,
    index: usize,
    key: &Key,
    verdict: Result<Verdict, StoreError>,
    started: Option<Instant>,
    passed: &mut Passed,
) -> Result<(), Refusal> {
    let latency = started.map(|s| s.elapsed());
    let policy = &*in_force.policy;
    let rule = &policy.rules[index];
    let name = rule.name.as_str();
    let options: &LayerOptions = &policy.options;
    let observer = &*policy.observer;
    // The rule's own observer when it has one: no name to look up.
    let heard = in_force.rule_observer(index);
    let tell = |outcome| match (heard, latency) {
        (Some(heard), Some(latency)) => heard.decided(outcome, latency),
        (Some(heard), None) => heard.decided_at_once(outcome),
        (None, Some(latency)) => observer.decided(name, outcome, latency),
        (None, None) => observer.decided_at_once(name, outcome),
    };
    let verdict = match verdict {
        Ok(v) => v,
        Err(e) => {
            tell(Outcome::StoreFailed);
            // A full store is answered by its own policy: it is up, and a
            // flood of keys may be what filled it.
            let policy = match e.kind {
                StoreErrorKind::Full => options.on_store_full,
                _ => options.on_store_error,
            };
            // Counted by the observer; at debug level only, as a store
            // that is down fails every request: the store logs its outages.
            tracing::debug!(rule = %name, key = %key, error = %e, policy = ?policy, "rate limit store failed");
            if policy == FailurePolicy::Deny && !options.dry_run {
                settle_refused(in_force, passed, StatusCode::SERVICE_UNAVAILABLE);
                return Err(Refusal::StoreDown);
            }
            return Ok(());
        }
    };
    let d = verdict.decision;
    let receipt = verdict.receipt(rule.cost);
    let counted = Counted {
        rule: index,
        per_rate: verdict.per_rate,
    };
    if d.allowed {
        tell(Outcome::Allowed);
        if rule.in_flight {
            match receipt {
                Some(receipt) => passed.slots.hold(&rule.store, name, key, receipt),
                None => {
                    tracing::debug!(rule = %name, "the store cannot give a slot back: it frees itself when its lease ends")
                }
            }
        }
        if rule.settles() {
            match receipt {
                Some(receipt) => passed.unsettled.push(Unsettled {
                    rule: index,
                    key: key.clone(),
                    receipt,
                }),
                None if rule.cost > 0 => {
                    tracing::debug!(rule = %name, "the store cannot settle: every response counts");
                }
                None => {}
            }
        }
        passed.statuses.push(counted);
        passed.delay = passed.delay.max(d.delay);
        return Ok(());
    }
    if options.dry_run {
        tell(Outcome::WouldLimit);
        observer.refused(name, key.as_str(), Outcome::WouldLimit, d.retry_after);
        tracing::info!(rule = %name, key = %key, retry_after = %d.retry_after, "dry run: would limit");
        passed.statuses.push(counted);
        return Ok(());
    }
    let outcome = match verdict.ban {
        Some(_) => Outcome::Banned,
        None => Outcome::Limited,
    };
    tell(outcome);
    observer.refused(name, key.as_str(), outcome, d.retry_after);
    tracing::debug!(rule = %name, key = %key, retry_after = %d.retry_after, banned = verdict.ban.is_some(), "limited");
    settle_refused(in_force, passed, StatusCode::TOO_MANY_REQUESTS);
    let before = std::mem::take(&mut passed.statuses);
    Err(Refusal::Limited(Limited::new(
        before,
        counted,
        d.retry_after,
        verdict.ban,
    )))
}

/// A request the rules before this one admitted is answered by us with
/// `status`: what they count by it is settled now.
fn settle_refused<S: Store, K>(in_force: &InForce<S, K>, passed: &mut Passed, status: StatusCode) {
    if !passed.unsettled.is_empty() {
        settle_by_response(
            in_force,
            std::mem::take(&mut passed.unsettled),
            status,
            None,
        )
        .spawn();
    }
}

/// Refuses a request with two Content-Types (or one naming two media
/// types) when a matching rule reads its body, whoever reads it (a
/// [`KeySpec`](crate::KeySpec) or an application's extractor): upstreams
/// differ on which one they read the body as.
#[allow(clippy::result_large_err)] // see `Refusal`
fn one_content_type<S, K: KeyExtractor>(
    policy: &Policy<S, K>,
    matched: &Matched,
    parts: &Parts,
) -> Result<(), Refusal> {
    let Some(&index) = matched
        .rules
        .iter()
        .find(|&&i| policy.rules[i].reads_body())
    else {
        return Ok(());
    };
    crate::key::content_type(&parts.headers)
        .map(drop)
        .map_err(|reason| {
            let error = KeyError {
                field: "header:content-type".into(),
                reason,
            };
            tracing::debug!(error = %error, "no key: 400");
            Refusal::Key {
                rule: policy.rules[index].name.clone(),
                error,
            }
        })
}

/// The body, its bytes and their charge to the budget when a matching rule
/// keys on it; the body untouched otherwise. What it holds stays charged to
/// the shared budget until the request is done.
async fn read_if_needed<S, K, B>(
    policy: &Policy<S, K>,
    matched: &Matched,
    body: B,
) -> Result<(B, Option<Bytes>, Option<Reservation>), BodyError>
where
    K: KeyExtractor,
    B: Body<Data = Bytes> + From<Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if !matched.needs_body(policy) {
        return Ok((body, None, None));
    }
    let options = &policy.options;
    let (bytes, held) = read_bounded(
        body,
        options.max_body,
        options.body_timeout,
        &options.body_budget,
    )
    .await?;
    Ok((B::from(bytes.clone()), Some(bytes), Some(held)))
}
