//! `replay --report FILE.html`: the replay as one self-contained page to
//! show a colleague choosing a limiter. Inline SVG and CSS, no script, no
//! link out: it reads the same offline, mailed, or years later. Per limiter:
//! its line of the summary's table (the very numbers the text prints), its
//! allowed and limited requests over the trace's time, its worst window
//! against the limit, and who it limited most and when; then the keys whose
//! fate differed most between the limiters.
//!
//! The markup is well-formed XML as well as HTML (every element closed, the
//! SVG's empty elements written `<x/>`), so that a test can parse it with an
//! XML parser.

use super::rejected::Rejections;
use super::summary::Summary;
use super::timeline::Bin;
use limits::format_seconds;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// A chart's size in SVG units.
const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 140.0;
/// The most bars a chart draws.
const BARS: usize = 120;

/// The page's style: system fonts, two colours a colour-blind reader tells
/// apart (allowed blue, limited orange).
const STYLE: &str =
    "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222}\
table{border-collapse:collapse;margin:1em 0}th,td{padding:.25em .75em;text-align:right}\
th:first-child,td:first-child{text-align:left}tr:nth-child(even){background:#f4f4f4}\
h2{margin-top:2em}.allowed{fill:#1f77b4}.limited{fill:#ff7f0e}svg{background:#fafafa}\
.note{color:#666}";

/// Writes the report of `summary` to `path`, naming the `top` keys each
/// limiter limited most and the `top` whose fate differed most.
pub(super) fn write(path: &Path, summary: &Summary<'_>, top: usize) -> Result<(), String> {
    std::fs::write(path, page(summary, top)).map_err(|e| format!("{}: {e}", path.display()))
}

/// The page.
fn page(summary: &Summary<'_>, top: usize) -> String {
    let title = summary.title();
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\
         <title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    html += &table(summary);
    let limit = summary.rates.as_slice()[0].limit();
    let bars: Vec<(u64, Vec<Bin>)> = summary
        .replayed
        .iter()
        .map(|r| r.timeline.in_bars(BARS))
        .collect();
    let most = bars
        .iter()
        .flat_map(|(_, bins)| bins)
        .map(|b| b.allowed + b.limited)
        .max()
        .unwrap_or(0);
    for (r, (width, bins)) in summary.replayed.iter().zip(&bars) {
        let name = &r.name;
        let _ = write!(html, "<h2 id=\"{name}\">{name}</h2>\n<p>");
        let worst = r.tally.worst_window();
        let _ = write!(
            html,
            "Worst window: <b>{worst}</b> allowed to one key within {}, against a limit of {limit}{}. ",
            window_phrase(summary.window),
            if worst > limit { " (over it)" } else { "" },
        );
        let _ = writeln!(
            html,
            "Against the exact sliding log: {} allowed that it denied, {} denied that it allowed.</p>",
            r.tally.false_allows, r.tally.false_denies
        );
        html += &chart(name, bins, *width, most);
        html += &limited_most(&r.rejected.most(summary.keys, top), r.timeline.start());
    }
    html += &fates(summary, top);
    html += "</body></html>\n";
    html
}

/// The summary's table, a row per limiter (`data-limiter`), its numbers as
/// the text prints them.
fn table(summary: &Summary<'_>) -> String {
    let mut html = format!(
        "<table id=\"limiters\"><thead><tr><th>limiter</th><th>allowed</th><th>rejected</th>\
         <th>worst {}s</th><th>false-allow</th><th>false-deny</th></tr></thead><tbody>\n",
        format_seconds(Duration::from_nanos(summary.window))
    );
    for row in summary.rows() {
        let _ = writeln!(
            html,
            "<tr data-limiter=\"{0}\"><td><a href=\"#{0}\">{0}</a></td><td>{1}</td><td>{2}</td>\
             <td>{3}</td><td>{4}</td><td>{5}</td></tr>",
            row.limiter,
            row.allowed,
            row.rejected,
            row.worst_window,
            row.false_allows,
            row.false_denies
        );
    }
    html + "</tbody></table>\n"
}

/// Allowed (below) and limited (stacked above) requests per bin, as two
/// stepped areas, on the scale of the busiest bin of any limiter (`most`)
/// so that the charts compare. Its totals are in `data-allowed` and
/// `data-limited`.
fn chart(name: &str, bins: &[Bin], width: u64, most: u64) -> String {
    let allowed: u64 = bins.iter().map(|b| b.allowed).sum();
    let limited: u64 = bins.iter().map(|b| b.limited).sum();
    let bar = WIDTH / bins.len().max(1) as f64;
    let y = |n: u64| HEIGHT - HEIGHT * n as f64 / most.max(1) as f64;
    let area = |top: &dyn Fn(&Bin) -> u64, bottom: &dyn Fn(&Bin) -> u64| {
        let mut d = String::new();
        for (i, b) in bins.iter().enumerate() {
            let x = i as f64 * bar;
            let _ = write!(
                d,
                "{}{x:.1},{:.1}H{:.1}",
                if i == 0 { "M" } else { "L" },
                y(top(b)),
                x + bar
            );
        }
        for (i, b) in bins.iter().enumerate().rev() {
            let x = i as f64 * bar;
            let _ = write!(d, "L{:.1},{:.1}H{x:.1}", x + bar, y(bottom(b)));
        }
        d + "Z"
    };
    let below = area(&|b| b.allowed, &|_| 0);
    let above = area(&|b| b.allowed + b.limited, &|b| b.allowed);
    let span = Duration::from_nanos(width.saturating_mul(bins.len() as u64));
    format!(
        "<figure><svg viewBox=\"0 0 {WIDTH} {}\" width=\"{WIDTH}\" role=\"img\" \
         aria-label=\"{name}: allowed and limited requests over time\" \
         data-allowed=\"{allowed}\" data-limited=\"{limited}\">\
         <path class=\"allowed\" d=\"{below}\"/><path class=\"limited\" d=\"{above}\"/>\
         <text x=\"4\" y=\"{}\" font-size=\"11\">0s</text>\
         <text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}s</text>\
         <text x=\"4\" y=\"12\" font-size=\"11\">{most} per {}s</text></svg>\
         <figcaption class=\"note\">Requests per {}s from the first: \
         <span style=\"color:#1f77b4\">allowed</span> ({allowed}), \
         <span style=\"color:#ff7f0e\">limited</span> ({limited}).</figcaption></figure>\n",
        HEIGHT + 16.0,
        HEIGHT + 13.0,
        WIDTH - 4.0,
        HEIGHT + 13.0,
        format_seconds(span),
        format_seconds(Duration::from_nanos(width)),
        format_seconds(Duration::from_nanos(width)),
    )
}

