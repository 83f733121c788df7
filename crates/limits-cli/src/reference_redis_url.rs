//! envoyproxy/ratelimit's Redis settings (`REDIS_SOCKET_TYPE`, `REDIS_URL`,
//! `REDIS_TYPE`, `REDIS_AUTH`, `REDIS_SENTINEL_AUTH`, `REDIS_TLS`) as the
//! one URL `--store` takes.
//!
//! The reference spells its Redis in pieces: `REDIS_URL` is `HOST:PORT` (a
//! socket path when `REDIS_SOCKET_TYPE=unix`, its default), a list
//! `H1:P1,H2:P2` for a cluster, and `MASTER,S1:P1,S2:P2` for Sentinel (the
//! master's name, then the sentinels); `REDIS_AUTH` is `PASSWORD` or
//! `USER:PASSWORD`, and `REDIS_SENTINEL_AUTH` the sentinels' own, in the same
//! form. Ours is one URL: `redis://[USER:PASSWORD@]HOST:PORT`,
//! `redis+unix:///PATH`, `redis+cluster://H1:P1,H2:P2` and
//! `redis+sentinel://[USER:PASSWORD@]S1:P1,S2:P2/MASTER[?sentinel_user=U&sentinel_password=P]`,
//! each but the socket with `rediss` for TLS.

/// The reference's Redis settings, as its variables spell them (empty
/// strings for the unset ones; [`ReferenceRedis::url`] applies its
/// defaults).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReferenceRedis {
    /// `REDIS_SOCKET_TYPE`: `tcp` or `unix` (the default).
    pub socket_type: String,
    /// `REDIS_URL`.
    pub url: String,
    /// `REDIS_TYPE`: `single` (the default), `cluster` or `sentinel`, in any
    /// case.
    pub redis_type: String,
    /// `REDIS_AUTH`: `PASSWORD` or `USER:PASSWORD`.
    pub auth: String,
    /// `REDIS_SENTINEL_AUTH`: the sentinels' own `PASSWORD` or
    /// `USER:PASSWORD` (Sentinel only).
    pub sentinel_auth: String,
    /// `REDIS_TLS`.
    pub tls: bool,
}

/// The reference's `REDIS_URL` default: twemproxy's socket.
pub const DEFAULT_REDIS_URL: &str = "/var/run/nutcracker/ratelimit.sock";

impl ReferenceRedis {
    /// The `--store` URL these settings name, or an error naming the
    /// variable, its value (never the password) and what was expected.
    pub fn url(&self) -> Result<String, String> {
        let socket = match self.socket_type.to_ascii_lowercase().as_str() {
            "" | "unix" => Socket::Unix,
            "tcp" => Socket::Tcp,
            other => return Err(format!("REDIS_SOCKET_TYPE={other}: expected tcp or unix")),
        };
        let kind = self.redis_type.to_ascii_lowercase();
        let url = match self.url.trim() {
            "" => DEFAULT_REDIS_URL,
            url => url,
        };
        if url.contains("://") {
            return Err(format!(
                "REDIS_URL={url}: expected the reference's form (HOST:PORT, a socket path, \
                 or a list for a cluster or Sentinel); a URL goes in --store"
            ));
        }
        let auth = userinfo(&self.auth);
        if !self.sentinel_auth.is_empty() && kind != "sentinel" {
            return Err(format!(
                "REDIS_SENTINEL_AUTH is set, and REDIS_TYPE={}: the sentinels' password is for \
                 REDIS_TYPE=sentinel only",
                self.redis_type
            ));
        }
        let tls = if self.tls { "s" } else { "" };
        match (socket, kind.as_str()) {
            (Socket::Unix, "" | "single") => {
                if self.tls {
                    return Err("REDIS_TLS=true: TLS over a unix socket is not supported; \
                                set REDIS_SOCKET_TYPE=tcp or REDIS_TLS=false"
                        .into());
                }
                if !url.starts_with('/') {
                    return Err(format!(
                        "REDIS_URL={url}: a unix socket is an absolute path \
                         (REDIS_SOCKET_TYPE=tcp for HOST:PORT)"
                    ));
                }
                Ok(format!("redis+unix://{url}{}", unix_auth(&self.auth)))
            }
            (Socket::Unix, "cluster" | "sentinel") => Err(format!(
                "REDIS_TYPE={}: a {kind} is reached over tcp; set REDIS_SOCKET_TYPE=tcp",
                self.redis_type
            )),
            (Socket::Tcp, "" | "single") => {
                host_port(url, "REDIS_URL", url)?;
                let scheme = if self.tls { "rediss" } else { "redis" };
                Ok(format!("{scheme}://{auth}{url}"))
            }
            (Socket::Tcp, "cluster") => {
                for node in url.split(',') {
                    host_port(node.trim(), "REDIS_URL", url)?;
                }
                Ok(format!(
                    "redis{tls}+cluster://{auth}{}",
                    without_spaces(url)
                ))
            }
            (Socket::Tcp, "sentinel") => {
                let mut parts = url.split(',').map(str::trim);
                let master = parts.next().unwrap_or_default();
                let sentinels: Vec<&str> = parts.collect();
                if master.is_empty() || sentinels.is_empty() {
                    return Err(format!(
                        "REDIS_URL={url}: with REDIS_TYPE=sentinel, expected \
                         MASTER,SENTINEL1:PORT[,SENTINEL2:PORT...]"
                    ));
                }
                for sentinel in &sentinels {
                    host_port(sentinel, "REDIS_URL", url)?;
                }
                let sentinel_auth = match split_auth(&self.sentinel_auth) {
                    ("", "") => String::new(),
                    ("", password) => format!("?sentinel_password={}", encode(password)),
                    (user, password) => format!(
                        "?sentinel_user={}&sentinel_password={}",
                        encode(user),
                        encode(password)
                    ),
                };
                Ok(format!(
                    "redis{tls}+sentinel://{auth}{}/{master}{sentinel_auth}",
                    sentinels.join(",")
                ))
            }
            _ => Err(format!(
                "REDIS_TYPE={}: expected single, cluster or sentinel",
                self.redis_type
            )),
        }
    }
}

