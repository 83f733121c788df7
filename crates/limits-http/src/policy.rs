//! What the layer enforces: rules (which requests, keyed how, at what cost,
//! decided by which store) and options (dry run, headers, trusted proxies,
//! what to do when the store cannot answer).

use crate::path::fold_case;
use crate::{BodyBudget, ClientIp, CostFrom, KeyExtractor, KeySpec, ListKind, Lists, Tier};
use http::Method;
use limits::Store;
use std::sync::Arc;
use std::time::Duration;

/// The default [`LayerOptions::body_budget`]: 64 MiB, 4096 bodies of 16 KiB.
pub const DEFAULT_BODY_BUDGET: usize = 64 << 20;

/// One rule: requests whose path starts with `path_prefix` (at a segment
/// boundary, or as `path_match` widens it) and whose method is in `methods`
/// (any, if empty; HEAD counts under GET), keyed by `key`, costing `cost`,
/// decided by `store`.
///
/// `key` is a [`KeySpec`] unless you say otherwise: any [`KeyExtractor`]
/// will do, and `Arc<dyn KeyExtractor>` mixes kinds in one policy.
pub struct HttpRule<S, K = KeySpec> {
    /// Names the rule in headers, logs and metrics.
    pub name: String,
    /// Path prefix: `/api` matches `/api` and `/api/items`, not `/apis`.
    pub path_prefix: String,
    /// How the prefix meets a path beyond that: without regard to case, or
    /// followed by a format suffix. By default, neither.
    pub path_match: PathMatch,
    /// Methods; empty matches every method. A rule that names GET also
    /// matches HEAD, since most frameworks answer HEAD with the GET handler.
    pub methods: Vec<Method>,
    /// How a request is turned into a key.
    pub key: K,
    /// The value whose distinct count per key the rule limits, if it does
    /// ([`distinct`](HttpRule::distinct)); `None`: the rule counts requests.
    pub distinct: Option<K>,
    /// The cost of one request.
    pub cost: u64,
    /// Which responses the request counts by: every one (the default), or
    /// only those of some statuses (failed logins), the rest refunded when
    /// the response head arrives.
    pub count: Counts,
    /// Where the request's real cost is read from its response, if the
    /// rule settles to it ([`CostFrom`]): `cost` is then the estimate
    /// counted on arrival.
    pub cost_from: Option<CostFrom>,
    /// Where the rule's state lives.
    pub store: Arc<S>,
    /// Who the rule never limits, and whom it refuses (403).
    pub lists: Lists,
    /// The tier whose requests alone the rule decides, if its limit is one
    /// of several tiers ([`Tiers`](crate::Tiers)); None: every request it
    /// matches.
    pub tier: Option<Tier>,
    /// Whether the rule caps requests in flight: each request it admits
    /// is given back (settled to cost 0) when its response is done, so the
    /// rule counts the requests under way ([`in_flight`](HttpRule::in_flight)).
    pub in_flight: bool,
}

