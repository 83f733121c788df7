//! `--plot FILE.svg`: the simulation as a picture (plotters, SVG backend).

use crate::simulate::Simulation;
use std::path::Path;

/// Draws `sim` to `path`.
pub fn draw(path: &Path, sim: &Simulation) -> Result<(), String> {
    let _ = (path, sim.limit(), sim.window());
    Err("plotting is being written".to_string())
}
