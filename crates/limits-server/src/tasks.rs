//! What runs beside the listener: the admin endpoint, the sweeper, the
//! reload on SIGHUP; and the signals that end a server owning its process.

use crate::admin::{self, PageData, RulesError};
use crate::events::{Events, ServerEvent};
use crate::listener::connection_caps::{
    ConnectionMetrics, ADMIN_MAX_CONNECTIONS, ADMIN_MAX_CONNECTIONS_PER_CLIENT,
};
use crate::listener::{self, Bounds};
use crate::proxy::Proxy;
use crate::shared::Shared;
use crate::store::StoreOptions;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Binds the admin endpoint (`/metrics`, `/healthz`, `/readyz`) of
/// `limits serve`,
/// with the main listener's bounds but caps of its own (a client that
/// half-sends requests to the admin port holds nothing for long, and a full
/// main listener leaves the admin listener its connections), tells the
/// owner where ([`ServerEvent::Admin`]), and serves it until aborted.
pub(crate) async fn start_admin(
    addr: SocketAddr,
    shared: Arc<Shared>,
    proxy: Option<Proxy>,
    bounds: Bounds,
) -> Result<JoinHandle<()>, String> {
    let stores = shared.config.stores.clone();
    let connections = shared.metrics.connections.clone();
    let events = shared.clone();
    let rules = shared.clone();
    let rules_error: RulesError = Arc::new(move || rules.rules_error());
    let page = {
        let read = shared.clone();
        let data: PageData = Arc::new(move || {
            let policy = read.handle.current();
            let (config, metrics) = (&read.config, &read.metrics);
            let rows = admin::serve_rows(&policy.rules, metrics);
            let store = admin::store_view(&config.stores, admin::layer_answer(&config.layer));
            let (records, now) = (&metrics.dashboard, std::time::Instant::now());
            let count = policy.rules.len();
            let snapshot = admin::snapshot(rows, count, records, store, config.layer.dry_run, now);
            admin::to_json(&snapshot)
        });
        let sampled = shared.clone();
        let sample: Sample = Arc::new(move || {
            let policy = sampled.handle.current();
            let metrics = &sampled.metrics;
            let totals = policy
                .rules
                .iter()
                .map(|r| (r.name.clone(), metrics.totals(&r.name)));
            metrics.dashboard.history.sample(totals);
        });
        (data, sample)
    };
    let render = Arc::new(move || {
        let upstream = proxy.as_ref().map(Proxy::errors);
        let policy = shared.handle.current();
        shared
            .metrics
            .render(&policy.rules, upstream, &shared.config.stores)
    });
    let (task, local) = bind_admin(
        addr,
        render,
        stores,
        rules_error,
        bounds,
        &connections,
        page,
    )
    .await?;
    events.events.emit(ServerEvent::Admin { local });
    Ok(task)
}

/// Binds an admin endpoint for `limits rls` on `addr`, with its live page
/// (`page`), and serves it as [`bind_admin`] does; the address bound is
/// reported as an event.
pub(crate) async fn serve_admin(
    addr: SocketAddr,
    render: Arc<dyn Fn() -> String + Send + Sync>,
    stores: StoreOptions,
    bounds: Bounds,
    connections: &ConnectionMetrics,
    events: &Events,
    page: (PageData, Sample),
) -> Result<JoinHandle<()>, String> {
    // Its rules are reloaded by its own watcher, which keeps the last good
    // ones: readiness follows its store.
    let rules_error: RulesError = Arc::new(|| None);
    let (task, local) =
        bind_admin(addr, render, stores, rules_error, bounds, connections, page).await?;
    events.emit(ServerEvent::Admin { local });
    Ok(task)
}

/// Called once a second while the admin endpoint serves: the live page's
/// per-second records.
pub(crate) type Sample = Arc<dyn Fn() + Send + Sync>;

