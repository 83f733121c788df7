//! envoyproxy/ratelimit's environment variables (its `settings.go`), read
//! by `limits rls` so that a deployment written for the reference starts
//! unchanged: each variable whose meaning maps onto ours becomes the value
//! of a flag (the caller lets a flag given on the command line win), and
//! the others are listed, to be logged once as ignored. A variable with a
//! bad value is an error naming the variable and the value. The README's
//! "Reference compatibility" table says what each one does here.

use crate::reference_redis_url::ReferenceRedis;
use std::net::SocketAddr;
use std::path::PathBuf;

/// What the reference's variables ask of `limits rls`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReferenceEnv {
    /// The config directory: `RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY`,
    /// when `RUNTIME_ROOT` is set.
    pub config: Option<PathBuf>,
    /// The gRPC listener: `GRPC_HOST:GRPC_PORT` (for `--listen`).
    pub listen: Option<SocketAddr>,
    /// The reference's HTTP port, `HOST:PORT`, where its health check is
    /// (for `--admin`: /healthz, /readyz, /metrics).
    pub admin: Option<SocketAddr>,
    /// The Redis of `BACKEND_TYPE` and `REDIS_*` (for `--store`).
    pub store: Option<String>,
    /// `CACHE_KEY_PREFIX`: prepended to every Redis key.
    pub prefix: Option<String>,
    /// `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT` set, `false` or `true`:
    /// count denied hits (`--count-denied-hits`); unset: do not (ours).
    pub count_denied_hits: Option<bool>,
    /// `STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT=true`: a request over one
    /// limit takes nothing from its others (`--all-or-nothing`).
    pub all_or_nothing: Option<bool>,
    /// Variables set that change nothing here, each with the reason: logged
    /// once at start.
    pub ignored: Vec<String>,
    /// `MERGE_DOMAIN_CONFIG` (`--merge-domains`).
    pub merge_domain_config: Option<bool>,
    /// `SHADOW_MODE` (global, `--shadow-mode`).
    pub shadow_mode: Option<bool>,
    /// `QUOTA_MODE` (global, `--quota-mode`).
    pub quota_mode: Option<bool>,
    /// `RESPONSE_DYNAMIC_METADATA` (`--response-dynamic-metadata`).
    pub response_dynamic_metadata: Option<bool>,
    /// `HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED` (`--healthy-with-one-config`).
    pub healthy_with_one_config: Option<bool>,
    /// `REDIS_TLS_CACERT`: the CA file of a TLS store (`--redis-ca`).
    pub redis_ca: Option<PathBuf>,
    /// `REDIS_TLS_CLIENT_CERT`: the client certificate of a TLS store
    /// (`--redis-cert`).
    pub redis_cert: Option<PathBuf>,
    /// `REDIS_TLS_CLIENT_KEY`: its private key (`--redis-key`).
    pub redis_key: Option<PathBuf>,
}

