//! What `limits bench` prints: the machine it ran on, then one row per
//! limiter, as a table (stdout) or as JSON (`--json`).

use serde::{Deserialize, Serialize};
use std::fmt::Write;

/// The machine the figures are of.
#[derive(Serialize, Deserialize, Debug)]
pub struct Machine {
    /// Cores this process may use.
    pub cores: usize,
    /// /proc/cpuinfo's model name, when present.
    pub cpu: Option<String>,
    pub os: String,
}

impl Machine {
    /// This machine.
    pub fn here() -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            });
        Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu,
            os: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

/// One limiter's figures.
#[derive(Serialize, Deserialize, Debug)]
pub struct Measured {
    pub limiter: String,
    /// The rule's rates, normalized.
    pub rule: String,
    /// `allowed` or `denied` for a derived rule; null for the user's.
    pub outcome: Option<String>,
    pub keys: u64,
    /// Keys held after each was checked once (before timing).
    pub keys_resident: u64,
    /// Threads (memory) or concurrent callers (Redis).
    pub threads: u64,
    pub decisions: u64,
    pub allowed: u64,
    pub denied: u64,
    pub elapsed_ns: u64,
    /// Wall time per decision, all threads together.
    pub ns_per_decision: f64,
    /// Wall time per decision of the short calibration run before it, which
    /// a derived rule (`--outcome`) is sized from: a measured run far from
    /// this pace (the machine got busier or quieter) misses the outcome's
    /// aim by as much.
    pub calibration_ns_per_decision: f64,
    /// Memory only: the deciding threads' own CPU time per decision
    /// (`CLOCK_THREAD_CPUTIME_ID`; null where the OS does not tell it).
    /// Unlike wall time, other processes on the machine barely move it, so
    /// 1 thread's figure against 2 threads' shows what the threads cost
    /// each other (shared cache lines, lock contention) on a busy machine.
    pub cpu_ns_per_decision: Option<f64>,
    pub decisions_per_sec: f64,
    /// Memory: `KeyedLimiter::memory()`'s bytes per key. Redis: `MEMORY
    /// USAGE` per key, over a sample of keys.
    pub bytes_per_key: u64,
    /// Memory only: the process's RSS growth while the keys were added, per
    /// key (null where /proc/self/statm is not).
    pub rss_bytes_per_key: Option<f64>,
    /// Redis only: latency of one decision, microseconds.
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
}

/// Everything one run prints.
#[derive(Serialize, Deserialize, Debug)]
pub struct Report {
    pub machine: Machine,
    /// Which clock the limiters read.
    pub clock: String,
    /// `memory` or the Redis URL.
    pub store: String,
    pub results: Vec<Measured>,
}

impl Report {
    /// The report as one JSON document.
    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The report as a table, with the machine and the clock above it.
    pub fn table(&self) -> String {
        let m = &self.machine;
        let mut out = format!(
            "machine: {} cores, {} ({})\nclock: {}\nstore: {}\n\n",
            m.cores,
            m.cpu.as_deref().unwrap_or("CPU model unknown"),
            m.os,
            self.clock,
            self.store
        );
        let redis = self.store != "memory";
        let memcached = limits_memcached::is_memcached_url(&self.store);
        let shared_bytes = if memcached {
            "Memcached B/key"
        } else {
            "Redis B/key"
        };
        let mut rows = vec![if redis {
            [
                "limiter",
                "rule",
                "keys",
                "callers",
                "decisions",
                "allowed",
                "decisions/s",
                "p50 us",
                "p99 us",
                shared_bytes,
            ]
            .map(String::from)
            .to_vec()
        } else {
            [
                "limiter",
                "rule",
                "keys",
                "threads",
                "decisions",
                "allowed",
                "ns/decision",
                "CPU ns/decision",
                "decisions/s",
                "B/key",
                "RSS B/key",
            ]
            .map(String::from)
            .to_vec()
        }];
        for r in &self.results {
            let rule = match &r.outcome {
                Some(o) => format!("{} ({o})", r.rule),
                None => r.rule.clone(),
            };
            let allowed = format!(
                "{:.1}%",
                100.0 * r.allowed as f64 / r.decisions.max(1) as f64
            );
            let opt = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
            rows.push(if redis {
                vec![
                    r.limiter.clone(),
                    rule,
                    r.keys.to_string(),
                    r.threads.to_string(),
                    r.decisions.to_string(),
                    allowed,
                    format!("{:.0}", r.decisions_per_sec),
                    opt(r.p50_us),
                    opt(r.p99_us),
                    r.bytes_per_key.to_string(),
                ]
            } else {
                vec![
                    r.limiter.clone(),
                    rule,
                    r.keys.to_string(),
                    r.threads.to_string(),
                    r.decisions.to_string(),
                    allowed,
                    format!("{:.1}", r.ns_per_decision),
                    opt(r.cpu_ns_per_decision),
                    format!("{:.0}", r.decisions_per_sec),
                    r.bytes_per_key.to_string(),
                    opt(r.rss_bytes_per_key),
                ]
            });
        }
        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
            .collect();
        for row in &rows {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .enumerate()
                .map(|(i, (cell, w))| {
                    if i < 2 {
                        format!("{cell:<w$}")
                    } else {
                        format!("{cell:>w$}")
                    }
                })
                .collect();
            let _ = writeln!(out, "{}", cells.join("  ").trim_end());
        }
        out.push_str(if memcached {
            "\nEvery decision is a read and a CAS write (retries on other writers' \
             conflicts); p50/p99: its latency as a caller sees it. Memcached B/key: the \
             servers' own count of their items' bytes (stats: key, value and header), \
             per key written.\n"
        } else if redis {
            "\nEvery decision is one call to Redis, its Lua script or the limits module's \
             LIMITS.DECIDE (--redis-module; the deny cache is off); p50/p99: its latency \
             as a caller sees it. Redis B/key: MEMORY USAGE of a sample of keys (all of a \
             key's Redis keys), per key.\n"
        } else {
            "\nCPU ns/decision: the deciding threads' own CPU time per decision \
             (CLOCK_THREAD_CPUTIME_ID), which other processes barely move. \
             B/key: what the limiter's tables and states hold (KeyedLimiter::memory()); \
             RSS B/key: the process's resident memory growth while the keys were added \
             (/proc/self/statm; coarse below ~100k keys).\n"
        });
        out
    }
}
