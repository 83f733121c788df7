//! `LIMITS.PENALIZED`: a rule's decision under its penalty (the core's
//! [`Penalty::decide`]), with `penalty.lua`'s arguments, answer and
//! standing: a hash beside the rule's keys, `u` the ban's end, `l` its
//! length, `o` the offences of its streak, `d` the counted denials' times,
//! each in microseconds as decimal text.

use crate::decide::{decide, Outcome};
use crate::request::{number, BadArgument, Request};
use limits::{Penalty, PenaltyState};
use std::time::Duration;

/// One decision asked under a penalty.
#[derive(Clone, Debug)]
pub struct Penalized {
    /// The rule's request.
    pub request: Request,
    /// The penalty.
    pub penalty: Penalty,
}

/// The standing's fields, as the hash keeps them.
pub const FIELDS: [&str; 4] = ["u", "l", "o", "d"];

/// What a penalized decision does to Redis.
#[derive(Clone, Debug)]
pub struct PenalizedOutcome {
    /// The rule's outcome (its answer, its keys' writes).
    pub rule: Outcome,
    /// The answer: the rule's, then now, and the ban that refuses the
    /// request (its end, its length, its offence) or zeros, in µs doubles.
    pub answer: Vec<u8>,
    /// The standing's new fields and their time to live in milliseconds,
    /// when it changed.
    pub standing: Option<([Vec<u8>; 4], u64)>,
}

impl Penalized {
    /// Reads the rule's arguments as `LIMITS.DECIDE` takes them, then
    /// `AFTER WITHIN BAN ESCALATE LONGEST` (µs; `ESCALATE` 0 for none), the
    /// rule's other keys and the standing's key.
    ///
    /// ```
    /// use limits_redis_module::Penalized;
    /// let args: Vec<&[u8]> = "fixed-window 5 1 1 0 1 1 1000000 0 3 60000000 900000000 2 1 p"
    ///     .split(' ')
    ///     .map(str::as_bytes)
    ///     .collect();
    /// let penalized = Penalized::parse(&args).unwrap();
    /// assert_eq!(penalized.penalty.to_string(), "after 3 within 1m ban 15m escalate 2");
    /// ```
    pub fn parse(args: &[&[u8]]) -> Result<Penalized, BadArgument> {
        let request = Request::parse_as("LIMITS.PENALIZED", args, (5, 1))?;
        let at = 6 + 3 * request.rule.rates().len();
        let field = |i: usize, what: &str| number(args[at + i], what);
        let micros = |i: usize, what: &str| field(i, what).map(Duration::from_micros);
        let after = u32::try_from(field(0, "penalty's after")?)
            .map_err(|_| BadArgument("LIMITS.PENALIZED: after is too large".into()))?;
        let escalate = match field(3, "penalty's escalate")? {
            0 => None,
            e => Some(u32::try_from(e).unwrap_or(u32::MAX)),
        };
        let penalty = Penalty::new(
            after,
            micros(1, "penalty's within")?,
            micros(2, "penalty's ban")?,
            escalate,
        )
        .map_err(|e| BadArgument(format!("LIMITS.PENALIZED: {e}")))?;
        Ok(Penalized { request, penalty })
    }
}

/// The standing read from its hash's `fields` (as [`FIELDS`] names them;
/// `None` each when absent): a fresh one for what the penalty cannot hold.
pub fn read(penalty: &Penalty, fields: &[Option<&[u8]>; 4]) -> PenaltyState {
    let number = |v: Option<&[u8]>| -> Option<u64> {
        std::str::from_utf8(v.unwrap_or(b"0")).ok()?.parse().ok()
    };
    let read = || {
        let (until, length, offences) =
            (number(fields[0])?, number(fields[1])?, number(fields[2])?);
        let denials: Option<Vec<u64>> = std::str::from_utf8(fields[3].unwrap_or(b""))
            .ok()?
            .split_whitespace()
            .map(|d| d.parse::<u64>().ok()?.checked_mul(1000))
            .collect();
        let denials = denials?;
        let mut words = vec![
            until.checked_mul(1000)?,
            length.checked_mul(1000)?,
            offences,
            denials.len() as u64,
        ];
        words.extend(denials);
        penalty.decode_state(&words)
    };
    read().unwrap_or_else(|| penalty.new_state())
}

/// The standing's fields as the hash keeps them.
fn fields(penalty: &Penalty, state: &PenaltyState) -> [Vec<u8>; 4] {
    let words = penalty.encode_state(state);
    let micros = |ns: u64| (ns / 1000).to_string().into_bytes();
    let denials: Vec<String> = words[4..].iter().map(|d| (d / 1000).to_string()).collect();
    [
        micros(words[0]),
        micros(words[1]),
        words[2].to_string().into_bytes(),
        denials.join(" ").into_bytes(),
    ]
}

/// Decides `penalized` at `now` (µs) on the rule's keys' `stored` values
/// and the standing `state`.
pub fn decide_penalized(
    penalized: &Penalized,
    stored: &[Option<&[u8]>],
    mut state: PenaltyState,
    now: u64,
) -> PenalizedOutcome {
    let (penalty, request) = (&penalized.penalty, &penalized.request);
    let now_ns = now.saturating_mul(1000);
    let before = penalty.encode_state(&state);
    let mut rule = None;
    let (_, ban) = penalty.decide(&mut state, now_ns, request.mode, |mode| {
        let asked = Request {
            mode,
            now: Some(now),
            ..request.clone()
        };
        let outcome = decide(&asked, stored, now);
        let decision = outcome.decision;
        rule = Some(outcome);
        decision
    });
    let rule = rule.unwrap_or_else(|| decide(request, stored, now));
    let mut answer = rule.answer.clone();
    let tail = match ban {
        Some(ban) => [
            now,
            ban.until / 1000,
            duration_micros(ban.length),
            u64::from(ban.offence),
        ],
        None => [now, 0, 0, 0],
    };
    tail.iter()
        .for_each(|&n| answer.extend_from_slice(&(n as f64).to_le_bytes()));
    let standing = (penalty.encode_state(&state) != before).then(|| {
        let idle = penalty.idle_from(&state).saturating_sub(now_ns);
        let ms = (idle / 1_000_000 + 2).max(request.ttl_floor_ms);
        (fields(penalty, &state), ms)
    });
    PenalizedOutcome {
        rule,
        answer,
        standing,
    }
}

fn duration_micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