#[derive(Clone, Copy)]
enum Socket {
    Tcp,
    Unix,
}

/// Checks `HOST:PORT` (IPv6 in brackets), naming the variable and its whole
/// value when it is not.
fn host_port(node: &str, var: &str, value: &str) -> Result<(), String> {
    let bad = || format!("{var}={value}: {node:?} is not HOST:PORT");
    let (host, port) = node.rsplit_once(':').ok_or_else(bad)?;
    let host_ok = !host.is_empty() && !host.contains(['/', '@', ' ', ',']);
    match (host_ok, port.parse::<u16>()) {
        (true, Ok(p)) if p > 0 => Ok(()),
        _ => Err(bad()),
    }
}

fn without_spaces(list: &str) -> String {
    list.split(',').map(str::trim).collect::<Vec<_>>().join(",")
}

/// `REDIS_AUTH` as a URL's user information (`USER:PASSWORD@`, `:PASSWORD@`
/// for a password alone), percent-encoded; empty without one.
fn userinfo(auth: &str) -> String {
    if auth.is_empty() {
        return String::new();
    }
    let (user, password) = split_auth(auth);
    format!("{}:{}@", encode(user), encode(password))
}

/// `REDIS_AUTH` as a unix socket URL's query (`?user=U&pass=P`).
fn unix_auth(auth: &str) -> String {
    if auth.is_empty() {
        return String::new();
    }
    match split_auth(auth) {
        ("", password) => format!("?pass={}", encode(password)),
        (user, password) => format!("?user={}&pass={}", encode(user), encode(password)),
    }
}

/// (user, password): the reference reads `USER:PASSWORD` when there is a
/// colon, a password alone otherwise.
fn split_auth(auth: &str) -> (&str, &str) {
    auth.split_once(':').unwrap_or(("", auth))
}

