//! Check time side by side with governor: for every limiter, 1, 10k and 1M
//! keys resident, mostly allowed and mostly denied, one thread and two
//! threads on distinct keys. Ours is `limits` (`check`, the whole
//! decision). Each group holds `limits` and `governor` on the
//! same key stream and the same virtual clock scheme (see common), so that
//! every figure is read as a ratio to governor's in the same run. The
//! `real/` groups read the real clocks, as a server does: ours
//! `SystemClock`, governor's quanta clock (scripts/bench-check runs them in
//! rounds).
//!
//! `cargo bench -p limits --bench keyed` (a filter after `--` picks groups,
//! e.g. `-- token-bucket/10k`). Key streams and limiters are made only for
//! the groups run.

mod common;

use common::{ALGORITHMS, BATCH, Governor, KeyStream, Ours, Outcome, Scenario};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use governor::clock::{Clock as _, DefaultClock};
use limits::{Clock as _, SystemClock};
use std::cell::OnceCell;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Checks in one pass of a key stream.
const STREAM: usize = 1 << 20;

const KEY_COUNTS: [(usize, &str); 3] = [(1, "1"), (10_000, "10k"), (1_000_000, "1M")];

/// Runs `iters` checks of `stream` (wrapping around) through `run`, and
/// times them.
fn timed(stream: &[u64], iters: u64, pos: &mut usize, run: impl Fn(&[u64]) -> u64) -> Duration {
    let mut left = iters as usize;
    let start = Instant::now();
    while left > 0 {
        if *pos >= stream.len() {
            *pos = 0;
        }
        let n = left.min(stream.len() - *pos);
        black_box(run(&stream[*pos..*pos + n]));
        *pos += n;
        left -= n;
    }
    start.elapsed()
}

fn one_thread(c: &mut Criterion) {
    for algorithm in ALGORITHMS {
        for (keys, keys_name) in KEY_COUNTS {
            for outcome in [Outcome::Allowed, Outcome::Denied] {
                let s = Scenario::new(algorithm, keys, outcome);
                let name = format!("{}/{keys_name}/{}", algorithm.name(), outcome.name());
                let mut group = c.benchmark_group(name);
                group.throughput(Throughput::Elements(1));
                let ks = OnceCell::new();
                let ks = || ks.get_or_init(|| KeyStream::new(keys, STREAM, 0x5eed + keys as u64));
                group.bench_function("limits", |b| {
                    let ks = ks();
                    let ours = Ours::new(&s, &ks.keys);
                    let mut pos = 0;
                    b.iter_custom(|iters| timed(&ks.stream, iters, &mut pos, |k| ours.run(k)));
                });
                group.bench_function("governor", |b| {
                    let ks = ks();
                    let gov = Governor::new(&s, &ks.keys);
                    let mut pos = 0;
                    b.iter_custom(|iters| timed(&ks.stream, iters, &mut pos, |k| gov.run(k)));
                });
                group.finish();
            }
        }
    }
}

/// Real clocks, mostly allowed: every check reads the clock, as in a
/// server, with the rule of [`Scenario::real`].
fn real_clocks(c: &mut Criterion) {
    for algorithm in ALGORITHMS {
        for (keys, keys_name) in KEY_COUNTS {
            let name = format!("real/{}/{keys_name}", algorithm.name());
            let mut group = c.benchmark_group(name);
            group.throughput(Throughput::Elements(1));
            // The keys made and the rule calibrated in the first function
            // run, so that only the groups a filter picks pay for them.
            let ks = OnceCell::new();
            let ks = || ks.get_or_init(|| KeyStream::new(keys, STREAM, 0x5eed + keys as u64));
            let scenario = OnceCell::new();
            let sized = || *scenario.get_or_init(|| Scenario::real(algorithm, ks()));
            group.bench_function("limits", |b| {
                let ks = ks();
                let ours = Ours::real(&sized(), &ks.keys);
                let mut pos = 0;
                b.iter_custom(|iters| timed(&ks.stream, iters, &mut pos, |k| ours.run(k)));
            });
            group.bench_function("governor", |b| {
                let ks = ks();
                let gov = Governor::real(&sized(), &ks.keys);
                let mut pos = 0;
                b.iter_custom(|iters| timed(&ks.stream, iters, &mut pos, |k| gov.run(k)));
            });
            group.finish();
        }
    }
}

/// Two threads on distinct keys (half the keys each), mostly allowed: the
/// time per check over both, so that the ratio to one thread's figure is the
/// speedup.
fn two_threads(c: &mut Criterion) {
    for algorithm in ALGORITHMS {
        for (keys, keys_name) in &KEY_COUNTS[1..] {
            let s = Scenario::new(algorithm, *keys, Outcome::Allowed);
            let name = format!("{}/{keys_name}/allowed-2-threads", algorithm.name());
            let mut group = c.benchmark_group(name);
            group.throughput(Throughput::Elements(1));
            // Each half's keys, and all of them, made in the first function run.
            let split = OnceCell::new();
            let split = || {
                split.get_or_init(|| {
                    let halves = [
                        KeyStream::new(keys / 2, STREAM, 0xa11ce + *keys as u64),
                        KeyStream::new(keys / 2, STREAM, 0xb0b + *keys as u64),
                    ];
                    let all: Vec<u64> = halves.iter().flat_map(|h| h.keys.clone()).collect();
                    (halves, all)
                })
            };
            group.bench_function("limits", |b| {
                let (halves, all) = split();
                let ours = Ours::new(&s, all);
                b.iter_custom(|iters| in_two(halves, iters, |k| ours.run(k)));
            });
            group.bench_function("governor", |b| {
                let (halves, all) = split();
                let gov = Governor::new(&s, all);
                b.iter_custom(|iters| in_two(halves, iters, |k| gov.run(k)));
            });
            group.finish();
        }
    }
}

/// `iters` checks split between two threads, each on its own half of the keys.
fn in_two(halves: &[KeyStream; 2], iters: u64, run: impl Fn(&[u64]) -> u64 + Sync) -> Duration {
    let per_thread = (iters / 2).div_ceil(BATCH) * BATCH;
    let start = Instant::now();
    std::thread::scope(|scope| {
        for half in halves {
            let run = &run;
            scope.spawn(move || {
                let mut pos = 0;
                timed(&half.stream, per_thread, &mut pos, run)
            });
        }
    });
    start.elapsed()
}

/// One clock read: ours (`SystemClock`: quanta's raw counter, scaled, plus an offset) and
/// governor's default (`quanta`).
fn clocks(c: &mut Criterion) {
    let mut group = c.benchmark_group("clock-read");
    let ours = SystemClock::new();
    group.bench_function("limits", |b| b.iter(|| black_box(ours.now())));
    let gov = DefaultClock::default();
    group.bench_function("governor", |b| b.iter(|| black_box(gov.now())));
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = clocks, one_thread, two_threads, real_clocks
}
criterion_main!(benches);
