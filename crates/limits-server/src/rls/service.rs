//! `ShouldRateLimit`: each descriptor of a request looked up in the limits
//! in force, then decided on its limit's store, exactly.
//!
//! As the reference service (envoyproxy/ratelimit): a descriptor that
//! matches no limit, or whose domain has no configuration, is OK with no
//! limit; a descriptor's own limit (`limit`) replaces the configured one in
//! a configured domain (the `overrides` module); an `unlimited` one is OK; a
//! limit named in another matched limit's `replaces` is dropped; a
//! shadow-mode limit is decided and counted but reports OK; the overall code
//! is OVER_LIMIT if any enforced descriptor is over. Descriptors are decided
//! independently, as the reference does by default: one that admits takes
//! its hits even when another of the same request is over; with
//! `RlsOptions::all_or_nothing` (the reference's
//! `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true`) it takes nothing then.
//! Either way they are decided together: what
//! Redis decides is sent in one pipeline (one round trip per Redis, per node
//! of a cluster), as the reference pipelines its Redis commands. An empty
//! domain, no descriptors, or `is_negative_hits` (a refund: no limiter here
//! can give hits back exactly) are answered INVALID_ARGUMENT.

use super::config::{Matched, RlsLimit, Unit};
use super::decide::{self, Reported};
use super::limits::RlsLimits;
use super::metrics::{Hits, RlsMetrics};
use super::outage::Outage;
use super::outcome::{self, Decided};
use super::overrides::Override;
use super::proto::rate_limit_response::Code;
use super::proto::rate_limit_service_server::RateLimitService;
use super::proto::{RateLimitDescriptor, RateLimitRequest, RateLimitResponse};
use super::response_headers::ResponseHeaders;
use super::{OnStoreError, RlsOptions};
use crate::RuleStore;
use arc_swap::ArcSwap;
use limits::Store;
use limits::{Mode, RetryAfter, StoreError, StoreErrorKind, Verdict};
use limits_memcached::MemcachedStore;
use limits_redis::{BatchDecision, RedisStore};
use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tonic::{Request, Response, Status};

/// The gRPC service: the limits in force (swapped on reload), what to do
/// when a store fails, and the metrics.
pub struct RlsService {
    pub(crate) limits: Arc<ArcSwap<RlsLimits>>,
    pub(crate) on_store_error: OnStoreError,
    /// What to do when a store answers that it is full.
    pub(crate) on_store_full: OnStoreError,
    pub(crate) metrics: Arc<RlsMetrics>,
    /// Calls being answered: shutdown waits for them, not for idle
    /// connections (a client may hold one open for ever).
    pub(crate) in_flight: Arc<AtomicUsize>,
    /// A store that cannot be reached, logged once per outage.
    pub(crate) unreachable: Outage,
    /// A store that is full, logged once per outage.
    pub(crate) full: Outage,
    /// The header fields answers carry.
    pub(crate) response_headers: ResponseHeaders,
    /// The reference's global switches (shadow and quota modes, dynamic
    /// metadata).
    pub(crate) options: RlsOptions,
    /// How a descriptor's hits are recorded: denied hits too, or not.
    pub(crate) record: Mode,
    /// Held while an all-or-nothing request decides in memory, from its
    /// looks to its records.
    pub(crate) memory_requests: Mutex<()>,
}

