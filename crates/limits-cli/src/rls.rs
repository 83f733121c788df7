//! `limits rls`: flags and glue. The flags become a plain
//! [`RlsServerConfig`]; the server (YAML config, gRPC listener, stores,
//! reload, metrics) is `limits_server::rls`.

use crate::lines::{self, Command};
use crate::reference_env::ReferenceEnv;
use crate::runtime::RuntimeArgs;
use crate::serve::{parse_timeout, ConnectionArgs, OnStoreFull, StoreArgs};
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, ValueEnum};
use limits_server::rls::{
    OnStoreError, ReferenceHeaderNames, ResponseHeaders, RlsOptions, RlsServer, RlsServerConfig,
    DEFAULT_MAX_METRIC_SERIES,
};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct RlsArgs {
    /// envoyproxy/ratelimit's YAML: one file, or a directory of them (one
    /// domain each); reloaded on change and on SIGHUP, keeping the counts of
    /// unchanged limits (a bad file keeps the old limits and is reported).
    /// Without it, the reference's RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/
    /// RUNTIME_APPDIRECTORY.
    #[arg(long, value_name = "FILE|DIR")]
    config: Option<PathBuf>,

    /// Check a config (a file, or a directory as --config reads it) and
    /// exit: 0 when it loads, else 1 with every problem found as
    /// FILE:LINE: what is wrong (envoyproxy/ratelimit's config_check_cmd).
    #[arg(long, value_name = "FILE|DIR", conflicts_with = "config")]
    check_config: Option<PathBuf>,

    /// Address of the gRPC listener (Envoy's rate limit cluster points here).
    #[arg(long, default_value = "127.0.0.1:8081", value_parser = crate::args::parse_listen_addr)]
    listen: SocketAddr,

    /// Serve Prometheus /metrics, /healthz (liveness) and /readyz (readiness) on this address
    /// (off by default).
    #[arg(long, value_name = "ADDR", value_parser = crate::args::parse_listen_addr)]
    admin: Option<SocketAddr>,

    #[command(flatten)]
    stores: StoreArgs,

    #[command(flatten)]
    runtime: RuntimeArgs,

    /// When the store cannot be reached: `local` decides in this process
    /// with the same rule (N instances admit at most N times the limit);
    /// `unavailable` fails the call with gRPC UNAVAILABLE, so that Envoy's
    /// own failure_mode_deny decides (Envoy lets the request through by
    /// default); `allow` answers OK; `deny` OVER_LIMIT.
    #[arg(long, value_enum, default_value_t = StoreErrorAnswer::Local)]
    on_store_error: StoreErrorAnswer,

    /// Header fields answers ask Envoy to add: `none`, as envoyproxy/ratelimit
    /// by default; `reference`, its RateLimit-Limit, -Remaining and -Reset
    /// for the descriptor closest to its limit (names from
    /// LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER, LIMIT_RESET_HEADER);
    /// `draft`, RateLimit-Policy and RateLimit for every limit decided, as
    /// `limits serve` sends them; `both`. Without the flag:
    /// `reference` when LIMIT_RESPONSE_HEADERS_ENABLED=true, else `none`.
    #[arg(long, value_enum, value_name = "SET")]
    response_headers: Option<HeaderSet>,

    /// How often to check --config for changes (file sizes, mtimes and
    /// identities, following symlinks, so a Kubernetes ConfigMap update is
    /// seen); 0 turns the check off (SIGHUP still reloads).
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = parse_interval)]
    watch_interval: Duration,

    /// Save the in-memory counts here on shutdown and load them on start
    /// (a limit whose rule changed starts afresh; Redis keeps its own).
    #[arg(long, value_name = "FILE")]
    state: Option<PathBuf>,

    /// Longest wait for calls in flight on shutdown.
    #[arg(long, default_value = "30s", value_parser = parse_timeout)]
    drain_timeout: Duration,

    #[command(flatten)]
    connections: ConnectionArgs,

    /// Most series per metric family named after descriptor values (limits
    /// with detailed_metric); later values are counted in one
    /// descriptor="other" series (and in limits_rls_metric_values_folded).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_METRIC_SERIES)]
    max_metric_series: usize,

    /// Add a denied descriptor's hits to its count, as envoyproxy/ratelimit
    /// counts every hit (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=false
    /// there, its default): fixed-window and sliding-window limits only (a
    /// config with another limiter is refused). Without it, a denial takes
    /// nothing, unless that variable is set (to false or true).
    #[arg(long)]
    count_denied_hits: bool,

    /// A call's descriptors take their hits all or nothing: when one is
    /// over its limit, the others take nothing (the reference's
    /// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true, which also counts the
    /// over one's hits: that variable sets --count-denied-hits too).
    /// Atomic: in memory, one such call decides at a time; on one Redis,
    /// a call is one script.
    #[arg(long)]
    all_or_nothing: bool,

    /// Merge several files of one domain into one tree (the reference's
    /// MERGE_DOMAIN_CONFIG); without it a second file of a domain is
    /// refused. A descriptor two files both give is refused either way.
    #[arg(long)]
    merge_domains: bool,

    /// Every limit in shadow mode (the reference's global SHADOW_MODE):
    /// decided and counted, the call answered OK.
    #[arg(long)]
    shadow_mode: bool,

    /// Every descriptor in quota mode (the reference's QUOTA_MODE).
    #[arg(long)]
    quota_mode: bool,

    /// Answers carry dynamic metadata: the domain, the descriptors and the
    /// `metadata` of those that passed (the reference's
    /// RESPONSE_DYNAMIC_METADATA).
    #[arg(long)]
    response_dynamic_metadata: bool,

    /// Start without any configuration and answer health NOT_SERVING until
    /// one with a domain loads (the reference's
    /// HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED).
    #[arg(long)]
    healthy_with_one_config: bool,

    /// The reference's descriptor key file (`include_entry_value_for_keys`):
    /// which entries name a request's own limit in the metrics with their
    /// value.
    #[arg(long, value_name = "FILE")]
    descriptor_key_config: Option<PathBuf>,
}

