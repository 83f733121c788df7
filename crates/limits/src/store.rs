//! The seam between a limiter's decisions and where its state lives.
//!
//! The HTTP layer asks a [`Store`] to decide; the in-memory
//! [`KeyedLimiter`](crate::KeyedLimiter) answers at once, and a Redis store
//! (another crate) answers over the network, with the same semantics. The
//! trait needs std futures only, no async runtime, so it lives in the core.
//! A store that never waits also says so, with [`Store::decide_now`]: a
//! caller can then decide without making a future at all.

use crate::{Ban, Clock, Decision, KeyedLimiter, LocalStore, Mode, Penalty, Receipt, Rule};
use smallvec::SmallVec;
use std::fmt;
use std::future::Future;
use std::net::IpAddr;

/// A decision with every rate's own decision, in the rule's rate order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// The combined decision.
    pub decision: Decision,
    /// One decision per rate (for the RateLimit header's list members).
    pub per_rate: SmallVec<[Decision; 2]>,
    /// The time the store decided at, on its time scale, if it can settle
    /// the request later ([`Store::settle`]); `None` from a store that
    /// cannot.
    pub decided_at: Option<u64>,
    /// The ban the request was refused for, if its key is banned
    /// ([`Store::penalty`]); `None` for any other decision.
    pub ban: Option<Ban>,
}

impl Verdict {
    /// The verdict of one decision, a rule of one rate's (a limit on
    /// distinct values): no receipt, no ban.
    ///
    /// ```
    /// use limits::{Decision, Verdict};
    ///
    /// let verdict = Verdict::of(Decision::allow(3));
    /// assert_eq!((verdict.per_rate.len(), verdict.receipt(1)), (1, None));
    /// ```
    pub fn of(decision: Decision) -> Verdict {
        Verdict {
            decision,
            per_rate: smallvec::smallvec![decision],
            decided_at: None,
            ban: None,
        }
    }

    /// The receipt of the request this verdict recorded at `cost`, to
    /// settle it with [`Store::settle`]: `None` if it was denied, cost
    /// nothing, or the store cannot settle. (A peek records nothing: its
    /// verdict has no receipt to give.)
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Mode, Rule, Store};
    ///
    /// let rule = Rule::new(Algorithm::TokenBucket, "1/s".parse().unwrap());
    /// let store: KeyedLimiter<String> = KeyedLimiter::new(rule);
    /// let verdict = store.decide_now("alice", 1, Mode::Record).unwrap().unwrap();
    /// assert_eq!(verdict.receipt(1).map(|r| r.cost), Some(1));
    /// let denied = store.decide_now("alice", 1, Mode::Record).unwrap().unwrap();
    /// assert_eq!(denied.receipt(1), None);
    /// ```
    pub fn receipt(&self, cost: u64) -> Option<Receipt> {
        let at = self.decided_at?;
        (self.decision.allowed && cost > 0).then_some(Receipt { at, cost })
    }
}

/// A store could not decide: why, and of which kind the failure is (a
/// caller answers each kind by its own policy).
///
/// ```
/// use limits::{StoreError, StoreErrorKind};
///
/// let down = StoreError::new("connection refused");
/// assert_eq!(down.kind, StoreErrorKind::Unavailable);
/// let full = StoreError::full("OOM command not allowed");
/// assert_eq!((full.kind, full.to_string().as_str()), (StoreErrorKind::Full, "OOM command not allowed"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError {
    /// What went wrong, for logs.
    pub message: String,
    /// The kind of failure.
    pub kind: StoreErrorKind,
}

/// The kinds of [`StoreError`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The store could not be asked or did not answer (unreachable, timed
    /// out, refused, a bad answer).
    Unavailable,
    /// The store answered that it has no room for new state (Redis's
    /// `OOM` under `maxmemory`): it is up, and a flood of keys may be what
    /// filled it, so this is not answered as an outage is.
    Full,
}

impl StoreError {
    /// The store could not answer (kind [`StoreErrorKind::Unavailable`]).
    pub fn new(message: impl Into<String>) -> StoreError {
        StoreError {
            message: message.into(),
            kind: StoreErrorKind::Unavailable,
        }
    }

    /// The store is full (kind [`StoreErrorKind::Full`]).
    pub fn full(message: impl Into<String>) -> StoreError {
        StoreError {
            message: message.into(),
            kind: StoreErrorKind::Full,
        }
    }

    /// A store of distinct values asked without a value
    /// ([`Store::decide_value`] is how such a store decides).
    pub fn no_value() -> StoreError {
        StoreError::new("a limit on distinct values decides a request with its value")
    }