/// Counts a call in flight while it lives.
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn new(count: &Arc<AtomicUsize>) -> InFlight {
        count.fetch_add(1, Ordering::SeqCst);
        InFlight(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[tonic::async_trait]
impl RateLimitService for RlsService {
    async fn should_rate_limit(
        &self,
        request: Request<RateLimitRequest>,
    ) -> Result<Response<RateLimitResponse>, Status> {
        let _in_flight = InFlight::new(&self.in_flight);
        let request = request.into_inner();
        if let Some(problem) = problem(&request) {
            return Err(Status::invalid_argument(problem));
        }
        let limits = self.limits.load_full();
        let overrides =
            overrides(&limits, &request).map_err(|(code, why)| Status::new(code, why))?;
        let matched = lookup(&limits, &request, &overrides);
        self.decide_all(&limits, &request, &matched, &overrides)
            .await
            .map(Response::new)
    }
}

/// Each descriptor's own limit (`RateLimitDescriptor.limit`), when it has
/// one and its domain has a configuration (see the `overrides` module);
/// or the gRPC code and message of why one cannot apply.
fn overrides(
    limits: &RlsLimits,
    request: &RateLimitRequest,
) -> Result<Vec<Option<Arc<Override>>>, (tonic::Code, String)> {
    let algorithm = limits.config.domain_algorithm(&request.domain);
    let mut found = Vec::with_capacity(request.descriptors.len());
    for (i, descriptor) in request.descriptors.iter().enumerate() {
        let (Some(own), Some(algorithm)) = (&descriptor.limit, algorithm) else {
            found.push(None);
            continue;
        };
        let unit = Unit::ALL
            .into_iter()
            .find(|u| *u as i32 == own.unit)
            .ok_or_else(|| {
                let why = format!(
                    "descriptor {i}: limit override: unit {} is none of the protocol's units",
                    own.unit
                );
                (tonic::Code::InvalidArgument, why)
            })?;
        let made = limits
            .overrides
            .get(&request.domain, algorithm, own.requests_per_unit, unit)
            .map_err(|e| {
                (
                    tonic::Code::ResourceExhausted,
                    format!("descriptor {i}: {e}"),
                )
            })?;
        found.push(Some(made));
    }
    Ok(found)
}

/// The request's problem that no configuration can answer, if any.
fn problem(request: &RateLimitRequest) -> Option<String> {
    if request.domain.is_empty() {
        return Some("rate limit domain must not be empty".into());
    }
    if request.descriptors.is_empty() {
        return Some("rate limit descriptor list must not be empty".into());
    }
    let refund = request
        .descriptors
        .iter()
        .position(|d| d.is_negative_hits)?;
    Some(format!(
        "descriptor {refund}: is_negative_hits (a refund) is not supported: no limiter of \
         limits can give hits back exactly"
    ))
}

/// Each descriptor's matched limit (its own limit, when it has one),
/// without those another matched limit replaces.
fn lookup<'a>(
    limits: &'a RlsLimits,
    request: &RateLimitRequest,
    overrides: &'a [Option<Arc<Override>>],
) -> Vec<Option<Matched<'a>>> {
    let mut matched: Vec<Option<Matched<'a>>> = request
        .descriptors
        .iter()
        .zip(overrides)
        .map(|(d, own)| {
            let entries: Vec<(&str, &str)> = d
                .entries
                .iter()
                .map(|e| (e.key.as_str(), e.value.as_str()))
                .collect();
            match own {
                Some(own) => limits
                    .config
                    .lookup_override(&request.domain, &entries, &own.limit),
                None => limits.config.lookup(&request.domain, &entries),
            }
        })
        .collect();
    let replaced: HashSet<&str> = matched
        .iter()
        .flatten()
        .flat_map(|m| m.limit.replaces.iter().map(String::as_str))
        .collect();
    for slot in &mut matched {
        if slot
            .as_ref()
            .and_then(|m| m.limit.name.as_deref())
            .is_some_and(|name| replaced.contains(name))
        {
            *slot = None;
        }
    }
    matched
}

/// The client address of a descriptor, when Envoy's `remote_address`
/// action put one in it: what the Redis store's cap on new keys per client
/// counts by (the gRPC peer is Envoy, not the client).
fn client_address(descriptor: &RateLimitDescriptor) -> Option<IpAddr> {
    let entry = descriptor
        .entries
        .iter()
        .find(|e| e.key == "remote_address")?;
    entry.value.parse().ok()
}

fn reported(limit: &RlsLimit) -> Reported {
    Reported {
        requests_per_unit: limit.reported.requests_per_unit,
        unit: limit.reported.unit as i32,
        name: limit.name.clone().unwrap_or_default(),
    }
}

/// The store that decides a descriptor's limit, if one does: not for a
/// descriptor matching no limit, a blocked limit (`requests_per_unit: 0`,
/// over without asking) or one without a rule (`unlimited`).
fn deciding_store<'a>(
    limits: &'a RlsLimits,
    found: Option<&Matched<'_>>,
    own: Option<&'a Arc<Override>>,
) -> Option<&'a RuleStore> {
    let limit = found?.limit;
    if limit.blocked || limit.rule.is_none() {
        return None;
    }
    let store = match own {
        Some(own) => own.store.as_ref(),
        None => limits.store(limit),
    };
    store.map(Arc::as_ref)
}