impl<S, K> HttpRule<S, K> {
    /// A rule named `name` over every request (every path, every method),
    /// keyed by `key`, each request costing 1, decided by `store`; narrow
    /// it with [`HttpRule::path`], [`HttpRule::methods`],
    /// [`HttpRule::path_match`] and [`HttpRule::cost`].
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Rule};
    /// use limits_http::{HttpRule, KeySpec};
    ///
    /// let five_a_second = Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap());
    /// let login = HttpRule::new("login", KeyedLimiter::<String>::new(five_a_second), KeySpec::ip())
    ///     .path("/login")
    ///     .methods([http::Method::POST]);
    /// assert!(login.matches(&http::Method::POST, "/login"));
    /// assert!(!login.matches(&http::Method::GET, "/login"));
    /// assert!(!login.matches(&http::Method::POST, "/"));
    /// ```
    ///
    /// Two rules that share one store (one limit across both) set
    /// [`HttpRule::store`] to clones of one `Arc`.
    pub fn new(name: impl Into<String>, store: S, key: K) -> HttpRule<S, K> {
        HttpRule {
            name: name.into(),
            path_prefix: "/".into(),
            path_match: PathMatch::default(),
            methods: Vec::new(),
            key,
            distinct: None,
            cost: 1,
            count: Counts::default(),
            cost_from: None,
            store: Arc::new(store),
            lists: Lists::default(),
            tier: None,
            in_flight: false,
        }
    }

    /// Only requests under `prefix` (`/api`: `/api` and `/api/items`, not
    /// `/apis`).
    pub fn path(mut self, prefix: impl Into<String>) -> HttpRule<S, K> {
        self.path_prefix = prefix.into();
        self
    }

    /// How the prefix meets a path beyond whole segments ([`PathMatch`]).
    pub fn path_match(mut self, path_match: PathMatch) -> HttpRule<S, K> {
        self.path_match = path_match;
        self
    }

    /// Only requests of these methods (GET also covers HEAD).
    pub fn methods(mut self, methods: impl IntoIterator<Item = Method>) -> HttpRule<S, K> {
        self.methods = methods.into_iter().collect();
        self
    }

    /// Each request costs `cost` (by default 1).
    pub fn cost(mut self, cost: u64) -> HttpRule<S, K> {
        self.cost = cost;
        self
    }

    /// Counts a request only if its response's status is as `count` says;
    /// any other is refunded when the response head arrives ([`Counts`]).
    pub fn count(mut self, count: Counts) -> HttpRule<S, K> {
        self.count = count;
        self
    }

    /// Settles each request to the real cost its response gives
    /// ([`CostFrom`]), counting it at [`cost`](HttpRule::cost) on arrival.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Rule};
    /// use limits_http::{CostFrom, HttpRule, KeySpec};
    ///
    /// // Tokens per minute per API key, 500 estimated, at most 10,000 a request.
    /// let tokens = Rule::new(Algorithm::SlidingLog, "100000/min".parse().unwrap());
    /// let store = KeyedLimiter::<String>::new(tokens);
    /// let llm = HttpRule::new("llm", store, "header:x-api-key".parse::<KeySpec>().unwrap())
    ///     .cost(500)
    ///     .cost_from(CostFrom::header("x-tokens-used", 10_000).unwrap());
    /// assert!(llm.settles());
    /// ```
    pub fn cost_from(mut self, cost_from: CostFrom) -> HttpRule<S, K> {
        self.cost_from = Some(cost_from);
        self
    }

    /// Whether the rule settles its requests after their response (it
    /// counts only some statuses, or reads the real cost from it).
    pub fn settles(&self) -> bool {
        !self.count.is_every_response() || self.cost_from.is_some()
    }

    /// Requests on `lists.allow` pass this rule unlimited; those on
    /// `lists.deny` are refused with 403 ([`Lists`]).
    pub fn lists(mut self, lists: Lists) -> HttpRule<S, K> {
        self.lists = lists;
        self
    }

    /// Decides only the requests in `tier`, the limit of that tier of
    /// several ([`Tiers`](crate::Tiers) has an example).
    pub fn tier(mut self, tier: Tier) -> HttpRule<S, K> {
        self.tier = Some(tier);
        self
    }

    /// Caps the requests in flight rather than those made: each request
    /// the rule admits is given back when it is done (its response body
    /// ended or dropped, or a later rule refused it), so at most the
    /// rule's limit are under way at once per key. Give it a sliding log
    /// of N per lease: while a request is under way its slot is renewed
    /// every half lease ([`Store::renew`](limits::Store::renew)), and the
    /// slots of an instance that died free themselves within one lease of
    /// their last renewal.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Rule};
    /// use limits_http::{HttpRule, KeySpec};
    ///
    /// // At most 10 requests under way per API key; a lease of 2 minutes.
    /// let ten_at_once = Rule::new(Algorithm::SlidingLog, "10/2m".parse().unwrap());
    /// let key: KeySpec = "header:x-api-key".parse().unwrap();
    /// let rule = HttpRule::new("api.in_flight", KeyedLimiter::<String>::new(ten_at_once), key).in_flight();
    /// assert!(rule.in_flight);
    /// ```
    pub fn in_flight(mut self) -> HttpRule<S, K> {
        self.in_flight = true;
        self
    }

    /// Limits the distinct values of `of` per key rather than requests:
    /// each request is decided with its value (a request without one is
    /// refused, 400, as one without a key is), a value the key holds is
    /// free, and a new one takes room for one. Give it a store that
    /// counts distinct values ([`Store::decide_value`](limits::Store::decide_value)).
    ///
    /// ```
    /// use limits::{Distinct, DistinctLimiter};
    /// use limits_http::{HttpRule, KeySpec};
    /// use std::time::Duration;
    ///
    /// // At most 20 usernames tried per client address per hour.
    /// let usernames: DistinctLimiter<String> = DistinctLimiter::new(Distinct::new(20, Duration::from_secs(3600)).unwrap());
    /// let of: KeySpec = "form:username".parse().unwrap();
    /// let login = HttpRule::new("login.usernames", usernames, KeySpec::ip()).path("/login").distinct(of);
    /// assert!(login.reads_body(), "the value is in the form");
    /// ```
    pub fn distinct(mut self, of: K) -> HttpRule<S, K> {
        self.distinct = Some(of);
        self
    }

    /// Whether the rule applies to a request.
    ///
    /// ```
    /// use limits::{Algorithm, KeyedLimiter, Rule};
    /// use limits_http::{HttpRule, KeySpec};
    /// let store = KeyedLimiter::<String>::new(Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap()));
    /// let rule = HttpRule::new("api", store, KeySpec::ip()).path("/api");
    /// assert!(rule.matches(&http::Method::GET, "/api/items"));
    /// assert!(!rule.matches(&http::Method::GET, "/apis"));
    /// ```
    #[inline]
    pub fn matches(&self, method: &Method, path: &str) -> bool {
        self.path_matches(path) && self.method_matches(method)
    }

    #[inline]
    fn method_matches(&self, method: &Method) -> bool {
        self.methods.is_empty()
            || self.methods.contains(method)
            || (*method == Method::HEAD && self.methods.contains(&Method::GET))
    }

    #[inline]
    fn path_matches(&self, path: &str) -> bool {
        let suffixes = self.path_match.format_suffixes;
        if self.path_match.case_insensitive {
            let prefix = fold_case(&self.path_prefix);
            let path = fold_case(path);
            return at_boundary(&prefix, path.strip_prefix(&*prefix), suffixes);
        }
        let prefix = self.path_prefix.as_str();
        at_boundary(prefix, path.strip_prefix(prefix), suffixes)
    }
}

