//! [`MemcachedStore`]: a rule's decisions made here, by the core, on the
//! key's state read from memcached with its CAS token and written back only
//! if no one wrote it meanwhile.

use crate::client::MemcachedClient;
use crate::item;
use crate::meta::{Item, Write, Written};
use limits::UnsupportedRule;
use limits::{
    Algorithm, Clock, KeyedLimiter, Mode, Options, Rule, Store, StoreError, SystemClock, Verdict,
};
use smallvec::SmallVec;
use std::time::Duration;

/// The least an item written at an explicit time lives.
const EXPLICIT_MIN_LIFE: Duration = Duration::from_secs(24 * 3600);

/// One rule's decisions on memcached: every instance that shares the
/// servers (and the rule's name) shares the limit, exactly.
///
/// A decision reads the key's item with its CAS token (`mg`), decides with
/// the core's own [`Rule::decide`] on the state it holds, and writes the new
/// state back only if the item is unchanged (`ms` with `C`; a new key with
/// add, mode `E`). If another writer came first, it reads again and decides
/// again, up to [`max_attempts`](crate::MemcachedOptions::max_attempts)
/// times (each retry counted: [`MemcachedClient::retries`]); past that the
/// answer is a [`StoreError`] and nothing was recorded. A denial and a peek
/// write nothing.
///
/// Memcached has no clock: the time is this store's [`Clock`] (the
/// caller's), and [`decide_at`](Store::decide_at) takes one on the same
/// scale. Instances whose clocks differ decide on one state each at its own
/// time; a state written at a later time than a caller's clock reads is
/// decided at that later time (the core never runs a key's time backwards).
///
/// When memcached cannot answer, the decision is the error, or with
/// [`local_fallback`](crate::MemcachedOptions::local_fallback) an
/// in-memory limiter's of the same rule at the same time (counted:
/// [`MemcachedClient::local_decisions`]).
///
/// Items are `PREFIX NAME.FINGERPRINT:KEY` (a key memcached cannot take as
/// it is, hashed), and each expires when its state can no longer matter:
/// the decision's `reset_after`, in whole seconds rounded up; one written
/// by [`decide_at`](Store::decide_at) lives a day at least, since the
/// times given (a replayed trace's) need not pass as memcached's do.
pub struct MemcachedStore<C: Clock = SystemClock> {
    rule: Rule,
    client: MemcachedClient,
    clock: C,
    stem: String,
    /// The rule in memory, for the local fallback. Boxed: most stores have
    /// none, and a store is often held in an enum beside the in-memory one.
    local: Option<Box<KeyedLimiter<String, C>>>,
}

impl MemcachedStore<SystemClock> {
    /// A store deciding `rule` on `client`'s servers at the system clock's
    /// time, its items named after `name` (the rule's name in the server);
    /// refuses a rule whose state could outgrow an item.
    pub fn new(
        client: &MemcachedClient,
        rule: Rule,
        name: &str,
    ) -> Result<MemcachedStore, UnsupportedRule> {
        MemcachedStore::with_clock(client, rule, name, SystemClock::new())
    }
}

