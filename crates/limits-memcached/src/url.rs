//! `memcached://HOST:PORT[,HOST:PORT...]`: the servers of a store.

/// The scheme of a memcached URL.
const SCHEME: &str = "memcached://";

/// Memcached's own port, when a server names none.
const DEFAULT_PORT: u16 = 11211;

/// Whether `url` names memcached servers (whether or not it is valid).
///
/// ```
/// assert!(limits_memcached::is_memcached_url("memcached://127.0.0.1:11211"));
/// assert!(!limits_memcached::is_memcached_url("redis://127.0.0.1:6379"));
/// ```
pub fn is_memcached_url(url: &str) -> bool {
    url.starts_with(SCHEME)
}

/// The servers' `HOST:PORT`s, in the URL's order; an error names what is
/// wrong and where.
///
/// ```
/// use limits_memcached::parse_url;
/// assert_eq!(parse_url("memcached://h:1,[::1]").unwrap(), ["h:1", "[::1]:11211"]);
/// assert!(parse_url("memcached://h:x").unwrap_err().contains("\"x\""));
/// ```
pub fn parse_url(url: &str) -> Result<Vec<String>, String> {
    let rest = url
        .strip_prefix(SCHEME)
        .ok_or_else(|| format!("{url:?}: a memcached URL starts with {SCHEME}"))?;
    if let Some(at) = rest.find(['/', '?', '@']) {
        return Err(format!(
            "{url:?}: a memcached URL is {SCHEME}HOST:PORT[,HOST:PORT...], with nothing after the servers ({:?} at byte {})",
            &rest[at..],
            SCHEME.len() + at
        ));
    }
    rest.split(',')
        .enumerate()
        .map(|(i, server)| {
            server_addr(server).map_err(|e| format!("{url:?}: server {} ({server:?}): {e}", i + 1))
        })
        .collect()
}

/// One `HOST[:PORT]` as `HOST:PORT`.
fn server_addr(server: &str) -> Result<String, String> {
    let (host, port) = match server.strip_prefix('[') {
        // [IPv6]:PORT or [IPv6]
        Some(bracketed) => {
            let (host, after) = bracketed
                .split_once(']')
                .ok_or("an IPv6 address without its closing ]")?;
            let port = match after {
                "" => None,
                _ => Some(
                    after
                        .strip_prefix(':')
                        .ok_or("text after ] that is not :PORT")?,
                ),
            };
            (format!("[{host}]"), port)
        }
        None => match server.rsplit_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (server.to_owned(), None),
        },
    };
    if host.is_empty() || host == "[]" {
        return Err("no host".into());
    }
    let port = match port {
        None => DEFAULT_PORT,
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|&p| p > 0)
            .ok_or_else(|| format!("the port {port:?} is not a number from 1 to 65535"))?,
    };
    Ok(format!("{host}:{port}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_server_form_and_each_mistake_named() {
        assert_eq!(
            parse_url("memcached://a:1,b,[::1]:3").unwrap(),
            ["a:1", "b:11211", "[::1]:3"]
        );
        for (url, says) in [
            ("memcached://", "no host"),
            ("memcached://a:1,", "server 2"),
            ("memcached://a:0", "1 to 65535"),
            ("memcached://[::1", "closing ]"),
            ("memcached://a:1/db", "nothing after the servers"),
            ("memcached://u:p@a:1", "nothing after the servers"),
            ("redis://a:1", "starts with memcached://"),
        ] {
            let err = parse_url(url).unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
    }
}
