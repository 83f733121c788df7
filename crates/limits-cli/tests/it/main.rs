//! The integration tests of this crate, one binary (each binary links the
//! whole dependency graph again): a module per area. One area alone:
//! `cargo test -p limits-cli --test it AREA::`.

mod common;
#[path = "../../../limits-memcached/tests/it/memcached_server.rs"]
mod memcached_server;
#[path = "../../../limits-redis/tests/it/redis_server.rs"]
mod redis_server;
#[path = "../../../limits-redis/tests/it/server_port.rs"]
mod server_port;
#[path = "../../../limits-redis/tests/it/tls_pki.rs"]
mod tls_pki;

mod bench;
mod limiters;
mod memcached_store;
mod readme;
mod redis_urls;
mod replay;
mod replay_distinct;
mod replay_idle_keys;
mod replay_large;
mod replay_redis;
mod replay_sketch;
mod rls;
mod rls_check_config;
mod rls_envoy;
mod rls_envoy_windows;
mod rls_outage_log;
mod rls_reference_env;
mod rls_state;
mod rls_watch;
mod security_nginx;
mod security_recipes;
mod serve;
mod serve_admin_page;
mod serve_check_config;
mod serve_client;
mod serve_connections;
mod serve_cost_from;
mod serve_count_failed;
mod serve_distinct;
mod serve_in_flight;
mod serve_key_floods;
mod serve_lists;
mod serve_metrics_counts;
mod serve_operations;
mod serve_paths_and_bodies;
mod serve_penalty;
mod serve_probes;
mod serve_readings;
mod serve_redis;
mod serve_redis_at_start;
mod serve_redis_clock;
mod serve_redis_counts;
mod serve_redis_flood;
mod serve_sketch;
mod serve_tiers;
mod serve_workers;
mod simulate;
mod simulate_stream;
