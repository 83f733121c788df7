//! The Lua scripts, one per limiter: exact division (`divmod.lua`), the
//! shared helpers, the limiter's own functions, the time (`now.lua`), the
//! rule's rates (`rates.lua`) and the all-or-nothing driver, joined at
//! compile time (the sliding log's is its ring's functions and a decision
//! written whole, without the driver); a settle script per limiter, the
//! same pieces under `settle.lua` (the sliding log's under its own); and for every stateful limiter a
//! second one for rules of one rate, straight-line code that costs Redis a
//! fraction of the general one (BENCHMARKS.md); and one that holds all of
//! them as functions, to decide a request's decisions in one call, all or
//! nothing or one after the other up to the first denied
//! (`all_or_nothing.lua`). Each is
//! sent once (`SCRIPT LOAD`) and then called by its SHA1 (`EVALSHA`); the
//! `redis` crate sends it again if Redis answers NOSCRIPT (after a restart
//! or `SCRIPT FLUSH`).

use limits::Algorithm;
use redis::{Cmd, Script};
use std::borrow::Cow;
use std::sync::LazyLock;

/// A script and its source: `SCRIPT LOAD` needs the source, and a batch
/// sends it in its own pipeline.
pub(crate) struct Lua {
    /// The source.
    code: Cow<'static, str>,
    /// The source and its SHA1, for `EVALSHA`.
    pub script: Script,
}

impl Lua {
    fn new(code: impl Into<Cow<'static, str>>) -> Lua {
        let code = code.into();
        let script = Script::new(&code);
        Lua { code, script }
    }

    /// The `SCRIPT LOAD` of this script.
    pub fn load_command(&self) -> Cmd {
        let mut command = redis::cmd("SCRIPT");
        command.arg("LOAD").arg(&*self.code);
        command
    }
}

/// A limiter's functions (`A`) under a driver: `driver.lua` decides,
/// `settle.lua` settles.
macro_rules! limiter_script {
    ($file:literal) => {
        limiter_script!($file, "lua/driver.lua")
    };
    ($file:literal, $driver:literal) => {
        LazyLock::new(|| {
            Lua::new(concat!(
                include_str!("lua/divmod.lua"),
                include_str!("lua/common.lua"),
                include_str!(concat!("lua/", $file)),
                include_str!("lua/now.lua"),
                include_str!("lua/rates.lua"),
                include_str!($driver),
            ))
        })
    };
}

macro_rules! one_rate_script {
    ($file:literal) => {
        LazyLock::new(|| {
            Lua::new(concat!(
                include_str!("lua/divmod.lua"),
                include_str!("lua/one_rate.lua"),
                include_str!("lua/now.lua"),
                include_str!(concat!("lua/", $file)),
            ))
        })
    };
}

/// A script written whole for any number of rates: only the shared time and
/// division before it, and the sliding log's ring functions.
macro_rules! sliding_log_script {
    ($file:literal) => {
        LazyLock::new(|| {
            Lua::new(concat!(
                include_str!("lua/divmod.lua"),
                include_str!("lua/now.lua"),
                include_str!("lua/sliding_log.lua"),
                include_str!(concat!("lua/", $file)),
            ))
        })
    };
}

static FIXED_WINDOW: LazyLock<Lua> = limiter_script!("fixed_window.lua");
static SLIDING_LOG: LazyLock<Lua> = sliding_log_script!("sliding_log_decide.lua");
static TOKEN_BUCKET: LazyLock<Lua> = limiter_script!("token_bucket.lua");
static SLIDING_WINDOW: LazyLock<Lua> = limiter_script!("sliding_window.lua");
static LEAKY_BUCKET: LazyLock<Lua> = limiter_script!("leaky_bucket.lua");

static FIXED_WINDOW_1: LazyLock<Lua> = one_rate_script!("fixed_window_1.lua");
static SLIDING_LOG_1: LazyLock<Lua> = one_rate_script!("sliding_log_1.lua");
static TOKEN_BUCKET_1: LazyLock<Lua> = one_rate_script!("token_bucket_1.lua");
static SLIDING_WINDOW_1: LazyLock<Lua> = one_rate_script!("sliding_window_1.lua");
static LEAKY_BUCKET_1: LazyLock<Lua> = one_rate_script!("leaky_bucket_1.lua");

// Settling a request, any number of rates (settle.lua): rare beside
// decisions, so one general script per limiter.
static SETTLE_FIXED_WINDOW: LazyLock<Lua> = limiter_script!("fixed_window.lua", "lua/settle.lua");
static SETTLE_SLIDING_LOG: LazyLock<Lua> = sliding_log_script!("sliding_log_settle.lua");
static SETTLE_TOKEN_BUCKET: LazyLock<Lua> = limiter_script!("token_bucket.lua", "lua/settle.lua");
static SETTLE_SLIDING_WINDOW: LazyLock<Lua> =
    limiter_script!("sliding_window.lua", "lua/settle.lua");
