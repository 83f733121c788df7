//! Reading a request body to find a key field in it, with every bound a
//! slow or hostile client could push against.
//!
//! A login rule keyed on a form or JSON field must read the body before it
//! can decide. That read is bounded three ways:
//!
//! - **size**: at most `max_body` bytes, held in one buffer that grows with
//!   what arrived (never a buffer per frame: a body sent a byte at a time
//!   costs its bytes, not a network read buffer per byte);
//! - **time**: the whole body must arrive within `body_timeout` (408 after);
//! - **memory across connections**: every buffered byte is charged to a
//!   [`BodyBudget`] shared by all requests; a request that would go past it
//!   is answered 503 with Retry-After instead of being buffered.

use bytes::Bytes;
use http_body::Body;
use http_body_util::BodyExt;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The memory all buffered bodies may hold at once, shared by every request
/// (and kept across policy reloads: clones share the count).
///
/// ```
/// use limits_http::BodyBudget;
/// let budget = BodyBudget::new(1024);
/// assert_eq!(budget.capacity(), 1024);
/// assert_eq!(budget.in_use(), 0);
/// ```
#[derive(Clone)]
pub struct BodyBudget {
    capacity: usize,
    in_use: Arc<AtomicUsize>,
}

impl BodyBudget {
    /// A budget of `capacity` bytes.
    pub fn new(capacity: usize) -> BodyBudget {
        BodyBudget {
            capacity,
            in_use: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The most bytes buffered bodies may hold at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Bytes held by bodies being buffered or in flight now.
    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Relaxed)
    }

    /// An empty reservation against this budget.
    fn reserve(&self) -> Reservation {
        Reservation {
            budget: self.clone(),
            held: 0,
        }
    }
}

impl fmt::Debug for BodyBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BodyBudget")
            .field("capacity", &self.capacity)
            .field("in_use", &self.in_use())
            .finish()
    }
}

/// Bytes charged to a [`BodyBudget`], given back when dropped (when the
/// request it buffered for is done).
pub struct Reservation {
    budget: BodyBudget,
    held: usize,
}

impl Reservation {
    /// Grows the charge to `bytes` in all; false (and unchanged) if the
    /// budget cannot cover it.
    fn grow_to(&mut self, bytes: usize) -> bool {
        let more = bytes.saturating_sub(self.held);
        if more == 0 {
            return true;
        }
        let in_use = &self.budget.in_use;
        let granted = in_use
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(more)
                    .filter(|&total| total <= self.budget.capacity)
            })
            .is_ok();
        if granted {
            self.held += more;
        }
        granted
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.in_use.fetch_sub(self.held, Ordering::AcqRel);
    }
}

/// Why a body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// Larger than the bound (413).
    TooLarge(usize),
    /// Not all there within the deadline (408).
    TimedOut(Duration),
    /// Buffered bodies already hold the whole budget (503).
    OverBudget,
    /// The client sent a body that is not valid HTTP (400), e.g. a malformed
    /// chunk.
    Malformed(String),
}

/// Reads all of `body` (at most `max` bytes, within `timeout`), charging
/// what it holds to `budget`.
pub(crate) async fn read_bounded<B>(
    body: B,
    max: usize,
    timeout: Duration,
    budget: &BodyBudget,
) -> Result<(Bytes, Reservation), BodyError>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut reservation = budget.reserve();
    let read = read_all(body, max, &mut reservation);
    match tokio::time::timeout(timeout, read).await {
        Ok(Ok(bytes)) => Ok((bytes, reservation)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(BodyError::TimedOut(timeout)),
    }
}

