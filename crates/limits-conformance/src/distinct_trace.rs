//! Seeded random traces of a limit on distinct values, with the model's
//! answer to each request: what a store keeping values outside the process
//! (Redis, memcached) is replayed against, the same traces on every run.

use crate::{DistinctAnswer, DistinctModel};

/// A limit and the requests of one trace, times in nanoseconds, whole
/// multiples of the trace's unit (a store's own: a microsecond for Redis).
#[derive(Clone, Debug)]
pub struct DistinctTrace {
    /// The most distinct values in a window.
    pub at_most: u64,
    /// The window: an even 2 to 40 units.
    pub window: u64,
    /// The requests, in time order.
    pub steps: Vec<DistinctStep>,
}

/// One request of a [`DistinctTrace`].
#[derive(Clone, Copy, Debug)]
pub struct DistinctStep {
    /// When, in nanoseconds.
    pub at: u64,
    /// One of three keys.
    pub key: u64,
    /// One of six values.
    pub value: u64,
    /// Only looks (one request in seven).
    pub peek: bool,
}

impl DistinctTrace {
    /// Trace `seed` in units of `unit` ns: a limit of 1 to 4 values in a
    /// window of 2 to 40 units, and `steps` requests 0, W - 1, W, W + 1
    /// units or a random part of W apart.
    ///
    /// ```
    /// use limits_conformance::DistinctTrace;
    ///
    /// let trace = DistinctTrace::seeded(7, 50, 1000);
    /// assert_eq!(trace.steps.len(), 50);
    /// assert_eq!(trace.window % 2000, 0);
    /// assert!(trace.steps.iter().all(|s| s.at % 1000 == 0));
    /// assert_eq!(trace.expected().len(), 50);
    /// ```
    pub fn seeded(seed: u64, steps: usize, unit: u64) -> DistinctTrace {
        let mut rng = Seeded(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let at_most = 1 + rng.below(4);
        let window = 2 * (1 + rng.below(20));
        let mut at = 0;
        let steps = (0..steps)
            .map(|_| {
                at += match rng.below(8) {
                    0..=2 => 0,
                    3 => window - 1,
                    4 => window,
                    5 => window + 1,
                    _ => rng.below(window),
                };
                let (key, value) = (rng.below(3), rng.below(6));
                let peek = rng.below(7) == 0;
                DistinctStep {
                    at: at * unit,
                    key,
                    value,
                    peek,
                }
            })
            .collect();
        DistinctTrace {
            at_most,
            window: window * unit,
            steps,
        }
    }

    /// The model's answer to each step, in order.
    pub fn expected(&self) -> Vec<DistinctAnswer> {
        let mut models: Vec<DistinctModel> = vec![DistinctModel::default(); 3];
        self.steps
            .iter()
            .map(|s| {
                let model = &mut models[s.key as usize];
                model.decide(self.at_most, self.window, s.value, s.at, !s.peek)
            })
            .collect()
    }
}

/// xorshift64*: the same numbers from the same seed everywhere.
struct Seeded(u64);

impl Seeded {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}