static SETTLE_LEAKY_BUCKET: LazyLock<Lua> = limiter_script!("leaky_bucket.lua", "lua/settle.lua");

/// A limit on distinct values, one key's sorted set of values (the time
/// and the script alone: it shares nothing with the counters).
pub(crate) static DISTINCT: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(concat!(
        include_str!("lua/now.lua"),
        include_str!("lua/distinct.lua"),
    ))
});

/// The same past a threshold: the last values and a HyperLogLog per
/// sub-window.
pub(crate) static DISTINCT_SKETCHED: LazyLock<Lua> = LazyLock::new(|| {
    Lua::new(concat!(
        include_str!("lua/now.lua"),
        include_str!("lua/distinct_sketched.lua"),
    ))
});

/// Every decision script above.
static DECISIONS: [&LazyLock<Lua>; 10] = [
    &FIXED_WINDOW,
    &SLIDING_LOG,
    &TOKEN_BUCKET,
    &SLIDING_WINDOW,
    &LEAKY_BUCKET,
    &FIXED_WINDOW_1,
    &SLIDING_LOG_1,
    &TOKEN_BUCKET_1,
    &SLIDING_WINDOW_1,
    &LEAKY_BUCKET_1,
];

/// Every limiter's script above as a function of its keys and arguments,
/// by its SHA1, and the driver that decides a request's decisions in one
/// call, all or nothing or in order (`all_or_nothing.lua`).
pub(crate) static ALL_OR_NOTHING: LazyLock<Lua> = LazyLock::new(|| {
    let mut code = String::from("local DECIDE = {}\n");
    for lua in DECISIONS {
        let sha = lua.script.get_hash();
        code += &format!(
            "DECIDE['{sha}'] = function(KEYS, ARGV)\n{}\nend\n",
            lua.code
        );
    }
    code += include_str!("lua/all_or_nothing.lua");
    Lua::new(code)
});

/// The script of `algorithm` for a rule of `rates` rates; `None` for
/// `none`, which needs no state, and for the smoothed rate, which the
/// store refuses (`shape.rs`).
pub(crate) fn script_for(algorithm: Algorithm, rates: usize) -> Option<&'static Lua> {
    if rates == 1 {
        match algorithm {
            Algorithm::FixedWindow => return Some(&FIXED_WINDOW_1),
            Algorithm::SlidingLog => return Some(&SLIDING_LOG_1),
            Algorithm::TokenBucket => return Some(&TOKEN_BUCKET_1),
            Algorithm::SlidingWindow => return Some(&SLIDING_WINDOW_1),
            Algorithm::LeakyBucket => return Some(&LEAKY_BUCKET_1),
            _ => {}
        }
    }
    Some(match algorithm {
        Algorithm::None | Algorithm::SmoothedRate => return None,
        Algorithm::FixedWindow => &FIXED_WINDOW,
        Algorithm::SlidingLog => &SLIDING_LOG,
        Algorithm::TokenBucket => &TOKEN_BUCKET,
        Algorithm::SlidingWindow => &SLIDING_WINDOW,
        Algorithm::LeakyBucket => &LEAKY_BUCKET,
    })
}

/// Each decision script above as the function `DECIDE` under the driver
/// of a rule's penalty (`now.lua`, then `penalty.lua`), in the order of
/// [`DECISIONS`].
static PENALIZED: LazyLock<Vec<Lua>> = LazyLock::new(|| {
    DECISIONS
        .iter()
        .map(|lua| {
            Lua::new(format!(
                "local function DECIDE(KEYS, ARGV)\n{}\nend\n{}{}",
                lua.code,
                include_str!("lua/now.lua"),
                include_str!("lua/penalty.lua")
            ))
        })
        .collect()
});

/// The script deciding `algorithm` with `rates` rates under a penalty.
pub(crate) fn penalized_script_for(algorithm: Algorithm, rates: usize) -> Option<&'static Lua> {
    let plain = script_for(algorithm, rates)?;
    let at = DECISIONS
        .iter()
        .position(|lua| std::ptr::eq(&***lua, plain))?;
    PENALIZED.get(at)
}

/// The script that settles a request of `algorithm` (any number of rates);
/// `None` for `none`, which counts nothing, and the smoothed rate.
pub(crate) fn settle_script_for(algorithm: Algorithm) -> Option<&'static Lua> {
    Some(match algorithm {
        Algorithm::None | Algorithm::SmoothedRate => return None,
        Algorithm::FixedWindow => &SETTLE_FIXED_WINDOW,
        Algorithm::SlidingLog => &SETTLE_SLIDING_LOG,
        Algorithm::TokenBucket => &SETTLE_TOKEN_BUCKET,
        Algorithm::SlidingWindow => &SETTLE_SLIDING_WINDOW,
        Algorithm::LeakyBucket => &SETTLE_LEAKY_BUCKET,
    })
}
