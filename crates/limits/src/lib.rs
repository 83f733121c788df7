//! Exact rate limiters: a sliding log and its peers, keyed per client.
//!
//! Every decision is a pure function of (state, now, cost) in integer
//! nanoseconds, with no floating point: the same trace gives the same
//! decisions, retry times included, on every machine and every backend.
//!
//! - [`Rate`] / [`Rates`]: "10/second; 1000/hour", parsed by one parser.
//! - [`Algorithm`]: none, fixed-window, sliding-log, token-bucket,
//!   sliding-window, leaky-bucket, and one approximation, smoothed-rate.
//! - [`Rule`]: an algorithm with its rates, the decision function for one key.
//! - [`KeyedLimiter`]: a rule applied per key, thread-safe and sharded, with
//!   bounded memory.
//! - [`Decision`]: allowed, remaining, retry_after, reset_after, delay.
//! - [`Penalty`]: a ban for a key denied too often
//!   ([`KeyedLimiter::with_penalty`]).
//!
//! ```
//! use limits::{Algorithm, KeyedLimiter, Rule};
//!
//! let rule = Rule::new(Algorithm::SlidingLog, "5 per second".parse()?);
//! let limiter: KeyedLimiter<String> = KeyedLimiter::new(rule);
//! let decision = limiter.check("203.0.113.7", 1);
//! assert!(decision.allowed);
//! assert_eq!(decision.remaining, 4);
//! # Ok::<(), limits::ParseError>(())
//! ```
//!
//! This crate does no I/O and needs no async runtime.

#![warn(missing_docs)]

mod algorithm;
pub mod algorithms;
mod clock;
mod decision;
mod distinct;
mod duration;
mod keyed;
mod local_store;
mod parse;
mod penalty;
mod rate;
mod rule;
mod shards;
pub mod simulate;
mod sketch;
mod state_codec;
mod state_kinds;
mod store;

pub use algorithm::{Algorithm, UnknownAlgorithm};
pub use clock::{Clock, ManualClock, SystemClock};
pub use decision::{Decision, Mode, Receipt, RetryAfter, Settlement};
pub use distinct::{Distinct, DistinctLimiter, DistinctSketch, Seen};
pub use duration::{format_duration, format_seconds, parse_duration, parse_seconds};
pub use keyed::{KeyedLimiter, MemoryReport, Options};
pub use local_store::LocalStore;
pub use parse::ParseError;
pub use penalty::{Ban, MAX_AFTER, MAX_BAN, Penalty, PenaltyError, PenaltyState};
pub use rate::{DEFAULT_WINDOW, MAX_LIMIT, MAX_WINDOW, Rate, RateError, Rates};
pub use rule::{KeyState, Rule};
pub use sketch::{Sketch, SketchOptions};
pub use store::{Asked, Store, StoreError, StoreErrorKind, UnsupportedRule, Until, Verdict};

/// The README's examples, run as doctests so that they cannot go stale.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
