//! The decision step, apart from any response: which rules match a request
//! and who the client is ([`prepare`]), then each rule's verdict, folded
//! into what the service carries out ([`decide`](crate::decide) decides;
//! [`refusals`](crate::refusals) builds our own answers).
//!
//! Rules are checked one after the other and each records as it allows, so a
//! request denied by a later rule has still been counted by the earlier ones
//! (as nginx's `limit_req` zones do). Within one rule, several rates are
//! all-or-nothing.

use crate::body::{BodyError, Reservation};
use crate::headers::{Member, MemberName, Rate};
use crate::method::{self, MethodCase};
use crate::path::{match_path, normalize_target, PathError};
use crate::policy::{HttpRule, Policy};
use crate::{KeyError, KeyExtractor};
use http::request::Parts;
use http::Method;
use limits::{RetryAfter, Store};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The peer's address, as a request extension. With the `axum` feature,
/// axum's `ConnectInfo<SocketAddr>` works too. A server that makes one
/// service per connection can give the layer's service the peer instead,
/// with [`RateLimit::with_peer`](crate::RateLimit::with_peer), and save the
/// extension's allocations; an extension, when present, wins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr(pub SocketAddr);

/// What the layer knows of a request before any rule decides.
pub(crate) enum Prepared {
    /// Its path is one we refuse to interpret (400).
    Refuse(PathError),
    /// Its method is a standard one in another case (400). Apart from
    /// `Refuse`, and not a whole `Refusal`: this enum is returned on every
    /// request, and sized by its largest variant.
    RefuseMethod(MethodCase),
    /// No rule matches: pass it on untouched, without headers.
    Unmatched,
    /// Rules match it: they decide next.
    Matched(Matched),
}

/// The rules that match a request, and the client its keys are made for.
pub(crate) struct Matched {
    /// The indexes of the matching rules in the policy, in order.
    pub rules: SmallVec<[usize; 4]>,
    /// The client address the keys use.
    pub client: Option<IpAddr>,
}

impl Matched {
    /// Whether a matching rule keys on the body (which must be read first).
    pub(crate) fn needs_body<S, K: KeyExtractor>(&self, policy: &Policy<S, K>) -> bool {
        self.rules.iter().any(|&i| policy.rules[i].key.needs_body())
    }
}

/// What the rules that let a request through said: the RateLimit status of
/// each, and how long to hold the request first (leaky bucket).
#[derive(Default)]
pub(crate) struct Passed {
    pub statuses: Statuses,
    pub delay: Duration,
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
    /// A rule denied it (429): the index of the rule in the policy. The
    /// statuses of the rules so far, this one's last, are where the rules
    /// folded them (the caller's [`Passed`], or [`Refused`]): not moved
    /// with the refusal (some 380 bytes, copied three to five times on
    /// the way to the response, about 500 instructions per 429).
    Limited {
        rule: usize,
        retry_after: RetryAfter,
    },
}

/// A refusal of [`decide_rest`](crate::decide::decide_rest), with the
/// statuses of the rules that decided (a 429's RateLimit headers).
pub(crate) struct Refused {
    pub refusal: Refusal,
    pub statuses: Statuses,
}

impl Refused {
    /// `refusal`, after the rules that decided said `passed`.
    pub(crate) fn after(refusal: Refusal, passed: Passed) -> Refused {
        let statuses = passed.statuses;
        Refused { refusal, statuses }
    }
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

/// Normalizes the path of `parts` in place and finds the rules that match
/// it and the client: all that is known before any rule decides.
pub(crate) fn prepare<S, K>(
    policy: &Policy<S, K>,
    parts: &mut Parts,
    connection_peer: Option<SocketAddr>,
) -> Prepared {
    if let Err(e) = method::check(&parts.method) {
        tracing::debug!(method = %parts.method, error = %e, "method refused");
        return Prepared::RefuseMethod(e);
    }
    let rewritten = match normalize_target(parts) {
        Ok(rewritten) => rewritten,
        Err(e) => {
            tracing::debug!(uri = %parts.uri, error = %e, "path refused");
            return Prepared::Refuse(e);
        }
    };
    let path = match &rewritten {
        Some(path) => Cow::Borrowed(path.as_str()),
        None => match_path(parts.uri.path()),
    };
    // Pushed one by one: `collect` into a `SmallVec` goes through its
    // `extend`, which reserves from the iterator's size hint first (about
    // 100 instructions per request more, for one rule).
    let mut rules: SmallVec<[usize; 4]> = SmallVec::new();
    // Only a POST can stand for another method: every other request
    // matches on its own method alone, with no list to build or drop.
    if parts.method == Method::POST {
        let overrides = method::overrides(parts);
        for (i, rule) in policy.rules.iter().enumerate() {
            if rule.matches(&parts.method, &path)
                || overrides.iter().any(|m| rule.matches(m, &path))
            {
                rules.push(i);
            }
        }
    } else {
        for (i, rule) in policy.rules.iter().enumerate() {
            if rule.matches(&parts.method, &path) {
                rules.push(i);
            }
        }
    }
    drop(path);
    if rules.is_empty() {
        return Prepared::Unmatched;
    }
    let client = client(policy, parts, connection_peer);
    Prepared::Matched(Matched { rules, client })
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
