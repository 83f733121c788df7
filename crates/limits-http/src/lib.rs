//! A tower [`Layer`](tower_layer::Layer) that puts an exact rate limiter in
//! front of any HTTP service (axum, tonic, hyper).

#![warn(missing_docs)]

mod key;

pub use key::{KeyPart, KeySpec, KeySpecError, MAX_KEY_LEN};
mod problem;

pub use problem::{problem, problem_with, PROBLEM_JSON};
