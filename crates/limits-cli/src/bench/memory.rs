//! One limiter measured in memory: a `KeyedLimiter<u64, SystemClock>`, the
//! keys made resident, then checked from `--threads` threads, each on its
//! own share of the keys in a seeded random order.
//!
//! A derived rule (`--outcome`) is sized from the time between two checks of
//! one key, which the real clock makes a property of the machine: a first
//! limiter (sized as if a check took 10 us) is warmed up and timed on a
//! short calibration run, and the measured limiter
//! is then built afresh with the rule that interval gives. Memory is taken
//! from the first build, while its keys are added: the core's own account
//! (`KeyedLimiter::memory`) and the process's RSS growth (/proc/self/statm).

use super::report::Measured;
use super::scenario::XorShift;
use super::{Length, Plan};
use indicatif::{ProgressBar, ProgressStyle};
use limits::{Algorithm, KeyedLimiter, Rule, SystemClock};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Decisions of the calibration run: four per key, within these bounds.
const CALIBRATION: (u64, u64) = (20_000, 200_000);
/// Decisions between two looks at the clock (deadline) and the counter.
const CHUNK: u64 = 1024;

/// Each thread's keys and its stream of them.
struct Share {
    keys: Vec<u64>,
    stream: Vec<u64>,
}

/// The keys, split over `threads` disjoint shares, each with its own seeded
/// random order.
fn shares(plan: &Plan) -> Vec<Share> {
    let mut rng = XorShift(plan.seed | 1);
    let keys: Vec<u64> = (0..plan.keys).map(|_| rng.next_u64()).collect();
    let threads = plan.threads.min(plan.keys) as usize;
    let len = ((1usize << 20) / threads.next_power_of_two()).max(1 << 12);
    (0..threads)
        .map(|t| {
            let mine: Vec<u64> = keys.iter().skip(t).step_by(threads).copied().collect();
            let stream = (0..len)
                .map(|_| mine[(rng.next_u64() % mine.len() as u64) as usize])
                .collect();
            Share { keys: mine, stream }
        })
        .collect()
}

/// Builds `rule`'s limiter and checks every key once with `warm_cost`.
fn warmed(rule: Rule, shares: &[Share], warm_cost: u64) -> KeyedLimiter<u64, SystemClock> {
    let limiter = KeyedLimiter::new(rule);
    for share in shares {
        for k in &share.keys {
            limiter.check(k, warm_cost);
        }
    }
    limiter
}

/// Decisions made, allowed, the wall time they took, and the deciding
/// threads' own CPU time (if the OS tells it).
struct Timed {
    decisions: u64,
    allowed: u64,
    elapsed: Duration,
    cpu: Option<Duration>,
}

/// What one deciding thread did: its allowed decisions and its CPU time.
struct Worked {
    allowed: u64,
    cpu: Option<Duration>,
}

/// Checks from one thread per share until `length` is done.
fn timed(
    limiter: &KeyedLimiter<u64, SystemClock>,
    shares: &[Share],
    length: Length,
    progress: Option<&ProgressBar>,
) -> Timed {
    let done = AtomicU64::new(0);
    let threads = shares.len() as u64;
    let start = Instant::now();
    let worked: Vec<Worked> = std::thread::scope(|scope| {
        let workers: Vec<_> = shares
            .iter()
            .enumerate()
            .map(|(t, share)| {
                let done = &done;
                scope.spawn(move || {
                    let cpu_before = thread_cpu_time();
                    let quota = match length {
                        Length::Decisions(n) => n / threads + u64::from((t as u64) < n % threads),
                        Length::For(_) => u64::MAX,
                    };
                    let deadline = match length {
                        Length::For(d) => Some(start + d),
                        Length::Decisions(_) => None,
                    };
                    let mask = share.stream.len() - 1;
                    let (mut i, mut made, mut allowed) = (0usize, 0u64, 0u64);
                    while made < quota {
                        let n = CHUNK.min(quota - made);
                        for _ in 0..n {
                            let k = share.stream[i & mask];
                            i += 1;
                            allowed += u64::from(limiter.check(&k, 1).allowed);
                        }
                        made += n;
                        done.fetch_add(n, Ordering::Relaxed);
                        if deadline.is_some_and(|d| Instant::now() >= d) {
                            break;
                        }
                    }
                    let cpu = thread_cpu_time()
                        .zip(cpu_before)
                        .map(|(after, before)| after.saturating_sub(before));
                    Worked { allowed, cpu }
                })
            })
            .collect();
        if let Some(bar) = progress {
            while workers.iter().any(|w| !w.is_finished()) {
                bar.set_position(length.position(start, &done));
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or(Worked {
                    allowed: 0,
                    cpu: None,
                })
            })
            .collect()
    });
    Timed {
        decisions: done.load(Ordering::Relaxed),
        allowed: worked.iter().map(|w| w.allowed).sum(),
        elapsed: start.elapsed(),
        cpu: worked.iter().map(|w| w.cpu).sum(),
    }
}

