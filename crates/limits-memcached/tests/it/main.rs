//! The integration tests of this crate, one binary: a module per area. One
//! area alone: `cargo test -p limits-memcached --test it AREA::`.

mod memcached_server;

mod conformance;
mod contention;
mod outage;
mod servers;
mod store;
