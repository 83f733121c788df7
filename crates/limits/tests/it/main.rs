//! The integration tests of this crate, one binary (each binary links the
//! whole dependency graph again): a module per area. One area alone:
//! `cargo test -p limits --test it AREA::`.

mod counting;
mod edges;
mod keyed_trace;

mod bucket_derived;
mod clock_order;
mod compact_sliding_window;
mod compact_slots;
mod decide_fast_path_edges;
mod distinct;
mod fixed_window;
mod idle_from_decision;
mod keyed;
mod keyed_cap;
mod keyed_sliding_log;
mod leaky_bucket;
mod log_cost;
mod log_inline_entry;
mod log_ring_chunks;
mod log_ring_growth;
mod other_limiters_decide;
mod other_limiters_decide_edges;
mod parsing;
mod settle;
mod simulate;
mod simulate_stream;
mod sketch;
mod sliding_log;
mod sliding_window;
mod slot_kinds;
mod slot_layout;
mod smoothed_rate;
mod state_size;
mod sweep_guarantee;
mod token_bucket;
mod token_bucket_decide;

mod worst_window_compact;
