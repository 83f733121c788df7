//! Measuring how far apart the instances' clocks are ([`ClockOffset`]).
//! Memcached keeps no time for the store (each instance decides by its own
//! clock), so instances whose clocks differ by d see each other's requests
//! d early or late: a window's edge moves by d between them. The store
//! cannot fix that, but it measures it.
//!
//! Memcached does keep a clock of its own, in whole seconds, which moves
//! about once a second: an item's time to live (`mg KEY t`) drops by one at
//! that tick. Each instance reads the time to live of one item (its
//! absolute expiry written in its value) back to back across a tick, and
//! so finds the tick on its own clock to within half a round trip; the
//! tick's memcached time is the expiry less the time to live read after
//! it. Its clock less memcached's at the tick is its offset: off from the
//! truth by where in its second memcached's tick fell, an amount that
//! drifts from one tick to the next (memcached's timer runs a little
//! slower than a second) but is the same for every instance that measured
//! the same tick. So every instance measures the same ones, those of the
//! memcached seconds that are multiples of the measuring period, publishes
//! its offset in a shared item (read and written by CAS), and compares its
//! own with those of the others that measured the same tick
//! ([`ClockOffset`]).

use crate::clock_offset::ClockOffset;
use crate::meta::{Write, Written};
use crate::pool::Pool;
use crate::MemcachedClient;
use limits::{Clock, StoreError};
use std::time::Duration;

/// The item whose time to live shows memcached's ticks.
const TICK_ITEM: &str = "clock:tick";
/// The item of every instance's offset.
const OFFSETS_ITEM: &str = "clock:offsets";
/// How long the tick item lives, from its making: a week, written as an
/// absolute time (memcached reads an expiry over 30 days as one).
const TICK_ITEM_LIFE: u64 = 7 * 24 * 3600;
/// A report older than this many of memcached's seconds is dropped.
const REPORT_LIFE: u64 = 600;
/// How long after its own report an instance reads the others': they
/// measured the same tick, and publish within a few round trips of it.
const REPORTS_SETTLE: Duration = Duration::from_millis(500);
/// How long a search for a tick polls before giving up.
const TICK_SEARCH: Duration = Duration::from_millis(1500);
/// The gap between two polls of the first, coarse search.
const COARSE_POLL: Duration = Duration::from_millis(2);
/// How early the coarse search starts before the tick it approaches.
const COARSE_LEAD: Duration = Duration::from_millis(500);
/// How early the fine search starts before the tick the coarse one
/// predicts a second ahead.
const FINE_LEAD: Duration = Duration::from_millis(20);

const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// One instance's report in the offsets item, `ID OFFSET_NS SECOND`: its
/// offset measured at the tick to memcached's second `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Report {
    instance: u64,
    offset: i64,
    at: u64,
}

