//! One key's releases in the last window, for the exact worst window, held
//! in as few bytes as they can be read back from.
//!
//! The worst window has to know when each counted release leaves the window,
//! so every distinct release time within W is kept: a limiter that lets L
//! through per window leaves up to L (the fixed window 2L) of them per key.
//! As `(time, cost)` pairs of 16 bytes they would be most of `limits
//! simulate`'s memory, so each is the gap from the release before
//! it, and its cost only when that is not 1, as LEB128 varints in a byte
//! ring: a gap of a millisecond in nanoseconds takes 3 bytes. Times are read
//! back exactly (sums of exact gaps), so the worst window does not change.
//! The oldest entry lives outside the ring (its time and cost as plain
//! fields), so a key seen once a window allocates nothing.

use std::collections::VecDeque;

/// One key's releases within the last window: the oldest as fields, the
/// rest (once there has been a second) in a boxed ring, so that the many
/// keys of a real trace seen once a window take 48 bytes and no allocation.
#[derive(Clone, Debug, Default)]
pub(super) struct Recent {
    rest: Option<Box<Rest>>,
    /// Time of the oldest entry (meaningless while `held` is false).
    oldest: u64,
    /// Its cost.
    oldest_cost: u64,
    /// Time of the newest entry.
    newest: u64,
    /// Total cost of every entry.
    sum: u64,
    /// Whether any entry is held (the oldest at least).
    held: bool,
}

/// The entries after the oldest, each as `varint(gap << 1 | weighted)` then,
/// if weighted, `varint(cost)`; `gap` is from the entry before it.
#[derive(Clone, Debug, Default)]
struct Rest {
    ring: VecDeque<u8>,
    /// Bytes of the newest entry in `ring`.
    back_len: u8,
}

impl Recent {
    /// Counts `cost` at `t`, after dropping what is `window` or more before
    /// `t`; returns the total now in (t - W, t]. Times must not decrease (one
    /// before the newest counts at the newest).
    pub(super) fn add(&mut self, t: u64, cost: u64, window: u64) -> u64 {
        let t = if self.held { t.max(self.newest) } else { t };
        // An entry at e shares a window [e, e + W) with t iff t - e < W
        // (written so that e + W past u64::MAX is still a window holding t).
        while self.held && t - self.oldest >= window {
            self.pop_oldest();
        }
        if !self.held {
            self.oldest = t;
            self.oldest_cost = cost;
            self.newest = t;
            self.held = true;
        } else if t == self.newest {
            // Releases at one instant leave every window together: one entry.
            match self.rest.as_deref_mut() {
                Some(rest) if !rest.ring.is_empty() => {
                    let start = rest.ring.len() - usize::from(rest.back_len);
                    let (gap, old_cost, _) = decode(&rest.ring, start);
                    rest.ring.truncate(start);
                    rest.back_len = encode(&mut rest.ring, gap, old_cost + cost);
                }
                _ => self.oldest_cost += cost,
            }
        } else {
            let rest = self.rest.get_or_insert_with(Box::default);
            rest.back_len = encode(&mut rest.ring, t - self.newest, cost);
            self.newest = t;
        }
        self.sum += cost;
        self.sum
    }

    /// The time of its newest entry (meaningless when nothing is held).
    pub(super) fn newest(&self) -> u64 {
        self.newest
    }

    /// Whether anything held can share a window [e, e + W) with `t` or
    /// later: the newest entry is after `t`, or less than W before it.
    pub(super) fn reaches(&self, t: u64, window: u64) -> bool {
        self.held && (self.newest > t || t - self.newest < window)
    }

    fn pop_oldest(&mut self) {
        self.sum -= self.oldest_cost;
        match self.rest.as_deref_mut() {
            Some(rest) if !rest.ring.is_empty() => {
                let (gap, cost, len) = decode(&rest.ring, 0);
                rest.ring.drain(..len);
                self.oldest += gap;
                self.oldest_cost = cost;
            }
            _ => self.held = false,
        }
    }
}

/// Appends an entry of `gap` and `cost`; returns its length in bytes.
fn encode(ring: &mut VecDeque<u8>, gap: u64, cost: u64) -> u8 {
    let weighted = cost != 1;
    let mut len = push_varint(ring, (u128::from(gap) << 1) | u128::from(weighted));
    if weighted {
        len += push_varint(ring, u128::from(cost));
    }
    len
}

/// The entry at `at`: its gap, its cost and its length in bytes.
fn decode(ring: &VecDeque<u8>, at: usize) -> (u64, u64, usize) {
    let (head, n) = read_varint(ring, at);
    // Written from a u64 shifted left by one: the gap fits a u64 again.
    let gap = (head >> 1) as u64;
    if head & 1 == 0 {
        return (gap, 1, n);
    }
    let (cost, m) = read_varint(ring, at + n);
    (gap, cost as u64, n + m)
}

fn push_varint(ring: &mut VecDeque<u8>, mut v: u128) -> u8 {
    let mut len = 1;
    while v >= 0x80 {
        ring.push_back((v as u8) | 0x80);
        v >>= 7;
        len += 1;
    }
    ring.push_back(v as u8);
    len
}

fn read_varint(ring: &VecDeque<u8>, at: usize) -> (u128, usize) {
    let mut v = 0u128;
    let mut n = 0;
    loop {
        let b = ring[at + n];
        v |= u128::from(b & 0x7f) << (7 * n);
        n += 1;
        if b < 0x80 {
            return (v, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_back_exactly_at_every_size() {
        let mut ring = VecDeque::new();
        let cases = [(0, 1), (1, 0), (127, 1), (1 << 40, 5), (u64::MAX, u64::MAX)];
        let lens: Vec<u8> = cases
            .iter()
            .map(|&(g, c)| encode(&mut ring, g, c))
            .collect();
        let mut at = 0;
        for (&(gap, cost), &len) in cases.iter().zip(&lens) {
            assert_eq!(decode(&ring, at), (gap, cost, usize::from(len)));
            at += usize::from(len);
        }
        assert_eq!(at, ring.len());
        // A millisecond's gap at cost 1 is 3 bytes, a second's 5.
        assert_eq!(encode(&mut ring, 1_000_000, 1), 3);
        assert_eq!(encode(&mut ring, 1_000_000_000, 1), 5);
    }

    #[test]
    fn a_key_seen_once_allocates_nothing_and_a_burst_is_one_entry() {
        let mut r = Recent::default();
        assert_eq!(r.add(5, 1, 10), 1);
        assert!(r.rest.is_none());
        assert_eq!(std::mem::size_of::<Recent>(), 48);
        assert_eq!(r.add(6, 1, 10), 2);
        for _ in 0..1000 {
            r.add(7, 1, 10);
        }
        assert_eq!(r.sum, 1002);
        let ring = &r.rest.as_ref().unwrap().ring;
        assert!(ring.len() <= 4, "{} bytes", ring.len());
        // At 15, 5 has left; at 16, 6 has, and 7's burst is still in.
        assert_eq!(r.add(15, 1, 10), 1002);
        assert_eq!(r.add(16, 1, 10), 1002);
        assert_eq!(r.add(27, 2, 10), 2);
        assert!(r.reaches(36, 10) && !r.reaches(37, 10));
        assert!(r.reaches(u64::MAX, u64::MAX));
    }
}
