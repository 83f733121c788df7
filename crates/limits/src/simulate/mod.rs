//! The simulation engine behind `limits simulate`: deterministic traffic
//! patterns (manual time, seeded randomness), run through any limiters, and
//! measured exactly: allowed, rejected, the worst window, memory per key, and
//! the decisions that differ from an exact sliding log run alongside.
//!
//! A simulation is one streaming pass: the pattern's arrivals are made one at
//! a time in time order ([`Pattern::stream`]) and every limiter sees each as
//! it comes ([`Runner`]), so `--keys 100000` costs the keys' states, not a
//! record of every request.
//!
//! [`Tally`] (and the [`WorstWindow`] in it) is shared with `limits replay`,
//! which streams real traces: both count decisions the same way.

mod pattern;
mod recent;
mod run;
mod simulation;
mod tally;
mod worst_window;

pub use pattern::{Arrival, Arrivals, Pattern};
pub use run::{Judged, Keep, RunResult, Runner, run};
pub use simulation::Simulation;
pub use tally::Tally;
pub use worst_window::WorstWindow;