    /// Whether the store answered that it is full.
    pub fn is_full(&self) -> bool {
        self.kind == StoreErrorKind::Full
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

/// A rule a store cannot keep exactly, and why (a window longer than the
/// store's time range, a sliding log larger than its item size): refused
/// when the store is made, never answered approximately.
///
/// ```
/// use limits::UnsupportedRule;
/// let why = UnsupportedRule("a window of 10 years is past this store's range".into());
/// assert!(why.to_string().contains("10 years"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsupportedRule(pub String);

impl fmt::Display for UnsupportedRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnsupportedRule {}

/// One request among several that [`Store::decide_in_order`] decides: what
/// [`Store::decide_from`] takes, and the store that decides it.
#[derive(Debug)]
pub struct Asked<'a, S> {
    /// The store (the rule) that decides.
    pub store: &'a S,
    /// The client address, for a store that caps what one client makes it
    /// hold, if known.
    pub client: Option<IpAddr>,
    /// The key.
    pub key: &'a str,
    /// The cost.
    pub cost: u64,
    /// The value, for a store that limits distinct values per key
    /// ([`Store::decide_value`]); `None` for every other store.
    pub value: Option<&'a str>,
    /// Record, or only look.
    pub mode: Mode,
}

impl<S: Store> Asked<'_, S> {
    /// Decides it on its own: with its value if it has one
    /// ([`Store::decide_value`]), else as [`Store::decide_from`].
    pub async fn decide(self) -> Result<Verdict, StoreError> {
        match self.value {
            Some(value) => {
                (self
                    .store
                    .decide_value(self.client, self.key, value, self.mode))
                .await
            }
            None => {
                (self
                    .store
                    .decide_from(self.client, self.key, self.cost, self.mode))
                .await
            }
        }
    }
}

impl<S> Clone for Asked<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S> Copy for Asked<'_, S> {}

/// How far [`Store::decide_in_order`] goes: the requests after the one it
/// stops at are not decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Until {
    /// Up to the first request denied or failed: what decides a request by
    /// its first denial (an HTTP request's rules).
    Denied,
    /// Up to the first request failed, past denials: what only logs a
    /// denial (a dry run).
    Failed,
}

impl Until {
    /// Whether the requests after one answered `answer` are left undecided.
    ///
    /// ```
    /// use limits::{Decision, RetryAfter, StoreError, Until, Verdict};
    ///
    /// let decision = Decision { allowed: false, retry_after: RetryAfter::Never, ..Decision::allow(0) };
    /// let denied = Ok(Verdict { decision, per_rate: Default::default(), decided_at: None, ban: None });
    /// assert!(Until::Denied.stops_after(&denied));
    /// assert!(!Until::Failed.stops_after(&denied));
    /// assert!(Until::Failed.stops_after(&Err(StoreError::new("down"))));
    /// ```
    pub fn stops_after(self, answer: &Result<Verdict, StoreError>) -> bool {
        match answer {
            Ok(verdict) => self == Until::Denied && !verdict.decision.allowed,
            Err(_) => true,
        }
    }
}

