//! The `limits rls` server: the gRPC listener of the rate limit service
//! (and the standard gRPC health service), with what `limits serve` runs
//! beside its own listener: the admin endpoint (`/metrics`, `/healthz`), a
//! sweep of idle keys every second, reload on SIGHUP and on change (the
//! `watch` module) keeping the counts of unchanged limits, a graceful
//! drain on shutdown, and the counts saved (`--state`) once drained.
//!
//! It reports to its owner as it listens, opens the admin port, reloads
//! and stops ([`ServerEvent`]s, through [`RlsServer::on_event`]); the
//! `limits rls` command prints a line for each, which scripts and tests
//! read.

use super::capped_incoming::CappedIncoming;
use super::fingerprint::Fingerprint;
use super::limits::RlsLimits;
use super::metrics::RlsMetrics;
use super::outage::Outage;
use super::proto::rate_limit_service_server::RateLimitServiceServer;
use super::reloader::RlsReloader;
use super::service::RlsService;
use super::watch::watch_changes;
use super::RlsServerConfig;
use crate::admin::{self, PageData, RuleRow};
use crate::events::{Events, ServerEvent};
use crate::listener::Bounds;
use crate::rules::limiter_shape;
use crate::state;
use crate::tasks::{self, Sample};
use arc_swap::ArcSwap;
use limits::Store;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic_health::ServingStatus;

/// The gRPC health service name envoyproxy/ratelimit serves its health
/// under, served here too beside the overall ("") and the protocol's own.
const REFERENCE_HEALTH_NAME: &str = "ratelimit";

/// A rate limit service ready to run: its configuration read and its
/// stores built, not yet listening.
///
/// ```no_run
/// use limits_server::rls::{RlsServer, RlsServerConfig};
///
/// # async fn run() -> Result<(), String> {
/// let config = RlsServerConfig::new("ratelimit/config".into());
/// RlsServer::new(config)?.serve(limits_server::shutdown_signal()).await
/// # }
/// ```
pub struct RlsServer {
    config: RlsServerConfig,
    limits: Arc<ArcSwap<RlsLimits>>,
    metrics: Arc<RlsMetrics>,
    loaded: Arc<Mutex<Fingerprint>>,
    events: Arc<Events>,
    /// Whether health answers SERVING: always, unless
    /// `healthy_with_at_least_one_config` makes it wait for a domain.
    healthy: Arc<watch::Sender<bool>>,
}

impl RlsServer {
    /// Reads the configuration and builds one store per limit; with a state
    /// file, checks that it can be written and loads it. Errors name the
    /// file and line (`FILE:LINE: what is wrong`) or the flag (`--state
    /// FILE: ...`).
    pub fn new(config: RlsServerConfig) -> Result<RlsServer, String> {
        // Taken before reading: a change while reading is seen by the watch.
        let loaded = Fingerprint::of(&config.config);
        let limits = RlsLimits::load(&config.config, &config.options, &config.stores)?;
        let healthy = limits.healthy_under(&config.options);
        if let Some(path) = &config.state {
            state::check_writable(path)?;
            let n = state::load(path, limits.state_entries())?;
            tracing::info!(keys = n, file = %path.display(), "state loaded");
        }
        let metrics = Arc::new(RlsMetrics::with_series_cap(config.max_metric_series));
        Ok(RlsServer {
            config,
            limits: Arc::new(ArcSwap::from_pointee(limits)),
            metrics,
            loaded: Arc::new(Mutex::new(loaded)),
            events: Arc::default(),
            healthy: Arc::new(watch::Sender::new(healthy)),
        })
    }

