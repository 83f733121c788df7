//! Rejections per key, for the summary's "limited most": counted by key
//! number while the key is held (no hashing per rejection), and by name once
//! the key is forgotten, so that a key that goes idle and comes back under a
//! new number is still counted as one.

use super::keys::{KeyId, Keys};
use std::collections::HashMap;

/// One limiter's rejections per key.
#[derive(Default)]
pub struct Rejected {
    /// By number, for the keys held now.
    held: Vec<u64>,
    /// By name, for the keys forgotten since: one entry per key ever
    /// rejected (not per key ever seen).
    gone: HashMap<Box<str>, u64>,
}

impl Rejected {
    /// One more rejection of key `id`.
    #[inline]
    pub fn count(&mut self, id: KeyId) {
        let at = id as usize;
        if at >= self.held.len() {
            self.held.resize(at + 1, 0);
        }
        self.held[at] += 1;
    }

    /// Key `id`, named `name`, is being forgotten: its rejections move to
    /// its name.
    pub fn forget(&mut self, id: KeyId, name: &str) {
        let Some(n) = self.held.get_mut(id as usize).filter(|n| **n > 0) else {
            return;
        };
        match self.gone.get_mut(name) {
            Some(total) => *total += *n,
            None => {
                self.gone.insert(name.into(), *n);
            }
        }
        *n = 0;
    }

    /// The `top` keys with the most rejections, most first, ties by name.
    pub fn most<'a>(&'a self, keys: &'a Keys, top: usize) -> Vec<(&'a str, u64)> {
        let mut totals: HashMap<&str, u64> = self.gone.iter().map(|(k, &n)| (&**k, n)).collect();
        for (id, &n) in (0..).zip(&self.held) {
            if n > 0 {
                *totals.entry(keys.name(id)).or_default() += n;
            }
        }
        let mut most: Vec<(&str, u64)> = totals.into_iter().collect();
        most.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
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
        rejected.count(a);
        rejected.count(a);
        rejected.count(b);
        // "a" is forgotten; "c" takes its number; "a" comes back as another.
        keys.hold(b, 100);
        keys.sweep(50, 2, |id, name| rejected.forget(id, name));
        assert_eq!(keys.live(), 1);
        let c = keys.intern("c").unwrap();
        assert_eq!(c, a, "the freed number is given out again");
        rejected.count(c);
        let a2 = keys.intern("a").unwrap();
        assert_ne!(a2, a);
        rejected.count(a2);
        assert_eq!(rejected.most(&keys, 5), [("a", 3), ("b", 1), ("c", 1)]);
        assert_eq!(rejected.most(&keys, 1), [("a", 3)]);
    }
}
