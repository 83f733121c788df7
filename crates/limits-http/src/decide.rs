//! The decision step, apart from any response: which rules match a request,
//! who the client is, the body when a key needs it, and each rule's verdict,
//! folded into one [`Decision`] that the service then carries out
//! ([`responses`](crate::responses) builds our own answers).
//!
//! Rules are checked one after the other and each records as it allows, so a
//! request denied by a later rule has still been counted by the earlier ones
//! (as nginx's `limit_req` zones do). Within one rule, several rates are
//! all-or-nothing.

use crate::body::{read_bounded, BodyError, Reservation};
use crate::headers::{Member, MemberName, Rate};
use crate::path::{match_path, normalize_target, PathError};
use crate::policy::{FailurePolicy, HttpRule, LayerOptions, Observer, Outcome, Policy};
use crate::{Key, KeyError, KeyExtractor};
use bytes::Bytes;
use http::request::Parts;
use http_body::Body;
use limits::{Mode, RetryAfter, Store};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// The peer's address, as a request extension. With the `axum` feature,
/// axum's `ConnectInfo<SocketAddr>` works too. A server that makes one
/// service per connection can give the layer's service the peer instead,
/// with [`RateLimit::with_peer`](crate::RateLimit::with_peer), and save the
/// extension's allocations; an extension, when present, wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

/// What to do with a request.
pub(crate) enum Decision<B> {
    /// No rule matches: pass it on untouched, without headers.
    Unmatched(B),
    /// Every matching rule let it through (or could not decide and the
    /// failure policy allows): serve it.
    Admit(Admitted<B>),
    /// Answer it ourselves.
    Refuse(Refusal),
}

/// A request the rules let through.
pub(crate) struct Admitted<B> {
    /// The body, rebuilt if it was read for a key.
    pub body: B,
    /// The RateLimit status of every rule that decided.
    pub statuses: Statuses,
    /// How long to hold the request first (leaky bucket).
    pub delay: Duration,
    /// The body's charge to the shared budget, given back when dropped: keep
    /// it until the request is done.
    pub held: Option<Reservation>,
}

/// Why we answer a request ourselves.
// Large (the statuses, inline), but moved once on the way to its response:
// boxing it would cost an allocation per 429.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Refusal {
    /// The path is one we refuse to interpret (400).
    Path(PathError),
    /// The body a key needs could not be read (413, 408, 400, 503).
    Body(BodyError),
    /// A rule found no key for the request (400).
    Key { rule: String, error: KeyError },
    /// A store could not decide and the failure policy denies (503).
    StoreDown,
    /// A rule denied it (429): the index of the rule in the policy, and
    /// the statuses of the rules so far.
    Limited {
        rule: usize,
        statuses: Statuses,
        retry_after: RetryAfter,
    },
}

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
        rates(&policy.rules[c.rule])
            .zip(&c.per_rate)
            .map(|(rate, decision)| Member { rate, decision })
    })
}

/// The RateLimit-Policy list members of `rule`.
pub(crate) fn rates<S: Store, K>(rule: &HttpRule<S, K>) -> impl Iterator<Item = Rate<'_>> + Clone {
    let rates = rule.store.rule().rates();
    let name = if rates.len() > 1 {
        MemberName::Windowed(&rule.name)
    } else {
        MemberName::Whole(&rule.name)
    };
    rates.iter().map(move |r| Rate {
        name,
        limit: r.limit(),
        window: r.window(),
    })
}

/// Decides `parts` (normalizing its path in place) and `body` under `policy`.
pub(crate) async fn decide<S, K, B>(
    policy: &Policy<S, K>,
    parts: &mut Parts,
    body: B,
    connection_peer: Option<SocketAddr>,
) -> Decision<B>
where
    S: Store,
    K: KeyExtractor,
    B: Body<Data = Bytes> + From<Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let rewritten = match normalize_target(parts) {
        Ok(rewritten) => rewritten,
        Err(e) => {
            tracing::debug!(uri = %parts.uri, error = %e, "path refused");
            return Decision::Refuse(Refusal::Path(e));
        }
    };
    let path = match &rewritten {
        Some(path) => Cow::Borrowed(path.as_str()),
        None => match_path(parts.uri.path()),
    };
    let matching: SmallVec<[_; 4]> = policy
        .rules
        .iter()
        .enumerate()
        .filter(|(_, r)| r.matches(&parts.method, &path))
        .collect();
    drop(path);
    if matching.is_empty() {
        return Decision::Unmatched(body);
    }
    let client = client(policy, parts, connection_peer);
    let (body, bytes, held) = match read_if_needed(&matching, &policy.options, body).await {
        Ok(read) => read,
        Err(e) => return Decision::Refuse(Refusal::Body(e)),
    };
    let admitted = Admitted {
        body,
        statuses: Statuses::new(),
        delay: Duration::ZERO,
        held,
    };
    apply(policy, &matching, parts, client, bytes.as_deref(), admitted).await
}