/// Who a limiter limited most, and when (seconds from the first request,
/// at `start`).
fn limited_most(most: &[(&str, Rejections)], start: u64) -> String {
    if most.is_empty() {
        return "<p>Limited nobody.</p>\n".to_string();
    }
    let mut html = "<table class=\"most\"><thead><tr><th>limited most</th><th>rejected</th>\
                    <th>first at</th><th>last at</th></tr></thead><tbody>\n"
        .to_string();
    for (key, r) in most {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}s</td><td>{}s</td></tr>",
            escape(key),
            r.count,
            format_seconds(Duration::from_nanos(r.first.saturating_sub(start))),
            format_seconds(Duration::from_nanos(r.last.saturating_sub(start)))
        );
    }
    html + "</tbody></table>\n"
}

/// The `top` keys whose rejections differ most between the limiters (the
/// most less the fewest), with each limiter's count: where choosing one
/// limiter over another changes who is refused.
fn fates(summary: &Summary<'_>, top: usize) -> String {
    if summary.replayed.len() < 2 || top == 0 {
        return String::new();
    }
    let per_limiter: Vec<HashMap<&str, Rejections>> = summary
        .replayed
        .iter()
        .map(|r| r.rejected.by_key(summary.keys))
        .collect();
    let mut counts: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (i, limiter) in per_limiter.iter().enumerate() {
        for (&key, r) in limiter {
            counts
                .entry(key)
                .or_insert_with(|| vec![0; per_limiter.len()])[i] = r.count;
        }
    }
    let spread = |c: &[u64]| c.iter().max().unwrap_or(&0) - c.iter().min().unwrap_or(&0);
    let mut keys: Vec<(&str, Vec<u64>)> =
        counts.into_iter().filter(|(_, c)| spread(c) > 0).collect();
    // Stable: equal spreads stay in key order.
    keys.sort_by_key(|(_, c)| std::cmp::Reverse(spread(c)));
    keys.truncate(top);
    let mut html = "<h2 id=\"fates\">Keys whose fate differed most</h2>\n".to_string();
    if keys.is_empty() {
        return html + "<p>Every limiter refused every key as often.</p>\n";
    }
    html += "<table id=\"fates-table\"><thead><tr><th>key</th>";
    for r in summary.replayed {
        let _ = write!(html, "<th>{}</th>", r.name);
    }
    html += "<th>spread</th></tr></thead><tbody>\n";
    for (key, c) in &keys {
        let _ = write!(html, "<tr><td>{}</td>", escape(key));
        for n in c {
            let _ = write!(html, "<td>{n}</td>");
        }
        let _ = writeln!(html, "<td>{}</td></tr>", spread(c));
    }
    html + "</tbody></table>\n<p class=\"note\">Requests rejected per key by each limiter.</p>\n"
}

/// "1 second", "1.5 seconds".
fn window_phrase(window: u64) -> String {
    let seconds = format_seconds(Duration::from_nanos(window));
    match seconds.as_str() {
        "1" => "1 second".to_string(),
        _ => format!("{seconds} seconds"),
    }
}

/// `text` safe in an element or a quoted attribute.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out += "&amp;",
            '<' => out += "&lt;",
            '>' => out += "&gt;",
            '"' => out += "&quot;",
            '\'' => out += "&#39;",
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_wherever_it_goes() {
        assert_eq!(
            escape("<a href=\"x\">&'\u{7}</a>"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;\u{fffd}&lt;/a&gt;"
        );
    }

    #[test]
    fn a_chart_carries_its_totals_and_scales_to_the_busiest_bin() {
        let bins = [
            Bin {
                allowed: 2,
                limited: 0,
            },
            Bin {
                allowed: 1,
                limited: 3,
            },
        ];
        let svg = chart("x", &bins, 1_000_000_000, 4);
        assert!(
            svg.contains("data-allowed=\"3\" data-limited=\"3\""),
            "{svg}"
        );
        // The second bin's top (4 of 4) is the chart's top edge.
        assert!(svg.contains("L360.0,0.0H720.0"), "{svg}");
        assert!(svg.contains(">2s</text>"), "{svg}");
    }
}
