//! The sliding log's layout (`sliding_log.lua`): per rate, one string of a
//! 28-byte header (newest time: 8 bytes, head: 4, entries: 4, total: 6,
//! units: 6; little-endian) and a ring of `cap` entries, oldest at `head`,
//! each a time in microseconds modulo 256^v and the running total of units
//! up to it modulo 256^w, with v and w the fewest bytes for which
//! 256^v > W and 256^w > L. An entry is a request (or those of one
//! instant): the core's `(time, cost)`.
//!
//! Written back whole, the live entries first from the ring's start; its
//! room grows and shrinks as the scripts' does (doubling up to L entries,
//! halved when a quarter full), so either reads what the other wrote.

use limits::Rule;

const HEADER: usize = 28;

/// A rate's ring: its widths.
struct Shape {
    /// Bytes of an entry's time.
    v: usize,
    /// Bytes of an entry's running total.
    w: usize,
    /// The rate's limit.
    limit: u64,
}

impl Shape {
    fn of(limit: u64, window_micros: u64) -> Shape {
        let bytes = |most: u64| {
            (1..=8)
                .find(|&b| b == 8 || 1u64 << (8 * b) > most)
                .unwrap_or(8)
        };
        Shape {
            v: bytes(window_micros),
            w: bytes(limit),
            limit,
        }
    }

    fn entry(&self) -> usize {
        self.v + self.w
    }

    /// 256^v, the times' modulus.
    fn times(&self) -> u64 {
        1u64 << (8 * self.v)
    }

    /// 256^w, the totals' modulus.
    fn totals(&self) -> u64 {
        1u64 << (8 * self.w)
    }
}

/// A little-endian number of at most 8 bytes.
fn number(bytes: &[u8]) -> u64 {
    let mut eight = [0; 8];
    eight[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(eight)
}

fn put(out: &mut Vec<u8>, n: u64, width: usize) {
    out.extend_from_slice(&n.to_le_bytes()[..width]);
}

fn shapes(rule: &Rule) -> impl Iterator<Item = Shape> + '_ {
    rule.rates()
        .iter()
        .map(|rate| Shape::of(rate.limit(), rate.window_nanos() / 1000))
}

/// Appends every rate's `[entries, (time, cost)...]` (nanoseconds) read
/// from its ring in `stored` (an absent key: none); `None` for a value
/// that is no ring of this rate.
pub(super) fn read(rule: &Rule, stored: &[Option<&[u8]>], words: &mut Vec<u64>) -> Option<()> {
    if stored.len() != rule.rates().len() {
        return None;
    }
    for (shape, value) in shapes(rule).zip(stored) {
        let Some(value) = value.filter(|v| v.len() >= HEADER) else {
            words.push(0);
            continue;
        };
        let newest = number(&value[..8]);
        let head = number(&value[8..12]) as usize;
        let count = number(&value[12..16]) as usize;
        let (total, units) = (number(&value[16..22]), number(&value[22..28]));
        let room = value.len() - HEADER;
        let cap = room / shape.entry();
        if room % shape.entry() != 0 || count > cap || (count > 0 && head >= cap) {
            return None;
        }
        // Both moduli are powers of two: a remainder is a mask.
        let (times, totals) = (shape.times() - 1, shape.totals() - 1);
        let low = newest & times;
        let mut before = total.wrapping_sub(units) & totals;
        words.reserve(1 + 2 * count);
        words.push(count as u64);
        let mut at = HEADER + head * shape.entry();
        for _ in 0..count {
            if at == value.len() {
                at = HEADER;
            }
            let time = number(&value[at..at + shape.v]);
            let running = number(&value[at + shape.v..at + shape.entry()]);
            at += shape.entry();
            let back = low.wrapping_sub(time) & times;
            let cost = running.wrapping_sub(before) & totals;
            before = running;
            words.extend([newest.checked_sub(back)?.checked_mul(1000)?, cost]);
        }
    }
    Some(())
}

/// Every rate's ring holding its `[entries, (time, cost)...]` of `words`,
/// an entry per instant, with the room the scripts would give it after the
/// ring in `stored`.
pub(super) fn write(rule: &Rule, words: &[u64], stored: &[Option<&[u8]>]) -> Vec<Vec<u8>> {
    let mut words = words.iter().copied();
    shapes(rule)
        .enumerate()
        .map(|(i, shape)| {
            let len = words.next().unwrap_or(0) as usize;
            let mut entries: Vec<(u64, u64)> = Vec::with_capacity(len);
            for _ in 0..len {
                let (time, cost) = (words.next().unwrap_or(0) / 1000, words.next().unwrap_or(0));
                match entries.last_mut() {
                    Some(last) if last.0 == time => last.1 += cost,
                    _ => entries.push((time, cost)),
                }
            }
            let before = stored
                .get(i)
                .copied()
                .flatten()
                .filter(|v| v.len() >= HEADER);
            let cap_before = before.map_or(0, |v| (v.len() - HEADER) / shape.entry());
            ring(&shape, &entries, cap_before)
        })
        .collect()
}

/// A ring of `entries` (time in µs, cost) from its start, in as much room
/// as the scripts give it after `cap_before` entries.
fn ring(shape: &Shape, entries: &[(u64, u64)], cap_before: usize) -> Vec<u8> {
    let count = entries.len();
    let mut cap = cap_before;
    if count > cap {
        let most = usize::try_from(shape.limit).unwrap_or(usize::MAX);
        cap = (2 * cap).max(4).min(most).max(count);
    }
    if cap > 16 && 4 * count < cap {
        cap = 2 * count;
    }
    let units: u64 = entries.iter().map(|e| e.1).sum();
    let newest = entries.last().map_or(0, |e| e.0);
    let mut out = Vec::with_capacity(HEADER + cap * shape.entry());
    put(&mut out, newest, 8);
    put(&mut out, 0, 4);
    put(&mut out, count as u64, 4);
    put(&mut out, units % shape.totals(), 6);
    put(&mut out, units, 6);
    let mut running = 0;
    for &(time, cost) in entries {
        running = (running + cost) % shape.totals();
        put(&mut out, time % shape.times(), shape.v);
        put(&mut out, running, shape.w);
    }
    out.resize(HEADER + cap * shape.entry(), 0);
    out
}
