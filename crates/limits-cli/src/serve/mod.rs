//! `limits serve`: flags and glue. The flags are mapped here to a plain
//! [`ServerConfig`], and the server itself (rules file, listener, reload,
//! metrics, state, proxy) is the `limits-server` library; this module only
//! adds what is the command's own: the demo API and the process's signals.

mod connections;
mod demo;
mod flags;
mod stores;

pub use connections::ConnectionArgs;
pub use stores::{OnStoreFull, StoreArgs};

use crate::args::RuleArgs;
use crate::lines::{self, Command};
use crate::runtime::{RuntimeArgs, RuntimeKind};
use clap::{Args, ValueEnum};
use limits::parse_duration;
use limits_http::{
    BodyBudget, ClientIp, ClientIpHeader, FailurePolicy, KeySpec, TrustedProxies,
    DEFAULT_IPV6_PREFIX,
};
use limits_server::{
    Backend, Bounds, LayerOptions, Proxy, RulesSource, Runtimes, Server, ServerConfig, StoreOptions,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ServeArgs {
    #[command(flatten)]
    rule: RuleArgs,

    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = crate::args::parse_listen_addr)]
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

    /// Check a rules file and exit: each rule on stdout, or every problem
    /// (FILE:LINE) on stderr and exit status 1. Stores as --store says.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["limiter", "limit", "window", "burst", "key", "cost", "config"]
    )]
    check_config: Option<PathBuf>,

    /// Never reject: count and log what would have been limited, still send the headers.
    #[arg(long)]
    dry_run: bool,

    /// Serve Prometheus /metrics, /healthz (liveness) and /readyz (readiness) on this address
    /// (off by default).
    #[arg(long, value_name = "ADDR", value_parser = crate::args::parse_listen_addr)]
    admin: Option<SocketAddr>,

    /// Save the limiters' state here on shutdown and load it on start.
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,

    /// Also send X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset.
    #[arg(long)]
    legacy_headers: bool,

    #[command(flatten)]
    stores: StoreArgs,

    #[command(flatten)]
    runtime: RuntimeArgs,

    /// How connections are spread over the workers: shared (one runtime, any
    /// worker serves any connection) or per-core (each worker a runtime of its
    /// own that accepts for itself and serves what it accepted). Default:
    /// per-core with the memory store; shared with Redis, whose connections
    /// run on one thread that every worker's decisions would cross to.
    #[arg(long = "runtime", value_enum)]
    runtime_kind: Option<RuntimeKind>,

    #[command(flatten)]
    connections: ConnectionArgs,

    /// When the store cannot be reached: `local` decides in this process
    /// with the same rule (N instances admit at most N times the limit),
    /// `allow` lets every request through, `deny` answers 503.
    #[arg(long, value_enum, default_value_t = OnStoreError::Local)]
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
    Local,
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

pub(crate) fn parse_timeout(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.to_string())
}

pub fn serve(args: ServeArgs) -> Result<(), String> {
    let file_limit = crate::file_limit::raise();
    // A proxied request holds the client's connection and one upstream.
    let per_connection = if args.upstream.is_some() { 2 } else { 1 };
    let caps = args.connections.caps(file_limit, per_connection)?;
    let kind = args.runtime_kind.unwrap_or(if args.stores.in_memory() {
        RuntimeKind::PerCore
    } else {
        RuntimeKind::Shared
    });
    let (runtime, runtimes) = args.runtime.for_serve(kind)?;
    runtime.block_on(run(args, caps, runtimes))
}

async fn run(args: ServeArgs, caps: (usize, usize), runtimes: Runtimes) -> Result<(), String> {
    let layer = layer_options(&args)?;
    flags::warn_trust_everyone(&args.trust_proxy);
    let local = args.on_store_error == OnStoreError::Local;
    let stores = args.stores.options(local).await?;
    if let Some(path) = &args.check_config {
        return check_config(path, &stores);
    }
    let server = Server::new(server_config(&args, layer, stores, caps, runtimes)?)?
        .on_event(lines::printer(Command::Serve));
    let backend = match &args.upstream {
        Some(url) => Backend::proxy(Proxy::new(url, args.upstream_timeout)?, url),
        None => Backend::new("the demo API", demo::routes()).without_peer_addr(),
    };
    server
        .serve(backend, limits_server::shutdown_signal())
        .await
}

/// `--check-config FILE`: each rule on stdout, or every problem on stderr
/// and an error.
fn check_config(path: &std::path::Path, stores: &StoreOptions) -> Result<(), String> {
    match limits_server::config::load_file(path, stores) {
        Ok(file) => {
            for rule in &file.rules {
                println!("{}", limits_server::describe(rule));
            }
            let lists = &file.lists;
            println!(
                "limits serve: {}: ok ({} rules; {} allowed and {} denied before any rule)",
                path.display(),
                file.rules.len(),
                lists.allow.len(),
                lists.deny.len()
            );
            Ok(())
        }
        Err(problems) => {
            let count = problems.lines().count();
            for problem in problems.lines() {
                eprintln!("error: {problem}");
            }
            Err(format!(
                "{}: {count} problem{} in the rules",
                path.display(),
                if count == 1 { "" } else { "s" }
            ))
        }
    }
}

/// The layer's options from the flags.
fn layer_options(args: &ServeArgs) -> Result<LayerOptions, String> {
    let trusted: Vec<&str> = args.trust_proxy.iter().map(String::as_str).collect();
    Ok(LayerOptions {
        dry_run: args.dry_run,
        legacy_headers: args.legacy_headers,
        client_ip: ClientIp::new(
            TrustedProxies::parse(&trusted)?,
            args.client_ip_header,
            args.ipv6_prefix,
        )?,
        // `local` is the store's to carry out: no error reaches the layer
        // then, and deny is what is left if one did.
        on_store_error: match args.on_store_error {
            OnStoreError::Allow => FailurePolicy::Allow,
            OnStoreError::Deny | OnStoreError::Local => FailurePolicy::Deny,
        },
        on_store_full: match args.stores.on_store_full() {
            OnStoreFull::Allow => FailurePolicy::Allow,
            OnStoreFull::Deny | OnStoreFull::Local => FailurePolicy::Deny,
        },
        body_timeout: args.body_timeout,
        body_budget: BodyBudget::new(args.max_body_memory),
        ..LayerOptions::default()
    })
}

/// The server's configuration from the flags: the rules of `--config`, or
/// the one command-line rule; `caps`, the connection caps (total, per
/// client); `runtimes`, where connections are served.
fn server_config(
    args: &ServeArgs,
    layer: LayerOptions,
    stores: StoreOptions,
    (max_connections, max_connections_per_client): (usize, usize),
    runtimes: Runtimes,
) -> Result<ServerConfig, String> {
    let rules = match &args.config {
        Some(path) => RulesSource::File(path.clone()),
        None => RulesSource::One {
            rule: args.rule.rule()?,
            key: args.key.clone(),
            cost: args.cost,
        },
    };
    Ok(ServerConfig {
        listen: args.listen,
        admin: args.admin,
        layer,
        bounds: Bounds {
            header_timeout: args.header_timeout,
            max_connections,
            max_connections_per_client,
            ..Bounds::default()
        },
        state: args.state.clone(),
        stores,
        runtimes,
        ..ServerConfig::new(rules)
    })
}