impl<S, K: KeyExtractor> HttpRule<S, K> {
    /// Whether the rule reads the request's body: its key or its value
    /// needs it.
    pub fn reads_body(&self) -> bool {
        self.key.needs_body() || self.distinct.as_ref().is_some_and(K::needs_body)
    }

    /// Whether the rule's key or value is made of the client's address.
    pub fn uses_client_address(&self) -> bool {
        self.key.uses_client_address()
            || (self.distinct.as_ref()).is_some_and(K::uses_client_address)
    }
}

/// Whether what follows the prefix in a path (`None`: the path does not
/// start with it) leaves the prefix whole: nothing, a new segment, or (with
/// `suffixes`) a format suffix.
#[inline]
fn at_boundary(prefix: &str, rest: Option<&str>, suffixes: bool) -> bool {
    match rest {
        Some(rest) => {
            rest.is_empty()
                || prefix.ends_with('/')
                || rest.starts_with('/')
                || (suffixes && rest.starts_with('.'))
        }
        None => false,
    }
}

/// How a rule's path prefix meets a request's path, beyond the default: a
/// prefix of whole segments, compared byte for byte.
///
/// Upstreams differ on both, and a rule must cover every path its upstream
/// routes to the handler it protects:
///
/// ```
/// use limits::{Algorithm, KeyedLimiter, Rule};
/// use limits_http::{HttpRule, KeySpec, PathMatch};
/// let store = KeyedLimiter::<String>::new(Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap()));
/// let rule = HttpRule::new("login", store, KeySpec::ip())
///     .path("/login")
///     .path_match(PathMatch { case_insensitive: true, format_suffixes: true });
/// for path in ["/login", "/LOGIN", "/Login.json", "/login.xml", "/login/x"] {
///     assert!(rule.matches(&http::Method::POST, path), "{path}");
/// }
/// assert!(!rule.matches(&http::Method::POST, "/logins"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PathMatch {
    /// Match without regard to case (Unicode lower case; percent-escapes of
    /// non-ASCII characters read as the characters), as Express, ASP.NET
    /// Core and IIS route: `/login` also covers `/LOGIN` and `/Login`.
    pub case_insensitive: bool,
    /// Also match the prefix followed by a format suffix, `.` and anything
    /// (`/login.json`, `/login.xml`), as Rails routes `/login.FORMAT` to the
    /// action of `/login`.
    pub format_suffixes: bool,
}

