//! The connection caps' flags, the same for `limits serve` and `limits rls`,
//! sized to fit the process's file limit when not given.

use clap::Args;
use limits_server::{
    connections_within_file_limit, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
};

/// `--max-connections` and `--max-connections-per-client`.
#[derive(Args, Debug)]
pub struct ConnectionArgs {
    /// Most connections open at once on the listener; beyond it a new one is
    /// closed as soon as it is accepted (counted in /metrics). Default:
    /// 10,000, or what fits the file limit beside the admin listener's
    /// reserve.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: Option<u64>,

    /// Most connections open at once from one client address (an IPv6
    /// client by its prefix; --trust-proxy peers only by the total).
    /// Default: 256, or a quarter of the total if less.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_connections_per_client: Option<u64>,
}

impl ConnectionArgs {
    /// The total and per-client caps under `file_limit` (the soft limit in
    /// force, if known), each connection holding `per_connection`
    /// descriptors; an explicit total that does not fit is refused.
    pub fn caps(
        &self,
        file_limit: Option<u64>,
        per_connection: u64,
    ) -> Result<(usize, usize), String> {
        let fit = file_limit.map(|n| (n, connections_within_file_limit(n, per_connection)));
        let to_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let total = match (self.max_connections.map(to_usize), fit) {
            (Some(n), Some((limit, fit))) if n > fit => {
                return Err(format!(
                    "--max-connections {n}: the file limit ({limit} descriptors, RLIMIT_NOFILE) \
                     leaves room for {fit} connections beside the admin listener's and the \
                     process's own; raise the hard limit (ulimit -Hn, systemd's LimitNOFILE=) \
                     or lower --max-connections"
                ));
            }
            (Some(n), _) => n,
            (None, Some((_, fit))) => DEFAULT_MAX_CONNECTIONS.min(fit),
            (None, None) => DEFAULT_MAX_CONNECTIONS,
        };
        let per_client = match self.max_connections_per_client {
            Some(n) => to_usize(n),
            None => DEFAULT_MAX_CONNECTIONS_PER_CLIENT.min((total / 4).max(1)),
        };
        Ok((total, per_client))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(total: Option<u64>, per_client: Option<u64>) -> ConnectionArgs {
        ConnectionArgs {
            max_connections: total,
            max_connections_per_client: per_client,
        }
    }

    #[test]
    fn defaults_fit_the_file_limit() {
        assert_eq!(args(None, None).caps(Some(1 << 20), 2), Ok((10_000, 256)));
        // 128 descriptors: 64 kept for the process, 16 for the admin listener.
        assert_eq!(args(None, None).caps(Some(128), 1), Ok((48, 12)));
        assert_eq!(args(None, None).caps(Some(128), 2), Ok((24, 6)));
        assert_eq!(args(None, None).caps(None, 2), Ok((10_000, 256)));
    }

    #[test]
    fn an_explicit_total_beyond_the_file_limit_is_refused_with_the_reason() {
        let e = args(Some(1000), None).caps(Some(1024), 2).unwrap_err();
        assert!(
            e.starts_with("--max-connections 1000: the file limit (1024"),
            "{e}"
        );
        assert!(e.contains("room for 472 connections"), "{e}");
        assert_eq!(args(Some(472), Some(3)).caps(Some(1024), 2), Ok((472, 3)));
    }
}
