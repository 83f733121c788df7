//! Caps on open connections, per listener: a total, and a cap per client
//! address (as nginx's `limit_conn` keyed by `$binary_remote_addr`), so that
//! idle sockets cannot take every file descriptor (and with them the admin
//! listener, the upstream connections and the state file) nor one address
//! take every connection of the listener.
//!
//! A connection over a cap is closed as soon as it is accepted, before a
//! byte of it is read, and counted (`connections_refused{listener, reason}`).
//! Answering it 503 would mean writing to a socket whose request we have not
//! read: the kernel then resets the connection, often before the client has
//! read the answer, so the answer would not be worth the work.
//!
//! The client address is the peer as the listener sees it: a forwarding
//! header is a request's, and no request has been read yet. An IPv6 peer is
//! counted by its `--ipv6-prefix` network, as the limits key it (one host
//! usually has a whole /64), and peers in `--trust-proxy` are not capped per
//! address (every client of a proxy in front arrives from its address): the
//! total still bounds them.

use limits_http::ClientIp;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

/// Connections the admin listener (`/metrics`, `/healthz`, `/readyz`) keeps open at
/// most: a scraper and a few health checkers, each reconnecting at will.
pub const ADMIN_MAX_CONNECTIONS: usize = 16;

/// Connections one address may keep open on the admin listener, so that
/// one runaway script cannot keep the scraper out.
pub const ADMIN_MAX_CONNECTIONS_PER_CLIENT: usize = 4;

/// File descriptors kept aside from the listeners' caps for what the process
/// itself holds open: standard streams, listening sockets, the runtime's
/// event queue and wakers, the store's Redis connections, the state file
/// being written, logs.
pub const RESERVED_DESCRIPTORS: u64 = 64;

/// The most connections a listener can be allowed under a file limit of
/// `file_limit` descriptors (the soft `RLIMIT_NOFILE`), when each of its
/// connections may hold `per_connection` descriptors (2 for a proxy: the
/// client's and the upstream's), after [`RESERVED_DESCRIPTORS`] and the
/// admin listener's [`ADMIN_MAX_CONNECTIONS`]: within it, an accept never
/// fails for want of a descriptor, so that a connection over the cap can
/// still be accepted and closed and the admin listener still answers. At
/// least 1.
///
/// ```
/// // 128 descriptors, a proxy: (128 - 64 - 16) / 2.
/// assert_eq!(limits_server::connections_within_file_limit(128, 2), 24);
/// assert_eq!(limits_server::connections_within_file_limit(10, 2), 1);
/// ```
pub fn connections_within_file_limit(file_limit: u64, per_connection: u64) -> usize {
    let spare = file_limit.saturating_sub(RESERVED_DESCRIPTORS + ADMIN_MAX_CONNECTIONS as u64);
    let fit = spare / per_connection.max(1);
    usize::try_from(fit).unwrap_or(usize::MAX).max(1)
}

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The listener holds its total already.
    Total,
    /// The client's address holds its share already.
    PerClient,
}

/// The `listener` label of the connection metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ListenerLabel {
    listener: String,
}

/// The labels of a refused connection: which listener, and which cap.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusedLabels {
    listener: String,
    reason: String,
}

/// The connection metrics of one server, registered in its registry:
/// `connections_open{listener}` and `connections_refused{listener, reason}`.
#[derive(Clone)]
pub(crate) struct ConnectionMetrics {
    open: Family<ListenerLabel, Gauge>,
    refused: Family<RefusedLabels, Counter>,
}

impl ConnectionMetrics {
    /// Registers both families under the registry's prefix.
    pub(crate) fn register(registry: &mut Registry) -> ConnectionMetrics {
        let metrics = ConnectionMetrics {
            open: Family::default(),
            refused: Family::default(),
        };
        registry.register(
            "connections_open",
            "Connections open per listener",
            metrics.open.clone(),
        );
        registry.register(
            "connections_refused",
            "Connections closed as soon as accepted, per listener and cap: total (--max-connections) or per_client (--max-connections-per-client)",
            metrics.refused.clone(),
        );
        metrics
    }

