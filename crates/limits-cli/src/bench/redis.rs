//! `limits bench --store URL`: the limiters deciding in Redis, through one
//! multiplexed connection shared by `--threads` concurrent callers (tasks),
//! each decision one script call at Redis's own `TIME` (the deny cache off,
//! so that every decision is a call).
//!
//! As in memory, a derived rule is sized from a calibration run (its pace is
//! Redis's round trip here), then measured on a store with that rule. Every
//! run writes under a fresh key prefix and deletes every key it wrote, both
//! builds', at the end, failed runs included (keys it could not delete expire
//! on their own once back to full, as every store key does).

use super::report::Measured;
use super::scenario::XorShift;
use super::{memory::progress_bar, Length, Plan};
use crate::replay::store::fresh_prefix;
use indicatif::ProgressBar;
use limits::{Algorithm, Mode, Store};
use limits_redis::{RedisConnection, RedisOptions, RedisStore};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Calls may take this long before the bench stops with an error.
const TIMEOUT: Duration = Duration::from_secs(2);
/// Decisions of the calibration run.
const CALIBRATION: u64 = 2_000;
/// Keys whose `MEMORY USAGE` is asked.
const SAMPLE: usize = 100;

/// The keys, as Redis sees them.
fn keys(plan: &Plan) -> Arc<Vec<String>> {
    let mut rng = XorShift(plan.seed | 1);
    Arc::new(
        (0..plan.keys)
            .map(|_| format!("{:016x}", rng.next_u64()))
            .collect(),
    )
}

/// Measures each of `algorithms` in the Redis at `url` (with the `tls`
/// files of a TLS one).
pub fn run(
    url: &str,
    tls: limits_redis::TlsFiles,
    algorithms: &[Algorithm],
    plan: &Plan,
) -> Result<Vec<Measured>, String> {
    if !limits_redis::is_redis_url(url) {
        return Err(format!(
            "--store {:?}: {}",
            limits_redis::redact(url),
            crate::args::STORE_URLS
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        let prefix = fresh_prefix("bench");
        let options = RedisOptions {
            prefix: prefix.clone(),
            timeout: TIMEOUT,
            deny_cache: 0,
            tls,
            ..RedisOptions::default()
        };
        let connection = RedisConnection::connect(url, options)
            .await
            .map_err(|e| format!("--store: {e}"))?;
        eprintln!("limits bench: Redis keys under {prefix:?}, deleted at the end");
        let keys = keys(plan);
        let mut stores = Vec::new();
        let mut results = Vec::new();
        let mut outcome = Ok(());
        for &algorithm in algorithms {
            match measure(&connection, algorithm, plan, &keys, &mut stores).await {
                Ok(m) => results.push(m),
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
        let cleaned = cleanup(&stores, &keys, plan.threads).await;
        outcome?;
        cleaned?;
        Ok(results)
    })
}

/// One limiter: calibration, then the measured run.
async fn measure(
    connection: &RedisConnection,
    algorithm: Algorithm,
    plan: &Plan<'_>,
    keys: &Arc<Vec<String>>,
    stores: &mut Vec<Arc<RedisStore>>,
) -> Result<Measured, String> {
    let name = algorithm.name();
    let store = |every: u64, tag: &str| -> Result<(Arc<RedisStore>, u64), String> {
        let (rule, warm_cost) = plan.source.rule(algorithm, every, true)?;
        let store = RedisStore::new(connection, rule, &format!("{name}.{tag}"))
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
    warm(&store, keys, warm_cost, plan.threads).await?;
    // Memory as in memory: each key checked once, before the timed run.
    let (resident, bytes) = memory_per_key(&store, keys).await?;
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
async fn warm(
    store: &Arc<RedisStore>,
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
async fn timed(
    store: &Arc<RedisStore>,
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

/// Over a sample of keys spread over all of them: how many have state in
/// Redis, and the mean `MEMORY USAGE` of those (all of a key's Redis keys).
async fn memory_per_key(store: &RedisStore, keys: &[String]) -> Result<(u64, u64), String> {
    let step = (keys.len() / SAMPLE).max(1);
    let (mut sampled, mut present, mut bytes) = (0u64, 0u64, 0u64);
    for key in keys.iter().step_by(step) {
        sampled += 1;
        let mut held = 0;
        for k in store.redis_keys(key) {
            held += store.connection().memory_usage(&k).await?.unwrap_or(0);
        }
        if held > 0 {
            present += 1;
            bytes += held;
        }
    }
    let resident = (present as f64 / sampled.max(1) as f64 * keys.len() as f64).round() as u64;
    Ok((resident, bytes.checked_div(present).unwrap_or(0)))
}

/// Deletes every Redis key of every key in every store used.
async fn cleanup(
    stores: &[Arc<RedisStore>],
    keys: &Arc<Vec<String>>,
    callers: u64,
) -> Result<(), String> {
    for store in stores {
        let store = store.clone();
        per_share(keys, callers.max(16), move |keys, i| {
            let store = store.clone();
            async move {
                store
                    .connection()
                    .delete(&store.redis_keys(&keys[i]))
                    .await
                    .map(|_| ())
            }
        })
        .await
        .map_err(|e| format!("--store: deleting the bench's keys: {e}"))?;
    }
    Ok(())
}
