//! `limits serve`: the limiter in front of an API, a built-in demo API or a
//! reverse proxy to a real one, built on the `limits-http` tower layer.

mod demo;
mod flags;
mod listener;
mod metrics;
mod rules;
mod state;

use crate::args::RuleArgs;
use crate::config::{self, RuleConfig};
use crate::proxy::Proxy;
use clap::{Args, ValueEnum};
use limits::parse_duration;
use limits_http::{
    BodyBudget, ClientIp, ClientIpHeader, FailurePolicy, KeySpec, LayerOptions, Policy,
    PolicyHandle, RateLimitLayer, TrustedProxies, DEFAULT_IPV6_PREFIX,
};
use listener::Bounds;
use metrics::Metrics;
use rules::{MemoryStore, RuleSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    rule: RuleArgs,

    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,

    /// What a client is: ip, header:NAME, cookie:NAME or query:NAME (joined by + for several).
    #[arg(long, default_value = "ip", value_parser = parse_key)]
    key: KeySpec,

    /// Cost of one request under the command-line rule.
    #[arg(long, default_value_t = 1)]
    cost: u64,

    /// Believe the --client-ip-header from peers in this network (repeatable).
    #[arg(long = "trust-proxy", value_name = "CIDR")]
    trust_proxy: Vec<String>,

    /// The one header that names the client: x-forwarded-for, forwarded or x-real-ip. Read
    /// only from --trust-proxy peers, walked from the right through trusted hops; every other
    /// forwarding header is ignored.
    #[arg(
        long,
        value_name = "HEADER",
        default_value = "x-forwarded-for",
        value_parser = parse_client_ip_header
    )]
    client_ip_header: ClientIpHeader,

    /// Key IPv6 clients by this prefix length, 1 to 128 (one host usually has a whole /64).
    #[arg(
        long,
        value_name = "BITS",
        default_value_t = DEFAULT_IPV6_PREFIX,
        value_parser = clap::value_parser!(u8).range(1..=128)
    )]
    ipv6_prefix: u8,

    /// Proxy every request to this API (http://host:port[/base]) instead of the demo API.
    #[arg(long, value_name = "URL")]
    upstream: Option<String>,

    /// How long to wait for the upstream's response headers before answering 504.
    #[arg(long, default_value = "30s", value_parser = parse_timeout)]
    upstream_timeout: Duration,

    /// Rules from a TOML file instead of the command-line rule; SIGHUP reloads it.
    /// Not with --limiter, --limit, --window, --burst, --key or --cost: the
    /// file's rules would silently win.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["limiter", "limit", "window", "burst", "key", "cost"]
    )]
    config: Option<PathBuf>,

    /// Never reject: count and log what would have been limited, still send the headers.
    #[arg(long)]
    dry_run: bool,

    /// Serve Prometheus /metrics and /healthz on this address (off by default).
    #[arg(long, value_name = "ADDR")]
    admin: Option<SocketAddr>,

    /// Save the limiters' state here on shutdown and load it on start.
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,

    /// Also send X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset.
    #[arg(long)]
    legacy_headers: bool,

    /// Most keys tracked per rule; beyond it, the keys whose forgetting costs least (most quota left) are evicted, never a limited one while another can go.
    #[arg(long, default_value_t = 1_000_000, value_parser = flags::parse_max_keys)]
    max_keys: usize,

    /// When the store cannot decide: allow the request, or answer 503.
    #[arg(long, value_enum, default_value_t = OnStoreError::Allow)]
    on_store_error: OnStoreError,

    /// Longest wait for a request's headers, and idle keep-alive time.
    #[arg(long, default_value = "10s", value_parser = parse_timeout)]
    header_timeout: Duration,

    /// Longest wait for the whole body of a request whose rule keys on a form
    /// or JSON field (408 after it).
    #[arg(long, default_value = "10s", value_parser = parse_timeout)]
    body_timeout: Duration,

    /// Most bytes all such bodies may hold in memory at once, across
    /// connections (beyond it: 503 with Retry-After).
    #[arg(long, value_name = "BYTES", default_value_t = limits_http::DEFAULT_BODY_BUDGET)]
    max_body_memory: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OnStoreError {
    Allow,
    Deny,
}

