//! What every sharded structure of the crate shares (the keyed limiter,
//! the sketch, the distinct limit): how many shards by default, and a
//! shard's lock on cache lines of its own.

/// A value (a shard's mutex) on its own cache lines, so that shards do not
/// false-share.
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

/// Four shards per core, rounded up to a power of two: threads on
/// different keys rarely meet on one lock.
pub(crate) fn default_count() -> usize {
    let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
    (cores * 4).next_power_of_two()
}
