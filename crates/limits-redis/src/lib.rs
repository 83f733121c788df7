//! The Redis and Redis Cluster store of `limits`: many instances, one exact
//! limit.
//!
//! When one process is not enough, several `limits serve` instances (or
//! several copies of a service using the layer) share one limit by deciding
//! in Redis: a [`RedisStore`] implements [`limits::Store`] with one Lua
//! script call per decision, every rate of a rule decided all-or-nothing in
//! that one call, with exactly the core's semantics (the conformance suite
//! holds it to the reference models, as it holds the in-memory store).
//!
//! Where it differs from memory: Redis keeps time in microseconds (its
//! `TIME`, read inside the script, so skewed hosts agree), not nanoseconds.
//! Requests less than a microsecond apart are at one instant, windows must
//! be whole microseconds, and the buckets (which multiply times by the limit)
//! take only rules with 2 x limit x window (in microseconds) below 2^53, as
//! Lua numbers are doubles; other rules are refused with the reason. Waits,
//! resets and delays are still exact to the nanosecond.
//!
//! The sliding log keeps a ring buffer in one string per key and rate, an
//! entry per admitted request whatever its cost (its time and the running
//! total of units up to it, each in the fewest bytes the rate allows: 5
//! or 6 bytes for limits under 65,536 per hour), and a bounded number of
//! Redis reads per call (a galloping search to expire: one read when nothing
//! expires, O(log k) for k expired; a binary search over the entries that
//! can hold the unit a denial waits for: none when every cost is one)
//! whatever the limit or the cost.
//!
//! A limit on distinct values per key ([`RedisDistinct`]: at most N
//! usernames an hour from one address, whichever instance they reach) keeps
//! each key's values in a sorted set, decided by one script call as the
//! core's exact [`limits::Distinct`] decides.
//!
//! A granted request can be settled once its outcome is known
//! ([`Store::settle`](limits::Store::settle), with the receipt of
//! [`Verdict::receipt`](limits::Verdict::receipt): the time Redis decided
//! at): one more script call refunds it or charges the rest, exactly as the
//! core does on every rate (the settle suite holds it to the models). A
//! refund forgets the key's denial in this instance's deny cache.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use limits::{Algorithm, Mode, Rule, Store};
//! use limits_redis::{RedisConnection, RedisOptions, RedisStore};
//!
//! let connection = RedisConnection::connect("redis://127.0.0.1:6379", RedisOptions::default()).await?;
//! let rule = Rule::new(Algorithm::SlidingLog, "50/10s".parse()?);
//! let store = RedisStore::new(&connection, rule, "api")?;
//! let verdict = store.decide("alice", 1, Mode::Record).await?;
//! assert!(verdict.decision.allowed);
//! // It failed upstream: it costs nothing after all.
//! store.settle("alice", None, verdict.receipt(1).expect("admitted"), 0).await?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod batch;
mod clock;
mod connection;
mod deny_cache;
mod dial;
mod distinct;
mod inspect;
mod link;
mod memory_policy;
mod module;
mod new_keys;
mod scripts;
mod sentinel;
mod shape;
mod slots;
mod store;
mod tls;

pub use batch::BatchDecision;
pub use connection::{ConnectError, Fallback, RedisConnection, RedisOptions};
pub use dial::{is_redis_url, is_tls_url, redact};
pub use distinct::RedisDistinct;
pub use limits::UnsupportedRule;
pub use module::RedisModule;
pub use store::RedisStore;
pub use tls::TlsFiles;
