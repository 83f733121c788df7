//! The integration tests of this crate, one binary: a module per area. One
//! area alone: `cargo test -p limits-memcached --test it AREA::`.

mod memcached_server;
#[path = "../../../limits-redis/tests/it/server_port.rs"]
mod server_port;

mod clock_offset;
mod conformance;
mod contention;
mod distinct;
mod outage;
mod servers;
mod store;
