//! The core's decision inside Redis: a module, loaded with
//! `redis-server --loadmodule liblimits_redis_module.so`, whose
//! `LIMITS.DECIDE` decides a request for a key with the core's own
//! algorithms, at Redis's clock, on the state the store's Lua scripts keep.
//!
//! `LIMITS.DECIDE KEY LIMITER NOW COST MODE FLOOR N (LIMIT WINDOW BURST)...
//! [KEY...]` takes the key, the limiter's name (`fixed-window`,
//! `sliding-log`, `token-bucket`, `sliding-window`, `leaky-bucket`), then a
//! script's arguments ([`Request::parse`]) and, for a sliding log of
//! several rates, its other rates' keys; it answers what the script
//! answers. `LIMITS.REQUEST` decides a request's several decisions in one
//! call ([`Many`]), `LIMITS.SETTLE` settles an admitted request to its real
//! cost ([`Settle`]). So the
//! Redis store sends either the same request, and a deployment moves
//! between the module and the scripts (managed Redis services load no
//! modules) without losing a count: the state is the scripts' layout
//! ([`layout`]), a string key, which Redis persists and replicates as any
//! other (the module replicates its write as a `SET`, never the decision,
//! which a replica's clock would decide otherwise).
//!
//! The decision, apart from Redis:
//!
//! ```
//! use limits_redis_module::{decide, Request};
//!
//! let args: Vec<&[u8]> = ["token-bucket", "", "2", "1", "0", "1", "2", "1000000", "0"]
//!     .iter()
//!     .map(|a| a.as_bytes())
//!     .collect();
//! let request = Request::parse(&args).unwrap();
//! let first = decide(&request, &[None], 1_000_000);
//! let (stored, _ttl_ms) = &first.writes[0];
//! let again = decide(&request, &[Some(stored)], 1_000_000);
//! assert!(again.writes.is_empty(), "denied: nothing written");
//! ```

pub mod layout;

mod decide;
mod many;
mod penalized;
mod request;
mod settle;

pub use decide::{decide, Outcome};
pub use many::{drive, How, Many};
pub use penalized::{decide_penalized, Penalized, PenalizedOutcome};
pub use request::{BadArgument, Request, DECIDED};
pub use settle::{settle, Settle, Settled, Settling};

use limits::Mode;
use redis_module::{raw, Context, RedisError, RedisResult, RedisString, RedisValue};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Redis's time in microseconds: the host's clock, which Redis's `TIME`
/// reads too (a `TIME` call from here costs more than the decision).
fn redis_micros() -> Result<u64, RedisError> {
    let since = SystemTime::now().duration_since(UNIX_EPOCH);
    since
        .ok()
        .and_then(|d| u64::try_from(d.as_micros()).ok())
        .ok_or(RedisError::Str("Redis's clock is before 1970"))
}

/// `LIMITS.DECIDE`: the decision of one request for one key (a key per
/// rate for the sliding log: the first, then the others after the rates).
fn decide_command(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let args = &args[1..];
    let request = read(args, Request::parse)?;
    if ctx.is_keys_position_request() {
        key_positions(ctx, 1, args.len(), request.keys);
        return Ok(RedisValue::NoReply);
    }
    let now = at_time(request.now)?;
    Ok(RedisValue::StringBuffer(run(ctx, args, &request, now)?))
}

/// `LIMITS.REQUEST KEY HOW N (COUNT ARG...)...`: a request's decisions in
/// one call ([`Many`], [`drive`]), each decision's arguments as
/// `LIMITS.DECIDE` takes them (`KEY`, the first decision's key, is where a
/// cluster client finds the slot). One time for all of them: Redis's, read
/// once, where a decision asks for it. The answers are an array, each a
/// decision's answer or an array of one text, the error it failed with.
fn request_command(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let bytes: Vec<&[u8]> = args.iter().skip(2).map(RedisString::as_slice).collect();
    let many = Many::parse(&bytes).map_err(refused)?;
    let at = |range: &std::ops::Range<usize>| &args[range.start + 2..range.end + 2];
    let requests: Vec<Request> = many
        .decisions
        .iter()
        .map(|range| read(at(range), Request::parse))
        .collect::<Result<_, _>>()?;
    if ctx.is_keys_position_request() {
        ctx.key_at_pos(1);
        for (range, request) in many.decisions.iter().zip(&requests) {
            key_positions(ctx, range.start + 2, range.len(), request.keys);
        }
        return Ok(RedisValue::NoReply);
    }
    let mut redis_now = None;
    let modes: Vec<Mode> = requests.iter().map(|r| r.mode).collect();
    let answers = drive(many.how, &modes, |i, mode| {
        let request = Request {
            mode,
            ..requests[i].clone()
        };
        let now = match (request.now, redis_now) {
            (Some(now), _) | (None, Some(now)) => now,
            (None, None) => *redis_now.insert(redis_micros().map_err(|e| e.to_string())?),
        };
        run(ctx, at(&many.decisions[i]), &request, now).map_err(|e| e.to_string())
    });
    Ok(RedisValue::Array(
        answers
            .into_iter()
            .map(|answer| match answer {
                Ok(packed) => RedisValue::StringBuffer(packed),
                Err(text) => RedisValue::Array(vec![RedisValue::BulkString(text)]),
            })
            .collect(),
    ))
}

