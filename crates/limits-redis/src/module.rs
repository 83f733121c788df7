//! The limits Redis module (`crates/limits-redis-module`): where Redis has
//! it loaded, a decision is its `LIMITS.DECIDE`, the core's own code run
//! inside Redis, instead of the limiter's Lua script. The module takes the
//! script's arguments after the key and the limiter's name, answers what
//! the script answers and keeps the state in the scripts' layout, so the
//! two decide alike and a deployment moves between them without losing a
//! count.

use crate::link::{Conn, Health};
use limits::{Algorithm, Rule};
use redis::Cmd;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Whether the store decides with the module ([`RedisOptions::module`](crate::RedisOptions)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RedisModule {
    /// When Redis has it loaded (`MODULE LIST`, asked on every new
    /// connection); the scripts otherwise, and from the first call Redis
    /// answers that it does not know the command (a failover to a node
    /// without it).
    #[default]
    Auto,
    /// Always, for every rule it decides: a Redis without it answers those
    /// decisions with an error.
    On,
    /// Never: the Lua scripts only.
    Off,
}

/// The module's name in `MODULE LIST`.
const NAME: &str = "limits";

/// The module's command deciding one request.
pub(crate) const DECIDE: &str = "LIMITS.DECIDE";

/// The module's command deciding a request's several decisions.
const REQUEST: &str = "LIMITS.REQUEST";

/// The module's command settling a request after its response.
pub(crate) const SETTLE: &str = "LIMITS.SETTLE";

/// The module's command deciding a request under its rule's penalty.
pub(crate) const PENALIZED: &str = "LIMITS.PENALIZED";

/// The largest limit of a sliding log the store asks the module to
/// decide: the module reads a log's whole ring into the core's entries on
/// every decision, where the script reads a few of them, so past a few
/// hundred entries the script costs Redis less (BENCHMARKS.md).
const MOST_LOGGED: u64 = 512;

/// Whether the store asks the module to decide `rule`: every limiter with
/// a script, the sliding log while its limits keep its rings short.
pub(crate) fn decides(rule: &Rule) -> bool {
    match rule.algorithm() {
        Algorithm::SlidingLog => rule.rates().iter().all(|r| r.limit() <= MOST_LOGGED),
        Algorithm::FixedWindow
        | Algorithm::TokenBucket
        | Algorithm::SlidingWindow
        | Algorithm::LeakyBucket => true,
        Algorithm::None | Algorithm::SmoothedRate => false,
    }
}

/// A decision as the module takes it: a script call's keys and arguments,
/// and its limiter.
pub(crate) struct Asked<'a> {
    /// The script's keys (the sliding log: one per rate).
    pub keys: &'a [String],
    /// The script's arguments.
    pub argv: Vec<&'a [u8]>,
    /// The limiter.
    pub algorithm: Algorithm,
}

impl Asked<'_> {
    /// The module's arguments (`LIMITS.DECIDE`'s, `LIMITS.SETTLE`'s): the
    /// first key (where a cluster client finds the slot), the limiter, the
    /// script's arguments, then the other keys (the sliding log's other
    /// rates).
    fn arguments(&self) -> Vec<&[u8]> {
        let first = self.keys[..1].iter().map(|k| k.as_bytes());
        let others = self.keys[1..].iter().map(|k| k.as_bytes());
        first
            .chain([self.algorithm.name().as_bytes()])
            .chain(self.argv.iter().copied())
            .chain(others)
            .collect()
    }

    /// The module's command `name` of it.
    pub(crate) fn command(&self, name: &str) -> Cmd {
        let mut command = redis::cmd(name);
        command.arg(self.arguments());
        command
    }
}

