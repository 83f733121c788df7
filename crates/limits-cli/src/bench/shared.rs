//! `limits bench --store URL`: the limiters deciding in a shared store
//! (Redis, [`super::redis`]; Memcached, [`super::memcached`]), `--threads`
//! concurrent callers (tasks) on one client of it, every decision a round
//! trip.
//!
//! As in memory, a derived rule is sized from a calibration run (its pace is
//! the store's round trip here), then measured on a store with that rule.
//! Every run writes under a fresh key prefix and deletes every key it wrote,
//! both builds', at the end, failed runs included (keys it could not delete
//! expire on their own once back to full, as every store key does).

use super::report::Measured;
use super::scenario::XorShift;
use super::{memory::progress_bar, Length, Plan};
use indicatif::ProgressBar;
use limits::{Algorithm, Mode, Rule, Store};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Calls may take this long before the bench stops with an error.
pub(super) const TIMEOUT: Duration = Duration::from_secs(2);
/// Decisions of the calibration run.
const CALIBRATION: u64 = 2_000;

/// A shared store the bench measures: its stores, what a key holds in it,
/// and how a key is deleted.
pub(super) trait Backend: 'static {
    /// One rule's store.
    type Store: Store;

    /// A store of `rule`, its keys named after `name`.
    fn store(&self, rule: Rule, name: &str) -> Result<Self::Store, String>;

    /// Runs `warm` (each key checked once), and says how many keys then
    /// have state in the store and the bytes each holds there.
    fn memory_per_key(
        &self,
        store: &Self::Store,
        keys: &[String],
        warm: impl Future<Output = Result<(), String>>,
    ) -> impl Future<Output = Result<(u64, u64), String>>;

    /// Deletes what `key` holds in `store`.
    fn delete(store: &Self::Store, key: &str) -> impl Future<Output = Result<(), String>> + Send;
}

/// The keys, as the store sees them.
fn keys(plan: &Plan) -> Arc<Vec<String>> {
    let mut rng = XorShift(plan.seed | 1);
    Arc::new(
        (0..plan.keys)
            .map(|_| format!("{:016x}", rng.next_u64()))
            .collect(),
    )
}

/// Measures each of `algorithms` on `backend`, then deletes every key of
/// every store it made.
pub(super) async fn run<B: Backend>(
    backend: &B,
    algorithms: &[Algorithm],
    plan: &Plan<'_>,
) -> Result<Vec<Measured>, String> {
    let keys = keys(plan);
    let mut stores = Vec::new();
    let mut results = Vec::new();
    let mut outcome = Ok(());
    for &algorithm in algorithms {
        match measure(backend, algorithm, plan, &keys, &mut stores).await {
            Ok(m) => results.push(m),
            Err(e) => {
                outcome = Err(e);
                break;
            }
        }
    }
    let cleaned = cleanup::<B>(&stores, &keys, plan.threads).await;
    outcome?;
    cleaned?;
    Ok(results)
}

/// One limiter: calibration, then the measured run.
async fn measure<B: Backend>(
    backend: &B,
    algorithm: Algorithm,
    plan: &Plan<'_>,
    keys: &Arc<Vec<String>>,
    stores: &mut Vec<Arc<B::Store>>,
) -> Result<Measured, String> {
    let name = algorithm.name();
    let store = |every: u64, tag: &str| -> Result<(Arc<B::Store>, u64), String> {
        let (rule, warm_cost) = plan.source.rule(algorithm, every, true)?;
        let store = backend
            .store(rule, &format!("{name}.{tag}"))
            .map_err(|e| format!("--store: {name}: {e}"))?;
        Ok((Arc::new(store), warm_cost))
    };
    // A guess at the pace: 50 us a round trip, shared by the callers.
    let guess = plan.keys.saturating_mul(50_000 / plan.threads.min(50_000));
    let (first, warm_cost) = store(guess, "calibration")?;
    stores.push(first.clone());
    warm(&first, keys, warm_cost, plan.threads).await?;
    let calibration = timed(&first, keys, plan, Length::Decisions(CALIBRATION), None).await?;
    let every = (calibration.per_decision_ns() * plan.keys as f64) as u64;

    let (store, warm_cost) = store(every, "measured")?;
    stores.push(store.clone());
    // Memory as in memory: each key checked once, before the timed run.
    let warmed = warm(&store, keys, warm_cost, plan.threads);
    let (resident, bytes) = backend.memory_per_key(&store, keys, warmed).await?;
    let bar = progress_bar(name, plan.length);
    let mut run = timed(&store, keys, plan, plan.length, bar.as_ref()).await?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    run.latencies.sort_unstable();
    let pct = |p: usize| {
        run.latencies
            .get(run.latencies.len() * p / 100)
            .map(|ns| *ns as f64 / 1000.0)
    };
    let ns = run.per_decision_ns();
    Ok(Measured {
        limiter: name.to_owned(),
        rule: store.rule().rates().to_string(),
        outcome: plan.source.outcome().map(str::to_owned),
        keys: plan.keys,
        keys_resident: resident,
        threads: plan.threads,
        decisions: run.decisions,
        allowed: run.allowed,
        denied: run.decisions - run.allowed,
        elapsed_ns: run.elapsed.as_nanos() as u64,
        ns_per_decision: ns,
        calibration_ns_per_decision: calibration.per_decision_ns(),
        cpu_ns_per_decision: None,
        decisions_per_sec: if ns > 0.0 { 1e9 / ns } else { 0.0 },
        bytes_per_key: bytes,
        rss_bytes_per_key: None,
        p50_us: pct(50),
        p99_us: pct(99),
    })
}

