//! The key under the title: what the markers and lines mean, in as many
//! centred rows as the width needs.

use super::panel::{err, BLUE, EDGE, GREEN, LIMIT, RED};
use crate::report::window_name;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Height of one row of the key, in pixels.
pub const ROW: u32 = 22;
/// Room for a marker before its text, and between entries.
const SWATCH: i32 = 22;
const GAP: i32 = 18;

/// A marker of the key.
#[derive(Clone, Copy)]
enum Mark {
    Arrival,
    Dot,
    Cross,
    Line,
    Wait,
    Limit,
    Edge,
}

/// One entry of the key: its marker, its text, and its width with the swatch.
#[derive(Clone)]
struct Entry {
    mark: Mark,
    text: String,
    width: i32,
}

/// A row of the key: its entries at their x offsets, and its width.
struct Row {
    entries: Vec<(i32, Entry)>,
    width: i32,
}

/// The key's entries, laid out in balanced rows that fit the picture.
pub struct Key {
    rows: Vec<Row>,
}

impl Key {
    /// The entries for a picture with window `window` ns and limit `limit`,
    /// in rows no wider than `width` px; `queued` adds the leaky bucket's waits.
    pub fn new(window: u64, limit: u64, queued: bool, width: u32) -> Result<Key, String> {
        let window = window_name(window);
        let mut items = vec![
            (Mark::Arrival, "arrival".to_string()),
            (Mark::Dot, "allowed (at release)".to_string()),
            (
                Mark::Cross,
                "rejected (at the count it would make)".to_string(),
            ),
            (Mark::Line, format!("count in the last {window}")),
            (Mark::Limit, format!("limit {limit}")),
            (Mark::Edge, "window edges".to_string()),
        ];
        if queued {
            items.insert(3, (Mark::Wait, "waiting in the queue".to_string()));
        }
        let mut entries = Vec::new();
        for (mark, text) in items {
            let (w, _) = font().font.box_size(&text).map_err(err)?;
            let width = SWATCH + w as i32;
            entries.push(Entry { mark, text, width });
        }
        // As few rows as fit, then balanced: wrap at the average row's width.
        let room = width as i32 - 2 * GAP;
        let total: i32 = entries.iter().map(|e| e.width + GAP).sum();
        let n = (total + room - 1) / room;
        let rows = layout(&entries, (total / n.max(1) + GAP).min(room));
        let rows = if rows.len() as i32 > n {
            layout(&entries, room)
        } else {
            rows
        };
        Ok(Key { rows })
    }

    /// The height the key needs.
    pub fn height(&self) -> u32 {
        ROW * self.rows.len() as u32
    }

    /// Draws the key on `area`, its rows centred.
    pub fn draw(&self, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), String> {
        let width = area.dim_in_pixel().0 as i32;
        for (r, row) in self.rows.iter().enumerate() {
            let y = ROW as i32 * r as i32 + ROW as i32 / 2;
            for (offset, entry) in &row.entries {
                let x = (width - row.width) / 2 + offset;
                marker(area, entry.mark, x, y)?;
                let style = font().pos(Pos::new(HPos::Left, VPos::Center));
                area.draw(&Text::new(entry.text.as_str(), (x + SWATCH, y), style))
                    .map_err(err)?;
            }
        }
        Ok(())
    }
}

/// Greedy rows, each at most `wrap` wide unless one entry alone is wider.
fn layout(entries: &[Entry], wrap: i32) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for e in entries {
        match rows.last_mut() {
            Some(row) if row.width + GAP + e.width <= wrap => {
                row.entries.push((row.width + GAP, e.clone()));
                row.width += GAP + e.width;
            }
            _ => rows.push(Row {
                entries: vec![(0, e.clone())],
                width: e.width,
            }),
        }
    }
    rows
}

fn font() -> TextStyle<'static> {
    ("sans-serif", 14).into_font().color(&BLACK.mix(0.8))
}

/// Draws `mark` in the swatch starting at (x, y).
fn marker(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    mark: Mark,
    x: i32,
    y: i32,
) -> Result<(), String> {
    let dashed = |points, size, style| DashedPathElement::new(points, size, size, style);
    let line = vec![(x, y), (x + 18, y)];
    match mark {
        Mark::Arrival => area.draw(&Circle::new((x + 8, y), 4, BLUE.filled())),
        Mark::Dot => area.draw(&Circle::new((x + 8, y), 4, GREEN.filled())),
        Mark::Cross => area.draw(&Cross::new((x + 8, y), 4, RED.stroke_width(2))),
        Mark::Line => area.draw(&PathElement::new(line, GREEN.stroke_width(2))),
        Mark::Wait => area.draw(&PathElement::new(line, GREEN.mix(0.5).stroke_width(1))),
        Mark::Limit => area.draw(&dashed(line, 5, LIMIT.stroke_width(2))),
        Mark::Edge => area.draw(&dashed(
            vec![(x + 9, y - 7), (x + 9, y + 7)],
            3,
            EDGE.stroke_width(1),
        )),
    }
    .map_err(err)
}
