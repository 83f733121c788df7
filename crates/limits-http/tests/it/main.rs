//! The integration tests of this crate, one binary (each binary links the
//! whole dependency graph again): a module per area. One area alone:
//! `cargo test -p limits-http --test it AREA::`.

mod common;

mod cost_from;
mod count_statuses;
mod distinct;
mod empty_ratelimit_fields;
mod examples;
mod grpc_answers;
mod in_flight;
mod key_ip_alone;
mod layer;
mod layer_client;
mod layer_embedding;
mod layer_keys;
mod layer_paths_and_bodies;
mod layer_readings;
mod layer_routes;
mod lists;
mod no_client_address;
mod observer_timing;
mod penalty;
mod ratelimit_names;
mod refusal_maps;
mod repeated_values;
mod rule_observer;
mod rules_in_one_trip;
mod sync_and_boxed_paths;
mod tiers;
mod too_many_response;
