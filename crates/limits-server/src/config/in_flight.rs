//! `concurrency = N` (with `lease = "DURATION"`, one minute unless given):
//! at most N requests of a key under way at once (nginx's `limit_conn`).
//! The cap is a rule of its own, `NAME.in_flight`, matching what the rule
//! matches and keyed alike: a sliding log of N per lease whose requests are
//! given back when they are done and renewed every half lease until then
//! ([`limits_http::HttpRule::in_flight`]), so a slot an instance never gave
//! back (it died) frees itself within one lease of its last renewal.

use super::raw::Whole;
use super::Problems;
use limits::{parse_duration, Algorithm, Rate, Rates, Rule, MAX_LIMIT};
use serde_spanned::Spanned;
use std::time::Duration;

/// The suffix of a concurrency cap's rule name.
pub(super) const SUFFIX: &str = "in_flight";

/// How long a slot is held at most unless `lease` says.
pub(super) const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// The limiter of `concurrency` and `lease`, each checked (problems
/// added); None without `concurrency` or with a problem.
pub(super) fn cap(
    concurrency: Option<Spanned<Whole>>,
    lease: Option<Spanned<String>>,
    p: &mut Problems<'_>,
) -> Option<Rule> {
    let Some(concurrency) = concurrency else {
        if let Some(lease) = lease {
            p.add(
                &lease.span(),
                "lease goes with concurrency = N: add the cap, or leave lease out",
            );
        }
        return None;
    };
    let n = concurrency.get_ref().0;
    if n == 0 || n > MAX_LIMIT {
        let problem = format!("concurrency {n}: must be 1 to 2^62");
        p.add(&concurrency.span(), problem);
        return None;
    }
    let span = lease.as_ref().map_or(concurrency.span(), Spanned::span);
    let lease = match lease {
        None => DEFAULT_LEASE,
        Some(lease) => match parse_duration(lease.get_ref()) {
            Ok(d) => d,
            Err(e) => {
                p.add(&lease.span(), format!("lease: {e}"));
                return None;
            }
        },
    };
    match Rate::new(n, lease) {
        Ok(rate) => Some(Rule::new(Algorithm::SlidingLog, Rates::new(vec![rate])?)),
        Err(e) => {
            p.add(&span, format!("lease: {e}"));
            None
        }
    }
}
