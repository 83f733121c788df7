//! The answer to a request refused for a ban (a rule's
//! [`Penalty`](limits::Penalty)): a 429 whose problem body says until when
//! the key is banned, and why.

use crate::problem::problem_members;
use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::Full;
use limits::{Ban, Penalty, RetryAfter, format_duration};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// 429 for a key of rule `rule` banned by `penalty` (`ban`), to wait
/// `wait`: the ban's end as a UTC time (this host's clock plus the wait,
/// whole seconds rounded up, as Retry-After), the offence, and the
/// penalty that gave it. The headers are the caller's to add.
pub(crate) fn banned(
    rule: &str,
    penalty: Option<&Penalty>,
    ban: &Ban,
    wait: RetryAfter,
) -> Response<Full<Bytes>> {
    let secs = wait.duration().map_or(u64::MAX, crate::headers::ceil_secs);
    let until = SystemTime::now()
        .checked_add(Duration::from_secs(secs))
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .and_then(|d| chrono::DateTime::from_timestamp(i64::try_from(d.as_secs()).ok()?, 0))
        .map_or_else(
            || "the end of time".to_owned(),
            |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        );
    let why = penalty.map_or_else(String::new, |p| {
        format!(
            ": denied {} times within {}",
            p.after(),
            format_duration(p.within())
        )
    });
    let detail = format_args!(
        "this key is banned by rule {rule:?} until {until}{why} (offence {}, a ban of {})",
        ban.offence,
        format_duration(ban.length)
    );
    let members = [
        ("rule", Value::from(rule)),
        ("retry_after", Value::from(secs)),
        ("banned_until", Value::from(until.as_str())),
        ("offence", Value::from(ban.offence)),
    ];
    problem_members(StatusCode::TOO_MANY_REQUESTS, detail, members)
}