/// The matching rules' verdicts in order, on top of `admitted`: the first
/// refusal, or every status and the longest delay.
async fn apply<S: Store, K: KeyExtractor, B>(
    policy: &Policy<S, K>,
    matching: &[(usize, &HttpRule<S, K>)],
    parts: &Parts,
    client: Option<IpAddr>,
    body: Option<&[u8]>,
    mut admitted: Admitted<B>,
) -> Decision<B> {
    for &(index, rule) in matching {
        // The key reads Content-Type (the body's charset) from `parts`.
        let key = match rule.key.key(parts, client, body) {
            Ok(key) => key,
            Err(error) => {
                tracing::debug!(rule = %rule.name, error = %error, "no key: 400");
                let rule = rule.name.clone();
                return Decision::Refuse(Refusal::Key { rule, error });
            }
        };
        match judge(rule, &key, &policy.options, &*policy.observer).await {
            Judged::Counted(per_rate, delay) => {
                admitted.statuses.push(Counted {
                    rule: index,
                    per_rate,
                });
                admitted.delay = admitted.delay.max(delay);
            }
            Judged::Undecided => {}
            Judged::StoreDown => return Decision::Refuse(Refusal::StoreDown),
            Judged::Limited(per_rate, retry_after) => {
                let mut statuses = admitted.statuses;
                statuses.push(Counted {
                    rule: index,
                    per_rate,
                });
                return Decision::Refuse(Refusal::Limited {
                    rule: index,
                    statuses,
                    retry_after,
                });
            }
        }
    }
    Decision::Admit(admitted)
}

/// The body, its bytes and their charge to the budget when a matching rule
/// keys on it; the body untouched otherwise. What it holds stays charged to
/// the shared budget until the request is done.
async fn read_if_needed<S, K, B>(
    matching: &[(usize, &HttpRule<S, K>)],
    options: &LayerOptions,
    body: B,
) -> Result<(B, Option<Bytes>, Option<Reservation>), BodyError>
where
    K: KeyExtractor,
    B: Body<Data = Bytes> + From<Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    if !matching.iter().any(|(_, r)| r.key.needs_body()) {
        return Ok((body, None, None));
    }
    let (bytes, held) = read_bounded(
        body,
        options.max_body,
        options.body_timeout,
        &options.body_budget,
    )
    .await?;
    Ok((B::from(bytes.clone()), Some(bytes), Some(held)))
}

/// The client address the keys use: the peer (the request's extension,
/// else the connection's), or the client a trusted proxy forwarded for.
fn client<S, K>(
    policy: &Policy<S, K>,
    parts: &Parts,
    connection_peer: Option<SocketAddr>,
) -> Option<IpAddr> {
    let peer = peer(&parts.extensions).or(connection_peer.map(|p| p.ip()));
    let resolved = peer.map(|p| policy.options.client_ip.resolve(p, &parts.headers));
    if resolved.is_some_and(|c| c.unreadable) {
        policy.observer.unreadable_client_address();
    }
    resolved.map(|c| c.ip)
}

fn peer(ext: &http::Extensions) -> Option<IpAddr> {
    if let Some(PeerAddr(addr)) = ext.get::<PeerAddr>() {
        return Some(addr.ip());
    }
    #[cfg(feature = "axum")]
    if let Some(info) = ext.get::<axum::extract::ConnectInfo<SocketAddr>>() {
        return Some(info.0.ip());
    }
    None
}

/// One rule's verdict on one key.
enum Judged {
    /// Allowed, or denied in a dry run: each rate's decision, and how long
    /// to hold the request.
    Counted(PerRate, Duration),
    /// Denied: each rate's decision, and when to retry.
    Limited(PerRate, RetryAfter),
    /// The store failed and the failure policy (or dry run) lets it through.
    Undecided,
    /// The store failed and the failure policy denies.
    StoreDown,
}

/// Asks `rule`'s store about `key`, telling `observer` the outcome.
async fn judge<S: Store, K>(
    rule: &HttpRule<S, K>,
    key: &Key,
    options: &LayerOptions,
    observer: &dyn Observer,
) -> Judged {
    let name = rule.name.as_str();
    let started = Instant::now();
    let verdict = rule
        .store
        .decide(key.as_str(), rule.cost, Mode::Record)
        .await;
    let latency = started.elapsed();
    let verdict = match verdict {
        Ok(v) => v,
        Err(e) => {
            observer.decided(name, Outcome::StoreFailed, latency);
            // Counted by the observer; at debug level only, as a store
            // that is down fails every request: the store logs its outages.
            tracing::debug!(rule = %name, key = %key, error = %e, policy = ?options.on_store_error, "rate limit store failed");
            if options.on_store_error == FailurePolicy::Deny && !options.dry_run {
                return Judged::StoreDown;
            }
            return Judged::Undecided;
        }
    };
    let d = verdict.decision;
    let status = verdict.per_rate;
    if d.allowed {
        observer.decided(name, Outcome::Allowed, latency);
        return Judged::Counted(status, d.delay);
    }
    if options.dry_run {
        observer.decided(name, Outcome::WouldLimit, latency);
        tracing::info!(rule = %name, key = %key, retry_after = %d.retry_after, "dry run: would limit");
        return Judged::Counted(status, Duration::ZERO);
    }
    observer.decided(name, Outcome::Limited, latency);
    tracing::debug!(rule = %name, key = %key, retry_after = %d.retry_after, "limited");
    Judged::Limited(status, d.retry_after)
}
