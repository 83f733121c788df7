//! Rejections per key, for the summary's "limited most" and the report's
//! keys: counted (with the first and last time) by key number while the key
//! is held (no hashing per rejection), and by name once the key is
//! forgotten, so that a key that goes idle and comes back under a new
//! number is still counted as one.

use super::keys::{KeyId, Keys};
use std::collections::HashMap;

/// One key's rejections: how many, the first's and the last's times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rejections {
    pub count: u64,
    pub first: u64,
    pub last: u64,
}

impl Rejections {
    /// One more at `t` (never before the last).
    fn add(&mut self, t: u64) {
        if self.count == 0 {
            self.first = t;
        }
        self.count += 1;
        self.last = t;
    }

    /// `self` and `other` as one key's.
    fn merge(&mut self, other: Rejections) {
        match (self.count, other.count) {
            (_, 0) => {}
            (0, _) => *self = other,
            _ => {
                self.count += other.count;
                self.first = self.first.min(other.first);
                self.last = self.last.max(other.last);
            }
        }
    }
}

/// One limiter's rejections per key.
#[derive(Default)]
pub struct Rejected {
    /// By number, for the keys held now.
    held: Vec<Rejections>,
    /// By name, for the keys forgotten since: one entry per key ever
    /// rejected (not per key ever seen).
    gone: HashMap<Box<str>, Rejections>,
}

impl Rejected {
    /// One more rejection of key `id`, at `t`.
    #[inline]
    pub fn count(&mut self, id: KeyId, t: u64) {
        let at = id as usize;
        if at >= self.held.len() {
            self.held.resize(at + 1, Rejections::default());
        }
        self.held[at].add(t);
    }

    /// Key `id`, named `name`, is being forgotten: its rejections move to
    /// its name.
    pub fn forget(&mut self, id: KeyId, name: &str) {
        let Some(held) = self.held.get_mut(id as usize).filter(|r| r.count > 0) else {
            return;
        };
        let moved = std::mem::take(held);
        match self.gone.get_mut(name) {
            Some(total) => total.merge(moved),
            None => {
                self.gone.insert(name.into(), moved);
            }
        }
    }

    /// Every key rejected, by name.
    pub fn by_key<'a>(&'a self, keys: &'a Keys) -> HashMap<&'a str, Rejections> {
        let mut totals: HashMap<&str, Rejections> =
            self.gone.iter().map(|(k, &r)| (&**k, r)).collect();
        for (id, &r) in (0..).zip(&self.held) {
            if r.count > 0 {
                totals.entry(keys.name(id)).or_default().merge(r);
            }
        }
        totals
    }

    /// The `top` keys with the most rejections, most first, ties by name.
    pub fn most<'a>(&'a self, keys: &'a Keys, top: usize) -> Vec<(&'a str, Rejections)> {
        let mut most: Vec<(&str, Rejections)> = self.by_key(keys).into_iter().collect();
        most.sort_unstable_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
        most.truncate(top);
        most
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_forgotten_and_back_under_another_number_counts_as_one() {
        let mut keys = Keys::default();
        let mut rejected = Rejected::default();
        let a = keys.intern("a").unwrap();
        let b = keys.intern("b").unwrap();
        rejected.count(a, 10);
        rejected.count(a, 20);
        rejected.count(b, 30);
        // "a" is forgotten; "c" takes its number; "a" comes back as another.
        keys.hold(b, 100);
        keys.sweep(50, 2, |id, name| rejected.forget(id, name));
        assert_eq!(keys.live(), 1);
        let c = keys.intern("c").unwrap();
        assert_eq!(c, a, "the freed number is given out again");
        rejected.count(c, 60);
        let a2 = keys.intern("a").unwrap();
        assert_ne!(a2, a);
        rejected.count(a2, 70);
        let counts = |most: Vec<(&str, Rejections)>| -> Vec<(String, u64)> {
            most.into_iter()
                .map(|(k, r)| (k.to_string(), r.count))
                .collect()
        };
        let most = rejected.most(&keys, 5);
        assert_eq!(
            most[0].1,
            Rejections {
                count: 3,
                first: 10,
                last: 70
            }
        );
        assert_eq!(
            counts(most),
            [("a".into(), 3), ("b".into(), 1), ("c".into(), 1)]
        );
        assert_eq!(counts(rejected.most(&keys, 1)), [("a".into(), 3)]);
    }
}
