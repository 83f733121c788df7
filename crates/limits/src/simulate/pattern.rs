//! Traffic patterns for the simulator: deterministic arrival times in integer
//! nanoseconds, from t = 0, for a limit L per window W.

use std::fmt;
use std::str::FromStr;

/// One request of a simulated trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Nanoseconds from the trace's zero.
    pub t: u64,
    /// Which client (0 .. keys).
    pub key: u32,
    /// Cost of the request.
    pub cost: u64,
}

/// A traffic pattern, for limit L per window W (integer division where W
/// does not divide evenly):
///
/// - `steady`: request i (i = 0 .. 6L-1) at i x W / 2L: twice the limit for
///   three windows, evenly spaced.
/// - `edge`: request i (i = 0 .. L-1) at 9W/10 + i x W / 10L, then request i
///   at W + i x W / 10L: a full limit on each side of a window boundary.
/// - `burst`: three bursts of 2L requests, each at a single instant, at 0,
///   3W/2 and 3W.
/// - `random`: 6L arrival times drawn uniformly from [0, 3W) with a seeded
///   generator, sorted: a Poisson process of twice the limit, conditioned on
///   its count. The same seed gives the same trace on every machine.
/// - `ramp`: 8L requests whose rate climbs linearly from 0 to 4L per W over
///   four windows: request i at floor(sqrt(2 i W^2 / L)).
///
/// ```
/// use limits::simulate::Pattern;
/// let steady = Pattern::Steady.arrivals(10, 1_000_000_000, 1);
/// assert_eq!(steady.len(), 60);
/// assert_eq!(steady[1].t, 50_000_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Twice the limit, evenly spaced, for three windows.
    Steady,
    /// A full limit on each side of a window boundary.
    Edge,
    /// Three bursts of twice the limit at single instants.
    Burst,
    /// Uniformly random arrivals at twice the limit, from a seed.
    Random {
        /// The generator's seed.
        seed: u64,
    },
    /// A rate climbing from zero to four times the limit.
    Ramp,
}

