//! Decisions per second through a [`RedisStore`] at a given number of
//! concurrent callers, on one shared connection: what `scripts/bench-redis`
//! sets beside redis-benchmark's trivial EVALSHA on the same Redis.
//!
//! `cargo run --release -p limits-redis --example throughput -- URL CALLERS SECONDS LIMITER [MODULE]`
//!
//! MODULE is `auto` (the default: the limits Redis module where Redis has
//! it loaded and it decides the limiter), `on` or `off` (the Lua scripts
//! only), as [`RedisModule`]. Each caller decides for its own stream of keys (1,000 keys per caller,
//! 100 per second each, so most requests pass and the state is real), and
//! the line printed is `CALLERS DECISIONS_PER_SECOND`.

use limits::{Algorithm, Mode, Rule, Store};
use limits_redis::{RedisConnection, RedisModule, RedisOptions, RedisStore};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: throughput URL CALLERS SECONDS LIMITER [auto|on|off]";
    let (url, callers, seconds, limiter, module) = match args.as_slice() {
        [_, url, callers, seconds, limiter] => (url, callers, seconds, limiter, "auto"),
        [_, url, callers, seconds, limiter, module] => {
            (url, callers, seconds, limiter, module.as_str())
        }
        _ => return Err(usage.into()),
    };
    let module = match module {
        "auto" => RedisModule::Auto,
        "on" => RedisModule::On,
        "off" => RedisModule::Off,
        _ => return Err(usage.into()),
    };
    let callers: usize = callers.parse()?;
    let run = Duration::from_secs_f64(seconds.parse()?);
    let algorithm: Algorithm = limiter.parse()?;
    let options = RedisOptions {
        prefix: format!("bench:{}:", std::process::id()),
        timeout: Duration::from_secs(2),
        deny_cache: 0,
        module,
        ..RedisOptions::default()
    };
    let connection = RedisConnection::connect(url, options).await?;
    let store = Arc::new(RedisStore::new(
        &connection,
        Rule::new(algorithm, "100/s".parse()?),
        "bench",
    )?);
    let deadline = Instant::now() + run;
    let started = Instant::now();
    let tasks: Vec<_> = (0..callers)
        .map(|c| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut done = 0u64;
                while Instant::now() < deadline {
                    let key = format!("{c}:{}", done % 1000);
                    store.decide(&key, 1, Mode::Record).await?;
                    done += 1;
                }
                Ok::<u64, limits::StoreError>(done)
            })
        })
        .collect();
    let mut total = 0;
    for task in tasks {
        total += task.await??;
    }
    let rate = total as f64 / started.elapsed().as_secs_f64();
    println!("{callers} {rate:.0}");
    Ok(())
}
