//! The difference between this host's clock and Redis's `TIME`, measured in
//! the background.
//!
//! Decisions never use this host's clock (the scripts read `TIME`), so a
//! skewed host still decides exactly; but a host far off Redis's time makes
//! its logs, its `Retry-After` as the client reads it against its own clock,
//! and any explicit times it passes disagree with the shared limit. The
//! difference is measured when the connection is made, each time Redis
//! answers again after an outage, and every `clock_check` in between; it is
//! the host's time at the middle of the round trip minus Redis's, so a slow
//! round trip adds at most half of it. One log line when it exceeds
//! `clock_warning`, one when it is back under.

use crate::link::{Conn, Health};
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// No measurement yet (or the last one failed before any succeeded).
pub(crate) use crate::link::OFFSET_UNKNOWN as UNKNOWN;

/// This host's time minus Redis's, in microseconds: one `TIME` call.
pub(crate) async fn measure(conn: &Conn, timeout: Duration) -> Option<i64> {
    let mut conn = conn.clone();
    let before = unix_micros();
    let cmd = redis::cmd("TIME");
    let time = tokio::time::timeout(timeout, cmd.query_async::<(String, String)>(&mut conn));
    let (secs, micros) = time.await.ok()?.ok()?;
    let after = unix_micros();
    let redis = secs.parse::<i64>().ok()? * 1_000_000 + micros.parse::<i64>().ok()?;
    Some(before + (after - before) / 2 - redis)
}

/// Records a measurement, logging when it crosses the warning threshold.
pub(crate) fn record(health: &Health, offset: i64, warning: Duration) {
    let warning = i64::try_from(warning.as_micros()).unwrap_or(i64::MAX);
    let previous = health.clock_offset_us.swap(offset, Ordering::Relaxed);
    let was_over = previous != UNKNOWN && previous.abs() > warning;
    let over = offset.abs() > warning;
    let seconds = offset as f64 / 1e6;
    if over && !was_over {
        tracing::warn!(
            "this host's clock is {seconds:+.6} s off Redis's TIME (decisions use Redis's time; logs and client clocks may disagree with it)"
        );
    } else if was_over && !over {
        tracing::info!(
            "this host's clock is back within {warning} us of Redis's TIME ({seconds:+.6} s)"
        );
    }
}

/// Measures now and every `every`, until every [`RedisConnection`](crate::RedisConnection)
/// sharing `health` is dropped.
pub(crate) fn spawn(
    conn: Conn,
    health: Weak<Health>,
    every: Duration,
    timeout: Duration,
    warning: Duration,
) {
    tokio::spawn(async move {
        loop {
            if let Some(offset) = measure(&conn, timeout).await {
                let Some(health) = health.upgrade() else {
                    return;
                };
                record(&health, offset, warning);
            }
            tokio::time::sleep(every).await;
            if health.strong_count() == 0 {
                return;
            }
        }
    });
}

fn unix_micros() -> i64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(now.as_micros()).unwrap_or(i64::MAX)
}