/// The module's command deciding `asked` as `how` says
/// (`all_or_nothing.lua`'s first argument): the first one's key first,
/// where a cluster client finds the slot.
pub(crate) fn request(asked: &[Asked<'_>], how: &str) -> Cmd {
    let mut command = redis::cmd(REQUEST);
    let first = asked.first().map(|a| a.keys[0].as_str());
    command
        .arg(first.unwrap_or_default())
        .arg(how)
        .arg(asked.len());
    for one in asked {
        let args = one.arguments();
        command.arg(args.len()).arg(args);
    }
    command
}

/// Whether `e` is Redis not knowing one of the module's commands.
fn is_unknown(e: &redis::RedisError) -> bool {
    let text = e.to_string();
    text.contains("unknown command") && text.to_ascii_uppercase().contains("'LIMITS.")
}

/// Records whether the store decides with the module on the connection
/// `conn` just made, as `setting` says (asking Redis for `Auto`).
pub(crate) async fn detect(conn: &Conn, health: &Health, setting: RedisModule, timeout: Duration) {
    let loaded = match setting {
        RedisModule::On => true,
        RedisModule::Off => false,
        RedisModule::Auto => loaded(conn, timeout).await,
    };
    let was = health.module.swap(loaded, Ordering::Relaxed);
    if loaded && !was && setting == RedisModule::Auto {
        tracing::info!("the Redis store decides with the limits module ({DECIDE}) where it can");
    }
}

/// Whether Redis's answer `e` to the module's command says
/// it does not know it, and the scripts are to decide instead (the module
/// is not required): the store then says so once and decides with the
/// scripts from now on.
pub(crate) fn forgotten(e: &redis::RedisError, setting: RedisModule, health: &Health) -> bool {
    if !is_unknown(e) || setting == RedisModule::On {
        return false;
    }
    if health.module.swap(false, Ordering::Relaxed) {
        tracing::warn!(
            "the Redis store's Redis does not know {DECIDE} (no longer loaded, or a failover to a node without it): deciding with the Lua scripts from now on"
        );
    }
    true
}

/// Whether `MODULE LIST` names the module; no if Redis refuses to say
/// (a managed service, an ACL).
async fn loaded(conn: &Conn, timeout: Duration) -> bool {
    let mut conn = conn.clone();
    let mut cmd = redis::cmd("MODULE");
    cmd.arg("LIST");
    let list = tokio::time::timeout(timeout, cmd.query_async::<redis::Value>(&mut conn)).await;
    match list {
        Ok(Ok(value)) => names(&value).iter().any(|name| name == NAME),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "MODULE LIST refused: deciding with the Lua scripts");
            false
        }
        Err(_) => false,
    }
}

/// The module names in a `MODULE LIST` answer: a list of maps (RESP3) or
/// of flat `name VALUE ...` lists (RESP2).
fn names(list: &redis::Value) -> Vec<String> {
    use redis::Value;
    let text = |v: &Value| match v {
        Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Some(s.clone()),
        _ => None,
    };
    let Value::Array(modules) = list else {
        return Vec::new();
    };
    modules
        .iter()
        .filter_map(|module| {
            let pairs: Vec<(&Value, &Value)> = match module {
                Value::Array(flat) => flat
                    .chunks_exact(2)
                    .map(|pair| (&pair[0], &pair[1]))
                    .collect(),
                Value::Map(map) => map.iter().map(|(k, v)| (k, v)).collect(),
                _ => return None,
            };
            pairs
                .into_iter()
                .find(|(k, _)| text(k).as_deref() == Some("name"))
                .and_then(|(_, v)| text(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value;

    fn bulk(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn module_list_names_are_read_from_resp2_and_resp3_answers() {
        let resp2 = Value::Array(vec![
            Value::Array(vec![
                bulk("name"),
                bulk("limits"),
                bulk("ver"),
                Value::Int(1),
            ]),
            Value::Array(vec![bulk("name"), bulk("search")]),
        ]);
        assert_eq!(names(&resp2), ["limits", "search"]);
        let resp3 = Value::Array(vec![Value::Map(vec![(bulk("name"), bulk("limits"))])]);
        assert_eq!(names(&resp3), ["limits"]);
        assert!(names(&Value::Nil).is_empty());
    }

    #[test]
    fn only_the_module_s_own_command_unknown_is_its_absence() {
        let unknown = |what: &str| {
            redis::RedisError::from((
                redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError),
                "An error was signalled by the server",
                what.to_owned(),
            ))
        };
        assert!(is_unknown(&unknown(
            "unknown command 'LIMITS.DECIDE', with args beginning with: 'k'"
        )));
        assert!(is_unknown(&unknown("unknown command 'limits.decide'")));
        assert!(is_unknown(&unknown("unknown command 'LIMITS.REQUEST'")));
        assert!(!is_unknown(&unknown("unknown command 'FOO'")));
        assert!(!is_unknown(&unknown("wrong number of arguments")));
    }
}
