//! A limit on distinct values per key on memcached: every instance that
//! shares the servers (and the rule's name) holds one set of values per
//! key, decided here by the core's own [`Distinct::decide`] on the values
//! read with their CAS token, and written back only if no one wrote them
//! meanwhile, as [`MemcachedStore`](crate::MemcachedStore) decides a rule.
//!
//! An item holds the key's values as the core's numbers
//! ([`Seen::to_numbers`]: its latest time, then each value's hash and last
//! use, 8 bytes each, little-endian); a value's hash is the first 8 bytes
//! of its SHA-256, the same on every instance and every build. A sketch
//! past a threshold is not kept here (its HyperLogLogs stay in memory).

use crate::client::MemcachedClient;
use crate::item::{self, ITEM_OVERHEAD};
use crate::meta::Item;
use crate::read_modify_write::{read_modify_write, Change};
use crate::store::EXPLICIT_MIN_LIFE;
use limits::{
    Algorithm, Clock, Distinct, Mode, Rule, Seen, Store, StoreError, SystemClock, UnsupportedRule,
    Verdict,
};
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::time::Duration;

/// One rule of distinct values, decided on memcached at this store's clock.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use limits::{Distinct, Mode, Store};
/// use limits_memcached::{MemcachedClient, MemcachedDistinct, MemcachedOptions};
/// use std::time::Duration;
///
/// let client = MemcachedClient::connect("memcached://127.0.0.1:11211", MemcachedOptions::default()).await?;
/// let usernames = Distinct::new(20, Duration::from_secs(3600))?;
/// let store = MemcachedDistinct::new(&client, usernames, "logins")?;
/// let verdict = store.decide_value(None, "203.0.113.7", "alice", Mode::Record).await?;
/// assert!(verdict.decision.allowed);
/// # Ok(())
/// # }
/// ```
pub struct MemcachedDistinct<C: Clock = SystemClock> {
    rule: Distinct,
    /// The limit as a sliding log of its rate: what the headers announce.
    limit: Rule,
    client: MemcachedClient,
    clock: C,
    stem: String,
}

impl MemcachedDistinct<SystemClock> {
    /// A store deciding `rule` on `client`'s servers at the system
    /// clock's time, its items named after `name`; refused with a sketch,
    /// or for a limit whose values could outgrow an item.
    pub fn new(
        client: &MemcachedClient,
        rule: Distinct,
        name: &str,
    ) -> Result<MemcachedDistinct, UnsupportedRule> {
        MemcachedDistinct::with_clock(client, rule, name, SystemClock::new())
    }
}

impl<C: Clock> MemcachedDistinct<C> {
    /// As [`new`](MemcachedDistinct::new), with the time read from `clock`.
    pub fn with_clock(
        client: &MemcachedClient,
        rule: Distinct,
        name: &str,
        clock: C,
    ) -> Result<MemcachedDistinct<C>, UnsupportedRule> {
        if rule.sketch().is_some() {
            return Err(UnsupportedRule(
                "a sketch of distinct values is kept in memory or Redis, not in memcached".into(),
            ));
        }
        let options = client.options();
        let most = 8 * (1 + 2 * u128::from(rule.at_most()));
        let room = options.item_size_max.saturating_sub(ITEM_OVERHEAD) as u128;
        if most > room {
            return Err(UnsupportedRule(format!(
                "at most {} distinct values: a key's values can take {most} bytes (16 a value), more than a memcached item holds ({} bytes, less {ITEM_OVERHEAD} for its key and header); lower the limit, or raise the servers' -I and the store's item size",
                rule.at_most(),
                options.item_size_max
            )));
        }
        let limit = Rule::new(Algorithm::SlidingLog, rule.rate().into());
        Ok(MemcachedDistinct {
            stem: item::stem(&options.prefix, &format!("{name}.distinct"), &limit, None),
            rule,
            limit,
            client: client.clone(),
            clock,
        })
    }

    /// The limit.
    pub fn distinct(&self) -> Distinct {
        self.rule
    }

    /// The client it decides on (health and counts).
    pub fn client(&self) -> &MemcachedClient {
        &self.client
    }

    /// The memcached key of `key`'s item, for inspection.
    pub fn item_key(&self, key: &str) -> String {
        item::item_key(&self.client.options().prefix, &self.stem, key)
    }

    /// Decides `value` for `key` at `now` (on the clock's scale) or the
    /// clock's time. An item written at an explicit time lives a day at
    /// least, as the rule store's do.
    pub async fn decide_value_at(
        &self,
        key: &str,
        value: &str,
        now: Option<u64>,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        let hash = value_hash(value);
        let min_life = now.map_or(Duration::ZERO, |_| EXPLICIT_MIN_LIFE);
        let now = now.unwrap_or_else(|| self.clock.now());
        let item_key = self.item_key(key);
        let decided = read_modify_write(&self.client, &item_key, key, |found| {
            let (mut seen, before) = self.seen_in(key, found)?;
            let decision = self.rule.decide(&mut seen, hash, now, mode);
            // A denial and a peek write nothing (under a flood of new
            // values, nothing for other writers to retry against).
            let after = (decision.allowed && mode.records()).then(|| encode(&seen));
            let changed = after.filter(|after| before.as_deref() != Some(&after[..]));
            let write = changed.map(|after| {
                let life = decision.reset_after.max(min_life);
                Change {
                    value: after,
                    ttl: item::ttl(life),
                }
            });
            Ok((decision, write))
        })
        .await?;
        let decision = decided?;
        Ok(Verdict::of(decision))
    }

    /// The values `found` holds (none for a new key), and the bytes they
    /// were read from.
    fn seen_in(
        &self,
        key: &str,
        found: Option<Item>,
    ) -> Result<(Seen, Option<Vec<u8>>), StoreError> {
        let Some(Item { value, .. }) = found else {
            return Ok((Seen::default(), None));
        };
        let seen = decode(&value).ok_or_else(|| {
            StoreError::new(format!(
                "memcached: the item of key {key:?} ({}) holds no values of a distinct limit; it is left as it is",
                self.item_key(key)
            ))
        })?;
        Ok((seen, Some(value)))
    }
}

/// A value's hash: the first 8 bytes of its SHA-256.
fn value_hash(value: &str) -> u64 {
    let digest = Sha256::digest(value.as_bytes());
    let mut first = [0; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// `seen`'s numbers, 8 bytes each, little-endian.
fn encode(seen: &Seen) -> Vec<u8> {
    let numbers = seen.to_numbers().unwrap_or_default();
    numbers.iter().flat_map(|n| n.to_le_bytes()).collect()
}

/// The values `bytes` encode, if they are whole numbers of a `Seen`.
fn decode(bytes: &[u8]) -> Option<Seen> {
    if bytes.len() % 8 != 0 {
        return None;
    }
    let numbers: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|b| {
            let mut eight = [0; 8];
            eight.copy_from_slice(b);
            u64::from_le_bytes(eight)
        })
        .collect();
    Seen::from_numbers(&numbers)
}

impl<C: Clock + 'static> Store for MemcachedDistinct<C> {
    /// The limit as a sliding log of `at_most` per window.
    fn rule(&self) -> &Rule {
        &self.limit
    }

    async fn decide(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        let _ = (key, cost, mode);
        Err(StoreError::no_value())
    }

    async fn decide_value(
        &self,
        client: Option<IpAddr>,
        key: &str,
        value: &str,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        let _ = client;
        self.decide_value_at(key, value, None, mode).await
    }
}
