//! What only a store in this process can do, asked for, not assumed.
//!
//! A server runs rules over several kinds of [`Store`](crate::Store): the
//! in-memory [`KeyedLimiter`] now, Redis later. Some of its work only makes
//! sense where the state lives in the process itself: sweeping idle keys,
//! saving the state to a file on shutdown and loading it on start, counting
//! keys and evictions for metrics. A shared store does these on its own
//! (Redis expires its keys and survives restarts), so these features are an
//! optional extension: a server asks [`Store::local`](crate::Store::local)
//! and gets `Some` only from a store that has them.

use crate::{Clock, KeyedLimiter};

/// The in-process features of a store, reached through
/// [`Store::local`](crate::Store::local). Keys are strings, as the HTTP
/// layer makes them.
///
/// ```
/// use limits::{Algorithm, KeyedLimiter, LocalStore, Rule, Store};
/// let rule = Rule::new(Algorithm::SlidingLog, "2/s".parse().unwrap());
/// let store: KeyedLimiter<String> = KeyedLimiter::new(rule);
/// store.check("alice", 1);
/// let local: &dyn LocalStore = Store::local(&store).expect("in memory");
/// assert_eq!(local.len(), 1);
/// assert_eq!(local.export().len(), 1);
/// ```
pub trait LocalStore: Send + Sync {
    /// Drops every key that can no longer affect a decision; returns how many.
    fn sweep(&self) -> usize;

    /// Every key that still matters, with its state as numbers
    /// ([`Rule::encode_state`](crate::Rule::encode_state)).
    fn export(&self) -> Vec<(String, Vec<u64>)>;

    /// Loads states written by [`export`](Self::export); returns how many
    /// were loaded (entries that do not fit the rule are skipped).
    fn import(&self, entries: Vec<(String, Vec<u64>)>) -> usize;

    /// Keys tracked now.
    fn len(&self) -> usize;

    /// Whether no key is tracked.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keys evicted by a cap on keys so far (each forgot its state).
    fn evictions(&self) -> u64;

    /// Of the [`evictions`](Self::evictions), those of keys that were limited.
    fn limited_evictions(&self) -> u64;

    /// Bans started so far by the store's penalty
    /// ([`Store::penalty`](crate::Store::penalty)); zero by default.
    fn bans(&self) -> u64 {
        0
    }

    /// Every key's penalty state that still matters, as numbers
    /// ([`Penalty::encode_state`](crate::Penalty::encode_state)); none by
    /// default.
    fn export_penalties(&self) -> Vec<(String, Vec<u64>)> {
        Vec::new()
    }

    /// Loads penalty states written by
    /// [`export_penalties`](Self::export_penalties); returns how many were
    /// loaded (none by default).
    fn import_penalties(&self, entries: Vec<(String, Vec<u64>)>) -> usize {
        let _ = entries;
        0
    }
}

impl<C: Clock + 'static> LocalStore for KeyedLimiter<String, C> {
    fn sweep(&self) -> usize {
        KeyedLimiter::sweep(self)
    }

    fn export(&self) -> Vec<(String, Vec<u64>)> {
        KeyedLimiter::export(self)
    }

    fn import(&self, entries: Vec<(String, Vec<u64>)>) -> usize {
        KeyedLimiter::import(self, entries)
    }

    fn len(&self) -> usize {
        KeyedLimiter::len(self)
    }

    fn evictions(&self) -> u64 {
        KeyedLimiter::evictions(self)
    }

    fn limited_evictions(&self) -> u64 {
        KeyedLimiter::limited_evictions(self)
    }

    fn bans(&self) -> u64 {
        KeyedLimiter::bans(self)
    }

    fn export_penalties(&self) -> Vec<(String, Vec<u64>)> {
        KeyedLimiter::export_penalties(self)
    }

    fn import_penalties(&self, entries: Vec<(String, Vec<u64>)>) -> usize {
        KeyedLimiter::import_penalties(self, entries)
    }
}

#[cfg(test)]
mod tests {
    use crate::{
        Algorithm, KeyedLimiter, ManualClock, Mode, Options, Rule, Store, StoreError, Verdict,
    };
    use std::future::Future;

    /// A store with no in-process features: the default answer.
    struct Remote(Rule);

    impl Store for Remote {
        fn rule(&self) -> &Rule {
            &self.0
        }
        fn decide(
            &self,
            _: &str,
            _: u64,
            _: Mode,
        ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
            std::future::ready(Err(StoreError::new("unreachable")))
        }
    }

    fn rule() -> Rule {
        Rule::new(Algorithm::SlidingLog, "1/s".parse().unwrap())
    }

    #[test]
    fn only_a_store_in_this_process_is_local() {
        assert!(Remote(rule()).local().is_none());
        let memory: KeyedLimiter<String> = KeyedLimiter::new(rule());
        assert!(Store::local(&memory).is_some());
    }

    #[test]
    fn the_extension_reaches_the_limiter_itself() {
        let options = Options {
            max_keys: Some(1),
            ..Options::default()
        };
        let clock = ManualClock::new(0);
        let store: KeyedLimiter<String, _> = KeyedLimiter::with_options(rule(), clock, options);
        store.check_at("a", 0, 1);
        store.check_at("b", 0, 1); // evicts "a", which was at its limit
        let local = Store::local(&store).expect("in memory");
        assert_eq!((local.len(), local.evictions()), (1, 1));
        assert_eq!(local.limited_evictions(), 1);
        let saved = local.export();
        assert_eq!(saved.len(), 1);

        let fresh: KeyedLimiter<String, _> = KeyedLimiter::with_clock(rule(), ManualClock::new(0));
        let fresh_local = Store::local(&fresh).expect("in memory");
        assert!(fresh_local.is_empty());
        assert_eq!(fresh_local.import(saved), 1);
        assert!(
            !fresh.check_at("b", 1, 1).allowed,
            "the import carried the state"
        );
        fresh.clock().set(2_000_000_000);
        assert_eq!(fresh_local.sweep(), 1);
        assert!(fresh_local.is_empty());
    }
}
