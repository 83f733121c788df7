//! Draws one lane: its markers and step line against the limit, on the
//! shared time axis.

use super::lanes::Lane;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// Allowed requests and their count.
pub const GREEN: RGBColor = RGBColor(0x1b, 0x9e, 0x3e);
/// Rejected requests.
pub const RED: RGBColor = RGBColor(0xd6, 0x27, 0x28);
/// Offered requests and their count.
pub const BLUE: RGBColor = RGBColor(0x1f, 0x5f, 0xbf);
/// The limit line.
pub const LIMIT: RGBColor = RGBColor(0x40, 0x40, 0x40);
/// Window edges.
pub const EDGE: RGBColor = RGBColor(0xa0, 0xa0, 0xa0);

/// What every panel shares: the axes, the limit and the window.
pub struct Frame {
    /// The time axis ends here, in seconds (it starts at 0).
    pub x_end: f64,
    /// The count axis ends here.
    pub y_max: f64,
    /// The limit L: a dashed line.
    pub limit: f64,
    /// The window W in seconds: window edges are drawn at its multiples.
    pub window: f64,
    /// The count axis' description, e.g. "in last 1s".
    pub y_desc: String,
}

/// The most window edges worth drawing; beyond, they would be a grey wash.
const MAX_EDGES: f64 = 40.0;

/// Draws `lane` on `area`; `color` is its step line's and dots'; the time
/// axis is described only if `last`.
pub fn draw(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    lane: &Lane,
    frame: &Frame,
    color: RGBColor,
    last: bool,
) -> Result<(), String> {
    let mut chart = ChartBuilder::on(area)
        .caption(&lane.caption, ("sans-serif", 16))
        .margin_left(10)
        .margin_right(24)
        .x_label_area_size(if last { 40 } else { 22 })
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..frame.x_end, 0f64..frame.y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .bold_line_style(BLACK.mix(0.08))
        .y_labels(5)
        .x_labels(12)
        .label_style(("sans-serif", 13))
        .x_label_formatter(&|x| tidy(*x))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .y_desc(frame.y_desc.as_str())
        .x_desc(if last { "time (s)" } else { "" })
        .draw()
        .map_err(err)?;

    let edges = (frame.x_end / frame.window).floor();
    if edges <= MAX_EDGES {
        let xs = (1..=edges as u32).map(|k| f64::from(k) * frame.window);
        chart
            .draw_series(xs.map(|x| {
                DashedPathElement::new(vec![(x, 0.0), (x, frame.y_max)], 3, 3, EDGE.stroke_width(1))
            }))
            .map_err(err)?;
    }
    let mut under = lane.step.clone();
    under.push((frame.x_end, 0.0));
    chart
        .draw_series(std::iter::once(Polygon::new(
            under,
            color.mix(0.12).filled(),
        )))
        .map_err(err)?;
    chart
        .draw_series(LineSeries::new(
            lane.step.iter().copied(),
            color.stroke_width(2),
        ))
        .map_err(err)?;
    let limit = [(0.0, frame.limit), (frame.x_end, frame.limit)];
    chart
        .draw_series(DashedLineSeries::new(limit, 8, 5, LIMIT.stroke_width(2)))
        .map_err(err)?;
    chart
        .draw_series(
            (lane.waits.iter())
                .map(|w| PathElement::new(w.to_vec(), color.mix(0.5).stroke_width(1))),
        )
        .map_err(err)?;
    chart
        .draw_series((lane.allowed.iter()).map(|&p| Circle::new(p, 3, color.filled())))
        .map_err(err)?;
    chart
        .draw_series((lane.rejected.iter()).map(|&p| Cross::new(p, 4, RED.stroke_width(2))))
        .map_err(err)?;
    Ok(())
}

/// A tick label without float noise or trailing zeros: 0.2, 1, 1000.
fn tidy(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// A drawing error as text.
pub fn err(e: impl std::fmt::Display) -> String {
    format!("drawing failed: {e}")
}