/// A descriptor that a limiter in memory decides: its place in the
/// request, and what the limiter is asked.
struct InMemory<'a> {
    index: usize,
    /// A store in this process, which decides at once.
    store: &'a RuleStore,
    key: &'a str,
    cost: u64,
    mode: Mode,
}

impl InMemory<'_> {
    /// Decided at once, in `mode`, with how long it took.
    fn decide(&self, mode: Mode) -> (Result<Verdict, StoreError>, Duration) {
        let started = Instant::now();
        let verdict = self.store.decide_now(self.key, self.cost, mode);
        let verdict =
            verdict.unwrap_or_else(|| Err(StoreError::new("a local store did not decide at once")));
        (verdict, started.elapsed())
    }
}

/// A descriptor memcached decides: a read and a write, waited for.
struct InMemcached<'a> {
    index: usize,
    store: &'a MemcachedStore,
    client: Option<IpAddr>,
    key: &'a str,
    cost: u64,
    mode: Mode,
}

impl InMemcached<'_> {
    /// Decided in `mode`, with how long it took.
    async fn decide(&self, mode: Mode) -> (Result<Verdict, StoreError>, Duration) {
        let started = Instant::now();
        let answer = self
            .store
            .decide_from(self.client, self.key, self.cost, mode)
            .await;
        (answer, started.elapsed())
    }
}

fn admitted(answer: &Result<Verdict, StoreError>) -> bool {
    matches!(answer, Ok(verdict) if verdict.decision.allowed)
}