impl Pattern {
    /// The names accepted on the command line.
    pub const NAMES: [&'static str; 5] = ["steady", "edge", "burst", "random", "ramp"];

    /// The pattern's name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Steady => "steady",
            Pattern::Edge => "edge",
            Pattern::Burst => "burst",
            Pattern::Random { .. } => "random",
            Pattern::Ramp => "ramp",
        }
    }

    /// The arrivals of this pattern for `limit` per `window` ns, every key
    /// receiving the whole pattern; sorted by time, then key. Every cost is 1.
    /// All of them at once: see [`stream`](Pattern::stream) for a trace too
    /// large to hold.
    pub fn arrivals(self, limit: u64, window: u64, keys: u32) -> Vec<Arrival> {
        self.stream(limit, window, keys).collect()
    }

    /// The same arrivals as [`arrivals`](Pattern::arrivals), in the same
    /// order, made one at a time: memory does not grow with `keys` (the
    /// `random` pattern holds one key's sorted times, 8 bytes a request).
    ///
    /// ```
    /// use limits::simulate::Pattern;
    /// let second = 1_000_000_000;
    /// let mut trace = Pattern::Burst.stream(10, second, 100_000);
    /// assert_eq!(trace.len(), 6_000_000);
    /// let first = trace.next().unwrap();
    /// assert_eq!((first.t, first.key), (0, 0));
    /// assert!(trace.eq(Pattern::Burst.stream(10, second, 100_000).skip(1)));
    /// ```
    pub fn stream(self, limit: u64, window: u64, keys: u32) -> Arrivals {
        let times = Times::new(self, limit, window);
        Arrivals {
            left: times.n.saturating_mul(u64::from(keys)),
            times,
            keys,
            now: 0,
            key: keys,
        }
    }

    /// How many requests one key receives (saturating at `u64::MAX`).
    pub fn requests_per_key(self, limit: u64) -> u64 {
        match self {
            Pattern::Edge => limit.saturating_mul(2),
            Pattern::Ramp => limit.saturating_mul(8),
            _ => limit.saturating_mul(6),
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Pattern {
    type Err = String;

    /// Parses a pattern name; `random` gets seed 0 (set it afterwards).
    fn from_str(s: &str) -> Result<Pattern, String> {
        Ok(match s {
            "steady" => Pattern::Steady,
            "edge" => Pattern::Edge,
            "burst" => Pattern::Burst,
            "random" => Pattern::Random { seed: 0 },
            "ramp" => Pattern::Ramp,
            _ => {
                return Err(format!(
                    "unknown pattern {s:?} (expected one of: {})",
                    Pattern::NAMES.join(", ")
                ));
            }
        })
    }
}

/// The arrivals of a pattern, one at a time, in time order then key order:
/// every key gets each time of the pattern before the next time starts.
/// Made by [`Pattern::stream`].
#[derive(Clone, Debug)]
pub struct Arrivals {
    times: Times,
    keys: u32,
    /// The time being handed out, and the next key to get it.
    now: u64,
    key: u32,
    left: u64,
}

impl Iterator for Arrivals {
    type Item = Arrival;

    fn next(&mut self) -> Option<Arrival> {
        if self.key >= self.keys {
            self.now = self.times.next()?;
            self.key = 0;
            if self.keys == 0 {
                return None;
            }
        }
        let key = self.key;
        self.key += 1;
        self.left = self.left.saturating_sub(1);
        Some(Arrival {
            t: self.now,
            key,
            cost: 1,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.left).unwrap_or(usize::MAX);
        (left, Some(left))
    }
}

impl ExactSizeIterator for Arrivals {}

/// One key's arrival times, computed as they are asked for (the `random`
/// pattern draws and sorts them all first: sorting needs them all).
#[derive(Clone, Debug)]
struct Times {
    pattern: Pattern,
    l: u128,
    w: u128,
    i: u64,
    n: u64,
    sorted: Vec<u64>,
}

impl Times {
    fn new(pattern: Pattern, limit: u64, window: u64) -> Times {
        let (l, w) = (u128::from(limit), u128::from(window));
        let n = pattern.requests_per_key(limit);
        let mut sorted = Vec::new();
        if let Pattern::Random { seed } = pattern {
            let mut rng = SplitMix64(seed);
            let span = 3 * w;
            sorted = (0..n).map(|_| at(rng.below(span))).collect();
            sorted.sort_unstable();
        }
        Times {
            pattern,
            l,
            w,
            i: 0,
            n,
            sorted,
        }
    }

    /// The time of request `i` (below `n`) of one key.
    fn time(&self, i: u64) -> u64 {
        let (l, w, i128) = (self.l, self.w, u128::from(i));
        match self.pattern {
            Pattern::Steady => at(i128 * w / (2 * l)),
            Pattern::Edge if i128 < l => at(9 * w / 10 + i128 * w / (10 * l)),
            Pattern::Edge => at(w + (i128 - l) * w / (10 * l)),
            Pattern::Burst => at([0, 3 * w / 2, 3 * w][(i128 / (2 * l)) as usize]),
            Pattern::Random { .. } => self.sorted[i as usize],
            Pattern::Ramp => {
                let square = (2 * i128)
                    .checked_mul(w)
                    .and_then(|x| x.checked_mul(w))
                    .map_or(u128::MAX, |x| x / l);
                at(square.isqrt())
            }
        }
    }
}

impl Iterator for Times {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        if self.i >= self.n {
            return None;
        }
        let t = self.time(self.i);
        self.i += 1;
        Some(t)
    }
}

/// A time computed in u128, saturated to u64.
fn at(x: u128) -> u64 {
    u64::try_from(x).unwrap_or(u64::MAX)
}

/// SplitMix64: a tiny, well-known generator, so that a seed means the same
/// trace everywhere without a dependency.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in [0, n), by multiply-shift (n < 2^64 here in practice;
    /// larger spans are folded).
    fn below(&mut self, n: u128) -> u128 {
        let n64 = u64::try_from(n).unwrap_or(u64::MAX);
        (u128::from(self.next()) * u128::from(n64)) >> 64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: u64 = 1_000_000_000;

    #[test]
    fn edge_straddles_the_boundary() {
        let t: Vec<u64> = Pattern::Edge
            .arrivals(10, W, 1)
            .iter()
            .map(|a| a.t)
            .collect();
        assert_eq!(t[0], 900_000_000);
        assert_eq!(t[9], 990_000_000);
        assert_eq!(t[10], 1_000_000_000);
        assert_eq!(t[19], 1_090_000_000);
    }

    #[test]
    fn random_is_seeded_and_sorted() {
        let a = Pattern::Random { seed: 7 }.arrivals(10, W, 1);
        assert_eq!(a, Pattern::Random { seed: 7 }.arrivals(10, W, 1));
        assert_ne!(a, Pattern::Random { seed: 8 }.arrivals(10, W, 1));
        assert!(a.windows(2).all(|p| p[0].t <= p[1].t));
        assert!(a.iter().all(|x| x.t < 3 * W));
    }

    #[test]
    fn ramp_climbs_to_four_times_the_limit() {
        let t: Vec<u64> = Pattern::Ramp
            .arrivals(10, W, 1)
            .iter()
            .map(|a| a.t)
            .collect();
        assert_eq!(t.len(), 80);
        assert!(t.windows(2).all(|p| p[0] <= p[1]));
        assert!(*t.last().unwrap() < 4 * W);
        // The last window holds 7/16 of the requests: 35 of 80.
        assert_eq!(t.iter().filter(|&&x| x >= 3 * W).count(), 35);
    }

    #[test]
    fn every_key_gets_the_whole_pattern() {
        let a = Pattern::Burst.arrivals(2, W, 3);
        assert_eq!(a.len(), 3 * 12);
        assert_eq!(a.iter().filter(|x| x.key == 2).count(), 12);
    }
}
