//! One replay in progress: each event decided by every limiter (in memory
//! or in Redis), with the exact sliding log beside them for the false allows
//! and denies, each decision tallied, its key held until it is idle
//! everywhere, the rows written and the progress shown. `mod.rs` reads the
//! arguments and the trace and feeds the events here in time order.

use super::decisions::DecisionsWriter;
use super::keys::{KeyId, Keys};
use super::rejected::Rejected;
use super::store::{Limiter, Shared};
use super::timeline::Timeline;
use super::trace::Event;
use super::ReplayArgs;
use indicatif::{ProgressBar, ProgressStyle};
use limits::simulate::Tally;
use limits::{Algorithm, DistinctLimiter, KeyedLimiter, ManualClock, Rule, Sketch, SketchOptions};
use std::io::IsTerminal;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One limiter being replayed, and the tally of its decisions.
pub(super) struct Replayed {
    pub(super) algorithm: Algorithm,
    /// Its row's name: the algorithm's, `sketch SIZE` or `distinct N/W`.
    pub(super) name: String,
    limiter: Limiter,
    pub(super) tally: Tally<KeyId>,
    /// Rejections per key.
    pub(super) rejected: Rejected,
    /// Its decisions over the trace's time.
    pub(super) timeline: Timeline,
}

impl Replayed {
    fn new(algorithm: Algorithm, name: String, limiter: Limiter, window: u64) -> Replayed {
        Replayed {
            algorithm,
            name,
            limiter,
            tally: Tally::new(window),
            rejected: Rejected::default(),
            timeline: Timeline::default(),
        }
    }
}

/// One replay in progress: every limiter asked, with a sliding log alongside
/// for the false allows and denies, the rows written, the progress shown.
pub(super) struct Run {
    replayed: Vec<Replayed>,
    exact: Exact,
    writer: Option<DecisionsWriter>,
    progress: Option<ProgressBar>,
    bytes_read: Arc<AtomicU64>,
    requests: u64,
    /// Whether the limiters decide in Redis (`--store`), at microseconds.
    in_microseconds: bool,
    /// Events whose time was floored to the microsecond for Redis.
    floored: u64,
    /// The tallies' window (ns): how long an admitted request is held there.
    window: u64,
}

/// Where the exact sliding log's decisions come from: a replayed sliding log
/// in memory decides exactly as the one alongside would (same rule, same
/// events), so it is asked once, not twice.
// One per run, never in a collection: the size difference costs nothing,
// where a box would cost a pointer chase per event.
#[allow(clippy::large_enum_variant)]
enum Exact {
    Own(KeyedLimiter<KeyId, ManualClock>),
    Replayed(usize),
}

impl Run {
    pub(super) fn new(
        args: &ReplayArgs,
        rates: &limits::Rates,
        window: u64,
        bytes_read: Arc<AtomicU64>,
    ) -> Result<Run, String> {
        let rule = |a: Algorithm| Rule::build(a, rates.clone(), args.rate.burst);
        let keyed = |r: Rule| KeyedLimiter::with_clock(r, ManualClock::new(0));
        let shared = match args.store.as_str() {
            "memory" => {
                args.redis_tls.for_store("memory")?;
                None
            }
            url => {
                let tls = args.redis_tls.for_store(url)?;
                let shared = Shared::connect(url, tls, args.redis_module.setting())?;
                eprintln!(
                    "replaying in {}, keys under {}",
                    limits_redis::redact(url),
                    shared.prefix()
                );
                Some(Rc::new(shared))
            }
        };
        // Comparing them all, a limiter the store refuses is left out (and
        // said so); asked for alone, its refusal is the error.
        let comparing = args.limiter.0.len() > 1;
        let mut replayed = Vec::new();
        for &algorithm in &args.limiter.0 {
            let limiter = match &shared {
                Some(shared) => match shared.limiter(rule(algorithm)) {
                    Ok(limiter) => limiter,
                    Err(refused) if comparing => {
                        eprintln!("left out: {refused}");
                        continue;
                    }
                    Err(refused) => return Err(refused),
                },
                None => Limiter::Memory(keyed(rule(algorithm))),
            };
            replayed.push(Replayed::new(
                algorithm,
                algorithm.name().into(),
                limiter,
                window,
            ));
        }
        if let Some(memory) = args.sketch {
            // One shard and a fixed seed: the same cells, and so the same
            // decisions, on every machine and every run.
            let options = SketchOptions {
                shards: 1,
                seed: Some(0),
                ..SketchOptions::new(memory)
            };
            let sketch =
                Sketch::with_clock(rule(Algorithm::SlidingWindow), options, ManualClock::new(0))
                    .map_err(|e| format!("--sketch: {e}"))?;
            let name = crate::report::limiter_name(Algorithm::SlidingWindow, Some(sketch.memory()));
            let limiter = Limiter::Sketch(sketch);
            replayed.push(Replayed::new(
                Algorithm::SlidingWindow,
                name,
                limiter,
                window,
            ));
        }
        if let Some(distinct) = args.distinct {
            let name = format!("distinct {}", distinct.rate());
            let limiter =
                Limiter::Distinct(DistinctLimiter::with_clock(distinct, ManualClock::new(0)));
            replayed.push(Replayed::new(Algorithm::SlidingLog, name, limiter, window));
        }
        let exact = match replayed.iter().position(|r| {
            r.algorithm == Algorithm::SlidingLog && matches!(r.limiter, Limiter::Memory(_))
        }) {
            Some(i) => Exact::Replayed(i),
            None => Exact::Own(keyed(rule(Algorithm::SlidingLog))),
        };
        let writer = match &args.decisions {
            Some(path) => Some(DecisionsWriter::create(path)?),
            None => None,
        };
        Ok(Run {
            replayed,
            exact,
            writer,
            progress: progress_bar(&args.trace),
            bytes_read,
            requests: 0,
            in_microseconds: shared.as_ref().is_some_and(|s| s.in_microseconds()),
            floored: 0,
            window,
        })
    }