    /// The counters of the listener called `listener`, each series created
    /// at zero (a dashboard sees it before the first refusal).
    fn counters(&self, listener: &str) -> Counters {
        let refused = |reason: &str| {
            self.refused.get_or_create_owned(&RefusedLabels {
                listener: listener.to_string(),
                reason: reason.to_string(),
            })
        };
        Counters {
            open: self.open.get_or_create_owned(&ListenerLabel {
                listener: listener.to_string(),
            }),
            over_total: refused("total"),
            over_client: refused("per_client"),
        }
    }

    /// Caps for the listener called `listener`, counted here.
    pub(crate) fn caps(
        &self,
        listener: &str,
        max_total: usize,
        max_per_client: usize,
        client_ip: ClientIp,
    ) -> Arc<ConnectionCaps> {
        // A cap of 0 would refuse every connection: the least is 1.
        Arc::new(ConnectionCaps {
            max_total: max_total.max(1),
            max_per_client: max_per_client.max(1),
            client_ip,
            open: Mutex::new(Open::default()),
            counters: self.counters(listener),
        })
    }
}

/// One listener's counters.
struct Counters {
    open: Gauge,
    over_total: Counter,
    over_client: Counter,
}

/// What is open: the total, and per client group (only groups with at
/// least one connection, so at most the total many).
#[derive(Default)]
struct Open {
    total: usize,
    by_client: HashMap<IpAddr, usize>,
}

/// The caps of one listener and what it holds open.
pub(crate) struct ConnectionCaps {
    max_total: usize,
    max_per_client: usize,
    client_ip: ClientIp,
    /// Taken once per accept and once per close, never per request.
    open: Mutex<Open>,
    counters: Counters,
}

impl ConnectionCaps {
    /// Caps that count in a registry of their own, for a listener without
    /// metrics (tests).
    #[cfg(test)]
    pub(crate) fn uncounted(
        max_total: usize,
        max_per_client: usize,
        client_ip: ClientIp,
    ) -> Arc<ConnectionCaps> {
        let metrics = ConnectionMetrics::register(&mut Registry::default());
        metrics.caps("test", max_total, max_per_client, client_ip)
    }

    /// The group `peer` is counted in, or None when it is not capped per
    /// address (a trusted proxy).
    fn group(&self, peer: IpAddr) -> Option<IpAddr> {
        if self.client_ip.trusted().trusts(peer) {
            return None;
        }
        Some(self.client_ip.resolve(peer, &http::HeaderMap::new()).ip)
    }

    /// A place for a connection from `peer`, held until the permit is
    /// dropped; or why there is none (counted).
    pub(crate) fn admit(self: &Arc<Self>, peer: SocketAddr) -> Result<Permit, Refused> {
        let group = self.group(peer.ip());
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.total >= self.max_total {
            drop(open);
            self.counters.over_total.inc();
            return Err(Refused::Total);
        }
        if let Some(group) = group {
            let held = open.by_client.entry(group).or_insert(0);
            if *held >= self.max_per_client {
                drop(open);
                self.counters.over_client.inc();
                return Err(Refused::PerClient);
            }
            *held += 1;
        }
        open.total += 1;
        drop(open);
        self.counters.open.inc();
        Ok(Permit {
            caps: self.clone(),
            group,
        })
    }

    /// Connections open now, and the client groups holding them.
    #[cfg(test)]
    pub(crate) fn open(&self) -> (usize, usize) {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        (open.total, open.by_client.len())
    }

    /// Connections refused so far: over the total, over a client's share.
    #[cfg(test)]
    pub(crate) fn refused(&self) -> (u64, u64) {
        (
            self.counters.over_total.get(),
            self.counters.over_client.get(),
        )
    }

    fn release(&self, group: Option<IpAddr>) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(group) = group {
            if let Some(held) = open.by_client.get_mut(&group) {
                *held -= 1;
                if *held == 0 {
                    open.by_client.remove(&group);
                }
            }
        }
        drop(open);
        self.counters.open.dec();
    }
}

/// One open connection's place under the caps, given back when dropped
/// (when the connection's task ends, its socket closed).
pub(crate) struct Permit {
    caps: Arc<ConnectionCaps>,
    group: Option<IpAddr>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.caps.release(self.group);
    }
}

#[cfg(test)]
mod tests;
