//! A load generator for `limits rls` (scripts/bench-rls runs it): C
//! concurrent callers, each sending ShouldRateLimit calls back to back over
//! one of N HTTP/2 connections for a fixed time, as Envoy's workers do (one
//! connection per worker, many streams on each). Prints one line:
//! `calls_per_s=... p50_us=... p99_us=... calls=... errors=... over_limit=...`.
//!
//! ```text
//! cargo run --release -p limits-server --example rls_load -- \
//!     --target 127.0.0.1:8081 --callers 16 --connections 4 --seconds 5 [--descriptors 16]
//! ```
//!
//! Each call carries one descriptor `remote_address: 10.X.Y.Z` for domain
//! `bench` (or `--domain`), cycling through `--keys` addresses per caller,
//! so that the store sees many keys rather than one hot one; with
//! `--descriptors D`, D such descriptors, each a different address (D keys
//! decided per call).

use limits_server::rls::proto::rate_limit_descriptor::Entry;
use limits_server::rls::proto::rate_limit_response::Code;
use limits_server::rls::proto::rate_limit_service_client::RateLimitServiceClient;
use limits_server::rls::proto::{RateLimitDescriptor, RateLimitRequest};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

struct Options {
    target: String,
    domain: String,
    callers: usize,
    connections: usize,
    seconds: f64,
    keys: usize,
    descriptors: usize,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        target: "127.0.0.1:8081".into(),
        domain: "bench".into(),
        callers: 1,
        connections: 1,
        seconds: 5.0,
        keys: 1000,
        descriptors: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<usize>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--target" => o.target = value,
            "--domain" => o.domain = value,
            "--callers" => o.callers = number(&value)?.max(1),
            "--connections" => o.connections = number(&value)?.max(1),
            "--keys" => o.keys = number(&value)?.max(1),
            "--descriptors" => o.descriptors = number(&value)?.max(1),
            "--seconds" => {
                o.seconds = value
                    .parse()
                    .map_err(|e| format!("--seconds {value}: {e}"))?
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(o)
}

/// What one caller saw: each call's latency in microseconds, errors and
/// OVER_LIMIT answers.
#[derive(Default)]
struct Tally {
    latencies: Vec<u32>,
    errors: u64,
    over_limit: u64,
}

async fn caller(
    mut client: RateLimitServiceClient<Channel>,
    o: std::sync::Arc<Options>,
    id: usize,
    until: Instant,
) -> Tally {
    let mut tally = Tally::default();
    let mut i = 0usize;
    while Instant::now() < until {
        let descriptors = (0..o.descriptors)
            .map(|d| {
                let key = (id * o.keys + i % o.keys) * o.descriptors + d;
                RateLimitDescriptor {
                    entries: vec![Entry {
                        key: "remote_address".into(),
                        value: format!("10.{}.{}.{}", key >> 16 & 255, key >> 8 & 255, key & 255),
                    }],
                    ..RateLimitDescriptor::default()
                }
            })
            .collect();
        i += 1;
        let request = RateLimitRequest {
            domain: o.domain.clone(),
            descriptors,
            hits_addend: 0,
        };
        let start = Instant::now();
        let answer = client.should_rate_limit(request).await;
        let micros = start.elapsed().as_micros();
        tally
            .latencies
            .push(u32::try_from(micros).unwrap_or(u32::MAX));
        match answer {
            Ok(r) if r.get_ref().overall_code == Code::OverLimit as i32 => tally.over_limit += 1,
            Ok(_) => {}
            Err(_) => tally.errors += 1,
        }
    }
    tally
}

fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let o = std::sync::Arc::new(options()?);
    let mut channels = Vec::new();
    for _ in 0..o.connections {
        let channel = Channel::from_shared(format!("http://{}", o.target))
            .map_err(|e| e.to_string())?
            .connect()
            .await
            .map_err(|e| format!("connect {}: {e}", o.target))?;
        channels.push(channel);
    }
    let start = Instant::now();
    let until = start + Duration::from_secs_f64(o.seconds);
    let tasks: Vec<_> = (0..o.callers)
        .map(|id| {
            let client = RateLimitServiceClient::new(channels[id % channels.len()].clone());
            tokio::spawn(caller(client, o.clone(), id, until))
        })
        .collect();
    let mut all = Tally::default();
    for task in tasks {
        let t = task.await.map_err(|e| e.to_string())?;
        all.latencies.extend(t.latencies);
        all.errors += t.errors;
        all.over_limit += t.over_limit;
    }
    let elapsed = start.elapsed().as_secs_f64();
    all.latencies.sort_unstable();
    let calls = all.latencies.len();
    println!(
        "calls_per_s={:.0} p50_us={} p99_us={} calls={calls} errors={} over_limit={}",
        calls as f64 / elapsed,
        percentile(&all.latencies, 0.50),
        percentile(&all.latencies, 0.99),
        all.errors,
        all.over_limit,
    );
    Ok(())
}