async fn read_all<B>(body: B, max: usize, reservation: &mut Reservation) -> Result<Bytes, BodyError>
where
    B: Body<Data = Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let declared = body.size_hint().exact();
    if declared.is_some_and(|n| n > max as u64) {
        return Err(BodyError::TooLarge(max));
    }
    let mut buffer: Vec<u8> = Vec::new();
    let mut body = std::pin::pin!(body);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| BodyError::Malformed(e.into().to_string()))?;
        let Ok(data) = frame.into_data() else {
            continue; // trailers: not part of the content
        };
        let len = buffer.len() + data.len();
        if len > max {
            return Err(BodyError::TooLarge(max));
        }
        if len > buffer.capacity() {
            // Grow by doubling, never past the bound, so what is held stays
            // within twice what arrived.
            let target = len.max(buffer.capacity() * 2).max(64).min(max);
            if !reservation.grow_to(target) {
                return Err(BodyError::OverBudget);
            }
            buffer.reserve_exact(target - buffer.len());
        }
        // Copy out: the frame's own allocation (a network read buffer) is
        // released as soon as it is dropped here.
        buffer.extend_from_slice(&data);
    }
    Ok(Bytes::from(buffer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body::Frame;
    use http_body_util::Full;
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// Frames handed out one by one; `Err` entries are body errors.
    struct Frames(VecDeque<Result<&'static [u8], &'static str>>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = std::io::Error;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            Poll::Ready(self.0.pop_front().map(|f| match f {
                Ok(bytes) => Ok(Frame::data(Bytes::from_static(bytes))),
                Err(e) => Err(std::io::Error::other(e)),
            }))
        }
    }

    fn frames(list: &[Result<&'static [u8], &'static str>]) -> Frames {
        Frames(list.iter().copied().collect())
    }

    const SECOND: Duration = Duration::from_secs(1);

    #[tokio::test]
    async fn a_body_within_bounds_is_read_and_charged_until_dropped() {
        let budget = BodyBudget::new(1 << 20);
        let body = Full::new(Bytes::from_static(b"user=alice"));
        let (bytes, reservation) = read_bounded(body, 100, SECOND, &budget).await.unwrap();
        assert_eq!(&bytes[..], b"user=alice");
        assert!((10..=100).contains(&budget.in_use()), "{budget:?}");
        drop(reservation);
        assert_eq!(budget.in_use(), 0);
    }

    #[tokio::test]
    async fn a_body_trickled_a_byte_at_a_time_holds_memory_for_its_bytes() {
        let budget = BodyBudget::new(1 << 20);
        let bytes: Vec<Result<&'static [u8], &'static str>> = vec![Ok(b"a"); 4000];
        let (body, held) = read_bounded(frames(&bytes), 16 * 1024, SECOND, &budget)
            .await
            .unwrap();
        assert_eq!(body.len(), 4000);
        assert!(budget.in_use() <= 8000, "{budget:?}");
        drop(held);
    }

    #[tokio::test]
    async fn too_large_malformed_and_over_budget_bodies_are_refused() {
        let budget = BodyBudget::new(1 << 20);
        let big = frames(&[Ok(b"0123456789"), Ok(b"0123456789")]);
        assert!(matches!(
            read_bounded(big, 15, SECOND, &budget).await,
            Err(BodyError::TooLarge(15))
        ));
        let broken = frames(&[Ok(b"user="), Err("invalid chunk size")]);
        assert!(matches!(
            read_bounded(broken, 100, SECOND, &budget).await,
            Err(BodyError::Malformed(e)) if e.contains("invalid chunk size")
        ));
        assert_eq!(budget.in_use(), 0, "failed reads give their bytes back");
        let small = BodyBudget::new(100);
        let (_, held) = read_bounded(frames(&[Ok(b"abc")]), 1000, SECOND, &small)
            .await
            .unwrap();
        let more = frames(&[Ok(&[b'x'; 90])]);
        assert!(matches!(
            read_bounded(more, 1000, SECOND, &small).await,
            Err(BodyError::OverBudget)
        ));
        drop(held);
        let again = frames(&[Ok(&[b'x'; 90])]);
        assert!(read_bounded(again, 1000, SECOND, &small).await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_times_out() {
        let budget = BodyBudget::new(1 << 20);
        // A body that never sends its next frame.
        struct Stalled;
        impl Body for Stalled {
            type Data = Bytes;
            type Error = std::io::Error;
            fn poll_frame(
                self: Pin<&mut Self>,
                _: &mut Context<'_>,
            ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
                Poll::Pending
            }
        }
        let read = read_bounded(Stalled, 100, Duration::from_secs(10), &budget).await;
        assert!(matches!(read, Err(BodyError::TimedOut(d)) if d == Duration::from_secs(10)));
    }
}
