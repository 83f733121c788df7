//! Allowed and limited requests over a replay's time, for the report's
//! charts: counts per bin, the bins' width doubling (each two neighbours
//! merged) whenever the trace outgrows [`MAX_BINS`] of them, so that a
//! trace of any length is held in a few kilobytes and drawn in at most
//! that many bars.

/// The most bins a timeline keeps.
pub(super) const MAX_BINS: usize = 400;

/// The width of the first bins: a millisecond.
const FIRST_WIDTH: u64 = 1_000_000;

/// Requests allowed and limited in one bin.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Bin {
    pub allowed: u64,
    pub limited: u64,
}

/// One limiter's decisions over the trace's time, from its first request.
#[derive(Debug)]
pub(super) struct Timeline {
    start: Option<u64>,
    width: u64,
    bins: Vec<Bin>,
}

impl Default for Timeline {
    fn default() -> Timeline {
        Timeline {
            start: None,
            width: FIRST_WIDTH,
            bins: Vec::new(),
        }
    }
}

impl Timeline {
    /// One request at `t` (ns; never before the first one's), allowed or
    /// limited.
    pub fn count(&mut self, t: u64, allowed: bool) {
        let since = t.saturating_sub(*self.start.get_or_insert(t));
        while since / self.width >= MAX_BINS as u64 {
            self.widen();
        }
        let at = (since / self.width) as usize;
        if at >= self.bins.len() {
            self.bins.resize(at + 1, Bin::default());
        }
        let bin = &mut self.bins[at];
        match allowed {
            true => bin.allowed += 1,
            false => bin.limited += 1,
        }
    }

    /// Twice as wide bins: each two neighbours merged.
    fn widen(&mut self) {
        self.width = self.width.saturating_mul(2);
        self.bins = merged(&self.bins, 2);
    }

    /// The bins merged into at most `bars` (each of `k` neighbours, the
    /// fewest that do), and their width: what a chart of that many bars
    /// draws.
    pub fn in_bars(&self, bars: usize) -> (u64, Vec<Bin>) {
        let k = self.bins.len().div_ceil(bars.max(1)).max(1);
        (self.width.saturating_mul(k as u64), merged(&self.bins, k))
    }

    /// The first request's time (ns), where the first bin starts; zero
    /// before any.
    pub fn start(&self) -> u64 {
        self.start.unwrap_or(0)
    }
}

/// Each `k` neighbours of `bins` as one.
fn merged(bins: &[Bin], k: usize) -> Vec<Bin> {
    bins.chunks(k)
        .map(|group| Bin {
            allowed: group.iter().map(|b| b.allowed).sum(),
            limited: group.iter().map(|b| b.limited).sum(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_widen_as_the_trace_grows_and_keep_every_count() {
        let mut timeline = Timeline::default();
        let second = 1_000_000_000u64;
        // A request every 10 ms from t = 5 s for an hour, one in three limited.
        let mut n = 0u64;
        let mut t = 5 * second;
        while t < 3605 * second {
            timeline.count(t, n % 3 != 0);
            n += 1;
            t += 10_000_000;
        }
        let (width, bins) = timeline.in_bars(MAX_BINS);
        assert!(
            bins.len() <= MAX_BINS && bins.len() > MAX_BINS / 2,
            "{}",
            bins.len()
        );
        assert_eq!(width, FIRST_WIDTH << 14, "the first power of two that fits");
        let allowed: u64 = bins.iter().map(|b| b.allowed).sum();
        let limited: u64 = bins.iter().map(|b| b.limited).sum();
        assert_eq!((allowed + limited, limited), (n, n.div_ceil(3)));
        // Every full bin holds its share (to the request): the rate was steady.
        let per_bin = width / 10_000_000;
        for b in &bins[..bins.len() - 1] {
            assert!(
                (per_bin..=per_bin + 1).contains(&(b.allowed + b.limited)),
                "{b:?}"
            );
        }
        // Drawn in at most 100 bars: each of three bins (220 of them).
        let (bar, bars) = timeline.in_bars(100);
        assert_eq!((bars.len(), bar), (bins.len().div_ceil(3), 3 * width));
        assert_eq!(bars.iter().map(|b| b.allowed).sum::<u64>(), allowed);
    }

    #[test]
    fn a_request_falls_in_the_bin_of_its_time_since_the_first() {
        let mut timeline = Timeline::default();
        timeline.count(7, true);
        timeline.count(7 + FIRST_WIDTH - 1, false);
        timeline.count(7 + 3 * FIRST_WIDTH, false);
        assert_eq!(
            timeline.in_bars(MAX_BINS).1,
            [
                Bin {
                    allowed: 1,
                    limited: 1
                },
                Bin::default(),
                Bin::default(),
                Bin {
                    allowed: 0,
                    limited: 1
                }
            ]
        );
    }
}