/// Variables with no counterpart here, by name or by prefix (`*`), with
/// what stands in their place: logged once when set, never fatal.
const IGNORED: &[(&str, &str)] = &[
    (
        "USE_STATSD",
        "no statsd; metrics are Prometheus /metrics on --admin (PORT)",
    ),
    (
        "STATSD_*",
        "no statsd; metrics are Prometheus /metrics on --admin (PORT)",
    ),
    (
        "USE_DOG_STATSD*",
        "no statsd; metrics are Prometheus /metrics on --admin (PORT)",
    ),
    ("EXTRA_TAGS", "no statsd tags; Prometheus labels are fixed"),
    (
        "STATS_FLUSH_INTERVAL",
        "Prometheus is scraped, nothing to flush",
    ),
    (
        "DISABLE_STATS",
        "metrics are always kept (serve them with --admin)",
    ),
    ("USE_PROMETHEUS", "/metrics is always on --admin (PORT)"),
    ("PROMETHEUS_*", "/metrics is always on --admin (PORT)"),
    (
        "DEBUG_HOST",
        "no debug listener (/stats, /rlconfig, pprof); /metrics is on --admin",
    ),
    (
        "DEBUG_PORT",
        "no debug listener (/stats, /rlconfig, pprof); /metrics is on --admin",
    ),
    ("TRACING_*", "no OpenTelemetry tracing"),
    ("OTEL_*", "no OpenTelemetry tracing"),
    ("GRPC_UDS", "gRPC listens on TCP only (--listen)"),
    (
        "GRPC_SERVER_USE_TLS",
        "gRPC is served without TLS: terminate TLS in front (a sidecar)",
    ),
    (
        "GRPC_SERVER_TLS_*",
        "gRPC is served without TLS: terminate TLS in front (a sidecar)",
    ),
    (
        "GRPC_CLIENT_TLS_*",
        "gRPC is served without TLS: terminate TLS in front (a sidecar)",
    ),
    (
        "GRPC_MAX_CONNECTION_AGE*",
        "connections are not aged out; --max-connections caps them",
    ),
    (
        "CONFIG_TYPE",
        "the config is read from files only (RUNTIME_ROOT or --config)",
    ),
    (
        "CONFIG_GRPC_XDS_*",
        "the config is read from files only (RUNTIME_ROOT or --config)",
    ),
    (
        "XDS_CLIENT_*",
        "the config is read from files only (RUNTIME_ROOT or --config)",
    ),
    (
        "FORCE_START_WITHOUT_INITIAL_CONFIG",
        "a config that does not load stops the start",
    ),
    (
        "RUNTIME_IGNOREDOTFILES",
        "only *.yaml and *.yml files are read",
    ),
    (
        "REDIS_POOL_SIZE",
        "one multiplexed connection per Redis: no pool to size",
    ),
    (
        "REDIS_PIPELINE_*",
        "each descriptor is one script call: no implicit pipelining to tune",
    ),
    (
        "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION",
        "the Redis certificate's name is always checked",
    ),
    (
        "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION",
        "/readyz already answers 503 while Redis is unreachable",
    ),
    (
        "REDIS_PERSECOND_*",
        "per-second limits are counted in REDIS_URL's Redis",
    ),
    ("MEMCACHE_*", "no memcache store"),
    (
        "EXPIRATION_JITTER_MAX_SECONDS",
        "each Redis key expires at its own reset, without jitter",
    ),
    (
        "LOCAL_CACHE_SIZE_IN_BYTES",
        "the exact deny cache is always on (sized in keys, not bytes)",
    ),
];

impl ReferenceEnv {
    /// Reads the variables through `env` (one by name; `None` when unset).
    pub fn read(env: &dyn Fn(&str) -> Option<String>) -> Result<ReferenceEnv, String> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let mut out = ReferenceEnv::default();
        let reference_layout = var("RUNTIME_ROOT").is_some();
        if let Some(root) = var("RUNTIME_ROOT") {
            let mut dir = PathBuf::from(root);
            if let Some(sub) = var("RUNTIME_SUBDIRECTORY") {
                dir.push(sub);
            }
            dir.push(var("RUNTIME_APPDIRECTORY").unwrap_or_else(|| "config".into()));
            out.config = Some(dir);
        }
        // Read for its value alone: the config files are polled, symlinks
        // followed, which covers both of the reference's watches.
        boolean(&var, "RUNTIME_WATCH_ROOT")?;
        // The reference listens on every interface by default; so do we in
        // a deployment laid out for it (RUNTIME_ROOT), else only when told.
        out.listen = address(&var, "GRPC_HOST", "GRPC_PORT", 8081, reference_layout)?;
        out.admin = address(&var, "HOST", "PORT", 8080, reference_layout)?;
        out.store = store(&var)?;
        out.prefix = var("CACHE_KEY_PREFIX");
        // Set either way, the reference counts the hits of a descriptor
        // over its limit; `true` leaves the request's others untouched.
        let stop = boolean(&var, "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT")?;
        out.count_denied_hits = stop.map(|_| true);
        out.all_or_nothing = stop;
        out.merge_domain_config = boolean(&var, "MERGE_DOMAIN_CONFIG")?;
        out.shadow_mode = boolean(&var, "SHADOW_MODE")?;
        out.quota_mode = boolean(&var, "QUOTA_MODE")?;
        out.response_dynamic_metadata = boolean(&var, "RESPONSE_DYNAMIC_METADATA")?;
        out.healthy_with_one_config = boolean(&var, "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED")?;
        out.redis_ca = var("REDIS_TLS_CACERT").map(PathBuf::from);
        out.redis_cert = var("REDIS_TLS_CLIENT_CERT").map(PathBuf::from);
        out.redis_key = var("REDIS_TLS_CLIENT_KEY").map(PathBuf::from);
        for name in [
            "REDIS_POOL_SIZE",
            "EXPIRATION_JITTER_MAX_SECONDS",
            "LOCAL_CACHE_SIZE_IN_BYTES",
        ] {
            whole_number(&var, name)?;
        }
        if let Some(ratio) = var("NEAR_LIMIT_RATIO") {
            match ratio.trim().parse::<f64>() {
                Ok(r) if r > 0.0 && r <= 1.0 => {
                    if (r - 0.8).abs() > 1e-9 {
                        out.ignored.push(format!(
                            "NEAR_LIMIT_RATIO={ratio}: near-limit hits are counted from 80% of \
                             the limit here"
                        ));
                    }
                }
                _ => {
                    return Err(format!(
                        "NEAR_LIMIT_RATIO={ratio}: expected a ratio above 0, at most 1"
                    ))
                }
            }
        }
        if boolean(&var, "REDIS_PERSECOND")? == Some(true) {
            out.ignored.push(
                "REDIS_PERSECOND=true: per-second limits are counted in REDIS_URL's Redis \
                 (the answers are the same; only the load is not split)"
                    .into(),
            );
        }
        // Applied by the logger, set up before the command runs.
        log_json(&var)?;
        for (pattern, why) in IGNORED {
            for name in matching(pattern) {
                if var(&name).is_some() {
                    out.ignored.push(format!("{name}: {why}"));
                }
            }
        }
        Ok(out)
    }
}

