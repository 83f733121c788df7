use super::*;
use limits::simulate::{Pattern, Simulation};
use limits::{Algorithm, Rule};
use std::path::PathBuf;

/// A simulation of every limiter, as `limits simulate` builds it.
fn simulation(pattern: Pattern, rates: &str, keys: u32) -> Simulation {
    let rates: limits::Rates = rates.parse().expect("rates");
    let rules: Vec<Rule> = (Algorithm::ALL.iter())
        .map(|&a| Rule::new(a, rates.clone()))
        .collect();
    Simulation::new(pattern, rates, keys, &rules)
}

/// A file in the temp directory that no other test or run uses.
fn temp_file(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("limits-plot-{}-{name}.svg", std::process::id()))
}

#[test]
fn draws_a_titled_svg_with_one_caption_per_limiter() {
    let sim = simulation(Pattern::Edge, "10/s", 1);
    let path = temp_file("edge");
    draw(&path, &sim).expect("draw");
    let svg = std::fs::read_to_string(&path).expect("read back");
    let _ = std::fs::remove_file(&path);

    assert!(svg.starts_with("<svg "), "{}", &svg[..svg.len().min(80)]);
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<svg").count(), 1);
    assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
    assert!(svg.contains("width=\"1000\""));
    assert!(svg.contains("pattern edge: 20 requests, limit 10 per second"));
    assert!(svg.contains("arrivals: 20 requests, worst 1s = 20"));
    assert!(svg.contains("sliding-log: 10 allowed, 10 rejected, worst 1s = 10"));
    assert!(svg.contains("fixed-window: 20 allowed, 0 rejected, worst 1s = 20"));
    for o in &sim.results {
        let caption = format!(
            "{}: {} allowed, {} rejected, worst 1s = {}",
            o.algorithm, o.allowed, o.rejected, o.worst_window
        );
        assert_eq!(svg.matches(&caption).count(), 1, "{caption}");
    }
    // The leaky bucket queues, so the key explains the waits.
    assert!(svg.contains("waiting in the queue"));
}

#[test]
fn lanes_agree_with_the_engine_for_every_pattern() {
    let second = 1_000_000_000;
    for pattern in ["steady", "edge", "burst", "random", "ramp"] {
        let sim = simulation(pattern.parse().expect("pattern"), "10/s; 25/5s", 2);
        let end = 20 * second;
        assert_eq!(
            lanes::offered(&sim, end).allowed.len(),
            sim.arrivals.len() / 2
        );
        for o in &sim.results {
            let lane = lanes::limiter(&sim, o, end);
            let what = format!("{pattern} {}", o.algorithm);
            assert_eq!(lane.worst, o.worst_window, "{what}");
            assert_eq!(2 * lane.allowed.len() as u64, o.allowed, "{what}");
            assert_eq!(2 * lane.rejected.len() as u64, o.rejected, "{what}");
            let top = lane.allowed.iter().map(|p| p.1).fold(0.0, f64::max);
            assert_eq!(
                top, lane.worst as f64,
                "{what}: the dots reach the worst window"
            );
        }
    }
}

#[test]
fn several_clients_say_which_one_is_shown() {
    let sim = simulation(Pattern::Steady, "10/s", 3);
    let svg = render(&sim).expect("render");
    assert!(svg.contains("pattern steady: 60 requests per client, 3 clients (key 0 shown)"));
    assert!(svg.contains("arrivals to key 0: 60 requests, worst 1s = 20"));
    assert!(svg.contains("sliding-log: 30 allowed, 30 rejected, worst 1s = 10"));
}

#[test]
fn an_unwritable_path_is_an_error() {
    let sim = simulation(Pattern::Burst, "10/s", 1);
    let dir = temp_file("no-such-directory");
    let err = draw(&dir.join("plot.svg"), &sim).expect_err("a missing directory");
    assert!(err.starts_with("cannot write the picture: "), "{err}");
    assert!(!dir.exists());
}

#[test]
fn too_many_requests_are_refused_not_drawn() {
    let mut sim = simulation(Pattern::Edge, "10/s", 1);
    sim.arrivals = Pattern::Steady.arrivals(2_000, 1_000_000_000, 1);
    sim.results.clear();
    let err = render(&sim).expect_err("12000 requests");
    assert!(
        err.contains("12000 requests per client are too many"),
        "{err}"
    );
}