    /// Hands what the server does (listening, admin address, reloads, stop)
    /// to `handler`, which decides what to show; without one, the events
    /// are only logged.
    ///
    /// ```no_run
    /// use limits_server::rls::{RlsServer, RlsServerConfig};
    /// use limits_server::ServerEvent;
    ///
    /// # async fn run() -> Result<(), String> {
    /// let config = RlsServerConfig::new("ratelimit/config".into());
    /// let server = RlsServer::new(config)?.on_event(|event| {
    ///     if let ServerEvent::RlsListening { local, .. } = event {
    ///         eprintln!("rate limit service on {local}");
    ///     }
    /// });
    /// server.serve(limits_server::shutdown_signal()).await
    /// # }
    /// ```
    pub fn on_event(self, handler: impl Fn(&ServerEvent) + Send + Sync + 'static) -> RlsServer {
        self.events.set(Arc::new(handler));
        self
    }

    /// What reloads this server's configuration.
    pub fn reloader(&self) -> RlsReloader {
        RlsReloader {
            config: self.config.clone(),
            limits: self.limits.clone(),
            loaded: self.loaded.clone(),
            events: self.events.clone(),
            healthy: self.healthy.clone(),
        }
    }

    /// Listens on the configured address and serves until `shutdown`
    /// completes; see [`serve_on`](Self::serve_on).
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), String> {
        let addr = self.config.listen;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| format!("--listen {addr}: {e}"))?;
        self.serve_on(listener, shutdown).await
    }

    /// Serves the rate limit service on `listener` until `shutdown`
    /// completes, then lets calls in flight finish (up to the drain
    /// timeout) and saves the state, if asked for. Meanwhile: the admin
    /// endpoint if configured, the sweep, and reloads on SIGHUP and on
    /// change if asked for; all stop with it.
    pub async fn serve_on(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), String> {
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        let mut background = Vec::new();
        if let Some(addr) = self.config.admin {
            background.push(self.start_admin(addr).await?);
        }
        let limits = self.limits.clone();
        background.push(tasks::sweep_every_second(move || {
            limits.load().sweep();
        }));
        background.extend(tasks::measure_clock_offsets(&self.config.stores));
        if self.config.reload_on_hangup {
            let reloader = self.reloader();
            background.extend(tasks::on_hangup(move || {
                // The outcome is logged and reported by `reload` itself.
                let _ = reloader.reload();
            }));
        }
        if !self.config.watch_interval.is_zero() {
            let path = self.config.config.clone();
            let every = self.config.watch_interval;
            background.push(watch_changes(self.reloader(), path, every));
        }
        let in_flight = Arc::new(AtomicUsize::new(0));
        let service = RlsService {
            limits: self.limits.clone(),
            on_store_error: self.config.on_store_error,
            on_store_full: self.config.on_store_full,
            metrics: self.metrics.clone(),
            in_flight: in_flight.clone(),
            unreachable: Outage::new("unreachable", "--on-store-error"),
            full: Outage::new("full", "--on-store-full"),
            response_headers: self.config.response_headers.clone(),
            options: self.config.options.clone(),
            record: super::count_denied::record_mode(self.config.options.count_denied_hits),
            memory_requests: std::sync::Mutex::new(()),
        };
        let (health_reporter, health) = tonic_health::server::health_reporter();
        let mut healthy = self.healthy.subscribe();
        let serving = *healthy.borrow_and_update();
        report_health(&health_reporter, serving).await;
        background.push(tokio::spawn(async move {
            // In the order the reloads decided it, so the last word wins.
            while healthy.changed().await.is_ok() {
                let serving = *healthy.borrow_and_update();
                report_health(&health_reporter, serving).await;
            }
        }));
        let count = self.limits.load().config.limits().count();
        self.events.emit(ServerEvent::RlsListening {
            local,
            limits: count,
        });
        tracing::info!(%local, limits = count, "listening");

        // The gRPC listener's caps: Envoy's connections arrive from its own
        // addresses, none forwarded.
        let caps = self.metrics.connections.caps(
            "grpc",
            self.config.max_connections,
            self.config.max_connections_per_client,
            limits_http::ClientIp::default(),
        );
        let (stopping, stopped) = tokio::sync::oneshot::channel::<()>();
        let signal = async move {
            shutdown.await;
            tracing::info!("shutting down: no new calls; finishing calls in flight");
            let _ = stopping.send(());
        };
        let serving = tonic::transport::Server::builder()
            .add_service(health)
            .add_service(RateLimitServiceServer::new(service))
            .serve_with_incoming_shutdown(CappedIncoming::new(listener, caps), signal);
        // Once stopping, the calls in flight are waited for (up to the drain
        // timeout), not the connections: tonic would wait for every client to
        // close its idle connection, which Envoy keeps open.
        let drain = self.config.drain_timeout;
        let drained = async move {
            if stopped.await.is_err() {
                std::future::pending::<()>().await;
            }
            let until = tokio::time::Instant::now() + drain;
            while in_flight.load(Ordering::SeqCst) > 0 {
                if tokio::time::Instant::now() >= until {
                    tracing::warn!(timeout = ?drain, "calls still in flight after the drain timeout");
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        let result = tokio::select! {
            r = serving => r.map_err(|e| format!("the gRPC server failed: {e}")),
            () = drained => Ok(()),
        };
        for task in background {
            task.abort();
        }
        // After the drain: the counts of the calls answered are in the file.
        let saved = match &self.config.state {
            Some(path) => state::save(path, self.limits.load().state_entries()).map(|n| {
                tracing::info!(keys = n, file = %path.display(), "state saved");
            }),
            None => Ok(()),
        };
        self.events.emit(ServerEvent::Stopped);
        result?;
        saved.map_err(|e| format!("state not saved: {e}"))
    }

    /// Binds the admin endpoint and serves it until aborted.
    async fn start_admin(&self, addr: std::net::SocketAddr) -> Result<JoinHandle<()>, String> {
        let (limits, metrics, stores) = (
            self.limits.clone(),
            self.metrics.clone(),
            self.config.stores.clone(),
        );
        let render = Arc::new(move || metrics.render(&limits.load(), &stores));
        let connections = &self.metrics.connections;
        tasks::serve_admin(
            addr,
            render,
            self.config.stores.clone(),
            Bounds::default(),
            connections,
            &self.events,
            self.page(),
        )
        .await
    }

    /// The live page's data and its sampler: each limit with a store, as
    /// `--check-config` would name it, its hits admitted and over.
    fn page(&self) -> (PageData, Sample) {
        let (limits, metrics, stores) = (
            self.limits.clone(),
            self.metrics.clone(),
            self.config.stores.clone(),
        );
        let answer = self.config.on_store_error.name();
        let data: PageData = Arc::new(move || {
            let limits = limits.load();
            let rows = limits.stores().map(|(id, store)| RuleRow {
                name: id.to_string(),
                description: format!(
                    "{id}: {}, in {}",
                    limiter_shape(store.rule()),
                    store.place()
                ),
                totals: metrics.totals(id),
                size: store.local().map(|l| (l.len(), l.evictions())),
            });
            let count = limits.stores().count();
            let store = admin::store_view(&stores, answer);
            let snapshot =
                admin::snapshot(rows, count, &metrics.page, store, false, Instant::now());
            admin::to_json(&snapshot)
        });
        let (limits, metrics) = (self.limits.clone(), self.metrics.clone());
        let sample: Sample = Arc::new(move || {
            let limits = limits.load();
            let totals = limits
                .stores()
                .map(|(id, _)| (id.to_string(), metrics.totals(id)));
            metrics.page.history.sample(totals);
        });
        (data, sample)
    }
}

/// Reports `serving` under every name health is asked under: the whole
/// server, the protocol's service, and the name envoyproxy/ratelimit
/// registers (health checks written for it, Envoy's grpc_health_check and
/// Kubernetes' grpc probe, ask it).
async fn report_health(reporter: &tonic_health::server::HealthReporter, serving: bool) {
    let status = if serving {
        ServingStatus::Serving
    } else {
        ServingStatus::NotServing
    };
    for name in [
        "",
        <RateLimitServiceServer<RlsService> as tonic::server::NamedService>::NAME,
        REFERENCE_HEALTH_NAME,
    ] {
        reporter.set_service_status(name, status).await;
    }
}

impl std::fmt::Debug for RlsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RlsServer")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