impl RlsService {
    /// Decides every descriptor that a store decides, at its cost and in
    /// its mode (`costs`), with how long its decision took; `None` for the
    /// others. Each is decided on its own, as when one follows another, but
    /// not waiting for each in turn: what memory (or a Redis store's local
    /// answers) decides is decided at once, without a future, memcached's
    /// descriptors one after another (a read and a write each), and
    /// everything Redis must decide is sent in one batch, one round trip
    /// per Redis (per node of a cluster). With
    /// [`all_or_nothing`](RlsOptions::all_or_nothing), the descriptors
    /// record only if every one admits (a blocked limit admits none).
    async fn decide_stores(
        &self,
        limits: &RlsLimits,
        request: &RateLimitRequest,
        matched: &[Option<Matched<'_>>],
        overrides: &[Option<Arc<Override>>],
        costs: &[(u64, Mode)],
    ) -> Vec<Option<(Result<Verdict, StoreError>, Duration)>> {
        let all_or_nothing = self.options.all_or_nothing;
        // A blocked limit is over without asking: what admits records nothing.
        let refused = all_or_nothing && matched.iter().flatten().any(|m| m.limit.blocked);
        let mut decided: Vec<Option<(Result<Verdict, StoreError>, Duration)>> =
            std::iter::repeat_with(|| None)
                .take(request.descriptors.len())
                .collect();
        // Each descriptor Redis decides, and its place in the request.
        let (mut in_redis, mut redis_places) = (Vec::new(), Vec::new());
        let (mut in_memcached, mut in_memory) = (Vec::new(), Vec::new());
        for (index, ((descriptor, found), own)) in request
            .descriptors
            .iter()
            .zip(matched)
            .zip(overrides)
            .enumerate()
        {
            let (Some(found), Some(store)) =
                (found, deciding_store(limits, found.as_ref(), own.as_ref()))
            else {
                continue;
            };
            let (cost, mode) = costs[index];
            let key = found.key.as_str();
            match store {
                RuleStore::Redis(store) => {
                    let client = client_address(descriptor);
                    in_redis.push(BatchDecision {
                        store,
                        client,
                        key,
                        cost,
                        value: None,
                        mode,
                    });
                    redis_places.push(index);
                }
                RuleStore::Memcached(store) => in_memcached.push(InMemcached {
                    index,
                    store,
                    client: client_address(descriptor),
                    key,
                    cost,
                    mode,
                }),
                RuleStore::Memory(_)
                | RuleStore::Sketch(_)
                | RuleStore::Distinct(_)
                | RuleStore::RedisDistinct(_)
                | RuleStore::MemcachedDistinct(_) => in_memory.push(InMemory {
                    index,
                    store,
                    key,
                    cost,
                    mode,
                }),
            }
        }
        let mut refused = refused;
        // Memcached records one key at a time: all or nothing, its
        // descriptors look first and record after every store has looked,
        // which another call's decisions may come between.
        let mut memcached_looks = Vec::new();
        if all_or_nothing {
            for asked in &in_memcached {
                memcached_looks.push(asked.decide(Mode::Peek).await);
            }
            refused |= !memcached_looks.iter().all(|(answer, _)| admitted(answer));
        }
        if all_or_nothing {
            // One all-or-nothing request at a time: no other call's
            // decision comes between this one's looks and its records.
            let _one_request = self
                .memory_requests
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let looked: Vec<_> = in_memory.iter().map(|a| a.decide(Mode::Peek)).collect();
            refused |= !looked.iter().all(|(answer, _)| admitted(answer));
            let every_one = !refused;
            for (asked, (looked, looking)) in in_memory.iter().zip(looked) {
                // Its time is its look's and, if it records, its record's.
                let answer = match asked.mode.decides_after_looks(every_one, admitted(&looked)) {
                    true => {
                        let (answer, recording) = asked.decide(asked.mode);
                        (answer, looking + recording)
                    }
                    false => (looked, looking),
                };
                decided[asked.index] = Some(answer);
            }
        } else {
            for asked in &in_memory {
                decided[asked.index] = Some(asked.decide(asked.mode));
            }
        }
        let every_one = !refused;
        let mut memcached_looks = memcached_looks.into_iter();
        for asked in &in_memcached {
            let answer = match memcached_looks.next() {
                Some((looked, looking))
                    if !asked.mode.decides_after_looks(every_one, admitted(&looked)) =>
                {
                    (looked, looking)
                }
                Some((_, looking)) => {
                    let (answer, recording) = asked.decide(asked.mode).await;
                    (answer, looking + recording)
                }
                None => asked.decide(asked.mode).await,
            };
            decided[asked.index] = Some(answer);
        }
        if in_redis.is_empty() {
            return decided;
        }
        let sent = Instant::now();
        let answers = match all_or_nothing {
            true => RedisStore::decide_all_or_nothing(&in_redis, refused).await,
            false => RedisStore::decide_batch(&in_redis).await,
        };
        let took = sent.elapsed();
        for (index, answer) in redis_places.into_iter().zip(answers) {
            decided[index] = Some((answer, took));
        }
        decided
    }

    async fn decide_all(
        &self,
        limits: &RlsLimits,
        request: &RateLimitRequest,
        matched: &[Option<Matched<'_>>],
        overrides: &[Option<Arc<Override>>],
    ) -> Result<RateLimitResponse, Status> {
        let mut response = RateLimitResponse {
            overall_code: Code::Ok as i32,
            ..RateLimitResponse::default()
        };
        let mut header_statuses = Vec::new();
        let mut denied: Option<RetryAfter> = None;
        // Whether this call was counted in an outage (unreachable, full).
        let mut counted = (false, false);
        let costs: Vec<(u64, Mode)> = request
            .descriptors
            .iter()
            .map(|d| decide::cost(request.hits_addend, d, self.record))
            .collect();
        let mut decided = self
            .decide_stores(limits, request, matched, overrides, &costs)
            .await;
        for ((found, decided), &(cost, _)) in matched.iter().zip(&mut decided).zip(&costs) {
            let Some(found) = found else {
                response.statuses.push(decide::ok(0));
                continue;
            };
            let (limit, label) = (found.limit, self.metrics.label(found));
            if limit.blocked {
                // `requests_per_unit: 0`: every request over, as the reference.
                let hits = Hits {
                    total: cost,
                    over: cost,
                    shadow: if limit.shadow_mode { cost } else { 0 },
                    ..Hits::default()
                };
                self.metrics
                    .decided(&label, hits, std::time::Duration::ZERO);
                if limit.shadow_mode {
                    response.statuses.push(decide::ok(0));
                } else {
                    response
                        .statuses
                        .push(decide::over_without_time(&reported(limit)));
                    response.overall_code = Code::OverLimit as i32;
                    denied = Some(RetryAfter::Never);
                    self.metrics
                        .refused(&limit.id, &found.key, RetryAfter::Never);
                }
                continue;
            }
            // Decided before this loop, all at once (`decide_stores`): none
            // when no store decides this limit.
            let (Some(rule), Some((decision, took))) = (&limit.rule, decided.take()) else {
                response.statuses.push(decide::ok(u32::MAX));
                continue;
            };
            let verdict = match decision {
                Ok(v) => v,
                Err(e) => {
                    self.metrics.store_failed(&label, took);
                    // A full store has its own policy: it is up, and a
                    // flood of keys may be what filled it.
                    let (policy, outage, counted) = match e.kind {
                        StoreErrorKind::Full => (self.on_store_full, &self.full, &mut counted.1),
                        _ => (self.on_store_error, &self.unreachable, &mut counted.0),
                    };
                    // Logged once per outage, not per call (each descriptor
                    // is counted in the metrics); the outage counts calls.
                    if !std::mem::replace(counted, true) {
                        outage.failed(&limit.id, &e, policy.name());
                    }
                    tracing::debug!(limit = %limit.id, error = %e, "store error");
                    match policy {
                        OnStoreError::Unavailable => {
                            return Err(Status::unavailable(format!(
                                "the store of limit {} cannot decide: {e}",
                                limit.id
                            )))
                        }
                        OnStoreError::Allow => response.statuses.push(decide::ok(0)),
                        OnStoreError::Deny if limit.shadow_mode => {
                            response.statuses.push(decide::ok(0))
                        }
                        OnStoreError::Deny => {
                            response
                                .statuses
                                .push(decide::over_without_time(&reported(limit)));
                            response.overall_code = Code::OverLimit as i32;
                        }
                    }
                    continue;
                }
            };
            self.unreachable.decided();
            self.full.decided();
            let allowed = verdict.decision.allowed;
            let over = !allowed && !limit.shadow_mode;
            let (over_hits, near_hits) = if allowed {
                (0, decide::near_limit_hits(rule, &verdict, cost))
            } else {
                decide::denied_hits(rule, &verdict, cost)
            };
            let hits = Hits {
                total: cost,
                over: over_hits,
                near: near_hits,
                within: if allowed { cost } else { 0 },
                shadow: if limit.shadow_mode { over_hits } else { 0 },
            };
            self.metrics.decided(&label, hits, took);
            response
                .statuses
                .push(decide::status(&reported(limit), rule, &verdict, over));
            if limit.shadow_mode {
                continue;
            }
            header_statuses.push(decide::rule_status(
                limit.name.as_deref().unwrap_or(&limit.id),
                rule,
                &verdict,
            ));
            if over {
                response.overall_code = Code::OverLimit as i32;
                let wait = verdict.decision.retry_after;
                self.metrics.refused(&limit.id, &found.key, wait);
                denied = Some(denied.map_or(wait, |d| d.max(wait)));
            }
        }
        // The request's verdict from its descriptors' (quota mode, global
        // shadow mode), and what it carries beside them.
        let decided: Vec<Decided<'_>> = request
            .descriptors
            .iter()
            .zip(&response.statuses)
            .zip(matched)
            .map(|((descriptor, status), found)| Decided {
                descriptor,
                status,
                limit: found.as_ref().map(|m| m.limit),
            })
            .collect();
        let overall = outcome::overall(&decided, self.options.global_quota);
        let soft = outcome::soft_breach(&decided, overall.over);
        let metadata = self
            .options
            .response_dynamic_metadata
            .then(|| outcome::dynamic_metadata(request, &decided, &overall));
        drop(decided);
        let over = overall.over && !self.options.global_shadow;
        if overall.over && self.options.global_shadow {
            self.metrics.global_shadow();
        }
        response.overall_code = if over { Code::OverLimit } else { Code::Ok } as i32;
        response.request_headers_to_add.extend(soft);
        response.dynamic_metadata = metadata;
        let denied = denied.filter(|_| over);
        if self.response_headers.draft {
            response.response_headers_to_add = decide::header_fields(&header_statuses, denied);
        }
        if let Some(names) = &self.response_headers.reference {
            let fields = names.fields(&response.statuses);
            response.response_headers_to_add.extend(fields);
        }
        Ok(response)
    }
}
