//! The integration tests of this crate, one binary (each binary links the
//! whole dependency graph again): a module per area. One area alone:
//! `cargo test -p limits-redis --test it AREA::`.

mod redis_server;
mod server_port;
mod tls_pki;

mod auth;
mod batch;
mod clock;
mod cluster;
mod conformance;
mod distinct;
mod eviction_policy;
mod expiry_in_window;
mod failure;
mod in_order;
mod large_costs;
mod local_fallback;
mod module;
mod new_keys_cap;
mod redis_store;
mod sentinel;
mod settle;
mod sliding_log_ring;
mod start_before_redis;
mod store_full;
mod tls;
mod unix_socket;