/// A command's request, read by `parse` from its arguments (its key
/// first, which `parse` does not take).
fn read<T>(
    args: &[RedisString],
    parse: impl Fn(&[&[u8]]) -> Result<T, BadArgument>,
) -> Result<T, RedisError> {
    let Some((_, rest)) = args.split_first() else {
        return Err(RedisError::WrongArity);
    };
    let rest: Vec<&[u8]> = rest.iter().map(RedisString::as_slice).collect();
    parse(&rest).map_err(refused)
}

/// The time a request names, or Redis's now.
fn at_time(now: Option<u64>) -> Result<u64, RedisError> {
    now.map_or_else(redis_micros, Ok)
}

/// A bad argument, as Redis answers it: an `ERR` error naming it.
fn refused(e: BadArgument) -> RedisError {
    RedisError::String(format!("ERR {e}"))
}

/// Whether Redis is over its `maxmemory`, where it would refuse a write
/// (as it refuses a script's): the module's commands take no `deny-oom`,
/// so that a decision that writes nothing (a denial, a look) is still
/// answered, as the scripts' are.
fn over_maxmemory() -> bool {
    // SAFETY: set by Redis when the module loads (Redis 6.0 and later).
    match unsafe { raw::RedisModule_GetUsedMemoryRatio } {
        // SAFETY: a function Redis gave, taking nothing.
        Some(ratio) => (unsafe { ratio() }) > 1.0,
        None => false,
    }
}

/// Declares the keys of a decision whose `len` arguments start at `start`:
/// the first, and the sliding log's other rates' at the end.
fn key_positions(ctx: &Context, start: usize, len: usize, keys: usize) {
    ctx.key_at_pos(start as i32);
    let others = start + len + 1 - keys..start + len;
    others.for_each(|at| ctx.key_at_pos(at as i32));
}

/// Decides `request` (read from `args`, its key first) at `now` on its
/// keys, and writes what it recorded: the answer.
fn run(
    ctx: &Context,
    args: &[RedisString],
    request: &Request,
    now: u64,
) -> Result<Vec<u8>, RedisError> {
    on_keys(ctx, args, request.keys, |stored| {
        let outcome = decide(request, stored, now);
        (outcome.answer, outcome.writes)
    })
}

/// `LIMITS.SETTLE KEY LIMITER NOW UNITS HOW FLOOR N (LIMIT WINDOW BURST)...
/// AT [KEY...]`: a request settled after its response ([`Settle::parse`],
/// [`settle`]), as `settle.lua` settles it; answers the time it settled at.
fn settle_command(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let args = &args[1..];
    let request = read(args, Settle::parse)?;
    if ctx.is_keys_position_request() {
        key_positions(ctx, 1, args.len(), request.keys);
        return Ok(RedisValue::NoReply);
    }
    let now = at_time(request.now)?;
    let at = on_keys(ctx, args, request.keys, |stored| {
        let settled = settle(&request, stored, now);
        (settled.at, settled.writes)
    })?;
    Ok(RedisValue::Integer(i64::try_from(at).unwrap_or(i64::MAX)))
}

