//! `--plot FILE.svg`: the simulation as a picture (plotters, SVG backend).
//!
//! A title, a key, then one panel per row on a shared time axis: key 0's
//! arrivals with their count in the trailing window, then each limiter's
//! allowed (dots) and rejected (crosses) requests with the count it let
//! through in (t - W, t], against the limit L.

mod key;
mod lanes;
mod panel;
#[cfg(test)]
mod tests;

use crate::report::limits_phrase;
use limits::format_seconds;
use limits::simulate::Simulation;
use panel::{Frame, BLUE, GREEN};
use plotters::prelude::*;
use std::path::Path;
use std::time::Duration;

/// The picture's width, in pixels.
const WIDTH: u32 = 1000;
/// Each panel's height; the last gets room for the time axis' name.
const PANEL: u32 = 170;
const LAST_EXTRA: u32 = 18;
/// The title's height; the key's rows go under it.
const TITLE: u32 = 36;
/// The most arrivals of key 0 worth a marker each; more would make an SVG
/// of many megabytes that no reader could tell apart.
const MAX_ARRIVALS: usize = 10_000;

/// Draws `sim` to `path` as an SVG picture: key 0's arrivals, then one panel
/// per limiter, in `sim.results`' order. The error names what went wrong
/// (the caller adds the path).
pub fn draw(path: &Path, sim: &Simulation) -> Result<(), String> {
    let svg = render(sim)?;
    std::fs::write(path, svg).map_err(|e| format!("cannot write the picture: {e}"))
}

/// The picture as SVG text.
fn render(sim: &Simulation) -> Result<String, String> {
    let shown = sim.arrivals.iter().filter(|a| a.key == 0).count();
    if shown > MAX_ARRIVALS {
        return Err(format!(
            "{shown} requests per client are too many to draw (at most {MAX_ARRIVALS}): \
             lower --limit"
        ));
    }
    let window = sim.window();
    let last = (sim.arrivals.iter().map(|a| a.t))
        .chain(
            sim.results
                .iter()
                .flat_map(|r| r.judged.iter().map(|j| j.release)),
        )
        .max()
        .unwrap_or(0);
    let end = last.saturating_add(window / 4).max(window);
    let mut lanes = vec![lanes::offered(sim, end)];
    lanes.extend(sim.results.iter().map(|r| lanes::limiter(sim, r, end)));
    let peak = lanes.iter().map(|l| l.worst).max().unwrap_or(0);
    let limit = sim.limit();
    let frame = Frame {
        x_end: lanes::secs(end),
        y_max: (peak.max(limit) as f64 * 1.15).ceil().max(2.0),
        limit: limit as f64,
        window: lanes::secs(window),
        y_desc: format!("in last {}s", format_seconds(Duration::from_nanos(window))),
    };

    let rows = lanes.len() as u32;
    let queued = lanes.iter().any(|l| !l.waits.is_empty());
    let key = key::Key::new(window, limit, queued, WIDTH)?;
    let header = TITLE + key.height() + 6;
    let height = header + rows * PANEL + LAST_EXTRA;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(panel::err)?;
        let (header, mut rest) = root.split_vertically(header);
        let header = header
            .titled(
                &title(sim, shown),
                ("sans-serif", 22).into_font().style(FontStyle::Bold),
            )
            .map_err(panel::err)?;
        key.draw(&header)?;
        for (i, lane) in lanes.iter().enumerate() {
            let is_last = i + 1 == lanes.len();
            let tall = PANEL + if is_last { LAST_EXTRA } else { 0 };
            let (area, below) = rest.split_vertically(tall);
            let color = if i == 0 { BLUE } else { GREEN };
            panel::draw(&area, lane, &frame, color, is_last)?;
            rest = below;
        }
        root.present().map_err(panel::err)?;
    }
    Ok(svg)
}

/// `pattern steady: 60 requests, limit 10 per second`, saying which client
/// is shown when there are several.
fn title(sim: &Simulation, shown: usize) -> String {
    let clients = if sim.keys > 1 {
        format!(" per client, {} clients (key 0 shown)", sim.keys)
    } else {
        String::new()
    };
    format!(
        "pattern {}: {shown} requests{clients}, limit {}",
        sim.pattern,
        limits_phrase(&sim.rates)
    )
}
