//! The series a metric family may hold for values a client chose. A limit
//! with `detailed_metric` (or under a level with `value_to_metric`) names
//! its series after the request's descriptor values, so without a cap
//! every distinct value sent is a new series in
//! every family, kept for the life of the process and written on every
//! scrape (100,000 values in one call made 500,000 series and a 30 MB
//! scrape).
//!
//! The first `--max-metric-series` such names get their own series; every
//! later one is counted in one `descriptor="other"` series per family, and
//! each decision so counted in `metric_values_folded`. A limit's own id
//! (what the config wrote, bounded by it) always has its own series, so a
//! flood of values cannot hide a limit from its dashboard. A limit id always
//! holds a `.` (`DOMAIN.key`), so no series of a limit is called `other`.

use super::config::Matched;
use crate::label_value::LabelValue;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use std::collections::HashSet;
use std::sync::RwLock;

/// The label value decisions beyond the cap are counted under.
pub(crate) const OTHER: &str = "other";

/// The `descriptor` label of the `limits rls` metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct DescriptorLabel {
    pub(crate) descriptor: LabelValue,
}

/// The names from client values admitted so far, up to the cap.
pub(crate) struct SeriesCap {
    max: usize,
    /// Never more than `max` names: the memory they take is bounded by
    /// `max` times the longest bounded label.
    admitted: RwLock<HashSet<LabelValue>>,
    folded: Counter,
}

impl SeriesCap {
    /// At most `max` series named after client values, counting each
    /// decision beyond them in `folded`.
    pub(crate) fn new(max: usize, folded: Counter) -> SeriesCap {
        SeriesCap {
            max,
            admitted: RwLock::new(HashSet::new()),
            folded,
        }
    }

    /// The label a decision of `matched` is counted under: the limit's id,
    /// or its name with the request's value if admitted (it is when seen
    /// before, or while fewer than the cap are), else `other` (counted as
    /// folded).
    pub(crate) fn label(&self, matched: &Matched<'_>) -> DescriptorLabel {
        let name = matched.metric_name();
        if name == matched.limit.id {
            return DescriptorLabel {
                descriptor: LabelValue::new(name),
            };
        }
        let name = LabelValue::bounded(&name);
        let known = self.admitted.read().unwrap_or_else(|e| e.into_inner());
        if known.contains(&name) {
            return DescriptorLabel { descriptor: name };
        }
        drop(known);
        let mut known = self.admitted.write().unwrap_or_else(|e| e.into_inner());
        if known.contains(&name) || known.len() < self.max {
            known.insert(name.clone());
            return DescriptorLabel { descriptor: name };
        }
        drop(known);
        self.folded.inc();
        DescriptorLabel {
            descriptor: LabelValue::new(OTHER),
        }
    }
}