/// `LIMITS.PENALIZED KEY LIMITER ARG... AFTER WITHIN BAN ESCALATE LONGEST
/// [KEY...] STANDING`: a decision under the rule's penalty
/// ([`Penalized::parse`], [`decide_penalized`]), as `penalty.lua` decides
/// it, the key's standing in the hash `STANDING`.
fn penalized_command(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let args = &args[1..];
    let penalized = read(args, Penalized::parse)?;
    let (rule_args, standing_name) = args.split_at(args.len() - 1);
    if ctx.is_keys_position_request() {
        key_positions(ctx, 1, rule_args.len(), penalized.request.keys);
        ctx.key_at_pos(args.len() as i32);
        return Ok(RedisValue::NoReply);
    }
    let now = at_time(penalized.request.now)?;
    let standing = ctx.open_key_writable(&standing_name[0]);
    let mut fields: [Option<RedisString>; 4] = Default::default();
    if !standing.is_empty() {
        for (value, field) in fields.iter_mut().zip(penalized::FIELDS) {
            *value = standing.hash_get(field)?;
        }
    }
    let bytes = fields
        .each_ref()
        .map(|f| f.as_ref().map(RedisString::as_slice));
    let state = penalized::read(&penalized.penalty, &bytes);
    let (answer, standing_change) = on_keys(ctx, rule_args, penalized.request.keys, |stored| {
        let outcome = decide_penalized(&penalized, stored, state, now);
        ((outcome.answer, outcome.standing), outcome.rule.writes)
    })?;
    if let Some((values, ms)) = standing_change {
        if over_maxmemory() {
            return Err(RedisError::Str(OUT_OF_MEMORY));
        }
        let mut set: Vec<&[u8]> = vec![standing_name[0].as_slice()];
        for (field, value) in penalized::FIELDS.iter().zip(&values) {
            standing.hash_set(field, ctx.create_string(value.clone()));
            set.extend([field.as_bytes(), value]);
        }
        standing.set_expire(Duration::from_millis(ms))?;
        ctx.replicate("HSET", set.as_slice());
        let ms = ms.to_string();
        ctx.replicate("PEXPIRE", &[standing_name[0].as_slice(), ms.as_bytes()]);
    }
    Ok(RedisValue::StringBuffer(answer))
}

/// Redis's own answer to a write over `maxmemory`, which the store reads as
/// a full Redis.
const OUT_OF_MEMORY: &str = "OOM command not allowed when used memory > 'maxmemory'";

/// Runs `act` on the values of a command's `keys` keys (its first
/// argument, and the last `keys - 1`), and writes what it returns to write,
/// replicated as `SET ... PX`: its answer.
fn on_keys<T>(
    ctx: &Context,
    args: &[RedisString],
    keys: usize,
    act: impl FnOnce(&[Option<&[u8]>]) -> (T, Vec<(Vec<u8>, u64)>),
) -> Result<T, RedisError> {
    let names = std::iter::once(&args[0]).chain(&args[args.len() + 1 - keys..]);
    let names: Vec<&RedisString> = names.collect();
    let keys: Vec<_> = names
        .iter()
        .map(|name| ctx.open_key_writable(name))
        .collect();
    let values = keys
        .iter()
        .map(|key| match key.is_empty() {
            true => Ok(None),
            false => key.as_string_dma().map(Some),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let stored: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
    let (answer, writes) = act(&stored);
    drop(values);
    if !writes.is_empty() && over_maxmemory() {
        return Err(RedisError::Str(OUT_OF_MEMORY));
    }
    for ((name, key), (value, ttl_ms)) in names.iter().zip(&keys).zip(&writes) {
        key.as_string_dma()?.write(value)?;
        key.set_expire(Duration::from_millis(*ttl_ms))?;
        let ttl = ttl_ms.to_string();
        let set: [&[u8]; 4] = [name.as_slice(), value, b"PX", ttl.as_bytes()];
        ctx.replicate("SET", &set);
    }
    Ok(answer)
}

// The system's allocator, not Redis's (which Redis counts): the module holds
// no memory between calls, every state being a Redis string, and the
// crate's tests and examples, which run outside Redis, could not allocate
// with Redis's.
redis_module::redis_module! {
    name: "limits",
    version: 1,
    allocator: (std::alloc::System, std::alloc::System),
    data_types: [],
    commands: [
        ["limits.decide", decide_command, "write getkeys-api", 1, 1, 1, ""],
        ["limits.request", request_command, "write getkeys-api", 1, 1, 1, ""],
        ["limits.settle", settle_command, "write getkeys-api", 1, 1, 1, ""],
        ["limits.penalized", penalized_command, "write getkeys-api", 1, 1, 1, ""],
    ],
}