/// Percent-encodes everything but RFC 3986's unreserved characters, so that
/// a password may hold `@`, `:` or `/`.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redis(socket: &str, url: &str, kind: &str, auth: &str, tls: bool) -> ReferenceRedis {
        ReferenceRedis {
            socket_type: socket.into(),
            url: url.into(),
            redis_type: kind.into(),
            auth: auth.into(),
            sentinel_auth: String::new(),
            tls,
        }
    }

    #[test]
    fn the_compose_examples_tcp_redis_is_a_redis_url() {
        let r = redis("tcp", "redis:6379", "", "", false);
        assert_eq!(r.url().unwrap(), "redis://redis:6379");
        let r = redis("TCP", "10.0.0.5:6380", "SINGLE", "", true);
        assert_eq!(r.url().unwrap(), "rediss://10.0.0.5:6380");
    }

    #[test]
    fn auth_is_a_password_or_a_user_and_password_percent_encoded() {
        let r = redis("tcp", "h:1", "single", "s3cret", false);
        assert_eq!(r.url().unwrap(), "redis://:s3cret@h:1");
        let r = redis("tcp", "h:1", "single", "app:p@ss/w:rd", false);
        assert_eq!(r.url().unwrap(), "redis://app:p%40ss%2Fw%3Ard@h:1");
    }

    #[test]
    fn the_defaults_are_the_references_unix_socket() {
        let r = ReferenceRedis::default();
        assert_eq!(
            r.url().unwrap(),
            "redis+unix:///var/run/nutcracker/ratelimit.sock"
        );
        let r = redis("unix", "/run/redis.sock", "", "u:p", false);
        assert_eq!(
            r.url().unwrap(),
            "redis+unix:///run/redis.sock?user=u&pass=p"
        );
        let r = redis("unix", "/run/redis.sock", "", "p", false);
        assert_eq!(r.url().unwrap(), "redis+unix:///run/redis.sock?pass=p");
    }

    #[test]
    fn a_cluster_is_its_node_list() {
        let r = redis("tcp", "h1:7000, h2:7001,h3:7002", "cluster", "", false);
        assert_eq!(r.url().unwrap(), "redis+cluster://h1:7000,h2:7001,h3:7002");
        let r = redis("tcp", "h1:7000,h2:7001", "Cluster", "pw", false);
        assert_eq!(r.url().unwrap(), "redis+cluster://:pw@h1:7000,h2:7001");
    }

    #[test]
    fn sentinel_is_the_master_then_the_sentinels() {
        let r = redis("tcp", "mymaster,s1:26379,s2:26379", "sentinel", "", false);
        assert_eq!(
            r.url().unwrap(),
            "redis+sentinel://s1:26379,s2:26379/mymaster"
        );
        let r = redis("tcp", "mymaster,s1:26379", "SENTINEL", "u:p", false);
        assert_eq!(r.url().unwrap(), "redis+sentinel://u:p@s1:26379/mymaster");
        let r = redis("tcp", "mymaster,s1:26379", "sentinel", "m", true);
        assert_eq!(r.url().unwrap(), "rediss+sentinel://:m@s1:26379/mymaster");
        let err = redis("tcp", "s1:26379", "sentinel", "", false)
            .url()
            .unwrap_err();
        assert!(
            err.starts_with("REDIS_URL=s1:26379: with REDIS_TYPE=sentinel"),
            "{err}"
        );
    }

    #[test]
    fn bad_values_are_errors_naming_the_variable_and_the_value() {
        let cases = [
            (redis("udp", "h:1", "", "", false), "REDIS_SOCKET_TYPE=udp"),
            (redis("tcp", "h:1", "ring", "", false), "REDIS_TYPE=ring"),
            (
                redis("tcp", "localhost", "", "", false),
                "REDIS_URL=localhost",
            ),
            (redis("tcp", "h:0", "", "", false), "REDIS_URL=h:0"),
            (
                redis("tcp", "h:1,bad", "cluster", "", false),
                "REDIS_URL=h:1,bad",
            ),
            (
                redis("tcp", "redis://h:1", "", "", false),
                "REDIS_URL=redis://h:1",
            ),
            (
                redis("unix", "relative.sock", "", "", false),
                "REDIS_URL=relative.sock",
            ),
            (redis("unix", "/s", "", "", true), "REDIS_TLS=true"),
            (
                redis("unix", "h:1,h:2", "cluster", "", false),
                "REDIS_TYPE=cluster",
            ),
            (
                ReferenceRedis {
                    sentinel_auth: "p".into(),
                    ..redis("tcp", "h:1,h:2", "cluster", "", false)
                },
                "REDIS_SENTINEL_AUTH",
            ),
        ];
        for (r, start) in cases {
            let err = r.url().unwrap_err();
            assert!(err.starts_with(start), "{r:?}: {err}");
        }
    }

    #[test]
    fn tls_reaches_a_cluster_and_sentinels_too() {
        let r = redis("tcp", "h1:7000,h2:7001", "cluster", "pw", true);
        assert_eq!(r.url().unwrap(), "rediss+cluster://:pw@h1:7000,h2:7001");
    }

    #[test]
    fn the_sentinels_own_auth_is_the_urls_query_percent_encoded() {
        let with = |sentinel_auth: &str| ReferenceRedis {
            sentinel_auth: sentinel_auth.into(),
            ..redis("tcp", "mymaster,s1:26379", "sentinel", "m4ster", false)
        };
        assert_eq!(
            with("s3nt&nel").url().unwrap(),
            "redis+sentinel://:m4ster@s1:26379/mymaster?sentinel_password=s3nt%26nel"
        );
        assert_eq!(
            with("watcher:p=w").url().unwrap(),
            "redis+sentinel://:m4ster@s1:26379/mymaster?sentinel_user=watcher&sentinel_password=p%3Dw"
        );
        let shown = limits_redis::redact(&with("hunter2").url().unwrap());
        assert!(
            !shown.contains("hunter2") && !shown.contains("m4ster"),
            "{shown}"
        );
    }

    #[test]
    fn an_error_never_shows_the_password() {
        let err = redis("tcp", "nohost", "", "user:hunter2", false)
            .url()
            .unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
    }
}