impl MemcachedClient {
    /// Measures this instance's clock against the next tick of memcached's
    /// clock to a second that is a multiple of `every` (whole seconds, at
    /// least one), the tick every instance measuring as often measures
    /// too; publishes the offset, and returns this one's from the others'
    /// at the same tick (kept for [`clock_offset`](Self::clock_offset)).
    /// Takes up to `every` and a second and a half, and a few hundred
    /// small requests. `clock` is the clock the instance's stores decide
    /// by.
    pub async fn measure_clock_offset(
        &self,
        clock: &impl Clock,
        every: Duration,
    ) -> Result<ClockOffset, StoreError> {
        let tick_item = format!("{}{TICK_ITEM}", self.options().prefix);
        let pool = self.server_of(&tick_item);
        let expiry = self.tick_expiry(pool, &tick_item, clock).await?;
        let second = |ttl: i64| u64::try_from(ttl).map_or(0, |ttl| expiry.saturating_sub(ttl));
        let round = every.as_secs().max(1);
        // A tick on our clock, then closer to the one to measure.
        let (mut tick, _, mut ttl) = self
            .bracket_tick(pool, &tick_item, clock, COARSE_POLL)
            .await?;
        let target = (second(ttl) / round + 1) * round;
        while second(ttl) + 1 < target {
            let ticks = target - 1 - second(ttl);
            let since = Duration::from_nanos(clock.now().saturating_sub(tick));
            let nearly = Duration::from_secs(ticks).saturating_sub(since + COARSE_LEAD);
            tokio::time::sleep(nearly).await;
            (tick, _, ttl) = self
                .bracket_tick(pool, &tick_item, clock, COARSE_POLL)
                .await?;
        }
        if second(ttl) + 1 != target {
            return Err(StoreError::new(format!(
                "memcached {}: its clock passed the second {target} before it was measured",
                pool.addr()
            )));
        }
        let since = Duration::from_nanos(clock.now().saturating_sub(tick));
        let wait = Duration::from_secs(1).saturating_sub(since + FINE_LEAD);
        tokio::time::sleep(wait).await;
        let (tick, uncertainty, ttl) = self
            .bracket_tick(pool, &tick_item, clock, Duration::ZERO)
            .await?;
        let at = second(ttl);
        let memcached_time = i64::try_from(at).unwrap_or(i64::MAX);
        let own = i64::try_from(tick).unwrap_or(i64::MAX);
        let offset = own.saturating_sub(memcached_time.saturating_mul(NANOS_PER_SECOND));
        let report = Report {
            instance: self.instance(),
            offset,
            at,
        };
        self.publish(report).await?;
        tokio::time::sleep(REPORTS_SETTLE).await;
        let others: Vec<i64> = self
            .reports()
            .await?
            .iter()
            .filter(|r| r.at == at && r.instance != report.instance)
            .map(|r| r.offset)
            .collect();
        let measured = ClockOffset {
            instances: others.len() + 1,
            from_others: median(others).map_or(0, |m| offset.saturating_sub(m)),
            uncertainty,
        };
        self.keep_clock_offset(measured);
        Ok(measured)
    }

