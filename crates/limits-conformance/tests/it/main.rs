//! The integration tests of this crate, one binary (each binary links the
//! whole dependency graph again): a module per area. One area alone:
//! `cargo test -p limits-conformance --test it AREA::`.

mod memory;
mod reference_counter;
mod sketch;
mod wrong_stores;