/// Runs `each(caller, index)` for every key index of each caller's share,
/// `callers` at once.
async fn per_share<F, Fut>(keys: &Arc<Vec<String>>, callers: u64, each: F) -> Result<(), String>
where
    F: Fn(Arc<Vec<String>>, usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send,
{
    let callers = callers.min(keys.len() as u64) as usize;
    let tasks: Vec<_> = (0..callers)
        .map(|c| {
            let (keys, each) = (keys.clone(), each.clone());
            tokio::spawn(async move {
                for i in (c..keys.len()).step_by(callers) {
                    each(keys.clone(), i).await?;
                }
                Ok::<(), String>(())
            })
        })
        .collect();
    for t in tasks {
        t.await.map_err(|e| e.to_string())??;
    }
    Ok(())
}

/// Checks every key once with `cost`: the keys become resident.
async fn warm<S: Store>(
    store: &Arc<S>,
    keys: &Arc<Vec<String>>,
    cost: u64,
    callers: u64,
) -> Result<(), String> {
    let store = store.clone();
    per_share(keys, callers, move |keys, i| {
        let store = store.clone();
        async move {
            store
                .decide(&keys[i], cost, Mode::Record)
                .await
                .map(|_| ())
                .map_err(|e| format!("--store: {e}"))
        }
    })
    .await
}

/// Decisions, allowed, wall time and each call's latency (ns).
struct Timed {
    decisions: u64,
    allowed: u64,
    elapsed: Duration,
    latencies: Vec<u64>,
}

impl Timed {
    fn per_decision_ns(&self) -> f64 {
        self.elapsed.as_nanos() as f64 / self.decisions.max(1) as f64
    }
}

/// `plan.threads` callers, each deciding its share of the keys in a seeded
/// random order until `length` is done.
async fn timed<S: Store>(
    store: &Arc<S>,
    keys: &Arc<Vec<String>>,
    plan: &Plan<'_>,
    length: Length,
    progress: Option<&ProgressBar>,
) -> Result<Timed, String> {
    let callers = plan.threads.min(keys.len() as u64);
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|c| {
            let (store, keys, done) = (store.clone(), keys.clone(), done.clone());
            let mut rng = XorShift((plan.seed ^ (c + 1).wrapping_mul(0x9e37_79b9)) | 1);
            tokio::spawn(async move {
                let quota = match length {
                    Length::Decisions(n) => n / callers + u64::from(c < n % callers),
                    Length::For(_) => u64::MAX,
                };
                let share = (keys.len() as u64 - c).div_ceil(callers);
                let (mut allowed, mut latencies) = (0u64, Vec::new());
                for _ in 0..quota {
                    if let Length::For(d) = length {
                        if start.elapsed() >= d {
                            break;
                        }
                    }
                    let key = &keys[(c + (rng.next_u64() % share) * callers) as usize];
                    let sent = Instant::now();
                    let verdict = store
                        .decide(key, 1, Mode::Record)
                        .await
                        .map_err(|e| format!("--store: {e}"))?;
                    latencies.push(sent.elapsed().as_nanos() as u64);
                    allowed += u64::from(verdict.decision.allowed);
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<_, String>((allowed, latencies))
            })
        })
        .collect();
    if let Some(bar) = progress {
        while tasks.iter().any(|t| !t.is_finished()) {
            bar.set_position(length.position(start, &done));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let mut timed = Timed {
        decisions: 0,
        allowed: 0,
        elapsed: Duration::ZERO,
        latencies: Vec::new(),
    };
    for t in tasks {
        let (allowed, latencies) = t.await.map_err(|e| e.to_string())??;
        timed.allowed += allowed;
        timed.decisions += latencies.len() as u64;
        timed.latencies.extend(latencies);
    }
    timed.elapsed = start.elapsed();
    Ok(timed)
}

/// Deletes every key of every store used.
async fn cleanup<B: Backend>(
    stores: &[Arc<B::Store>],
    keys: &Arc<Vec<String>>,
    callers: u64,
) -> Result<(), String> {
    for store in stores {
        let store = store.clone();
        per_share(keys, callers.max(16), move |keys, i| {
            let store = store.clone();
            async move { B::delete(&store, &keys[i]).await }
        })
        .await
        .map_err(|e| format!("--store: deleting the bench's keys: {e}"))?;
    }
    Ok(())
}