/// Measures `algorithm` as `plan` says.
pub fn run(algorithm: Algorithm, plan: &Plan) -> Result<Measured, String> {
    let shares = shares(plan);
    let name = algorithm.name();
    let bar = progress_bar(name, plan.length);

    // The first build: memory, then the calibration run. It is sized as if
    // a check took 10 us, slower than any machine's, so that no key's state
    // expires (and is dropped) while the others are added.
    let guess = plan.keys.saturating_mul(10_000);
    let (rule, warm_cost) = plan.source.rule(algorithm, guess, false)?;
    let rss_before = rss_bytes();
    let first = warmed(rule, &shares, warm_cost);
    let rss_growth = rss_before
        .zip(rss_bytes())
        .map(|(b, a)| a.saturating_sub(b));
    let memory = first.memory();
    let calibrate = plan
        .keys
        .saturating_mul(4)
        .clamp(CALIBRATION.0, CALIBRATION.1);
    let calibration = timed(&first, &shares, Length::Decisions(calibrate), None);
    drop(first);

    // The measured build, with the rule the calibration's pace gives.
    let every = (per_decision_ns(&calibration) * plan.keys as f64) as u64;
    let (rule, warm_cost) = plan.source.rule(algorithm, every, false)?;
    let rates = rule.rates().to_string();
    let limiter = warmed(rule, &shares, warm_cost);
    let run = timed(&limiter, &shares, plan.length, bar.as_ref());
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let ns = per_decision_ns(&run);
    Ok(Measured {
        limiter: name.to_owned(),
        rule: rates,
        outcome: plan.source.outcome().map(str::to_owned),
        keys: plan.keys,
        keys_resident: memory.keys as u64,
        threads: shares.len() as u64,
        decisions: run.decisions,
        allowed: run.allowed,
        denied: run.decisions - run.allowed,
        elapsed_ns: run.elapsed.as_nanos() as u64,
        ns_per_decision: ns,
        calibration_ns_per_decision: per_decision_ns(&calibration),
        cpu_ns_per_decision: run
            .cpu
            .map(|cpu| cpu.as_nanos() as f64 / run.decisions.max(1) as f64),
        decisions_per_sec: if ns > 0.0 { 1e9 / ns } else { 0.0 },
        bytes_per_key: memory.bytes_per_key() as u64,
        rss_bytes_per_key: rss_growth.map(|g| g as f64 / plan.keys as f64),
        p50_us: None,
        p99_us: None,
    })
}

/// Wall nanoseconds per decision, all threads together.
fn per_decision_ns(t: &Timed) -> f64 {
    t.elapsed.as_nanos() as f64 / t.decisions.max(1) as f64
}

/// A progress line on stderr (a terminal only), in ms or in decisions.
pub fn progress_bar(name: &str, length: Length) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let (len, unit) = match length {
        Length::For(d) => (d.as_millis() as u64, "ms"),
        Length::Decisions(n) => (n, "decisions"),
    };
    let bar = ProgressBar::new(len);
    let template = format!("{{spinner}} bench {name} [{{bar:40}}] {{pos}}/{{len}} {unit}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style.progress_chars("=> "));
    }
    Some(bar)
}

/// The calling thread's CPU time so far (`CLOCK_THREAD_CPUTIME_ID`: exact
/// to the nanosecond, unlike /proc's figures, which move at scheduler
/// ticks), if the OS tells it.
fn thread_cpu_time() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// The resident set size of this process, in bytes (Linux), if known.
fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}