/// Which responses a rule's requests count by. A request is decided and
/// counted when it arrives, as every request is, so that nothing in flight
/// can pass the limit; when its response head arrives with a status the
/// rule does not count, the request is refunded in full
/// ([`Store::settle`](limits::Store::settle)). A request that never gets a
/// response (the client went away, the upstream failed) stays counted.
///
/// ```
/// use limits_http::Counts;
/// use http::StatusCode;
///
/// // A login rule: failed attempts count, successful ones do not.
/// let failed = Counts { status: vec![401, 403], unless_status: vec![] };
/// assert!(failed.counts(StatusCode::UNAUTHORIZED));
/// assert!(!failed.counts(StatusCode::OK));
/// // Everything but the server's own errors.
/// let not_5xx = Counts { status: vec![], unless_status: vec![500, 502, 503, 504] };
/// assert!(not_5xx.counts(StatusCode::OK) && !not_5xx.counts(StatusCode::BAD_GATEWAY));
/// assert!(Counts::default().is_every_response());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counts {
    /// Only responses of these statuses count (any, if empty).
    pub status: Vec<u16>,
    /// Responses of these statuses do not count.
    pub unless_status: Vec<u16>,
}

impl Counts {
    /// Whether a response of `status` counts.
    pub fn counts(&self, status: http::StatusCode) -> bool {
        let status = status.as_u16();
        (self.status.is_empty() || self.status.contains(&status))
            && !self.unless_status.contains(&status)
    }

    /// Whether every response counts: nothing to settle.
    pub fn is_every_response(&self) -> bool {
        self.status.is_empty() && self.unless_status.is_empty()
    }
}

/// What to do when a store cannot decide (e.g. Redis is down, or full).
///
/// A store may also decide by itself when its backend cannot (the Redis
/// store's local fallback): then no error reaches the layer, and this
/// policy is what is left for a store that has no such fallback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Let the request through (availability first).
    #[default]
    Allow,
    /// Answer 503 with Retry-After (protection first).
    Deny,
}

/// What happened to a request under one rule, for metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The rule allowed it.
    Allowed,
    /// The rule rejected it with 429.
    Limited,
    /// Dry run: the rule would have rejected it, and let it through.
    WouldLimit,
    /// The store could not decide; the failure policy applied.
    StoreFailed,
    /// The rule's penalty refused it with 429: its key is banned
    /// ([`Verdict::ban`](limits::Verdict::ban)), counted apart from the
    /// rule's own denials.
    Banned,
}

