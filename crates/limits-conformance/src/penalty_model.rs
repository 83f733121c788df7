//! The reference for one key of a rule with a penalty: every denial ever
//! counted and every ban ever given kept, and a banned decision's fields
//! found by searching for the first nanosecond at which the key passes, is
//! full, or has a unit left, after the ban (no formula of the core's).

use crate::{first_after, Model, RuleModel};
use limits::{Decision, Mode, Penalty, RetryAfter, MAX_BAN};
use std::time::Duration;

/// One key's rule model and its penalty's whole history.
#[derive(Clone, Debug)]
pub struct PenaltyModel {
    /// The rule's model.
    pub rule: RuleModel,
    penalty: Penalty,
    /// The time of every denial counted, in order.
    denials: Vec<u64>,
    /// Every ban: its start, its end, its place in its streak (from 0),
    /// and how many denials had been counted when it started (spent on it).
    bans: Vec<(u64, u64, u32, usize)>,
}

impl PenaltyModel {
    /// A key never seen, under `penalty`.
    pub fn new(rule: RuleModel, penalty: Penalty) -> PenaltyModel {
        PenaltyModel {
            rule,
            penalty,
            denials: Vec::new(),
            bans: Vec::new(),
        }
    }

    /// The end of the ban in force at `t`, if any.
    pub fn banned_until(&self, t: u64) -> Option<u64> {
        self.bans
            .last()
            .map(|&(_, end, _, _)| end)
            .filter(|&end| t < end)
    }

    /// The decision at `t` of cost `c` in `mode`, combined and per rate,
    /// and the end of the ban it was refused for, if one did.
    #[allow(clippy::type_complexity)]
    pub fn decide_each(
        &mut self,
        t: u64,
        c: u64,
        mode: Mode,
    ) -> ((Decision, Vec<Decision>), Option<u64>) {
        if let Some(end) = self.banned_until(t) {
            return (self.refused(t, c, end), Some(end));
        }
        let decided = self.rule.decide_each(t, c, mode);
        let d = decided.0;
        if !mode.records() || d.allowed || d.retry_after == RetryAfter::Never {
            return (decided, None);
        }
        self.denials.push(t);
        let spent = self.bans.last().map_or(0, |&(_, _, _, spent)| spent);
        let within = self.penalty.within().as_nanos();
        let recent = self.denials[spent..]
            .iter()
            .filter(|&&d| u128::from(d) + within > u128::from(t))
            .count();
        if recent < self.penalty.after() as usize {
            return (decided, None);
        }
        let place = match (self.penalty.escalate(), self.bans.last()) {
            (Some(_), Some(&(start, end, place, _))) if t < end + (end - start) => place + 1,
            _ => 0,
        };
        let factor = u128::from(self.penalty.escalate().unwrap_or(1)).pow(place.min(64));
        let length = (self.penalty.ban().as_nanos() * factor).min(MAX_BAN.as_nanos()) as u64;
        let end = t + length;
        self.bans.push((t, end, place, self.denials.len()));
        (self.refused(t, c, end), Some(end))
    }

    /// A request of `c` at `t` refused for a ban ending at `end`: each field
    /// by definition, on the rule's state, which nothing changes while the
    /// ban lasts.
    fn refused(&self, t: u64, c: u64, end: u64) -> (Decision, Vec<Decision>) {
        let one = |rule: &RuleModel| {
            let after_ban = |holds: &dyn Fn(u64) -> bool| {
                Duration::from_nanos(first_after(t, |at| at >= end && holds(at)))
            };
            let retry_after = if c > rule.capacity() {
                RetryAfter::Never
            } else {
                RetryAfter::After(after_ban(&|at| rule.allows(at, c)))
            };
            Decision {
                allowed: false,
                remaining: 0,
                retry_after,
                reset_after: after_ban(&|at| {
                    rule.0
                        .iter()
                        .all(|m| single(m).remaining(at) == single(m).capacity())
                }),
                delay: Duration::ZERO,
                refill_after: after_ban(&|at| rule.allows(at, 1)),
            }
        };
        let each = self.rule.0.iter().map(|m| one(&single(m))).collect();
        (one(&self.rule), each)
    }
}

fn single(m: &Model) -> RuleModel {
    RuleModel(vec![m.clone()])
}
