//! [`MemcachedStore`]: a rule's decisions made here, by the core, on the
//! key's state read from memcached with its CAS token and written back only
//! if no one wrote it meanwhile.

use crate::client::MemcachedClient;
use crate::item::{self, Held};
use crate::meta::{Connection, Item, MetaError};
use crate::read_modify_write::{read_modify_write, Change};
use limits::UnsupportedRule;
use limits::{
    Algorithm, Clock, KeyedLimiter, Mode, Options, Penalty, Receipt, Rule, Settlement, Store,
    StoreError, SystemClock, Verdict,
};
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The least an item written at an explicit time lives.
pub(crate) const EXPLICIT_MIN_LIFE: Duration = Duration::from_secs(24 * 3600);

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
/// A granted verdict carries its time ([`Verdict::decided_at`]), so its
/// [`receipt`](Verdict::receipt) settles the request later to its real cost
/// ([`Store::settle`]): the same read, the core's [`Rule::settle`] on the
/// state, and a CAS write.
///
/// With several servers, each key's item lives on one of them, the one
/// ketama places it on ([`server_of`](Self::server_of)), so a server that
/// goes away fails (or sends to the local fallback) its keys' decisions
/// only.
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
    /// The penalty that bans repeat offenders, each key's standing kept in
    /// its item after its state, if any.
    penalty: Option<Penalty>,
    /// The item size the servers take, for [`with_penalty`](Self::with_penalty).
    item_size_max: usize,
    /// The key prefix and the rule's name, for [`with_penalty`](Self::with_penalty).
    naming: (String, String),
    /// Bans this instance's decisions started.
    bans: AtomicU64,
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
        item::check_fits(&rule, None, options.item_size_max)?;
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
            stem: item::stem(&options.prefix, name, &rule, None),
            rule,
            client: client.clone(),
            clock,
            local,
            penalty: None,
            item_size_max: options.item_size_max,
            naming: (options.prefix.clone(), name.to_string()),
            bans: AtomicU64::new(0),
        })
    }

    /// The store banning repeat offenders by `penalty`, with the core's own
    /// [`Penalty::decide`]: each key's standing is kept in its item after
    /// its state, read and written with it by the same CAS, so every
    /// instance bans alike. A denial that counts is written (a plain
    /// rule's denial writes nothing). Items of the penalized rule are apart
    /// from the plain rule's. Refused if a standing could outgrow an item.
    pub fn with_penalty(mut self, penalty: Penalty) -> Result<MemcachedStore<C>, UnsupportedRule> {
        item::check_fits(&self.rule, Some(&penalty), self.item_size_max)?;
        let (prefix, name) = &self.naming;
        self.stem = item::stem(prefix, name, &self.rule, Some(&penalty));
        self.penalty = Some(penalty);
        self.local = self
            .local
            .map(|local| Box::new(local.with_penalty(penalty)));
        Ok(self)
    }

    /// Bans started by this instance's decisions, on memcached or (while
    /// it is out) in the local fallback. Each ban is started by one
    /// decision, so the instances' counts add up to the bans.
    pub fn bans(&self) -> u64 {
        let local = self.local.as_ref().map_or(0, |local| local.bans());
        self.bans.load(Ordering::Relaxed) + local
    }

    /// The client it decides on (health and counts).
    pub fn client(&self) -> &MemcachedClient {
        &self.client
    }

    /// The memcached key of `key`'s item, for inspection.
    pub fn item_key(&self, key: &str) -> String {
        item::item_key(&self.client.options().prefix, &self.stem, key)
    }

    /// The `HOST:PORT` of the server holding `key`'s item (of several, by
    /// ketama), for inspection.
    pub fn server_of(&self, key: &str) -> &str {
        self.client.server_of(&self.item_key(key)).addr()
    }

    /// Forgets `key`'s state on memcached (its next request starts
    /// afresh); whether there was any.
    pub async fn remove(&self, key: &str) -> Result<bool, StoreError> {
        self.on_item(key, async |connection, item_key| {
            connection.delete(item_key).await
        })
        .await
    }

    /// The seconds `key`'s item has left before memcached forgets it
    /// (`None`: there is no item): for inspection and tests.
    pub async fn item_ttl(&self, key: &str) -> Result<Option<i64>, StoreError> {
        self.on_item(key, async |connection, item_key| {
            connection.ttl(item_key).await
        })
        .await
    }

    /// Runs one command on `key`'s item, on the server holding it.
    async fn on_item<T>(
        &self,
        key: &str,
        command: impl AsyncFnOnce(&mut Connection, &str) -> Result<T, MetaError>,
    ) -> Result<T, StoreError> {
        let item_key = self.item_key(key);
        let server = self.client.server_of(&item_key);
        self.client
            .exchange(server, async |lease| {
                command(lease.connection(), &item_key).await
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
        if let Ok(Ok(Verdict { ban: Some(ban), .. })) = &shared {
            if ban.started_at(now) {
                self.bans.fetch_add(1, Ordering::Relaxed);
            }
        }
        match self.fallback(shared)? {
            Ok(answered) => answered,
            Err(local) => Store::decide_at(local, key, now, cost, mode).await,
        }
    }

    /// The decision at `now` on memcached (the outer error: memcached did
    /// not answer, as in [`read_modify_write`]).
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
            let mut held = Held::new(&self.rule, self.penalty.as_ref());
            return Ok(Ok(self.decide_held(&mut held, now, cost, mode)));
        }
        read_modify_write(&self.client, &self.item_key(key), key, |found| {
            let (mut held, before) = self.held_in(key, found)?;
            let verdict = self.decide_held(&mut held, now, cost, mode);
            let writes = match (mode, verdict.decision.allowed) {
                (Mode::Peek, _) => false,
                // A denial counted toward a ban is written.
                (Mode::Record, false) => self.penalty.is_some(),
                (_, true) => cost > 0,
                // A counted denial writes only what it counted.
                (Mode::RecordAlways, false) => true,
            };
            let life = self
                .life(&held, verdict.decision.reset_after, now)
                .max(min_life);
            let write = writes
                .then(|| self.changed(&held, before.as_deref(), life))
                .flatten();
            Ok((verdict, write))
        })
        .await
    }

    /// [`settle_on`](Self::settle_on) at `now`, or by this instance's clock
    /// (the key then lives no longer than its state needs).
    async fn settle_at_time(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
        settlement: Settlement,
    ) -> Result<Receipt, StoreError> {
        match now {
            Some(now) => {
                self.settle_on(key, now, receipt, settlement, EXPLICIT_MIN_LIFE)
                    .await
            }
            None => {
                self.settle_on(key, self.clock.now(), receipt, settlement, Duration::ZERO)
                    .await
            }
        }
    }

    /// Settles the request of `receipt` at `now` as `settlement` says, on
    /// memcached, or in the local fallback if memcached could not answer
    /// and there is one: the receipt that settles it from now on.
    async fn settle_on(
        &self,
        key: &str,
        now: u64,
        receipt: Receipt,
        settlement: Settlement,
        min_life: Duration,
    ) -> Result<Receipt, StoreError> {
        let shared = match self.rule.algorithm() {
            // It keeps no state: nothing to settle.
            Algorithm::None => Ok(Ok(Receipt { at: now, ..receipt })),
            _ => {
                read_modify_write(&self.client, &self.item_key(key), key, |found| {
                    let (mut held, before) = self.held_in(key, found)?;
                    let settled = self
                        .rule
                        .settle_as(&mut held.state, now, receipt, settlement);
                    // The state's life from now: what a look at it says.
                    let reset = self.rule.peek(&mut held.state.clone(), now, 1).reset_after;
                    let life = self.life(&held, reset, now).max(min_life);
                    Ok((settled, self.changed(&held, before.as_deref(), life)))
                })
                .await
            }
        };
        match self.fallback(shared)? {
            Ok(answered) => answered,
            Err(local) => Ok(match settlement {
                Settlement::To(cost) => {
                    local.settle_at(key, now, receipt, cost);
                    receipt
                }
                Settlement::Renew => local.renew_at(key, now, receipt),
            }),
        }
    }

    /// What memcached answered (`Ok`); else the local fallback to answer
    /// instead (`Err`, counted), if there is one and memcached is not full;
    /// else memcached's error.
    #[allow(clippy::type_complexity)]
    fn fallback<T>(
        &self,
        shared: Result<T, StoreError>,
    ) -> Result<Result<T, &KeyedLimiter<String, C>>, StoreError> {
        match (shared, self.local.as_deref()) {
            (Ok(answered), _) => Ok(Ok(answered)),
            (Err(unanswered), Some(local)) if !unanswered.is_full() => {
                self.client.count_local_decision();
                Ok(Err(local))
            }
            (Err(unanswered), _) => Err(unanswered),
        }
    }

    /// What `found` holds (a new key's if none), and the value it was read
    /// from.
    fn held_in(
        &self,
        key: &str,
        found: Option<Item>,
    ) -> Result<(Held, Option<Vec<u8>>), StoreError> {
        let penalty = self.penalty.as_ref();
        let Some(Item { value, .. }) = found else {
            return Ok((Held::new(&self.rule, penalty), None));
        };
        let held = item::decode(&self.rule, penalty, &value).ok_or_else(|| {
            StoreError::new(format!(
                "memcached: the item of key {key:?} ({}) holds no state of this rule ({} {}); it is left as it is",
                self.item_key(key),
                self.rule.algorithm(),
                self.rule.rates()
            ))
        })?;
        Ok((held, Some(value)))
    }

    /// How long `held` matters from `now`: its state's `reset_after`, and
    /// its standing until it is idle.
    fn life(&self, held: &Held, reset_after: Duration, now: u64) -> Duration {
        let standing = match (&self.penalty, &held.standing) {
            (Some(penalty), Some(standing)) => penalty.idle_from(standing).saturating_sub(now),
            _ => 0,
        };
        reset_after.max(Duration::from_nanos(standing))
    }

    /// The write of `held`, living `life`, unless it is what was read
    /// (`before`; none: a new key's), which leaves nothing to write.
    fn changed(&self, held: &Held, before: Option<&[u8]>, life: Duration) -> Option<Change> {
        let penalty = self.penalty.as_ref();
        let after = item::encode(&self.rule, penalty, held);
        let unchanged = match before {
            Some(value) => value == after,
            None => after == item::encode(&self.rule, penalty, &Held::new(&self.rule, penalty)),
        };
        (!unchanged).then(|| Change {
            value: after,
            ttl: item::ttl(life),
        })
    }

    /// The core's decision on `held`, every rate's own decision kept, and
    /// the time it decided at (a granted request's receipt); under a
    /// penalty, the core's [`Penalty::decide`] around it.
    fn decide_held(&self, held: &mut Held, now: u64, cost: u64, mode: Mode) -> Verdict {
        let mut per_rate: SmallVec<[_; 2]> = SmallVec::new();
        let mut at = now;
        let state = &mut held.state;
        let mut rule = |mode| {
            let (decision, decided_at) = self
                .rule
                .decide_timed(state, now, cost, mode, |d| per_rate.push(d));
            at = decided_at;
            decision
        };
        let (decision, ban) = match (&self.penalty, &mut held.standing) {
            (Some(penalty), Some(standing)) => penalty.decide(standing, now, mode, rule),
            _ => (rule(mode), None),
        };
        if let Some(ban) = ban {
            per_rate.iter_mut().for_each(|d| *d = ban.refuse(now, *d));
        }
        Verdict {
            decision,
            per_rate,
            decided_at: Some(at),
            ban,
        }
    }
}

impl<C: Clock + Clone + 'static> Store for MemcachedStore<C> {
    fn rule(&self) -> &Rule {
        &self.rule
    }

    fn penalty(&self) -> Option<&Penalty> {
        self.penalty.as_ref()
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

    /// Settles on memcached by the same read, change and CAS write as a
    /// decision, with the core's [`Rule::settle`]: a refund that changes
    /// nothing (a count that has lapsed) writes nothing.
    async fn settle(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
        cost: u64,
    ) -> Result<(), StoreError> {
        self.settle_at_time(key, now, receipt, Settlement::To(cost))
            .await
            .map(drop)
    }

    /// Renews on memcached by the same read, change and CAS write, with the
    /// core's [`Rule::renew`].
    async fn renew(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
    ) -> Result<Receipt, StoreError> {
        self.settle_at_time(key, now, receipt, Settlement::Renew)
            .await
    }
}
