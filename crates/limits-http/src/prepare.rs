//! What the layer knows of a request before any rule decides: its method
//! checked, its path normalized, the rules that match it, and the client its
//! keys are made for ([`prepare`]). The rules decide next, in
//! [`decide`](crate::decide).

use crate::lists::{Screened, screen};
use crate::method::{self, MethodCase};
use crate::path::{PathError, match_path, normalize_target};
use crate::policy::Policy;
use crate::tiers;
use crate::{KeyExtractor, ResolvedClient};
use http::Method;
use http::request::Parts;
use smallvec::SmallVec;
use std::borrow::Cow;
use std::net::{IpAddr, SocketAddr};

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
    /// The rule of this index keys on the client address, and the server
    /// gave the layer none (500: it would key every client alike).
    NoClient(usize),
    /// It is on a deny list: the layer's (`None`), or the matching rule's
    /// of this index (403).
    Denied(Option<usize>),
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
        self.rules.iter().any(|&i| policy.rules[i].reads_body())
    }
}

/// Normalizes the path of `parts` in place and finds the rules that match
/// it and the client: all that is known before any rule decides.
pub(crate) fn prepare<S, K: KeyExtractor>(
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
    // `extend`, which reserves from the iterator's size hint first.
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
    let global_lists = !policy.options.lists.is_empty();
    if rules.is_empty() && !global_lists {
        return Prepared::Unmatched;
    }
    let peer = peer(&parts.extensions).or(connection_peer.map(|p| p.ip()));
    let resolved = client(policy, parts, peer);
    let listed = global_lists || rules.iter().any(|&i| !policy.rules[i].lists.is_empty());
    if listed {
        let address = resolved.map(|c| c.address);
        if let Screened::Denied(rule) = screen(policy, &mut rules, address, &parts.headers) {
            return Prepared::Denied(rule);
        }
        if rules.is_empty() {
            return Prepared::Unmatched;
        }
    }
    if rules.iter().any(|&i| policy.rules[i].tier.is_some()) {
        let trusted = policy.options.client_ip.trusted();
        let trusted_peer = peer.is_some_and(|p| trusted.trusts(p));
        let tier_of = |i: usize| policy.rules[i].tier.as_ref();
        tiers::screen(&mut rules, tier_of, parts, trusted_peer);
        if rules.is_empty() {
            return Prepared::Unmatched;
        }
    }
    let client = resolved.map(|c| c.ip);
    if client.is_none() {
        let keyed_on_it = rules
            .iter()
            .find(|&&i| policy.rules[i].uses_client_address());
        if let Some(&rule) = keyed_on_it {
            return Prepared::NoClient(rule);
        }
    }
    Prepared::Matched(Matched { rules, client })
}

/// The client the keys use: the `peer` (the request's extension, else the
/// connection's), or the client a trusted proxy forwarded for.
fn client<S, K>(
    policy: &Policy<S, K>,
    parts: &Parts,
    peer: Option<IpAddr>,
) -> Option<ResolvedClient> {
    let resolved = peer.map(|p| policy.options.client_ip.resolve(p, &parts.headers));
    if resolved.is_some_and(|c| c.unreadable) {
        policy.observer.unreadable_client_address();
    }
    resolved
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
