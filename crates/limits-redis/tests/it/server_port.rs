//! Ports for the test servers (redis-server, memcached, nginx) that tests
//! start on 127.0.0.1. Shared by the tests of limits-redis,
//! limits-memcached, limits-server and limits-cli (included by path).

#![allow(dead_code)]

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// The first port handed out: above the well-known and registered ports
/// that a developer's machine may already serve.
const FIRST: u32 = 10_000;

/// A port nothing listens on now, below the kernel's range of ephemeral
/// ports. A server may be started on it later (or stopped and restarted)
/// while clients already point at it: no connection's own end is ever
/// given a port there, so no client can take it in between, not even one
/// retrying to connect to it, which on loopback can connect to itself once
/// the kernel hands it the port it is dialling.
pub fn free_port() -> u16 {
    free_port_where(|_| true)
}

/// A free port, as [`free_port`], for which `also(port)` holds.
pub fn free_port_where(also: impl Fn(u16) -> bool) -> u16 {
    // Threads of one test binary never get the same port; processes start
    // apart so two binaries at once seldom try the same ones.
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let span = ephemeral_start() - FIRST;
    let start = std::process::id().wrapping_mul(7_919);
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (FIRST + start.wrapping_add(n) % span) as u16;
        if also(port) && TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port between {FIRST} and {}", ephemeral_start());
}

/// The first of the kernel's ephemeral ports (Linux's default when its
/// setting cannot be read).
pub fn ephemeral_start() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .filter(|&first: &u32| first > FIRST && first <= 65_535)
        .unwrap_or(32_768)
}
