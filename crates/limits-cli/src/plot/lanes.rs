//! What the panels show, in seconds and counts: key 0's arrivals, and for
//! each limiter what each arrival got and the count it let through in the trailing
//! window (t - W, t], counted at release times.

use limits::format_seconds;
use limits::simulate::{RunResult, Simulation};
use std::time::Duration;

/// One panel: markers, and the trailing-window count as a step line.
pub struct Lane {
    /// The panel's caption, e.g. `sliding-log: 10 allowed, 10 rejected, worst 1s = 10`.
    pub caption: String,
    /// Admitted requests: (release in s, the count just after it).
    pub allowed: Vec<(f64, f64)>,
    /// Rejected requests: (arrival in s, the count it would have made).
    pub rejected: Vec<(f64, f64)>,
    /// Queued requests' waits (leaky bucket): arrival to release, at the
    /// height of the request's dot.
    pub waits: Vec<[(f64, f64); 2]>,
    /// Vertices of the step line: the count in (t - W, t] from 0 to the end.
    pub step: Vec<(f64, f64)>,
    /// The step line's highest point: the worst window.
    pub worst: u64,
}

/// Costs of events counted in the trailing window (t - W, t].
struct Rolling {
    window: u64,
    /// Event times, sorted.
    times: Vec<u64>,
    /// `prefix[i]`: the cost of the first `i` events.
    prefix: Vec<u64>,
}

impl Rolling {
    /// `events` are (time, cost); they are sorted here (stably).
    fn new(events: &mut [(u64, u64, u64)], window: u64) -> Rolling {
        events.sort_by_key(|e| e.0);
        let mut prefix = vec![0];
        let mut sum = 0u64;
        for e in events.iter() {
            sum = sum.saturating_add(e.1);
            prefix.push(sum);
        }
        let times = events.iter().map(|e| e.0).collect();
        Rolling {
            window,
            times,
            prefix,
        }
    }

    /// The cost of events at or before `t`.
    fn upto(&self, t: u64) -> u64 {
        self.prefix[self.times.partition_point(|&x| x <= t)]
    }

    /// The cost of events at or before `t` but after `t - W`.
    fn at(&self, t: u64) -> u64 {
        self.upto(t)
            .saturating_sub(t.checked_sub(self.window).map_or(0, |s| self.upto(s)))
    }

    /// The count just after the `k`-th event (same-instant events stack).
    fn after(&self, k: usize) -> u64 {
        let t = self.times[k];
        self.prefix[k + 1].saturating_sub(t.checked_sub(self.window).map_or(0, |s| self.upto(s)))
    }

    /// The step line from 0 to `end` ns, in seconds, and its highest point.
    fn step(&self, end: u64) -> (Vec<(f64, f64)>, u64) {
        let mut breaks: Vec<u64> = self.times.clone();
        breaks.extend(self.times.iter().map(|t| t.saturating_add(self.window)));
        breaks.sort_unstable();
        breaks.dedup();
        let (mut line, mut last, mut worst) = (vec![(0.0, 0.0)], 0, 0);
        for b in breaks.into_iter().filter(|&b| b <= end) {
            let now = self.at(b);
            line.push((secs(b), last as f64));
            line.push((secs(b), now as f64));
            (last, worst) = (now, worst.max(now));
        }
        line.push((secs(end), last as f64));
        (line, worst)
    }
}

/// Nanoseconds to seconds, for the time axis.
pub fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// "worst 1s", as in the table's column.
fn worst_label(window: u64) -> String {
    format!("worst {}s", format_seconds(Duration::from_nanos(window)))
}

/// Key 0's arrivals: every request offered, with their trailing count.
pub fn offered(sim: &Simulation, end: u64) -> Lane {
    let mut events: Vec<(u64, u64, u64)> = (sim.arrivals.iter())
        .filter(|a| a.key == 0)
        .map(|a| (a.t, a.cost, a.t))
        .collect();
    let rolling = Rolling::new(&mut events, sim.window());
    let (step, worst) = rolling.step(end);
    let who = if sim.keys > 1 { " to key 0" } else { "" };
    Lane {
        caption: format!(
            "arrivals{who}: {} requests, {} = {worst}",
            events.len(),
            worst_label(sim.window())
        ),
        allowed: (0..events.len())
            .map(|k| (secs(events[k].0), rolling.after(k) as f64))
            .collect(),
        rejected: Vec::new(),
        waits: Vec::new(),
        step,
        worst,
    }
}

/// What `result`'s limiter did with key 0's arrivals.
pub fn limiter(sim: &Simulation, result: &RunResult, end: u64) -> Lane {
    let mut admitted = Vec::new();
    let mut refused = Vec::new();
    for (a, j) in sim.arrivals.iter().zip(&result.judged) {
        match (a.key, j.allowed) {
            (0, true) => admitted.push((j.release, a.cost, a.t)),
            (0, false) => refused.push((a.t, a.cost)),
            _ => {}
        }
    }
    let rolling = Rolling::new(&mut admitted, sim.window());
    let (step, worst) = rolling.step(end);
    let allowed: Vec<(f64, f64)> = (0..admitted.len())
        .map(|k| (secs(admitted[k].0), rolling.after(k) as f64))
        .collect();
    let waits = (admitted.iter().zip(&allowed))
        .filter(|(e, _)| e.0 > e.2)
        .map(|(e, &(x, y))| [(secs(e.2), y), (x, y)])
        .collect();
    let rejected = (refused.iter())
        .map(|&(t, cost)| (secs(t), rolling.at(t).saturating_add(cost) as f64))
        .collect();
    Lane {
        caption: format!(
            "{}: {} allowed, {} rejected, {} = {worst}",
            crate::report::limiter_name(result.algorithm, result.sketch),
            admitted.len(),
            refused.len(),
            worst_label(sim.window())
        ),
        allowed,
        rejected,
        waits,
        step,
        worst,
    }
}
