//! Where a connection goes: a Redis URL checked once into a client
//! ([`Target`]), which can then be asked to open a connection as often as it
//! takes, at start or in the background while Redis is not up yet.
//!
//! The URL forms: `redis://`, `redis+unix://` or `unix://` for a unix
//! socket, `redis+cluster://` for a Redis Cluster and `redis+sentinel://`
//! for a master found through Sentinel; `rediss://`, `rediss+cluster://`
//! and `rediss+sentinel://` are the same over TLS, every connection (each
//! cluster node, each sentinel and the data nodes they name) with the same
//! [`TlsFiles`]. A URL is never printed as given: [`redact`] hides its
//! passwords first.

use crate::link::Conn;
use crate::sentinel::{SentinelAddress, SentinelLink, Sentinels};
use crate::tls::TlsFiles;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::{IntoConnectionInfo, RedisConnectionInfo};
use std::sync::Arc;
use std::time::Duration;

/// The schemes [`Target::new`] accepts, as a caller checks `--store` with
/// [`is_redis_url`].
const SCHEMES: [&str; 8] = [
    "redis://",
    "rediss://",
    "redis+unix://",
    "unix://",
    "redis+cluster://",
    "rediss+cluster://",
    "redis+sentinel://",
    "rediss+sentinel://",
];

/// The schemes of a connection over TLS, which alone take [`TlsFiles`].
const TLS_SCHEMES: &str = "rediss://, rediss+cluster:// or rediss+sentinel://";

/// Whether `url` names a Redis reached over TLS (`rediss://`,
/// `rediss+cluster://`, `rediss+sentinel://`).
pub fn is_tls_url(url: &str) -> bool {
    url.starts_with("rediss://") || url.starts_with("rediss+")
}

/// Whether `url` names a Redis by one of the URL forms
/// [`RedisConnection::connect`](crate::RedisConnection::connect) accepts (its
/// scheme only: the rest is checked when connecting).
pub fn is_redis_url(url: &str) -> bool {
    SCHEMES.iter().any(|scheme| url.starts_with(scheme))
}

/// `url` with its passwords replaced by `***` (the `user:password@` of a
/// host URL, the `pass=` of a unix socket's, the `sentinel_password=` of a
/// Sentinel URL), fit for errors and logs.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = match rest.find(['/', '?', '#']) {
        Some(end) => rest.split_at(end),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{hosts}"),
            // redis-rs reads a lone userinfo as a user name, but people
            // write a password there: hide it all the same.
            None => format!("***@{hosts}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some(("pass" | "password" | "sentinel_password", _)) => {
                        format!("{}=***", pair.split('=').next().unwrap_or_default())
                    }
                    _ => pair.to_owned(),
                })
                .collect();
            format!("{path}?{}", query.join("&"))
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// A checked address: one Redis, the seed nodes of a cluster, or the
/// sentinels that know a master.
pub(crate) enum Target {
    Single {
        client: redis::Client,
        config: ConnectionManagerConfig,
    },
    Cluster(ClusterClient),
    Sentinel(Arc<Sentinels>),
}

/// What connecting needs besides the URL.
pub(crate) struct Dial<'a> {
    /// Bounds each call on the connections opened.
    pub timeout: Duration,
    /// The CA, client certificate and key of a TLS URL.
    pub tls: &'a TlsFiles,
    /// How often the sentinels are asked whether the master moved.
    pub probe_interval: Duration,
}

impl Target {
    /// Checks `url` (a bad scheme, host, port, CA, certificate or key file
    /// is refused here, before any connection is tried, with what is wrong
    /// and the URL, its passwords hidden).
    pub(crate) fn new(url: &str, dial: &Dial<'_>) -> Result<Target, String> {
        let shown = redact(url);
        let err = |e: redis::RedisError| format!("Redis at {shown}: {e}");
        if !is_redis_url(url) {
            return Err(format!(
                "{shown}: not a Redis URL (expected redis://, rediss://, redis+unix://, unix://, \
                 redis[s]+cluster:// or redis[s]+sentinel://)"
            ));
        }
        let tls = is_tls_url(url);
        if dial.tls.any() && !tls {
            return Err(format!(
                "{shown}: a CA file, client certificate or key is for a TLS Redis \
                 ({TLS_SCHEMES}) only"
            ));
        }
        let certs = dial.tls.certificates()?;
        // Connecting may take longer than a call: a new TCP (and maybe TLS
        // and AUTH) handshake.
        let connect_timeout = dial.timeout.max(Duration::from_millis(500));
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(connect_timeout))
            .set_response_timeout(Some(dial.timeout))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(500));
        let node_scheme = if tls { "rediss" } else { "redis" };
        if let Some(rest) = url
            .strip_prefix("redis+cluster://")
            .or_else(|| url.strip_prefix("rediss+cluster://"))
        {
            let (userinfo, nodes) = hosts(url, rest)?;
            // Every node with the same credentials and TLS: the cluster
            // client uses them on the nodes it discovers too.
            let nodes: Vec<String> = nodes
                .iter()
                .map(|n| format!("{node_scheme}://{userinfo}{n}"))
                .collect();
            let mut builder = ClusterClient::builder(nodes)
                .connection_timeout(connect_timeout)
                .response_timeout(dial.timeout);
            if let Some(certs) = certs {
                builder = builder.certs(certs);
            }
            return Ok(Target::Cluster(builder.build().map_err(err)?));
        }
        if let Some(rest) = url
            .strip_prefix("redis+sentinel://")
            .or_else(|| url.strip_prefix("rediss+sentinel://"))
        {
            let address = sentinel_address(url, rest, tls, certs)?;
            let sentinels = Sentinels::new(address, config, connect_timeout, dial.probe_interval)
                .map_err(err)?;
            return Ok(Target::Sentinel(Arc::new(sentinels)));
        }
        let client = match certs {
            Some(certs) => redis::Client::build_with_tls(url, certs),
            None => redis::Client::open(url),
        }
        .map_err(err)?;
        Ok(Target::Single { client, config })
    }

    /// Opens a connection (the first one: once open, it reconnects by
    /// itself), and checks that Redis takes its commands: a Redis that
    /// wants a password and was given none accepts the connection, and
    /// refuses only its first command.
    pub(crate) async fn open(&self) -> Result<Conn, redis::RedisError> {
        let mut conn = self.connect().await?;
        redis::cmd("PING").query_async::<String>(&mut conn).await?;
        Ok(conn)
    }

    async fn connect(&self) -> Result<Conn, redis::RedisError> {
        Ok(match self {
            Target::Single { client, config } => Conn::Single(
                ConnectionManager::new_with_config(client.clone(), config.clone()).await?,
            ),
            Target::Cluster(client) => Conn::Cluster(client.get_async_connection().await?),
            Target::Sentinel(sentinels) => {
                Conn::Sentinel(SentinelLink::open(sentinels.clone()).await?)
            }
        })
    }
}