/// Binds an admin endpoint on `addr` and serves `render` on `/metrics`
/// (with `/healthz`, `/readyz` from `stores` and `rules_error`, and the
/// live page with its data, sampled every second) until the task is
/// aborted; its connections are capped
/// by the admin listener's own caps (counted in `connections` as
/// `listener="admin"`), whatever the main listener holds. The task and the
/// address bound.
async fn bind_admin(
    addr: SocketAddr,
    render: Arc<dyn Fn() -> String + Send + Sync>,
    stores: StoreOptions,
    rules_error: RulesError,
    bounds: Bounds,
    connections: &ConnectionMetrics,
    (data, sample): (PageData, Sample),
) -> Result<(JoinHandle<()>, SocketAddr), String> {
    let admin = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--admin {addr}: {e}"))?;
    let local = admin.local_addr().map_err(|e| e.to_string())?;
    let router = admin::admin_router(render, stores, rules_error, data);
    // Per address, not per forwarded client: a proxy in front of the admin
    // port is not expected, and its peers are capped by the total anyway.
    let caps = connections.caps(
        "admin",
        ADMIN_MAX_CONNECTIONS,
        ADMIN_MAX_CONNECTIONS_PER_CLIENT,
        limits_http::ClientIp::default(),
    );
    // No admin endpoint reads the client's address.
    let serve = listener::serve(
        admin,
        move |_peer| router.clone(),
        bounds,
        caps,
        std::future::pending(),
    );
    // In the same task, so that aborting it stops both.
    let sampler = async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            sample();
        }
    };
    let task = tokio::spawn(async move {
        tokio::select! {
            () = serve => {}
            () = sampler => {}
        }
    });
    Ok((task, local))
}

/// Calls `sweep` every second from now on, so memory follows the active
/// clients even when no traffic comes to sweep idle keys away.
pub(crate) fn sweep_every_second(sweep: impl Fn() + Send + 'static) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tick.tick().await;
            sweep();
        }
    })
}

/// Measures this instance's clock offset from the others on the memcached
/// store from now on, as often as its options say
/// ([`limits_memcached::MemcachedOptions::clock_check_every`]), if there is
/// one, for the metrics and `/healthz` to read
/// ([`limits_memcached::MemcachedClient::measure_clock_offset`]). A
/// measurement that fails is logged once per streak of failures, unless
/// memcached is out: the store's outage has its own log line.
pub(crate) fn measure_clock_offsets(stores: &StoreOptions) -> Option<JoinHandle<()>> {
    let client = stores.memcached.clone()?;
    let every = client.options().clock_check_every?;
    Some(tokio::spawn(async move {
        let clock = limits::SystemClock::new();
        let mut failing = false;
        loop {
            match client.measure_clock_offset(&clock, every).await {
                Ok(_) => failing = false,
                Err(e) => {
                    if !failing && client.unreachable().is_empty() {
                        tracing::warn!(error = %e, "could not measure this instance's clock against memcached's");
                    }
                    failing = true;
                    // Memcached out, say: try again a round later.
                    tokio::time::sleep(every).await;
                }
            }
        }
    }))
}

/// Handles SIGHUP from now on (its default action would end the server
/// without draining or saving state), calling `reload` on each.
pub(crate) fn on_hangup(reload: impl Fn() + Send + 'static) -> Option<JoinHandle<()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::hangup()) {
            Ok(mut hangups) => {
                return Some(tokio::spawn(async move {
                    while hangups.recv().await.is_some() {
                        reload();
                    }
                }));
            }
            Err(e) => tracing::error!(error = %e, "cannot listen for SIGHUP; reload disabled"),
        }
    }
    #[cfg(not(unix))]
    let _ = reload;
    None
}

/// Completes on Ctrl-C or SIGTERM: the end of a server that owns its
/// process, to pass to [`Server::serve`](crate::Server::serve).
///
/// The handlers are installed when this is called, not when the future is
/// first polled: a SIGTERM that arrives as soon as the server says it
/// listens (an orchestrator's rolling restart) would otherwise meet the
/// default action, which kills the process without draining or saving its
/// state. Call it inside a Tokio runtime.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, Signal, SignalKind};
        let interrupt = signal(SignalKind::interrupt()).ok();
        let terminate = signal(SignalKind::terminate()).ok();
        async fn next(signal: Option<Signal>) {
            match signal {
                Some(mut s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        }
        async move {
            tokio::select! {
                () = next(interrupt) => {},
                () = next(terminate) => {},
            }
        }
    }
    #[cfg(not(unix))]
    async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