fn parse_key(s: &str) -> Result<KeySpec, String> {
    let spec: KeySpec = s
        .parse()
        .map_err(|e: limits_http::KeySpecError| e.to_string())?;
    if spec.needs_body() {
        return Err(
            "form: and json: keys read the body; use them in a --config rule for a login route"
                .into(),
        );
    }
    Ok(spec)
}

fn parse_client_ip_header(s: &str) -> Result<ClientIpHeader, String> {
    s.parse()
}

fn parse_timeout(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

/// Everything the running server shares between its tasks.
struct Server {
    args: ServeArgs,
    options: LayerOptions,
    metrics: Arc<Metrics>,
    rules: Mutex<Arc<RuleSet>>,
    handle: PolicyHandle<MemoryStore>,
}

pub fn serve(args: ServeArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(run(args))
}

async fn run(args: ServeArgs) -> Result<(), String> {
    let trusted: Vec<&str> = args.trust_proxy.iter().map(String::as_str).collect();
    let options = LayerOptions {
        dry_run: args.dry_run,
        legacy_headers: args.legacy_headers,
        client_ip: ClientIp::new(
            TrustedProxies::parse(&trusted)?,
            args.client_ip_header,
            args.ipv6_prefix,
        )?,
        on_store_error: match args.on_store_error {
            OnStoreError::Allow => FailurePolicy::Allow,
            OnStoreError::Deny => FailurePolicy::Deny,
        },
        body_timeout: args.body_timeout,
        body_budget: BodyBudget::new(args.max_body_memory),
        ..LayerOptions::default()
    };
    flags::warn_trust_everyone(&args.trust_proxy);
    let rules = Arc::new(RuleSet::build(rule_configs(&args)?, None, args.max_keys));
    if let Some(path) = &args.state {
        state::check_writable(path)?;
        let n = state::load(path, &rules)?;
        tracing::info!(keys = n, file = %path.display(), "state loaded");
    }
    let proxy = match &args.upstream {
        Some(url) => Some(Arc::new(Proxy::new(url, args.upstream_timeout)?)),
        None => None,
    };
    let metrics = Arc::new(Metrics::new());
    let layer = RateLimitLayer::new(policy(&rules, &options, &metrics));
    let server = Arc::new(Server {
        handle: layer.handle(),
        args,
        options,
        metrics,
        rules: Mutex::new(rules),
    });

    let inner = match &proxy {
        Some(proxy) => {
            let proxy = proxy.clone();
            axum::Router::new().fallback(move |req: axum::extract::Request| {
                let proxy = proxy.clone();
                async move {
                    let client = req
                        .extensions()
                        .get::<limits_http::PeerAddr>()
                        .map(|p| p.0.ip());
                    proxy.forward(req, client).await
                }
            })
        }
        None => demo::router(),
    };
    // The layer goes around the whole router, so that routing (and the
    // proxy) see the path the layer normalized and matched its rules on.
    let app = axum::Router::new().fallback_service(tower::Layer::layer(&layer, inner));

    let listener = TcpListener::bind(server.args.listen)
        .await
        .map_err(|e| format!("--listen {}: {e}", server.args.listen))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let bounds = Bounds {
        header_timeout: server.args.header_timeout,
        max_head_bytes: 16 * 1024,
        max_headers: 100,
        drain_timeout: Duration::from_secs(30),
    };
    if let Some(addr) = server.args.admin {
        start_admin(addr, server.clone(), proxy.clone(), bounds).await?;
    }
    tokio::spawn(sweep_forever(server.clone()));
    watch_hangups(server.clone());
    let upstream = server.args.upstream.as_deref().unwrap_or("the demo API");
    println!("limits serve: listening on http://{local} in front of {upstream}");
    tracing::info!(%local, upstream, "listening");

    listener::serve(listener, app, bounds, shutdown_signal()).await;

    let saved = match &server.args.state {
        Some(path) => state::save(path, &current(&server)).map(|n| {
            tracing::info!(keys = n, file = %path.display(), "state saved");
        }),
        None => Ok(()),
    };
    println!("limits serve: stopped");
    saved.map_err(|e| format!("state not saved: {e}"))
}

/// The rules of `--config`, or the one command-line rule named "default".
fn rule_configs(args: &ServeArgs) -> Result<Vec<RuleConfig>, String> {
    if let Some(path) = &args.config {
        return Ok(config::load(path)?.rules);
    }
    let rule = args.rule.rule()?;
    if !rule.is_valid_cost(args.cost) {
        return Err(format!(
            "--cost {} is above what the rule can ever allow ({}): lower --cost or raise --limit",
            args.cost,
            rule.max_cost()
        ));
    }
    if args.cost == 0 {
        return Err("--cost must be at least 1".into());
    }
    Ok(vec![RuleConfig {
        name: "default".into(),
        path_prefix: "/".into(),
        methods: vec![],
        key: args.key.clone(),
        rule,
        cost: args.cost,
    }])
}

fn policy(rules: &RuleSet, options: &LayerOptions, metrics: &Arc<Metrics>) -> Policy<MemoryStore> {
    Policy {
        rules: rules.http_rules(),
        options: options.clone(),
        observer: metrics.clone(),
    }
}

fn current(server: &Server) -> Arc<RuleSet> {
    server
        .rules
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

async fn start_admin(
    addr: SocketAddr,
    server: Arc<Server>,
    proxy: Option<Arc<Proxy>>,
    bounds: Bounds,
) -> Result<(), String> {
    let render = Arc::new(move || {
        let upstream = proxy.as_ref().map(|p| p.errors());
        server.metrics.render(&current(&server), upstream)
    });
    let admin = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--admin {addr}: {e}"))?;
    let local = admin.local_addr().map_err(|e| e.to_string())?;
    println!("limits serve: admin on http://{local}/metrics");
    let router = metrics::admin_router(render);
    // The same bounds as the main listener: a client that half-sends
    // requests to the admin port holds nothing for long. It stops with the
    // process.
    tokio::spawn(listener::serve(
        admin,
        router,
        bounds,
        std::future::pending(),
    ));
    Ok(())
}

/// Drops idle keys every second, so memory follows the active clients even
/// when no traffic comes to sweep them.
async fn sweep_forever(server: Arc<Server>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        current(&server).sweep();
    }
}

/// Handles SIGHUP from now on (always: its default action would end the
/// server without draining or saving state), reloading --config on each.
fn watch_hangups(server: Arc<Server>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::hangup()) {
            Ok(mut hangups) => {
                tokio::spawn(async move {
                    while hangups.recv().await.is_some() {
                        reload_on_hangup(&server);
                    }
                });
            }
            Err(e) => tracing::error!(error = %e, "cannot listen for SIGHUP; reload disabled"),
        }
    }
}

/// On SIGHUP, re-reads --config: unchanged rules keep their state; a bad
/// file keeps the old rules and says why. Without --config, says so.
fn reload_on_hangup(server: &Server) {
    if server.args.config.is_none() {
        tracing::warn!("SIGHUP: no --config to reload; still serving");
        println!("limits serve: SIGHUP: no --config to reload; still serving");
        return;
    }
    match rule_configs(&server.args) {
        Ok(configs) => {
            let old = current(server);
            let new = Arc::new(RuleSet::build(configs, Some(&old), server.args.max_keys));
            let kept = new.kept_from(&old);
            server
                .handle
                .replace(policy(&new, &server.options, &server.metrics));
            *server.rules.lock().unwrap_or_else(|e| e.into_inner()) = new.clone();
            tracing::info!(rules = new.entries.len(), kept, "config reloaded");
            println!(
                "limits serve: config reloaded ({} rules, {kept} kept their state)",
                new.entries.len()
            );
        }
        Err(e) => {
            tracing::error!(error = %e, "config not reloaded; keeping the old rules");
            println!("limits serve: config not reloaded: {e}");
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
}