/// The `user:password@` (kept as written, `@` included; empty if none) and
/// the comma-separated `HOST:PORT`s of a cluster's or sentinels' URL body
/// `rest` (up to its path).
fn hosts(url: &str, rest: &str) -> Result<(String, Vec<String>), String> {
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => (format!("{userinfo}@"), hosts),
        None => (String::new(), authority),
    };
    let hosts: Vec<String> = hosts
        .split(',')
        .filter(|h| !h.is_empty())
        .map(str::to_owned)
        .collect();
    if hosts.is_empty() {
        return Err(format!("{}: no HOST:PORT given", redact(url)));
    }
    Ok((userinfo, hosts))
}

/// A Sentinel URL's body `rest` (after the scheme):
/// `[USER:PASSWORD@]S1:P1,.../MASTER[/DB][?sentinel_user=U&sentinel_password=P]`,
/// the credentials and database the master's, the query the sentinels'
/// own (percent-encoded as the credentials are).
fn sentinel_address(
    url: &str,
    rest: &str,
    tls: bool,
    certs: Option<redis::TlsCertificates>,
) -> Result<SentinelAddress, String> {
    let shown = redact(url);
    let credentials = |userinfo: &str, db: &str| -> Result<RedisConnectionInfo, String> {
        // Read as redis-rs reads a redis:// URL's.
        Ok(format!("redis://{userinfo}sentinel/{db}")
            .into_connection_info()
            .map_err(|e| format!("Redis at {shown}: {e}"))?
            .redis_settings()
            .clone())
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (userinfo, hosts) = hosts(url, rest)?;
    let path = rest.split_once('/').map(|(_, path)| path).unwrap_or("");
    let mut parts = path.split('/');
    let master = parts.next().filter(|m| !m.is_empty()).ok_or_else(|| {
        format!("{shown}: no master name (redis+sentinel://HOST:PORT,.../MASTER[/DB])")
    })?;
    let db = parts.next().filter(|db| !db.is_empty()).unwrap_or("0");
    let (mut user, mut password) = ("", "");
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("sentinel_user", value)) => user = value,
            Some(("sentinel_password", value)) => password = value,
            _ => {
                let name = pair.split('=').next().unwrap_or_default();
                return Err(format!(
                    "{shown}: unknown parameter {name:?} (a Sentinel URL takes sentinel_user \
                     and sentinel_password, the sentinels' own credentials)"
                ));
            }
        }
    }
    let sentinel_userinfo = match (user, password) {
        ("", "") => String::new(),
        (user, password) => format!("{user}:{password}@"),
    };
    Ok(SentinelAddress {
        hosts,
        master: master.to_owned(),
        node: credentials(&userinfo, db)?,
        sentinel: credentials(&sentinel_userinfo, "0")?,
        tls,
        certs,
    })
}

#[cfg(test)]
mod tests {
    use super::redact;

    #[test]
    fn passwords_are_hidden_in_every_url_form() {
        let cases = [
            ("redis://:s3cret@h:6379/2", "redis://:***@h:6379/2"),
            ("redis://al:s3cret@h:6379", "redis://al:***@h:6379"),
            ("rediss://al:s3cret@h:6380", "rediss://al:***@h:6380"),
            ("redis://s3cret@h:6379", "redis://***@h:6379"),
            (
                "redis+cluster://:s3cret@a:1,b:2",
                "redis+cluster://:***@a:1,b:2",
            ),
            (
                "redis+sentinel://u:s3cret@a:1,b:2/mymaster",
                "redis+sentinel://u:***@a:1,b:2/mymaster",
            ),
            (
                "rediss+sentinel://:s3cret@a:1/m?sentinel_user=u&sentinel_password=s3cret",
                "rediss+sentinel://:***@a:1/m?sentinel_user=u&sentinel_password=***",
            ),
            (
                "redis+unix:///run/r.sock?db=1&pass=s3cret",
                "redis+unix:///run/r.sock?db=1&pass=***",
            ),
            ("redis://h:6379", "redis://h:6379"),
            ("redis://:p@ss@h:1", "redis://:***@h:1"),
        ];
        for (url, shown) in cases {
            assert_eq!(redact(url), shown, "{url}");
            assert!(!redact(url).contains("s3cret"));
        }
    }
}