/// Receives every decision, e.g. to count it in metrics.
pub trait Observer: Send + Sync + 'static {
    /// `rule` decided `outcome` in `latency`: a decision its store was
    /// asked for and awaited (one over the network, such as Redis).
    fn decided(&self, rule: &str, outcome: Outcome, latency: Duration);

    /// `rule` decided `outcome` at once: its store answered without waiting
    /// ([`Store::decide_now`](limits::Store::decide_now): an in-memory
    /// store, or a denial a Redis store's deny cache holds). Such a decision is not timed: reading the clock twice would
    /// cost about as much as the decision. By default, [`decided`](Self::decided)
    /// with a zero latency.
    ///
    /// ```
    /// use limits_http::{Observer, Outcome};
    /// use std::time::Duration;
    ///
    /// let observer = |_rule: &str, _outcome: Outcome, latency: Duration| {
    ///     assert_eq!(latency, Duration::ZERO);
    /// };
    /// observer.decided_at_once("api", Outcome::Allowed);
    /// ```
    fn decided_at_once(&self, rule: &str, outcome: Outcome) {
        self.decided(rule, outcome, Duration::ZERO);
    }

    /// A trusted proxy's forwarding header held an entry that is not an
    /// address (`for=unknown`, `_hidden`, garbage), so the request was keyed
    /// by the nearest trusted hop. Called once per such request.
    fn unreadable_client_address(&self) {}

    /// A request was on an allow or deny list: `rule` is the rule it passed
    /// unlimited (an allow list, the layer's or the rule's own), or the rule
    /// whose deny list refused it (`None`: the layer's). Called once per
    /// rule exempted, once per refusal.
    ///
    /// ```
    /// use limits_http::{ListKind, Observer, Outcome};
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::time::Duration;
    ///
    /// struct Exempt(AtomicU64);
    /// impl Observer for Exempt {
    ///     fn decided(&self, _: &str, _: Outcome, _: Duration) {}
    ///     fn listed(&self, list: ListKind, _rule: Option<&str>) {
    ///         if list == ListKind::Allow {
    ///             self.0.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     }
    /// }
    /// let exempt = Exempt(AtomicU64::new(0));
    /// exempt.listed(ListKind::Allow, Some("login"));
    /// assert_eq!(exempt.0.load(Ordering::Relaxed), 1);
    /// ```
    fn listed(&self, list: ListKind, rule: Option<&str>) {
        let _ = (list, rule);
    }

    /// `rule` refused `key` (`outcome` is [`Limited`](Outcome::Limited) or
    /// [`Banned`](Outcome::Banned); [`WouldLimit`](Outcome::WouldLimit) in
    /// a dry run), which may pass again after `retry_after`: what a view
    /// of the most-limited keys reads. Called once per refusal, after the
    /// decision is counted; by default nothing.
    ///
    /// ```
    /// use limits::RetryAfter;
    /// use limits_http::{Observer, Outcome};
    /// use std::sync::Mutex;
    /// use std::time::Duration;
    ///
    /// struct Last(Mutex<Option<String>>);
    /// impl Observer for Last {
    ///     fn decided(&self, _: &str, _: Outcome, _: Duration) {}
    ///     fn refused(&self, rule: &str, key: &str, _: Outcome, _: RetryAfter) {
    ///         *self.0.lock().unwrap() = Some(format!("{rule}: {key}"));
    ///     }
    /// }
    /// let last = Last(Mutex::new(None));
    /// last.refused("login", "ip=203.0.113.7", Outcome::Limited, RetryAfter::Never);
    /// assert_eq!(last.0.lock().unwrap().as_deref(), Some("login: ip=203.0.113.7"));
    /// ```
    fn refused(&self, rule: &str, key: &str, outcome: Outcome, retry_after: limits::RetryAfter) {
        let _ = (rule, key, outcome, retry_after);
    }

    /// The observer of the decisions of the rule named `rule`, asked once
    /// per rule each time a policy is put in force
    /// ([`RateLimitLayer::new`](crate::RateLimitLayer::new),
    /// [`PolicyHandle::replace`](crate::PolicyHandle::replace)): it then
    /// hears that rule's decisions instead of [`decided`](Self::decided)
    /// and [`decided_at_once`](Self::decided_at_once), without the rule's
    /// name to look up per request (a metrics registry resolves the rule's
    /// series once, here). By default `None`: every decision is told to
    /// this observer, with the rule's name.
    ///
    /// Two rules of one name (or one rule across a reload) get an observer
    /// each: count into what the name leads to, not into the observer.
    ///
    /// ```
    /// use limits_http::{Observer, Outcome, RuleObserver};
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use std::sync::Arc;
    /// use std::time::Duration;
    ///
    /// // Counts the limited requests of the rule "api" (and of no other).
    /// struct Limited(Arc<AtomicU64>);
    /// struct ApiLimited(Arc<AtomicU64>);
    /// impl Observer for Limited {
    ///     fn decided(&self, _: &str, _: Outcome, _: Duration) {}
    ///     fn rule_observer(&self, rule: &str) -> Option<Box<dyn RuleObserver>> {
    ///         let count = ApiLimited(self.0.clone());
    ///         (rule == "api").then(|| Box::new(count) as Box<dyn RuleObserver>)
    ///     }
    /// }
    /// impl RuleObserver for ApiLimited {
    ///     fn decided(&self, outcome: Outcome, _: Duration) {
    ///         if outcome == Outcome::Limited {
    ///             self.0.fetch_add(1, Ordering::Relaxed);
    ///         }
    ///     }
    /// }
    ///
    /// let limited = Arc::new(AtomicU64::new(0));
    /// let observer = Limited(limited.clone());
    /// assert!(observer.rule_observer("other").is_none());
    /// let api = observer.rule_observer("api").unwrap();
    /// api.decided_at_once(Outcome::Limited);
    /// assert_eq!(limited.load(Ordering::Relaxed), 1);
    /// ```
    fn rule_observer(&self, rule: &str) -> Option<Box<dyn RuleObserver>> {
        let _ = rule;
        None
    }
}

/// What hears the decisions of one rule, made once per rule and policy by
/// [`Observer::rule_observer`].
pub trait RuleObserver: Send + Sync + 'static {
    /// The rule decided `outcome` in `latency`, a decision awaited from its
    /// store (as [`Observer::decided`]).
    fn decided(&self, outcome: Outcome, latency: Duration);

    /// The rule decided `outcome` at once (as
    /// [`Observer::decided_at_once`]). By default,
    /// [`decided`](Self::decided) with a zero latency.
    fn decided_at_once(&self, outcome: Outcome) {
        self.decided(outcome, Duration::ZERO);
    }
}