/// Where one rule's per-key state lives, and who decides on it.
pub trait Store: Send + Sync + 'static {
    /// The rule this store decides for.
    fn rule(&self) -> &Rule;

    /// The penalty this store bans repeat offenders by, if any: then a
    /// banned key's verdicts carry the [`Ban`] ([`Verdict::ban`]). `None`
    /// by default.
    fn penalty(&self) -> Option<&Penalty> {
        None
    }

    /// Decides a request of `cost` for `key` now, recording it if allowed
    /// (or only looking, with [`Mode::Peek`]).
    fn decide(
        &self,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send;

    /// Decides as [`decide`](Store::decide) does, but at `now` (nanoseconds
    /// on the store's time scale) instead of the store's own clock: what a
    /// conformance suite needs to replay a trace with exact times (ties at
    /// one nanosecond, times exactly on window edges). A store that cannot
    /// be told the time keeps this default, which answers with an error.
    fn decide_at(
        &self,
        key: &str,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        let _ = (key, now, cost, mode);
        std::future::ready(Err(StoreError::new(
            "this store cannot decide at an explicit time",
        )))
    }

    /// Decides as [`decide`](Store::decide) does, without waiting, if this
    /// store can: `Some` with the very verdict (or error) `decide` would
    /// have given, the request recorded the same way; `None` when it cannot
    /// decide without waiting (a network store, unless it holds the answer
    /// locally, as the Redis store's deny cache does), and then nothing
    /// happened: ask [`decide`](Store::decide). A caller that can answer at
    /// once (the HTTP layer) skips a future this way. The default is
    /// `None`.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Mode, Rule, Store};
    ///
    /// let rule = Rule::new(Algorithm::TokenBucket, "1/s".parse().unwrap());
    /// let store: KeyedLimiter<String> = KeyedLimiter::new(rule);
    /// let first = store.decide_now("alice", 1, Mode::Record).expect("in memory: at once");
    /// assert!(first.unwrap().decision.allowed);
    /// let again = store.decide_now("alice", 1, Mode::Record).unwrap().unwrap();
    /// assert!(!again.decision.allowed, "the first request was recorded");
    /// ```
    fn decide_now(&self, key: &str, cost: u64, mode: Mode) -> Option<Result<Verdict, StoreError>> {
        let _ = (key, cost, mode);
        None
    }

    /// Decides as [`decide`](Store::decide) does, for a request from the
    /// client address `client` (when the caller knows it): a store that
    /// bounds what one client can make it hold (the Redis store's cap on
    /// new keys per client address) reads it. By default the client is
    /// not needed, and this is [`decide`](Store::decide).
    fn decide_from(
        &self,
        client: Option<IpAddr>,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        let _ = client;
        self.decide(key, cost, mode)
    }

    /// [`decide_now`](Store::decide_now) for a request from `client`, as
    /// [`decide_from`](Store::decide_from) is to [`decide`](Store::decide):
    /// `Some` only with the verdict `decide_from` would have given.
    fn decide_now_from(
        &self,
        client: Option<IpAddr>,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> Option<Result<Verdict, StoreError>> {
        let _ = client;
        self.decide_now(key, cost, mode)
    }

    /// Decides a request carrying `value` for `key`, from `client`, for a
    /// store that limits the distinct values per key (a
    /// [`DistinctLimiter`](crate::DistinctLimiter)): a value it holds is
    /// free, a new one takes room for one. Any other store keeps this
    /// default, which answers with an error, as such a store answers
    /// [`decide`](Store::decide).
    fn decide_value(
        &self,
        client: Option<IpAddr>,
        key: &str,
        value: &str,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        let _ = (client, key, value, mode);
        std::future::ready(Err(StoreError::new(
            "this store does not count distinct values",
        )))
    }

    /// [`decide_value`](Store::decide_value) without waiting, as
    /// [`decide_now_from`](Store::decide_now_from) is to
    /// [`decide_from`](Store::decide_from): `None` by default.
    ///
    /// ```
    /// use limits::{Distinct, DistinctLimiter, Mode, Store};
    /// use std::time::Duration;
    ///
    /// let logins: DistinctLimiter<String> = DistinctLimiter::new(Distinct::new(1, Duration::from_secs(60)).unwrap());
    /// let ask = |value| logins.decide_value_now(None, "203.0.113.7", value, Mode::Record).unwrap().unwrap();
    /// assert!(ask("alice").decision.allowed);
    /// assert!(ask("alice").decision.allowed, "a value held is free");
    /// assert!(!ask("bob").decision.allowed);
    /// assert!(logins.decide_now("203.0.113.7", 1, Mode::Record).unwrap().is_err(), "no value: no decision");
    /// ```
    fn decide_value_now(
        &self,
        client: Option<IpAddr>,
        key: &str,
        value: &str,
        mode: Mode,
    ) -> Option<Result<Verdict, StoreError>> {
        let _ = (client, key, value, mode);
        None
    }

    /// Settles a request this store admitted for `key` (its `receipt`,
    /// from [`Verdict::receipt`]) to its real `cost`, at `now` (on the
    /// store's time scale, as in [`decide_at`](Store::decide_at)) or by the
    /// store's own clock: a lower cost gives back what the request took
    /// beyond it, a higher one takes the rest, as
    /// [`Rule::settle`](crate::Rule::settle) says for each limiter. A store
    /// that cannot settle keeps this default, which answers with an error.
    fn settle(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
        cost: u64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        let _ = (key, now, receipt, cost);
        std::future::ready(Err(StoreError::new("this store cannot settle")))
    }

    /// Renews a request this store admitted for `key` (its `receipt`) at
    /// `now` or by the store's own clock, in one step: it gives back what
    /// it took and takes it again then, as [`Rule::renew`](crate::Rule::renew)
    /// says. What keeps a request that lasts counted: a cap on requests in
    /// flight renews each one within every window it holds a slot for.
    /// Returns the receipt that settles the request from now on. A store
    /// that cannot renew keeps this default, which answers with an error.
    fn renew(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
    ) -> impl Future<Output = Result<Receipt, StoreError>> + Send {
        let _ = (key, now, receipt);
        std::future::ready(Err(StoreError::new("this store cannot renew")))
    }

    /// The store's in-process features (sweeping, state files, key and
    /// eviction counts), if its state lives in this process; `None` for a
    /// shared store such as Redis, which keeps its own.
    fn local(&self) -> Option<&dyn LocalStore> {
        None
    }

    /// Whether a request to `self` and one to `other` can go in one round
    /// trip of [`decide_in_order`](Store::decide_in_order) (two stores on
    /// the same Redis). False by default.
    fn shares_round_trip(&self, other: &Self) -> bool
    where
        Self: Sized,
    {
        let _ = other;
        false
    }

    /// Decides `asked` one after the other, each exactly as
    /// [`decide_from`](Store::decide_from) on its store would after the
    /// ones before it, up to the first one that `until` stops at: the
    /// answers of those decided, in order, the first always among them. The
    /// rest are not decided (nothing recorded); a store may also stop
    /// before one it must decide on its own, so a caller goes on from the
    /// first one not answered. Stores that
    /// [share a round trip](Store::shares_round_trip) decide what they can
    /// in one; by default each is decided in turn.
    ///
    /// ```
    /// use limits::{Algorithm, Asked, KeyedLimiter, Mode, Rule, Store, Until};
    /// use std::future::Future;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let store: KeyedLimiter<String> = KeyedLimiter::new(Rule::new(Algorithm::TokenBucket, "1/h".parse().unwrap()));
    /// let ask = |key| Asked { store: &store, client: None, key, cost: 1, value: None, mode: Mode::Record };
    /// let asked = [ask("a"), ask("a"), ask("b")];
    /// let mut fut = std::pin::pin!(Store::decide_in_order(&asked, Until::Denied));
    /// let Poll::Ready(answers) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
    ///     panic!("in memory: ready");
    /// };
    /// let allowed: Vec<bool> = answers.iter().map(|a| a.as_ref().unwrap().decision.allowed).collect();
    /// assert_eq!(allowed, [true, false], "stopped at the denial: \"b\" was not decided");
    /// assert!(store.decide_now("b", 1, Mode::Record).unwrap().unwrap().decision.allowed);
    /// ```
    fn decide_in_order(
        asked: &[Asked<'_, Self>],
        until: Until,
    ) -> impl Future<Output = Vec<Result<Verdict, StoreError>>> + Send
    where
        Self: Sized,
    {
        async move {
            let mut answers = Vec::with_capacity(asked.len());
            for a in asked {
                let answer = a.decide().await;
                let stops = until.stops_after(&answer);
                answers.push(answer);
                if stops {
                    break;
                }
            }
            answers
        }
    }
}

impl<C: Clock + 'static> Store for KeyedLimiter<String, C> {
    fn rule(&self) -> &Rule {
        KeyedLimiter::rule(self)
    }

    fn penalty(&self) -> Option<&Penalty> {
        KeyedLimiter::penalty(self)
    }

    /// Decides in memory, at once: never an error.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Mode, Rule, Store};
    /// use std::future::Future;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let rule = Rule::new(Algorithm::TokenBucket, "2/s; 10/m".parse().unwrap());
    /// let store: KeyedLimiter<String> = KeyedLimiter::new(rule);
    /// // The in-memory store's future is ready at once: poll it once.
    /// let mut fut = std::pin::pin!(Store::decide(&store, "alice", 1, Mode::Record));
    /// let Poll::Ready(Ok(verdict)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
    ///     panic!("not ready");
    /// };
    /// assert_eq!(verdict.per_rate.len(), 2);
    /// assert_eq!(verdict.decision.remaining, 1);
    /// ```
    fn decide(
        &self,
        key: &str,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        std::future::ready(Ok(self.verdict(key, None, cost, mode)))
    }

    /// Decides in memory, at once: always `Some`, never an error, and the
    /// same verdict as [`decide`](Store::decide) (one code path).
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Mode, Rule, Store};
    ///
    /// let rule = Rule::new(Algorithm::SlidingLog, "2/s; 10/m".parse().unwrap());
    /// let store: KeyedLimiter<String> = KeyedLimiter::new(rule);
    /// let verdict = store.decide_now("alice", 1, Mode::Record).unwrap().unwrap();
    /// assert_eq!(verdict.per_rate.len(), 2);
    /// assert_eq!(verdict.decision.remaining, 1);
    /// ```
    fn decide_now(&self, key: &str, cost: u64, mode: Mode) -> Option<Result<Verdict, StoreError>> {
        Some(Ok(self.verdict(key, None, cost, mode)))
    }

    /// Decides in memory at `now`, at once: never an error.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store};
    /// use std::future::Future;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let rule = Rule::new(Algorithm::SlidingLog, "1/s".parse().unwrap());
    /// let store: KeyedLimiter<String, ManualClock> = KeyedLimiter::with_clock(rule, ManualClock::new(0));
    /// let mut at = |now| {
    ///     let mut fut = std::pin::pin!(store.decide_at("k", now, 1, Mode::Record));
    ///     match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
    ///         Poll::Ready(Ok(verdict)) => verdict.decision.allowed,
    ///         _ => panic!("not ready"),
    ///     }
    /// };
    /// assert!(at(0));
    /// assert!(!at(999_999_999)); // the clock never moved: the times given count
    /// assert!(at(1_000_000_000));
    /// ```
    fn decide_at(
        &self,
        key: &str,
        now: u64,
        cost: u64,
        mode: Mode,
    ) -> impl Future<Output = Result<Verdict, StoreError>> + Send {
        std::future::ready(Ok(self.verdict(key, Some(now), cost, mode)))
    }

    /// Settles in memory, at once: never an error.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Mode, Rule, Store};
    /// use std::future::Future;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let rule = Rule::new(Algorithm::FixedWindow, "1/minute".parse().unwrap());
    /// let store: KeyedLimiter<String> = KeyedLimiter::new(rule);
    /// let verdict = store.decide_now("alice", 1, Mode::Record).unwrap().unwrap();
    /// let mut fut = std::pin::pin!(Store::settle(&store, "alice", None, verdict.receipt(1).unwrap(), 0));
    /// assert!(matches!(fut.as_mut().poll(&mut Context::from_waker(Waker::noop())), Poll::Ready(Ok(()))));
    /// assert!(store.decide_now("alice", 1, Mode::Record).unwrap().unwrap().decision.allowed);
    /// ```
    fn settle(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
        cost: u64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        match now {
            Some(now) => self.settle_at(key, now, receipt, cost),
            None => KeyedLimiter::settle(self, key, receipt, cost),
        }
        std::future::ready(Ok(()))
    }

    /// Renews in memory, at once: never an error.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, ManualClock, Mode, Rule, Store};
    /// use std::future::Future;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let rule = Rule::new(Algorithm::SlidingLog, "1/s".parse().unwrap());
    /// let store = KeyedLimiter::<String, _>::with_clock(rule, ManualClock::new(0));
    /// let verdict = store.decide_now("alice", 1, Mode::Record).unwrap().unwrap();
    /// let mut fut = std::pin::pin!(Store::renew(&store, "alice", Some(700), verdict.receipt(1).unwrap()));
    /// let Poll::Ready(Ok(renewed)) = fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) else {
    ///     panic!("memory renews at once");
    /// };
    /// assert_eq!(renewed.at, 700);
    /// ```
    fn renew(
        &self,
        key: &str,
        now: Option<u64>,
        receipt: Receipt,
    ) -> impl Future<Output = Result<Receipt, StoreError>> + Send {
        std::future::ready(Ok(match now {
            Some(now) => self.renew_at(key, now, receipt),
            None => KeyedLimiter::renew(self, key, receipt),
        }))
    }

    fn local(&self) -> Option<&dyn LocalStore> {
        Some(self)
    }
}

impl<C: Clock> KeyedLimiter<String, C> {
    /// Decides `key` as [`Store::decide`] does, at `now` or the limiter's
    /// clock if `None`: the verdict itself, as memory never fails.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Mode, Rule};
    ///
    /// let store: KeyedLimiter<String> = KeyedLimiter::new(Rule::new(Algorithm::SlidingLog, "1/s; 5/m".parse().unwrap()));
    /// let verdict = store.verdict("alice", None, 1, Mode::Record);
    /// assert!(verdict.decision.allowed);
    /// assert_eq!(verdict.per_rate.len(), 2);
    /// ```
    pub fn verdict(&self, key: &str, now: Option<u64>, cost: u64, mode: Mode) -> Verdict {
        let mut per_rate = SmallVec::new();
        let (decision, at, ban) = self.decide_banned(key, now, cost, mode, |d| per_rate.push(d));
        Verdict {
            decision,
            per_rate,
            decided_at: Some(at),
            ban,
        }
    }
}
