//! A request's several decisions in one call (`LIMITS.REQUEST`), as the
//! store's `all_or_nothing.lua` decides them: all or nothing (each looks at
//! the state the request found; all record only if all admit, and a denied
//! one records what its mode counts of a denial), or one after the other up
//! to the first denied or failed.

use crate::request::BadArgument;
use limits::Mode;
use std::ops::Range;

/// How the decisions are driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum How {
    /// Every one looks; all record only if all admit.
    AllOrNothing,
    /// In turn, up to the first denied (which is answered) or failed.
    UntilDenied,
    /// In turn, up to the first failed.
    UntilFailed,
}

/// A request's decisions, read from `HOW N (COUNT ARG...)...`: each
/// decision's `COUNT` arguments as `LIMITS.DECIDE` takes them (its key
/// first).
#[derive(Clone, Debug)]
pub struct Many {
    /// How they are driven.
    pub how: How,
    /// Each decision's arguments: where they are among those read.
    pub decisions: Vec<Range<usize>>,
}

impl Many {
    /// Reads the decisions' places (each is then read as a
    /// [`Request`](crate::Request)).
    ///
    /// ```
    /// use limits_redis_module::{How, Many};
    ///
    /// let args: Vec<&[u8]> = "until-denied 2 2 a b 1 c".split(' ').map(str::as_bytes).collect();
    /// let many = Many::parse(&args).unwrap();
    /// assert_eq!(many.how, How::UntilDenied);
    /// assert_eq!(many.decisions, [3..5, 6..7]);
    /// assert!(Many::parse(&args[..5]).is_err());
    /// ```
    pub fn parse(args: &[&[u8]]) -> Result<Many, BadArgument> {
        let bad = |what: &str| Err(BadArgument(format!("LIMITS.REQUEST: {what}")));
        let how = match args.first() {
            Some(&b"all-or-nothing") => How::AllOrNothing,
            Some(&b"until-denied") => How::UntilDenied,
            Some(&b"until-failed") => How::UntilFailed,
            _ => return bad("the first argument is all-or-nothing, until-denied or until-failed"),
        };
        let number = |arg: Option<&&[u8]>| std::str::from_utf8(arg?).ok()?.parse::<usize>().ok();
        let Some(n) = number(args.get(1)) else {
            return bad("the second argument is the number of decisions");
        };
        let mut decisions = Vec::with_capacity(n.min(args.len()));
        let mut at = 2;
        for i in 1..=n {
            let Some(count) = number(args.get(at)) else {
                return bad(&format!("decision {i}'s number of arguments is missing"));
            };
            let start = at + 1;
            let end = start.saturating_add(count);
            if end > args.len() || count == 0 {
                return bad(&format!("decision {i} has fewer arguments than it says"));
            }
            decisions.push(start..end);
            at = end;
        }
        if at != args.len() {
            return bad(&format!("more arguments than {n} decisions take"));
        }
        Ok(Many { how, decisions })
    }
}

/// Whether a decision's packed answer admitted (its second double).
fn admitted(answer: &[u8]) -> bool {
    answer
        .get(8..16)
        .and_then(|b| b.try_into().ok())
        .is_some_and(|b| f64::from_le_bytes(b) == 1.0)
}

/// Each decision's answer (or the error it failed with), as `how` drives
/// the decisions of `modes` (each one's own) through `decide`, which
/// decides the one at an index in a mode and records what that records:
/// every one all or nothing, in order those decided.
///
/// ```
/// use limits::Mode;
/// use limits_redis_module::{drive, How};
///
/// let mut recorded = 0;
/// let answers = drive(How::AllOrNothing, &[Mode::Record, Mode::Record], |_, mode| {
///     // Admits the looks and the first recorded request only.
///     let allowed = mode == Mode::Peek || recorded == 0;
///     if mode != Mode::Peek && allowed {
///         recorded += 1;
///     }
///     let mut packed = 5f64.to_le_bytes().to_vec();
///     packed.extend_from_slice(&f64::from(u8::from(allowed)).to_le_bytes());
///     Ok(packed)
/// });
/// assert_eq!(answers.len(), 2);
/// assert_eq!(recorded, 1, "both looked and admitted, so both decided: the second denied");
/// ```
pub fn drive(
    how: How,
    modes: &[Mode],
    mut decide: impl FnMut(usize, Mode) -> Result<Vec<u8>, String>,
) -> Vec<Result<Vec<u8>, String>> {
    let mut answers = Vec::with_capacity(modes.len());
    if how != How::AllOrNothing {
        for (i, &mode) in modes.iter().enumerate() {
            let answer = decide(i, mode);
            let stops = match &answer {
                Err(_) => true,
                Ok(packed) => how == How::UntilDenied && !admitted(packed),
            };
            answers.push(answer);
            if stops {
                break;
            }
        }
        return answers;
    }
    for i in 0..modes.len() {
        answers.push(decide(i, Mode::Peek));
    }
    let every_one = answers.iter().all(|a| a.as_deref().is_ok_and(admitted));
    for (i, (&mode, answer)) in modes.iter().zip(answers.iter_mut()).enumerate() {
        let this_one = answer.as_deref().is_ok_and(admitted);
        if mode.decides_after_looks(every_one, this_one) {
            *answer = decide(i, mode);
        }
    }
    answers
}
