//! The simulation engine behind `limits simulate`: deterministic traffic
//! patterns (manual time, seeded randomness), run through any limiters, and
//! measured exactly: allowed, rejected, the worst window, memory per key, and
//! the decisions that differ from an exact sliding log run alongside.
//!
//! [`WorstWindow`] is shared with `limits replay`, which streams real traces.

mod pattern;
mod run;
mod worst_window;

pub use pattern::{Arrival, Pattern};
pub use run::{run, Outcome, Verdict};
pub use worst_window::WorstWindow;
