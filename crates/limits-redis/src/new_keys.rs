//! The cap on new keys per client address: a flood of distinct keys from a
//! few addresses cannot fill Redis.
//!
//! `--max-keys` bounds the memory store, but every key sent to Redis
//! becomes state there until it expires: a client that picks its own key
//! (a header, a form field) could write thousands a second, and fill
//! Redis (which then answers `OOM`) or push other clients' keys out (under
//! an evicting policy). So before a request goes to Redis, its key is
//! looked up among the keys this store sent lately; a key not among them
//! is new, and costs its client address one unit of an in-memory token
//! bucket of the cap's rate. A client whose bucket is empty is denied for
//! new keys (a 429 with the bucket's wait) and still decided on the keys it
//! has: a user behind it loses nothing it had.
//!
//! The scripts do not say whether a key had state, and asking would cost
//! a round trip, so "new" is decided here: not seen by this store within
//! the cap's window. A key another instance created, or one seen longer
//! ago, counts once more: generous to the store, and a real client makes
//! a handful of keys, far below the cap. Both tables are the core's
//! [`KeyedLimiter`] (exact, bounded, evicting the cheapest entries to
//! forget, never a client at its cap while another can go). IPv6 clients
//! are counted by their /64, as one host usually holds a whole /64.

use limits::{Algorithm, Decision, KeyedLimiter, Options, Rate, Rates, Rule, SystemClock};
use std::hash::BuildHasher;
use std::net::{IpAddr, Ipv6Addr};

/// Recently seen keys and each client address's budget of new keys.
pub(crate) struct NewKeyCap {
    /// A key's hash, allowed once per window: "allowed" means not seen in
    /// this window (new).
    seen: KeyedLimiter<u64, SystemClock>,
    /// Seeded per process, so that no client can make its new keys collide
    /// with keys already seen.
    hasher: std::collections::hash_map::RandomState,
    /// New keys per client address: a token bucket of the cap's rate.
    clients: KeyedLimiter<IpAddr, SystemClock>,
}

impl NewKeyCap {
    /// A cap of `rate` new keys per client address, tracking at most
    /// `max_keys` keys and as many client addresses.
    pub fn new(rate: Rate, max_keys: usize) -> NewKeyCap {
        let options = Options {
            max_keys: Some(max_keys.max(1)),
            ..Options::default()
        };
        let once = Rate::new(1, rate.window()).expect("the cap's window is valid");
        let seen = Rule::new(Algorithm::FixedWindow, rates(once));
        let clients = Rule::new(Algorithm::TokenBucket, rates(rate));
        NewKeyCap {
            seen: KeyedLimiter::with_options(seen, SystemClock::new(), options),
            hasher: Default::default(),
            clients: KeyedLimiter::with_options(clients, SystemClock::new(), options),
        }
    }

    /// Counts a request for `key` from `client`: `None` when it may go to
    /// Redis (the key was seen lately, or the client may make one more
    /// key, now counted); `Some` with the client's denial when it is at its
    /// cap and the key is new.
    pub fn admit(&self, client: IpAddr, key: &str) -> Option<Decision> {
        let hash = self.new_hash(key)?;
        let counted = self.clients.check(&counted_as(client), 1);
        if !counted.allowed {
            return Some(counted);
        }
        self.seen.check(&hash, 1);
        None
    }

    /// Whether `key` is new: not seen within the cap's window, so that a
    /// request for it counts against its client's budget.
    pub fn is_new(&self, key: &str) -> bool {
        self.new_hash(key).is_some()
    }

    /// The hash of `key` if it is new.
    fn new_hash(&self, key: &str) -> Option<u64> {
        let hash = self.hasher.hash_one(key);
        self.seen.peek(&hash, 1).allowed.then_some(hash)
    }

    /// What [`admit`](Self::admit) would answer, counting nothing.
    pub fn would_deny(&self, client: IpAddr, key: &str) -> Option<Decision> {
        self.new_hash(key)?;
        let counted = self.clients.peek(&counted_as(client), 1);
        (!counted.allowed).then_some(counted)
    }
}

fn rates(rate: Rate) -> Rates {
    Rates::new(vec![rate]).expect("one rate")
}

/// The address a client is counted by: IPv4 as it is (an IPv4-mapped IPv6
/// address is IPv4), IPv6 by its /64.
fn counted_as(client: IpAddr) -> IpAddr {
    match client {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let network = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(Ipv6Addr::from(network))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn cap(n: u64) -> NewKeyCap {
        NewKeyCap::new(Rate::new(n, Duration::from_secs(3600)).unwrap(), 1000)
    }

    #[test]
    fn a_client_at_its_cap_is_denied_new_keys_and_keeps_its_old_ones() {
        let cap = cap(3);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        for k in ["k1", "k2", "k3"] {
            assert!(cap.admit(a, k).is_none(), "{k} is within the cap");
        }
        assert!(cap.would_deny(a, "k4").is_some());
        let denied = cap.admit(a, "k4").expect("a fourth new key is refused");
        assert!(!denied.allowed && denied.retry_after.duration().is_some());
        assert!(cap.admit(a, "k1").is_none(), "a key it has still goes");
        assert!(cap.would_deny(a, "k2").is_none());
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        assert!(
            cap.admit(b, "k5").is_none(),
            "another address has its own cap"
        );
        assert!(cap.admit(b, "k4").is_none());
        assert!(cap.admit(a, "k4").is_none(), "k4 is no longer new");
    }

    #[test]
    fn ipv6_clients_are_counted_by_their_64_and_mapped_ipv4_as_ipv4() {
        let cap = cap(2);
        let one: IpAddr = "2001:db8::1".parse().unwrap();
        let other_host: IpAddr = "2001:db8::ffff:1".parse().unwrap();
        assert!(cap.admit(one, "a").is_none());
        assert!(cap.admit(other_host, "b").is_none());
        assert!(cap.admit(one, "c").is_some(), "one /64, one budget");
        let v4: IpAddr = "192.0.2.9".parse().unwrap();
        let mapped: IpAddr = "::ffff:192.0.2.9".parse().unwrap();
        assert!(cap.admit(v4, "d").is_none());
        assert!(cap.admit(mapped, "e").is_none());
        assert!(cap.admit(v4, "f").is_some());
    }
}
