//! The simulation engine behind `limits simulate`: deterministic traffic
//! patterns (manual time, seeded randomness), run through any limiters, and
//! measured exactly: allowed, rejected, the worst window, memory per key, and
//! the decisions that differ from an exact sliding log run alongside.
//!
//! [`Tally`] (and the [`WorstWindow`] in it) is shared with `limits replay`,
//! which streams real traces: both count decisions the same way.

mod pattern;
mod run;
mod tally;
mod worst_window;

pub use pattern::{Arrival, Pattern};
pub use run::{run, Judged, RunResult, Simulation};
pub use tally::Tally;
pub use worst_window::WorstWindow;