    /// The tick item's absolute expiry (Unix seconds), making the item if
    /// there is none.
    async fn tick_expiry(
        &self,
        pool: &Pool,
        item: &str,
        clock: &impl Clock,
    ) -> Result<u64, StoreError> {
        let expiry = clock.now() / 1_000_000_000 + TICK_ITEM_LIFE;
        let value = expiry.to_string();
        let found = self
            .exchange(pool, async |lease| {
                let connection = lease.connection();
                if let Some(found) = connection.get(item).await? {
                    return Ok(found.value);
                }
                // Another instance may make it first: then read its.
                connection
                    .set(item, value.as_bytes(), expiry, Write::Add)
                    .await?;
                Ok(match connection.get(item).await? {
                    Some(found) => found.value,
                    None => value.clone().into_bytes(),
                })
            })
            .await?;
        std::str::from_utf8(&found)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                StoreError::new(format!(
                    "memcached {}: the clock item {item} holds no time",
                    pool.addr()
                ))
            })
    }

    /// The tick item's time to live, or an error if it has gone.
    async fn ttl(&self, pool: &Pool, item: &str) -> Result<i64, StoreError> {
        let ttl = self
            .exchange(pool, async |lease| lease.connection().ttl(item).await)
            .await?;
        ttl.ok_or_else(|| {
            StoreError::new(format!(
                "memcached {}: the clock item {item} went away while it was read",
                pool.addr()
            ))
        })
    }

    /// Reads the item's time to live every `gap` until it changes: the
    /// tick's time on `clock` (between the last read before it was sent
    /// and the first after it was answered), half that span, and the time
    /// to live after the tick.
    async fn bracket_tick(
        &self,
        pool: &Pool,
        item: &str,
        clock: &impl Clock,
        gap: Duration,
    ) -> Result<(u64, u64, i64), StoreError> {
        let started = tokio::time::Instant::now();
        let mut before = clock.now();
        let first = self.ttl(pool, item).await?;
        while started.elapsed() < TICK_SEARCH {
            if !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
            let sent = clock.now();
            let ttl = self.ttl(pool, item).await?;
            let answered = clock.now();
            if ttl != first {
                let half = answered.saturating_sub(before) / 2;
                return Ok((before + half, half, ttl));
            }
            before = sent;
        }
        Err(StoreError::new(format!(
            "memcached {}: its clock did not tick in {TICK_SEARCH:?}",
            pool.addr()
        )))
    }

    /// Writes `report` into the offsets item (replacing this instance's
    /// last, dropping those older than [`REPORT_LIFE`] seconds) by CAS.
    async fn publish(&self, report: Report) -> Result<(), StoreError> {
        let item = self.offsets_item();
        let pool = self.server_of(&item);
        for _ in 0..self.options().max_attempts {
            let found = self
                .exchange(pool, async |lease| lease.connection().get(&item).await)
                .await?;
            let (mut reports, how) = match found {
                Some(found) => (parse_reports(&found.value), Write::Cas(found.cas)),
                None => (Vec::new(), Write::Add),
            };
            reports.retain(|r| {
                r.instance != report.instance && r.at.saturating_add(REPORT_LIFE) > report.at
            });
            reports.push(report);
            let value = format_reports(&reports);
            let written = self
                .exchange(pool, async |lease| {
                    lease
                        .connection()
                        .set(&item, &value, REPORT_LIFE, how)
                        .await
                })
                .await?;
            if written == Written::Stored {
                return Ok(());
            }
        }
        Err(StoreError::new(format!(
            "memcached {}: the clock offsets item kept changing under {} attempts",
            pool.addr(),
            self.options().max_attempts
        )))
    }

    /// The reports in the offsets item.
    async fn reports(&self) -> Result<Vec<Report>, StoreError> {
        let item = self.offsets_item();
        let found = self
            .exchange(self.server_of(&item), async |lease| {
                lease.connection().get(&item).await
            })
            .await?;
        Ok(found.map_or_else(Vec::new, |found| parse_reports(&found.value)))
    }

    fn offsets_item(&self) -> String {
        format!("{}{OFFSETS_ITEM}", self.options().prefix)
    }
}

/// The reports in an offsets item, lines of `ID OFFSET SECOND`; a
/// line that is not one is skipped.
fn parse_reports(value: &[u8]) -> Vec<Report> {
    let text = String::from_utf8_lossy(value);
    text.lines()
        .filter_map(|line| {
            let mut words = line.split(' ');
            let report = Report {
                instance: words.next()?.parse().ok()?,
                offset: words.next()?.parse().ok()?,
                at: words.next()?.parse().ok()?,
            };
            words.next().is_none().then_some(report)
        })
        .collect()
}

fn format_reports(reports: &[Report]) -> Vec<u8> {
    let mut text = String::new();
    for r in reports {
        text += &format!("{} {} {}\n", r.instance, r.offset, r.at);
    }
    text.into_bytes()
}

/// The median of `values` (the lower of the middle two), if any.
fn median(mut values: Vec<i64>) -> Option<i64> {
    values.sort_unstable();
    let middle = values.len().checked_sub(1)? / 2;
    values.get(middle).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_read_back_as_written_and_bad_lines_are_skipped() {
        let reports = [
            Report {
                instance: 1,
                offset: -5,
                at: 100,
            },
            Report {
                instance: 2,
                offset: 7,
                at: 101,
            },
        ];
        let mut value = format_reports(&reports);
        value.extend_from_slice(b"garbage\n3 4\n5 6 7 8\n");
        assert_eq!(parse_reports(&value), reports);
    }

    #[test]
    fn the_median_is_the_lower_middle() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3]), Some(3));
        assert_eq!(median(vec![9, -1]), Some(-1));
        assert_eq!(median(vec![5, 1, 3]), Some(3));
    }
}
