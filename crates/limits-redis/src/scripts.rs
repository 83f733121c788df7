//! The Lua scripts, one per limiter: the shared helpers, the limiter's own
//! functions and the all-or-nothing driver, joined at compile time. Each is
//! sent once (`SCRIPT LOAD`) and then called by its SHA1 (`EVALSHA`); the
//! `redis` crate sends it again if Redis answers NOSCRIPT (after a restart
//! or `SCRIPT FLUSH`).

use limits::Algorithm;
use redis::Script;
use std::sync::LazyLock;

macro_rules! limiter_script {
    ($file:literal) => {
        LazyLock::new(|| {
            Script::new(concat!(
                include_str!("lua/common.lua"),
                include_str!(concat!("lua/", $file)),
                include_str!("lua/driver.lua"),
            ))
        })
    };
}

static FIXED_WINDOW: LazyLock<Script> = limiter_script!("fixed_window.lua");
static SLIDING_LOG: LazyLock<Script> = limiter_script!("sliding_log.lua");
static TOKEN_BUCKET: LazyLock<Script> = limiter_script!("token_bucket.lua");
static SLIDING_WINDOW: LazyLock<Script> = limiter_script!("sliding_window.lua");
static LEAKY_BUCKET: LazyLock<Script> = limiter_script!("leaky_bucket.lua");

/// The script of `algorithm`; `None` for `none`, which needs no state.
pub(crate) fn script_for(algorithm: Algorithm) -> Option<&'static Script> {
    Some(match algorithm {
        Algorithm::None => return None,
        Algorithm::FixedWindow => &FIXED_WINDOW,
        Algorithm::SlidingLog => &SLIDING_LOG,
        Algorithm::TokenBucket => &TOKEN_BUCKET,
        Algorithm::SlidingWindow => &SLIDING_WINDOW,
        Algorithm::LeakyBucket => &LEAKY_BUCKET,
    })
}