impl<C: Clock + Clone + 'static> MemcachedStore<C> {
    /// As [`new`](MemcachedStore::new), with the time read from `clock`.
    pub fn with_clock(
        client: &MemcachedClient,
        rule: Rule,
        name: &str,
        clock: C,
    ) -> Result<MemcachedStore<C>, UnsupportedRule> {
        let options = client.options();
        item::check_fits(&rule, options.item_size_max)?;
        let local = options.local_fallback.map(|max_keys| {
            let options = Options {
                max_keys: Some(max_keys.max(1)),
                ..Options::default()
            };
            Box::new(KeyedLimiter::with_options(
                rule.clone(),
                clock.clone(),
                options,
            ))
        });
        Ok(MemcachedStore {
            stem: item::stem(&options.prefix, name, &rule),
            rule,
            client: client.clone(),
            clock,
            local,
        })
    }

    /// The client it decides on (health and counts).
    pub fn client(&self) -> &MemcachedClient {
        &self.client
    }

    /// The memcached key of `key`'s item, for inspection.
    pub fn item_key(&self, key: &str) -> String {
        item::item_key(&self.client.options().prefix, &self.stem, key)
    }

    /// The seconds `key`'s item has left before memcached forgets it
    /// (`None`: there is no item): for inspection and tests.
    pub async fn item_ttl(&self, key: &str) -> Result<Option<i64>, StoreError> {
        let item_key = self.item_key(key);
        let server = self.client.server_of(&item_key);
        self.client
            .exchange(server, async |lease| {
                lease.connection().ttl(&item_key).await
            })
            .await
    }

    /// The decision at `now`, or the local fallback's if memcached could
    /// not answer and there is one; an item written lives `min_life` at
    /// least.
    async fn decide_on(
        &self,
        key: &str,
        now: u64,
        cost: u64,
        mode: Mode,
        min_life: Duration,
    ) -> Result<Verdict, StoreError> {
        let shared = self.decide_shared(key, now, cost, mode, min_life).await;
        match (shared, &self.local) {
            (Ok(answered), _) => answered,
            (Err(unanswered), Some(local)) if !unanswered.is_full() => {
                self.client.count_local_decision();
                Store::decide_at(&**local, key, now, cost, mode).await
            }
            (Err(unanswered), _) => Err(unanswered),
        }
    }

    /// The decision at `now` on memcached: read, decide, write back, again
    /// while another writer comes between. The outer error: memcached did
    /// not answer (or said it is full); the inner one: it answered, and
    /// the decision still failed (other writers every time, an item that
    /// is no state of the rule).
    async fn decide_shared(
        &self,
        key: &str,
        now: u64,
        cost: u64,
        mode: Mode,
        min_life: Duration,
    ) -> Result<Result<Verdict, StoreError>, StoreError> {
        if self.rule.algorithm() == Algorithm::None {
            // It keeps no state: nothing to read or write.
            return Ok(Ok(self.decide_state(
                &mut self.rule.new_state(),
                now,
                cost,
                mode,
            )));
        }
        let item_key = self.item_key(key);
        let server = self.client.server_of(&item_key);
        let attempts = self.client.options().max_attempts.max(1);
        self.client
            .exchange(server, async |lease| {
                for _ in 0..attempts {
                    let connection = lease.connection();
                    let found = connection.get(&item_key).await?;
                    let (verdict, write) = match self.decide_item(key, found, now, cost, mode) {
                        Ok(decided) => decided,
                        Err(e) => return Ok(Err(e)),
                    };
                    let Some((value, how)) = write else {
                        return Ok(Ok(verdict));
                    };
                    let ttl = item::ttl(verdict.decision.reset_after.max(min_life));
                    match connection.set(&item_key, &value, ttl, how).await? {
                        Written::Stored => return Ok(Ok(verdict)),
                        Written::Conflict => self.client.count_retry(),
                    }
                }
                self.client.count_gave_up();
                Ok(Err(StoreError::new(format!(
                    "memcached {}: the item of key {key:?} changed under {attempts} attempts in a row (other writers); nothing was recorded",
                    server.addr()
                ))))
            })
            .await
    }

    /// Decides on the state `found` holds (a new key's if none): the verdict,
    /// and the value to write and how, unless nothing is to be written.
    #[allow(clippy::type_complexity)]
    fn decide_item(
        &self,
        key: &str,
        found: Option<Item>,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> Result<(Verdict, Option<(Vec<u8>, Write)>), StoreError> {
        let (mut state, before, how) = match found {
            None => (self.rule.new_state(), None, Write::Add),
            Some(Item { value, cas }) => {
                let state = item::decode(&self.rule, &value).ok_or_else(|| {
                    StoreError::new(format!(
                        "memcached: the item of key {key:?} ({}) holds no state of this rule ({} {}); it is left as it is",
                        self.item_key(key),
                        self.rule.algorithm(),
                        self.rule.rates()
                    ))
                })?;
                (state, Some(value), Write::Cas(cas))
            }
        };
        let verdict = self.decide_state(&mut state, now, cost, mode);
        let after = item::encode(&self.rule, &state);
        let writes = match (mode, verdict.decision.allowed) {
            (Mode::Peek, _) | (Mode::Record, false) => false,
            (_, true) => cost > 0,
            // A counted denial writes only what it counted.
            (Mode::RecordAlways, false) => {
                let unchanged = match &before {
                    Some(value) => *value == after,
                    None => after == item::encode(&self.rule, &self.rule.new_state()),
                };
                !unchanged
            }
        };
        Ok((verdict, writes.then_some((after, how))))
    }

    /// The core's decision on `state`, every rate's own decision kept.
    fn decide_state(
        &self,
        state: &mut limits::KeyState,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> Verdict {
        let mut per_rate = SmallVec::new();
        let decision = self
            .rule
            .decide(state, now, cost, mode, |d| per_rate.push(d));
        Verdict {
            decision,
            per_rate,
            decided_at: None,
            ban: None,
        }
    }
}

impl<C: Clock + Clone + 'static> Store for MemcachedStore<C> {
    fn rule(&self) -> &Rule {
        &self.rule
    }

    async fn decide(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        self.decide_on(key, self.clock.now(), cost, mode, Duration::ZERO)
            .await
    }

    async fn decide_at(
        &self,
        key: &str,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        self.decide_on(key, now, cost, mode, EXPLICIT_MIN_LIFE)
            .await
    }
}
