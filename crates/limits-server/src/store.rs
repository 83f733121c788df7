//! The store of each rule, chosen per rule: one type that can hold any kind
//! the server knows, so that rules over different stores share one policy.
//!
//! The HTTP layer takes one store type for all its rules; [`RuleStore`] is
//! that type, an enum that decides by delegating to the store it holds (a
//! `match`, no boxing, no virtual call). In-memory is the one kind today; a
//! Redis variant slots in beside it. What only an in-process store can do
//! (sweep, state files, key counts) is asked through
//! [`Store::local`], never assumed.

use limits::{KeyedLimiter, LocalStore, Mode, Rule, Store, StoreError, SystemClock, Verdict};

/// The stores a rule can use, behind one type.
///
/// ```
/// use limits::{Algorithm, Rule, Store};
/// use limits_server::StoreOptions;
///
/// let rule = Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap());
/// let store = StoreOptions { max_keys: 100 }.store(rule.clone());
/// assert_eq!(store.kind(), "memory");
/// assert_eq!(store.rule(), &rule);
/// assert!(store.local().is_some(), "an in-memory store sweeps and saves its state");
/// ```
pub enum RuleStore {
    /// Keys and their state in this process, at most `max_keys` of them.
    Memory(KeyedLimiter<String, SystemClock>),
}

impl RuleStore {
    /// An in-memory store of `rule`, tracking at most `max_keys` keys
    /// (beyond it, the keys cheapest to forget are evicted).
    pub fn memory(rule: Rule, max_keys: usize) -> RuleStore {
        let options = limits::Options {
            max_keys: Some(max_keys),
            ..limits::Options::default()
        };
        RuleStore::Memory(KeyedLimiter::with_options(
            rule,
            SystemClock::new(),
            options,
        ))
    }

    /// The kind of store, as the configuration names it: `"memory"`.
    pub fn kind(&self) -> &'static str {
        match self {
            RuleStore::Memory(_) => "memory",
        }
    }

    /// Whether a key's state in `self` means the same in `other`: the same
    /// kind of store deciding the same rule. A reloaded rule keeps its store
    /// only then.
    pub fn same_kind(&self, other: &RuleStore) -> bool {
        self.kind() == other.kind() && self.rule() == other.rule()
    }
}

impl Store for RuleStore {
    fn rule(&self) -> &Rule {
        match self {
            RuleStore::Memory(s) => Store::rule(s),
        }
    }

    async fn decide(&self, key: &str, cost: u64, mode: Mode) -> Result<Verdict, StoreError> {
        match self {
            RuleStore::Memory(s) => Store::decide(s, key, cost, mode).await,
        }
    }

    async fn decide_at(
        &self,
        key: &str,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> Result<Verdict, StoreError> {
        match self {
            RuleStore::Memory(s) => Store::decide_at(s, key, now, cost, mode).await,
        }
    }

    fn local(&self) -> Option<&dyn LocalStore> {
        match self {
            RuleStore::Memory(s) => Store::local(s),
        }
    }
}

/// How the server builds each rule's store: the settings every store of a
/// kind shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreOptions {
    /// Most keys tracked per rule by an in-memory store (at least 1).
    pub max_keys: usize,
}

impl Default for StoreOptions {
    /// A million keys per rule.
    fn default() -> StoreOptions {
        StoreOptions {
            max_keys: 1_000_000,
        }
    }
}

impl StoreOptions {
    /// The store of a rule: in memory (the one kind today).
    pub fn store(&self, rule: Rule) -> RuleStore {
        RuleStore::memory(rule, self.max_keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use limits::Algorithm;

    fn rule(rates: &str) -> Rule {
        Rule::new(Algorithm::SlidingLog, rates.parse().unwrap())
    }

    #[tokio::test]
    async fn decisions_and_local_features_reach_the_store_held() {
        let store = StoreOptions { max_keys: 10 }.store(rule("2/h"));
        for expected in [true, true, false] {
            let verdict = store.decide("alice", 1, Mode::Record).await.unwrap();
            assert_eq!(verdict.decision.allowed, expected);
        }
        let peek = store.decide("bob", 1, Mode::Peek).await.unwrap();
        assert!(peek.decision.allowed);
        assert_eq!(peek.decision.remaining, 2, "a peek takes nothing");
        let local = store.local().expect("in memory");
        assert_eq!(local.len(), 1, "only alice was recorded");
        assert_eq!(local.export()[0].0, "alice");
    }

    #[test]
    fn the_same_kind_means_the_same_store_kind_and_rule() {
        let options = StoreOptions::default();
        let a = options.store(rule("2/h"));
        assert!(a.same_kind(&options.store(rule("2/h"))));
        assert!(!a.same_kind(&options.store(rule("3/h"))));
        let leaky = |burst| Rule::build(Algorithm::LeakyBucket, "2/h".parse().unwrap(), burst);
        assert!(!options
            .store(leaky(None))
            .same_kind(&options.store(leaky(Some(1)))));
    }
}