    /// Event number `seq` (input order), decided by every limiter; its key
    /// held until it is idle in all of them and in their tallies, and a few
    /// keys idle everywhere forgotten.
    pub(super) fn decide(&mut self, seq: u64, mut e: Event, keys: &mut Keys) -> Result<(), String> {
        self.requests += 1;
        if self.in_microseconds && e.t % 1000 != 0 {
            e.t -= e.t % 1000;
            self.floored += 1;
        }
        // When the key is back to its full limit everywhere: from then on
        // its states decide exactly as absent ones.
        let mut idle_at = e.t;
        let (reference, mut decided) = match &self.exact {
            Exact::Own(exact) => {
                let d = exact.check_at(&e.key, e.t, e.cost);
                idle_at = idle_at.max(after(e.t, d.reset_after));
                (d.allowed, None)
            }
            &Exact::Replayed(i) => {
                let d = self.replayed[i].limiter.decide(&e, keys)?;
                (d.allowed, Some((i, d)))
            }
        };
        for (i, r) in self.replayed.iter_mut().enumerate() {
            let d = match decided.take_if(|(at, _)| *at == i) {
                Some((_, d)) => d,
                None => r.limiter.decide(&e, keys)?,
            };
            let release = r.tally.count(&e.key, e.t, e.cost, &d, reference);
            r.timeline.count(e.t, d.allowed);
            idle_at = idle_at.max(after(e.t, d.reset_after));
            if d.allowed {
                // The tally's worst window holds it until a window later.
                idle_at = idle_at.max(release.saturating_add(self.window));
            } else {
                r.rejected.count(e.key, e.t);
            }
            if let Some(w) = self.writer.as_mut() {
                w.add(seq, e.t, keys.name(e.key), e.cost, &d)?;
            }
        }
        keys.hold(e.key, idle_at);
        // Two numbers per line: the sweep comes round while there are at
        // most as many forgettable keys as held ones.
        let replayed = &mut self.replayed;
        keys.sweep(e.t, 2, |id, name| {
            for r in replayed.iter_mut() {
                r.rejected.forget(id, name);
            }
        });
        if self.requests % 4096 == 0 {
            if let Some(p) = &self.progress {
                p.set_position(self.bytes_read.load(Ordering::Relaxed));
            }
        }
        Ok(())
    }

    /// Flushes the rows; how many requests were decided, how many of their
    /// times were floored for Redis, and by whom.
    pub(super) fn finish(self) -> Result<(u64, u64, Vec<Replayed>), String> {
        if let Some(p) = self.progress {
            p.finish_and_clear();
        }
        if let Some(w) = self.writer {
            w.finish()?;
        }
        Ok((self.requests, self.floored, self.replayed))
    }
}

/// `t` plus `d` in nanoseconds, saturating.
fn after(t: u64, d: std::time::Duration) -> u64 {
    t.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn progress_bar(path: &std::path::Path) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} replaying [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    Some(bar)
}
