//! The integration tests of this crate, one binary (each binary links the
//! whole dependency graph again): a module per area. One area alone:
//! `cargo test -p limits-server --test it AREA::`.

#[path = "../../../limits-redis/tests/it/redis_server.rs"]
mod redis_server;
mod rls_common;
#[path = "../../../limits-redis/tests/it/server_port.rs"]
mod server_port;

mod admin_counters;
mod admin_page;
mod allocations_per_request;
mod backend_service;
mod connection_caps;
mod drain_connections;
mod embed;
mod header_timeout;
mod proxy_runtimes;
mod rls_all_or_nothing;
mod rls_config;
mod rls_config_docs;
mod rls_config_errors;
mod rls_config_extensions;
mod rls_config_props;
mod rls_config_wildcards;
mod rls_global_switches;
mod rls_health;
mod rls_limit_override;
mod rls_metric_labels;
mod rls_metric_names;
mod rls_newest_keys;
mod rls_quota_metadata;
mod rls_round_trips;
mod rls_service;
mod rls_stores;
mod rule_store_decide_now;
mod serve_round_trips;
mod serving;
mod store_conformance;
