//! The Memcached store of `limits`: [`MemcachedStore`], a [`Store`](limits::Store)
//! for every limiter, multi-rate rules included, shared by every instance on
//! the same memcached and exact under contention.
//!
//! Memcached runs no code of ours, so the decision is made here, by the
//! core's own [`Rule::decide`](limits::Rule::decide), on the key's state
//! read with its CAS token; the new state is written back only if no one
//! wrote the item meanwhile, else the key is read and decided again. The
//! arithmetic is the in-memory store's, written once; the state is the
//! core's own words ([`Rule::encode_state`](limits::Rule::encode_state)).
//! Memcached has no clock either: the caller's [`Clock`](limits::Clock)
//! decides.
//!
//! # The client
//!
//! A small client of memcached's meta protocol (`mg`, `ms`, `mn`) over
//! tokio TCP, with a pool per server and a timeout per decision, rather
//! than a client crate: of the async ones, `memcache-async` speaks the
//! text protocol on one stream the caller keeps (no pool, no timeouts) and
//! `async-memcached` is one connection per client, also with neither; the
//! store would have had to wrap either in the pool and timeouts written
//! here, for the four commands it sends. The meta protocol's `ms` takes the
//! CAS token and the add mode in one command, and its answers (`HD`, `NS`,
//! `EX`, `NF`, `EN`) are short fixed lines. The client is tested against a
//! real memcached (the crate's tests start one).
//!
//! ```no_run
//! use limits::{Algorithm, Mode, Rule, Store};
//! use limits_memcached::{MemcachedClient, MemcachedOptions, MemcachedStore};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = MemcachedClient::connect("memcached://127.0.0.1:11211", MemcachedOptions::default()).await?;
//! let rule = Rule::new(Algorithm::SlidingWindow, "100/m".parse()?);
//! let store = MemcachedStore::new(&client, rule, "api")?;
//! let verdict = store.decide("alice", 1, Mode::Record).await?;
//! assert!(verdict.decision.allowed);
//! # Ok(())
//! # }
//! ```

mod client;
mod clock_check;
mod clock_offset;
mod distinct;
mod item;
mod meta;
mod pool;
mod read_modify_write;
mod ring;
mod store;
mod url;

pub use client::{MemcachedClient, MemcachedOptions, Usage, MAX_PREFIX};
pub use clock_offset::ClockOffset;
pub use distinct::MemcachedDistinct;
pub use limits::UnsupportedRule;
pub use store::MemcachedStore;
pub use url::{is_memcached_url, parse_url};
