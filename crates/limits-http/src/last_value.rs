//! The last value of each kind a thread made (a RateLimit value, a
//! Retry-After, a 429's body), handed out again while its numbers repeat.
//! The whole values, numbers in, per thread: each rule's text without
//! numbers is made once per policy by the policy in force (in_force.rs).
//!
//! Those values are a rule's fixed text around one or two numbers, and the
//! numbers repeat from one response to the next far more often than not: a
//! rule whose bucket stays full answers `r=LIMIT-1;t=1` to every request, a
//! refused client hears the same Retry-After (and the same 429 body) for a
//! whole second. A value made anew costs its formatting, its check and an
//! allocation; a repeated one is a reference count's increment. A value is
//! remembered by the thread that made it (no lock, no line shared between
//! cores), by what it was made from (a [`Source`], never reused) and its
//! numbers, so that one given again is the one that would have been made:
//! the same bytes (tests compare them with the values written anew).

use bytes::Bytes;
use http::HeaderValue;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::LocalKey;

/// What a remembered value was made from (a rule's pieces): a number no
/// other source has had or will have in this process, so that a value is
/// never taken for one of a rule that has since been replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Source(u64);

impl Source {
    /// A source no other has been or will be.
    pub(crate) fn new() -> Source {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Source(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The source of values made of numbers alone (Retry-After).
    pub(crate) const NUMBERS: Source = Source(0);
}

/// A remembered value, with what it was made of.
pub(crate) struct Entry<T> {
    source: Source,
    numbers: [u64; 2],
    value: T,
}

/// One kind of value's last one, in this thread.
pub(crate) type Last<T> = RefCell<Option<Entry<T>>>;

thread_local! {
    /// The last RateLimit value of a rule with one rate.
    pub(crate) static RATELIMIT: Last<HeaderValue> = const { RefCell::new(None) };
    /// The last Retry-After value.
    pub(crate) static RETRY_AFTER: Last<HeaderValue> = const { RefCell::new(None) };
    /// The last 429 body.
    pub(crate) static TOO_MANY_BODY: Last<Bytes> = const { RefCell::new(None) };
}

/// The value `make` makes of `numbers` from `source`: this thread's last one
/// of `last`'s kind when it was made from the same source and numbers, else
/// made now (and remembered, if `make` made one).
pub(crate) fn value<T: Clone>(
    last: &'static LocalKey<Last<T>>,
    source: Source,
    numbers: [u64; 2],
    make: impl FnOnce() -> Option<T>,
) -> Option<T> {
    let same = |e: &&Entry<T>| e.source == source && e.numbers == numbers;
    let hit = last.try_with(|cell| cell.borrow().as_ref().filter(same).map(|e| e.value.clone()));
    if let Ok(Some(value)) = hit {
        return Some(value);
    }
    let value = make()?;
    // A thread being torn down remembers nothing (`try_with` fails).
    let _ = last.try_with(|cell| {
        let entry = Entry {
            source,
            numbers,
            value: value.clone(),
        };
        // The value it replaces is dropped once the borrow has ended.
        let old = cell.borrow_mut().replace(entry);
        drop(old);
    });
    Some(value)
}

/// `bytes` in one allocation shared by every clone (`Bytes::from_owner`
/// with the bytes inline): a `Bytes` copied from a slice is promoted to a
/// shared one, a second allocation, when it is first cloned.
pub(crate) fn shared(bytes: &[u8]) -> Bytes {
    let len = bytes.len();
    if len <= SHORT {
        Bytes::from_owner(Inline::<SHORT>::new(bytes))
    } else if len <= LONG {
        Bytes::from_owner(Inline::<LONG>::new(bytes))
    } else {
        Bytes::copy_from_slice(bytes)
    }
}

/// A header value's room inline (a RateLimit value of a name of up to
/// about 40 bytes; a Retry-After).
const SHORT: usize = 96 - 16 - 8;
/// A 429 body's room inline.
const LONG: usize = 512 - 16 - 8;

/// Up to `N` bytes, inline.
struct Inline<const N: usize> {
    len: usize,
    bytes: [u8; N],
}

impl<const N: usize> Inline<N> {
    /// `bytes`, which are at most `N`.
    fn new(bytes: &[u8]) -> Inline<N> {
        let mut inline = Inline {
            len: bytes.len(),
            bytes: [0; N],
        };
        inline.bytes[..bytes.len()].copy_from_slice(bytes);
        inline
    }
}

impl<const N: usize> AsRef<[u8]> for Inline<N> {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}
