//! Access logs are written when requests finish, so their lines are often
//! slightly out of order. Events are held back until no event within the
//! reorder window can still come before them, and released in time order.
//! An event later than that is an error naming its line.

use super::trace::{Event, LineError};
use limits::format_seconds;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

/// An event in the heap, ordered by (time, input order): 40 bytes, and a
/// 5 s window at 10,000 lines/s holds 50,000 of them.
struct Pending {
    seq: u64,
    event: Event,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.event.t, self.seq) == (other.event.t, other.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.event.t, self.seq).cmp(&(other.event.t, other.seq))
    }
}

/// Re-orders events within `window` nanoseconds.
pub struct Reorder {
    window: u64,
    heap: BinaryHeap<Reverse<Pending>>,
    latest: Option<(u64, u64)>, // (time, line) of the latest event seen
    next_seq: u64,
}

impl Reorder {
    /// A buffer for disorder up to `window` ns (0: times must not go back).
    pub fn new(window: u64) -> Reorder {
        Reorder {
            window,
            heap: BinaryHeap::new(),
            latest: None,
            next_seq: 0,
        }
    }

    /// Takes `event`, numbering it in input order; returns its number, or an
    /// error if it comes too late to be put in order.
    pub fn push(&mut self, event: Event) -> Result<u64, LineError> {
        if let Some((latest, line)) = self.latest {
            if event.t.saturating_add(self.window) < latest {
                let behind = Duration::from_nanos(latest - event.t);
                let message = if self.window == 0 {
                    format!(
                        "time goes backwards: {}s is {}s before line {line}",
                        format_seconds(Duration::from_nanos(event.t)),
                        format_seconds(behind)
                    )
                } else {
                    format!(
                        "out of order by {}s (after line {line}), more than the reorder window of {}s (--reorder-window)",
                        format_seconds(behind),
                        format_seconds(Duration::from_nanos(self.window))
                    )
                };
                return Err(LineError {
                    line: event.line,
                    message,
                });
            }
        }
        if self.latest.is_none_or(|(latest, _)| event.t >= latest) {
            self.latest = Some((event.t, event.line));
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse(Pending { seq, event }));
        Ok(seq)
    }

    /// The next event that nothing still to come can precede, if any.
    pub fn pop_ready(&mut self) -> Option<(u64, Event)> {
        let (latest, _) = self.latest?;
        let ready = self
            .heap
            .peek()
            .is_some_and(|Reverse(p)| p.event.t.saturating_add(self.window) <= latest);
        if ready {
            self.pop()
        } else {
            None
        }
    }

    /// The next event in time order, ready or not (at the end of the input).
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|Reverse(p)| (p.seq, p.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(line: u64, t: u64) -> Event {
        Event {
            line,
            t,
            key: 0,
            cost: 1,
            value: None,
        }
    }

    #[test]
    fn puts_slightly_late_lines_in_order() {
        let mut r = Reorder::new(10);
        let mut out = Vec::new();
        for (line, t) in [(1, 100), (2, 95), (3, 120), (4, 111), (5, 140)] {
            r.push(ev(line, t)).unwrap();
            while let Some((_, e)) = r.pop_ready() {
                out.push(e.t);
            }
        }
        while let Some((_, e)) = r.pop() {
            out.push(e.t);
        }
        assert_eq!(out, vec![95, 100, 111, 120, 140]);
    }

    #[test]
    fn a_line_later_than_the_window_is_an_error_naming_it() {
        let mut r = Reorder::new(10);
        r.push(ev(1, 100)).unwrap();
        let err = r.push(ev(2, 89)).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("after line 1"), "{err}");
        let mut strict = Reorder::new(0);
        strict.push(ev(1, 100)).unwrap();
        assert!(strict.push(ev(2, 100)).is_ok());
        let err = strict.push(ev(3, 99)).unwrap_err();
        assert!(err.message.contains("time goes backwards"), "{err}");
    }
}