/// An observer that ignores everything (as `()` does).
pub struct NoObserver;

impl Observer for NoObserver {
    fn decided(&self, _: &str, _: Outcome, _: Duration) {}
}

/// Ignores everything, as tower-http's callbacks do for `()`.
impl Observer for () {
    fn decided(&self, _: &str, _: Outcome, _: Duration) {}
}

/// A closure hears every decision (and not the unreadable addresses):
///
/// ```
/// use limits_http::{Observer, Outcome};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// let limited = Arc::new(AtomicU64::new(0));
/// let count = limited.clone();
/// // Name the argument types: a closure's signature is not inferred from a trait.
/// let observer = move |_rule: &str, outcome: Outcome, _latency: Duration| {
///     if outcome == Outcome::Limited {
///         count.fetch_add(1, Ordering::Relaxed);
///     }
/// };
/// observer.decided("api", Outcome::Limited, Duration::ZERO);
/// assert_eq!(limited.load(Ordering::Relaxed), 1);
/// ```
impl<F> Observer for F
where
    F: Fn(&str, Outcome, Duration) + Send + Sync + 'static,
{
    fn decided(&self, rule: &str, outcome: Outcome, latency: Duration) {
        self(rule, outcome, latency)
    }
}

/// How the layer behaves, beyond its rules.
#[derive(Clone, Debug)]
pub struct LayerOptions {
    /// Never reject: count and log what would have been rejected, and still
    /// send the headers. (A request a rule cannot key, for want of the client
    /// address, passes unlimited; the error is logged all the same.)
    pub dry_run: bool,
    /// Also send X-RateLimit-Limit, -Remaining and -Reset.
    pub legacy_headers: bool,
    /// Who the client is: the peers whose forwarding header we believe, the
    /// one header read from them, and the IPv6 prefix a client is keyed by.
    pub client_ip: ClientIp,
    /// What to do when a store cannot decide because it is unavailable
    /// ([`StoreErrorKind::Unavailable`](limits::StoreErrorKind::Unavailable)).
    pub on_store_error: FailurePolicy,
    /// What to do when a store answers that it is full
    /// ([`StoreErrorKind::Full`](limits::StoreErrorKind::Full), Redis's
    /// `OOM`); by default [`FailurePolicy::Deny`]: a flood of keys may be
    /// what filled it, and letting everyone through is what the flood wants.
    pub on_store_full: FailurePolicy,
    /// The most body bytes read to find a form or JSON key field; a larger
    /// body on such a rule's route is answered 413.
    pub max_body: usize,
    /// How long a body read for its key field may take to arrive in full;
    /// after it, 408.
    pub body_timeout: Duration,
    /// The memory every body being read for a key may hold at once, across
    /// all connections; a request that would go past it gets 503.
    pub body_budget: BodyBudget,
    /// Lists for every request, before any rule: whom no rule limits, and
    /// whom the layer refuses (403), matched or not by a rule.
    pub lists: Lists,
}

impl Default for LayerOptions {
    fn default() -> LayerOptions {
        LayerOptions {
            dry_run: false,
            legacy_headers: false,
            client_ip: ClientIp::default(),
            on_store_error: FailurePolicy::Allow,
            on_store_full: FailurePolicy::Deny,
            max_body: 16 * 1024,
            body_timeout: Duration::from_secs(10),
            body_budget: BodyBudget::new(DEFAULT_BODY_BUDGET),
            lists: Lists::default(),
        }
    }
}

/// Rules, options and an observer: everything the layer needs. Swapped as a
/// whole on reload.
pub struct Policy<S, K = KeySpec> {
    /// Every rule whose match fits a request applies, in this order.
    pub rules: Vec<HttpRule<S, K>>,
    /// Behaviour beyond the rules.
    pub options: LayerOptions,
    /// Who hears about decisions.
    pub observer: Arc<dyn Observer>,
}

impl<S: Store, K: KeyExtractor> Policy<S, K> {
    /// A policy with default options and no observer.
    pub fn new(rules: Vec<HttpRule<S, K>>) -> Policy<S, K> {
        Policy {
            rules,
            options: LayerOptions::default(),
            observer: Arc::new(NoObserver),
        }
    }
}
