//! What a server is asked to be, as plain data: no flag parser's types.
//!
//! A front end (the `limits` command's flags, an embedder's own settings)
//! fills a [`ServerConfig`]; the server never sees how the values were
//! spelled. Error messages name the `limits serve` flag a field comes from
//! (`--state FILE: ...`), which is how the one front end today reports them.

use crate::listener::per_core::Runtimes;
use crate::listener::Bounds;
use crate::store::StoreOptions;
use limits::Rule;
use limits_http::KeySpec;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The layer's options (dry run, headers, client addresses, store failures,
/// body bounds).
pub use limits_http::LayerOptions;

/// Where the rules come from.
#[derive(Clone, Debug)]
pub enum RulesSource {
    /// A TOML file of `[[rule]]` tables ([`crate::config`]), read at start
    /// and again on every reload.
    File(PathBuf),
    /// One rule over every path and method, named "default": what the
    /// command line's `--limiter --limit --key --cost` give.
    One {
        /// The limiter, its rates and burst.
        rule: Rule,
        /// What a request is counted by.
        key: KeySpec,
        /// What one request costs (checked: at least 1, at most what the
        /// rule can pass).
        cost: u64,
    },
}

/// Everything a server needs besides the service it protects.
///
/// ```
/// use limits::{Algorithm, Rule};
/// use limits_http::KeySpec;
/// use limits_server::{RulesSource, ServerConfig};
///
/// let rule = Rule::new(Algorithm::SlidingLog, "5/s".parse().unwrap());
/// let mut config = ServerConfig::new(RulesSource::One { rule, key: KeySpec::ip(), cost: 1 });
/// config.listen = "127.0.0.1:0".parse().unwrap();
/// config.layer.dry_run = true;
/// assert!(config.admin.is_none() && config.state.is_none());
/// ```
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Address to listen on (port 0: any free port).
    pub listen: SocketAddr,
    /// Where to serve Prometheus `/metrics`, `/healthz` (liveness) and
    /// `/readyz` (readiness), if anywhere.
    pub admin: Option<SocketAddr>,
    /// The rules.
    pub rules: RulesSource,
    /// How the layer behaves beyond its rules.
    pub layer: LayerOptions,
    /// What one connection may cost: header size, count and time; drain.
    pub bounds: Bounds,
    /// Save the in-process stores' state here on shutdown, load it on start.
    pub state: Option<PathBuf>,
    /// How each rule's store is built.
    pub stores: StoreOptions,
    /// Handle SIGHUP (Unix): reload the rules file, keeping the state of
    /// unchanged rules. Its default action would end the process without
    /// draining or saving state, so a server owning its process wants this.
    pub reload_on_hangup: bool,
    /// Which runtimes accept and serve the connections: the one running
    /// the server, or one per core, each accepting for itself.
    pub runtimes: Runtimes,
}

impl ServerConfig {
    /// `rules` with the defaults of `limits serve`: listen on
    /// 127.0.0.1:8080, no admin, default layer options and bounds, no state
    /// file, a million keys per rule, reload on SIGHUP, connections served
    /// on the runtime running the server.
    pub fn new(rules: RulesSource) -> ServerConfig {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            admin: None,
            rules,
            layer: LayerOptions::default(),
            bounds: Bounds::default(),
            state: None,
            stores: StoreOptions::default(),
            reload_on_hangup: true,
            runtimes: Runtimes::Caller,
        }
    }
}