/// Whether `LOG_FORMAT` asks for JSON lines (`json`) or text (`text`),
/// `None` when unset; an error naming a bad value.
pub fn log_json(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<bool>, String> {
    let Some(format) = env("LOG_FORMAT").filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    match format.trim().to_ascii_lowercase().as_str() {
        "text" => Ok(Some(false)),
        "json" => Ok(Some(true)),
        _ => Err(format!("LOG_FORMAT={format}: expected text or json")),
    }
}

/// The tracing filter `LOG_LEVEL` asks for (the reference's logrus levels,
/// in any case), `None` when unset; an error naming a bad value.
pub fn log_level(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<&'static str>, String> {
    let Some(level) = env("LOG_LEVEL").filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    let filter = match level.trim().to_ascii_lowercase().as_str() {
        "trace" => "trace",
        "debug" => "debug",
        "info" => "info",
        "warn" | "warning" => "warn",
        "error" | "fatal" | "panic" => "error",
        _ => {
            return Err(format!(
                "LOG_LEVEL={level}: expected trace, debug, info, warn, error, fatal or panic"
            ))
        }
    };
    Ok(Some(filter))
}

/// The names `pattern` stands for: itself, or (ending in `*`) every
/// variable of the process's environment with that prefix (each then read
/// through the caller's `env`, as every other variable is).
fn matching(pattern: &str) -> Vec<String> {
    match pattern.strip_suffix('*') {
        None => vec![pattern.to_owned()],
        Some(prefix) => {
            let mut names: Vec<String> = std::env::vars_os()
                .filter_map(|(k, _)| k.into_string().ok())
                .filter(|k| k.starts_with(prefix))
                .collect();
            names.sort();
            names
        }
    }
}

/// A boolean as Go's `strconv.ParseBool` reads it (the reference's
/// parser): 1, t, true, 0, f, false in the cases it accepts.
fn boolean(var: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Option<bool>, String> {
    let Some(value) = var(name) else {
        return Ok(None);
    };
    match value.trim() {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(Some(true)),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(Some(false)),
        _ => Err(format!("{name}={value}: expected true or false")),
    }
}

fn whole_number(var: &dyn Fn(&str) -> Option<String>, name: &str) -> Result<Option<u64>, String> {
    let Some(value) = var(name) else {
        return Ok(None);
    };
    value
        .trim()
        .parse()
        .map(Some)
        .map_err(|_| format!("{name}={value}: expected a whole number"))
}

/// `HOST:PORT` from the two variables, each defaulting to the reference's
/// (every interface, `default_port`) when the other is set or `defaults`.
fn address(
    var: &dyn Fn(&str) -> Option<String>,
    host_var: &str,
    port_var: &str,
    default_port: u16,
    defaults: bool,
) -> Result<Option<SocketAddr>, String> {
    let (host, port) = (var(host_var), var(port_var));
    if host.is_none() && port.is_none() && !defaults {
        return Ok(None);
    }
    let port = match port {
        None => default_port,
        Some(p) => p
            .trim()
            .parse::<u16>()
            .map_err(|_| format!("{port_var}={p}: expected a port number (0 to 65535)"))?,
    };
    let host = host.unwrap_or_else(|| "0.0.0.0".into());
    let host = host.trim();
    // An IPv6 address is bracketed to be joined to its port.
    let joined = match host.contains(':') && !host.starts_with('[') {
        true => format!("[{host}]:{port}"),
        false => format!("{host}:{port}"),
    };
    crate::args::parse_listen_addr(&joined)
        .map(Some)
        .map_err(|e| format!("{host_var}={host}: {e}"))
}

/// The store of `BACKEND_TYPE` and the `REDIS_*` variables: a Redis when
/// either names one, none otherwise (the store is then --store's).
fn store(var: &dyn Fn(&str) -> Option<String>) -> Result<Option<String>, String> {
    match var("BACKEND_TYPE")
        .map(|b| b.trim().to_ascii_lowercase())
        .as_deref()
    {
        None if var("REDIS_URL").is_none() => return Ok(None),
        None | Some("redis") => {}
        Some("memcache") => {
            return Err(
                "BACKEND_TYPE=memcache: there is no memcache store here; use redis \
                        (REDIS_URL), or unset it for --store"
                    .into(),
            )
        }
        Some(other) => return Err(format!("BACKEND_TYPE={other}: expected redis")),
    }
    let redis = ReferenceRedis {
        socket_type: var("REDIS_SOCKET_TYPE").unwrap_or_default(),
        url: var("REDIS_URL").unwrap_or_default(),
        redis_type: var("REDIS_TYPE").unwrap_or_default(),
        auth: var("REDIS_AUTH").unwrap_or_default(),
        sentinel_auth: var("REDIS_SENTINEL_AUTH").unwrap_or_default(),
        tls: boolean(var, "REDIS_TLS")?.unwrap_or(false),
    };
    redis.url().map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<ReferenceEnv, String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ReferenceEnv::read(&move |name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn the_compose_example_maps_onto_a_config_dir_addresses_and_a_redis_url() {
        let env = read(&[
            ("USE_STATSD", "false"),
            ("LOG_LEVEL", "debug"),
            ("REDIS_SOCKET_TYPE", "tcp"),
            ("REDIS_URL", "redis:6379"),
            ("RUNTIME_ROOT", "/data"),
            ("RUNTIME_SUBDIRECTORY", "ratelimit"),
            ("RUNTIME_WATCH_ROOT", "false"),
        ])
        .unwrap();
        assert_eq!(env.config, Some(PathBuf::from("/data/ratelimit/config")));
        assert_eq!(env.listen, Some("0.0.0.0:8081".parse().unwrap()));
        assert_eq!(env.admin, Some("0.0.0.0:8080".parse().unwrap()));
        assert_eq!(env.store.as_deref(), Some("redis://redis:6379"));
        assert_eq!(env.ignored.len(), 1, "{:?}", env.ignored);
        assert!(env.ignored[0].starts_with("USE_STATSD: no statsd"));
    }

    #[test]
    fn without_the_references_layout_only_what_is_set_applies() {
        let env = read(&[("GRPC_PORT", "9000")]).unwrap();
        assert_eq!(env.listen, Some("0.0.0.0:9000".parse().unwrap()));
        assert_eq!((env.admin, env.config, env.store), (None, None, None));
        let env = read(&[
            ("GRPC_HOST", "127.0.0.1"),
            ("GRPC_PORT", "0"),
            ("HOST", "::1"),
        ])
        .unwrap();
        assert_eq!(env.listen, Some("127.0.0.1:0".parse().unwrap()));
        assert_eq!(env.admin, Some("[::1]:8080".parse().unwrap()));
    }

    #[test]
    fn stop_cache_key_increment_false_counts_denied_hits() {
        let count = |v| read(&[("STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT", v)]).unwrap();
        assert_eq!(count("false").count_denied_hits, Some(true));
        assert_eq!(count("false").all_or_nothing, Some(false));
        assert_eq!(count("1").count_denied_hits, Some(true));
        assert_eq!(count("1").all_or_nothing, Some(true));
        assert_eq!(read(&[]).unwrap().count_denied_hits, None);
        assert_eq!(read(&[]).unwrap().all_or_nothing, None);
    }

    #[test]
    fn a_bad_value_is_an_error_naming_the_variable_and_the_value() {
        let cases: [(&[(&str, &str)], &str); 9] = [
            (&[("PORT", "http")], "PORT=http"),
            (&[("GRPC_PORT", "70000")], "GRPC_PORT=70000"),
            (&[("RUNTIME_WATCH_ROOT", "yes")], "RUNTIME_WATCH_ROOT=yes"),
            (&[("REDIS_TLS", "on"), ("REDIS_URL", "h:1")], "REDIS_TLS=on"),
            (&[("BACKEND_TYPE", "memcache")], "BACKEND_TYPE=memcache"),
            (&[("REDIS_POOL_SIZE", "ten")], "REDIS_POOL_SIZE=ten"),
            (&[("NEAR_LIMIT_RATIO", "2")], "NEAR_LIMIT_RATIO=2"),
            (&[("LOG_FORMAT", "xml")], "LOG_FORMAT=xml"),
            (&[("SHADOW_MODE", "maybe")], "SHADOW_MODE=maybe"),
        ];
        for (vars, start) in cases {
            let err = read(vars).unwrap_err();
            assert!(err.starts_with(start), "{vars:?}: {err}");
        }
    }

    #[test]
    fn values_we_do_not_act_on_are_listed_with_the_reason() {
        let env = read(&[
            ("NEAR_LIMIT_RATIO", "0.9"),
            ("REDIS_PERSECOND", "true"),
            ("LOG_FORMAT", "json"),
            ("SHADOW_MODE", "true"),
            ("EXPIRATION_JITTER_MAX_SECONDS", "300"),
        ])
        .unwrap();
        assert_eq!(env.shadow_mode, Some(true), "a switch we do apply is read");
        let said = env.ignored.join("\n");
        for name in [
            "NEAR_LIMIT_RATIO=0.9",
            "REDIS_PERSECOND=true",
            "EXPIRATION_JITTER_MAX_SECONDS",
        ] {
            assert!(said.contains(name), "{name} not in {said}");
        }
        for applied in ["SHADOW_MODE", "LOG_FORMAT"] {
            assert!(!said.contains(applied), "applied, not ignored: {said}");
        }
        // The accepted values of what we do are not listed.
        assert!(read(&[("NEAR_LIMIT_RATIO", "0.8")])
            .unwrap()
            .ignored
            .is_empty());
    }

    #[test]
    fn the_redis_tls_files_and_the_sentinels_password_are_applied() {
        let env = read(&[
            ("REDIS_SOCKET_TYPE", "tcp"),
            ("REDIS_TYPE", "sentinel"),
            ("REDIS_URL", "mymaster,s1:26379"),
            ("REDIS_TLS", "true"),
            ("REDIS_AUTH", "m4ster"),
            ("REDIS_SENTINEL_AUTH", "s3ntinel"),
            ("REDIS_TLS_CACERT", "/etc/redis/ca.pem"),
            ("REDIS_TLS_CLIENT_CERT", "/etc/redis/client.pem"),
            ("REDIS_TLS_CLIENT_KEY", "/etc/redis/client.key"),
        ])
        .unwrap();
        assert_eq!(
            env.store.as_deref(),
            Some("rediss+sentinel://:m4ster@s1:26379/mymaster?sentinel_password=s3ntinel")
        );
        assert_eq!(env.redis_ca, Some(PathBuf::from("/etc/redis/ca.pem")));
        assert_eq!(env.redis_cert, Some(PathBuf::from("/etc/redis/client.pem")));
        assert_eq!(env.redis_key, Some(PathBuf::from("/etc/redis/client.key")));
        assert!(env.ignored.is_empty(), "{:?}", env.ignored);
    }

    #[test]
    fn log_level_takes_the_references_levels() {
        let level = |v: &str| {
            let v = v.to_string();
            log_level(&move |_| Some(v.clone()))
        };
        assert_eq!(level("WARN").unwrap(), Some("warn"));
        assert_eq!(level("warning").unwrap(), Some("warn"));
        assert_eq!(level("Fatal").unwrap(), Some("error"));
        assert_eq!(log_level(&|_| None).unwrap(), None);
        assert!(level("loud").unwrap_err().starts_with("LOG_LEVEL=loud"));
        let format = |value: &str| log_json(&|name| (name == "LOG_FORMAT").then(|| value.into()));
        assert_eq!(format("JSON"), Ok(Some(true)));
        assert_eq!(format("text"), Ok(Some(false)));
        assert_eq!(format(""), Ok(None));
        assert!(format("xml").unwrap_err().starts_with("LOG_FORMAT=xml"));
    }
}
