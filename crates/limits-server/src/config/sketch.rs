//! `memory = "16MB"`: the rule's sliding-window counters in a sketch of
//! that size in this process, whatever the number of keys. A sketch keeps
//! no key and gives nothing back, so what needs either is refused beside
//! it, naming the line of each.

use super::Problems;
use crate::store::{parse_memory, RuleStore};
use limits::{Algorithm, Rule};
use serde_spanned::Spanned;
use std::ops::Range;

/// The size a rule's `memory` asks for, with its span; `None` (the
/// problem added) for text that is not a size, or beside a field a sketch
/// cannot serve: `(field name, its span)` for each one given.
pub(super) fn memory(
    memory: Spanned<String>,
    beside: &[(&str, Option<Range<usize>>)],
    p: &mut Problems<'_>,
) -> Option<(usize, Range<usize>)> {
    let span = memory.span();
    let mut fine = true;
    for (field, at) in beside {
        let Some(at) = at else { continue };
        let why = match *field {
            "store" => "memory keeps the rule in this process's sketch, not in a store",
            "concurrency" => "a concurrency cap gives its slots back, which a sketch cannot",
            _ => "a sketch cannot give back or settle what it counted",
        };
        let problem = format!(
            "{field} (line {}) does not go with memory: {why}",
            p.line(at)
        );
        p.add(&span, problem);
        fine = false;
    }
    match parse_memory(memory.get_ref()) {
        Ok(bytes) => fine.then_some((bytes, span)),
        Err(e) => {
            p.add(&span, e);
            None
        }
    }
}

/// The sketch of `bytes` for `rule`, or the problem at the field's span.
pub(super) fn store(
    (bytes, span): &(usize, Range<usize>),
    label: &str,
    rule: Rule,
    p: &mut Problems<'_>,
) -> Option<RuleStore> {
    if rule.algorithm() != Algorithm::SlidingWindow {
        let problem = format!(
            "{label}: memory keeps sliding-window counters; write limiter = \"sliding-window\" (not {})",
            rule.algorithm()
        );
        p.add(span, problem);
        return None;
    }
    RuleStore::sketch(rule, *bytes)
        .map_err(|e| p.add(span, format!("{label}: {e}")))
        .ok()
}