/// A duration, or `0` for none.
fn parse_interval(s: &str) -> Result<Duration, String> {
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    parse_timeout(s)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum HeaderSet {
    None,
    Reference,
    Draft,
    Both,
}

/// The header fields of `--response-headers`, or, without it, of the
/// reference's own variables (`env` reads one by name).
fn response_headers(
    flag: Option<HeaderSet>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<ResponseHeaders, String> {
    let set = match flag {
        Some(set) => set,
        None => match env("LIMIT_RESPONSE_HEADERS_ENABLED").as_deref() {
            None | Some("") => HeaderSet::None,
            Some(v) if v.eq_ignore_ascii_case("true") || v == "1" => HeaderSet::Reference,
            Some(v) if v.eq_ignore_ascii_case("false") || v == "0" => HeaderSet::None,
            Some(v) => {
                return Err(format!(
                    "LIMIT_RESPONSE_HEADERS_ENABLED={v}: expected true or false"
                ))
            }
        },
    };
    let named = |var: &str, default: String| env(var).filter(|v| !v.is_empty()).unwrap_or(default);
    let reference = matches!(set, HeaderSet::Reference | HeaderSet::Both).then(|| {
        let d = ReferenceHeaderNames::default();
        ReferenceHeaderNames {
            limit: named("LIMIT_LIMIT_HEADER", d.limit),
            remaining: named("LIMIT_REMAINING_HEADER", d.remaining),
            reset: named("LIMIT_RESET_HEADER", d.reset),
        }
    });
    Ok(ResponseHeaders {
        draft: matches!(set, HeaderSet::Draft | HeaderSet::Both),
        reference,
    })
}

/// Sets each flag not `given` on the command line from the reference's
/// variable for it, logs once each variable that changes nothing here, and
/// returns the config path (`--config`, else the reference's runtime
/// directory).
fn apply_reference_env(
    args: &mut RlsArgs,
    env: &ReferenceEnv,
    given: impl Fn(&str) -> bool,
) -> Result<PathBuf, String> {
    if let (Some(listen), false) = (env.listen, given("listen")) {
        args.listen = listen;
    }
    if let (Some(admin), false) = (env.admin, given("admin")) {
        args.admin = Some(admin);
    }
    if let (Some(store), false) = (&env.store, given("store")) {
        args.stores.set_store(store.clone());
    }
    if let Some(prefix) = &env.prefix {
        args.stores.set_prefix(prefix.clone());
    }
    let tls = args.stores.redis_tls_mut();
    for (flag, file, variable) in [
        ("redis_ca", &mut tls.redis_ca, &env.redis_ca),
        ("redis_cert", &mut tls.redis_cert, &env.redis_cert),
        ("redis_key", &mut tls.redis_key, &env.redis_key),
    ] {
        if let (Some(path), false) = (variable, given(flag)) {
            *file = Some(path.clone());
        }
    }
    // A switch given on the command line is on; its variable decides only
    // when it is not.
    for (flag, variable) in [
        (&mut args.count_denied_hits, env.count_denied_hits),
        (&mut args.all_or_nothing, env.all_or_nothing),
        (&mut args.merge_domains, env.merge_domain_config),
        (&mut args.shadow_mode, env.shadow_mode),
        (&mut args.quota_mode, env.quota_mode),
        (
            &mut args.response_dynamic_metadata,
            env.response_dynamic_metadata,
        ),
        (
            &mut args.healthy_with_one_config,
            env.healthy_with_one_config,
        ),
    ] {
        if let (Some(on), false) = (variable, *flag) {
            *flag = on;
        }
    }
    for note in &env.ignored {
        tracing::warn!("envoyproxy/ratelimit setting not applied: {note}");
    }
    match (args.config.clone(), &env.config) {
        (Some(path), _) => Ok(path),
        (None, Some(dir)) => {
            tracing::info!(config = %dir.display(), "config from RUNTIME_ROOT");
            Ok(dir.clone())
        }
        (None, None) => {
            Err("--config FILE|DIR is required (or envoyproxy/ratelimit's RUNTIME_ROOT)".into())
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum StoreErrorAnswer {
    Local,
    Unavailable,
    Allow,
    Deny,
}

/// The reference's switches, as the flags (or their variables) set them.
fn options(args: &RlsArgs) -> RlsOptions {
    RlsOptions::default()
        .count_denied_hits(args.count_denied_hits)
        .all_or_nothing(args.all_or_nothing)
        .merge_domains(args.merge_domains)
        .global_shadow(args.shadow_mode)
        .global_quota(args.quota_mode)
        .response_dynamic_metadata(args.response_dynamic_metadata)
        .healthy_with_at_least_one_config(args.healthy_with_one_config)
        .descriptor_key_config(args.descriptor_key_config.clone())
}

/// `--check-config PATH`: what it holds on stdout, or every problem on
/// stderr and an error.
fn check_config(path: &Path, options: &RlsOptions) -> Result<(), String> {
    match limits_server::rls::config::check_with(path, options) {
        Ok(checked) => {
            for file in &checked.files {
                println!("{}: ok", file.display());
            }
            println!(
                "limits rls: {}: all rate limit configs ok ({} files, {} limits)",
                path.display(),
                checked.files.len(),
                checked.limits
            );
            Ok(())
        }
        Err(problems) => {
            for problem in &problems {
                eprintln!("error: {problem}");
            }
            Err(format!(
                "{}: {} problem{} in the rate limit config",
                path.display(),
                problems.len(),
                if problems.len() == 1 { "" } else { "s" }
            ))
        }
    }
}

/// `limits rls`; `matches` tell a flag given on the command line, which
/// wins over the reference's variable for it.
pub fn rls(mut args: RlsArgs, matches: Option<&ArgMatches>) -> Result<(), String> {
    if let Some(path) = &args.check_config {
        return check_config(path, &options(&args));
    }
    let env = ReferenceEnv::read(&|name| std::env::var(name).ok())?;
    let given =
        |id: &str| matches.is_some_and(|m| m.value_source(id) == Some(ValueSource::CommandLine));
    let config_path = apply_reference_env(&mut args, &env, given)?;
    let file_limit = crate::file_limit::raise();
    // One descriptor per connection: the store's connections are shared.
    let (max_connections, max_connections_per_client) = args.connections.caps(file_limit, 1)?;
    let response_headers =
        response_headers(args.response_headers, |name| std::env::var(name).ok())?;
    let runtime = args.runtime.build()?;
    runtime.block_on(async {
        let local = args.on_store_error == StoreErrorAnswer::Local;
        let options = options(&args);
        let config = RlsServerConfig {
            options,
            listen: args.listen,
            admin: args.admin,
            stores: args.stores.options(local).await?,
            // `local` is the store's to carry out: no error reaches the
            // service then, and deny is what is left if one did.
            on_store_error: match args.on_store_error {
                StoreErrorAnswer::Unavailable => OnStoreError::Unavailable,
                StoreErrorAnswer::Allow => OnStoreError::Allow,
                StoreErrorAnswer::Deny | StoreErrorAnswer::Local => OnStoreError::Deny,
            },
            on_store_full: match args.stores.on_store_full() {
                OnStoreFull::Allow => OnStoreError::Allow,
                OnStoreFull::Deny | OnStoreFull::Local => OnStoreError::Deny,
            },
            drain_timeout: args.drain_timeout,
            watch_interval: args.watch_interval,
            state: args.state,
            max_connections,
            max_connections_per_client,
            max_metric_series: args.max_metric_series,
            response_headers,
            ..RlsServerConfig::new(config_path)
        };
        RlsServer::new(config)?
            .on_event(lines::printer(Command::Rls))
            .serve(limits_server::shutdown_signal())
            .await
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn no_header_field_unless_asked_as_the_reference() {
        assert_eq!(
            response_headers(None, env(&[])).unwrap(),
            ResponseHeaders::default()
        );
    }

    #[test]
    fn the_reference_variables_turn_its_fields_on_under_their_names() {
        let vars = [
            ("LIMIT_RESPONSE_HEADERS_ENABLED", "true"),
            ("LIMIT_REMAINING_HEADER", "X-Left"),
        ];
        let got = response_headers(None, env(&vars)).unwrap();
        let names = got.reference.expect("reference fields");
        assert_eq!(
            (
                names.limit.as_str(),
                names.remaining.as_str(),
                names.reset.as_str()
            ),
            ("RateLimit-Limit", "X-Left", "RateLimit-Reset")
        );
        assert!(!got.draft);
    }

    #[test]
    fn the_flag_wins_over_the_variable() {
        let vars = [("LIMIT_RESPONSE_HEADERS_ENABLED", "true")];
        let got = response_headers(Some(HeaderSet::Draft), env(&vars)).unwrap();
        assert_eq!((got.draft, got.reference), (true, None));
        let both = response_headers(Some(HeaderSet::Both), env(&[])).unwrap();
        assert!(both.draft && both.reference.is_some());
    }

    #[test]
    fn a_variable_that_is_no_boolean_is_an_error_naming_it() {
        let vars = [("LIMIT_RESPONSE_HEADERS_ENABLED", "yes please")];
        let err = response_headers(None, env(&vars)).unwrap_err();
        assert!(
            err.starts_with("LIMIT_RESPONSE_HEADERS_ENABLED=yes please"),
            "{err}"
        );
    }
}
