//! `--decisions OUT.csv`: one row per input event, in input order, although
//! events are decided in time order: rows wait until those before are known.
//!
//! Columns: `time,key,cost,allowed,remaining,retry_after,reset_after,refill_after`.
//! Times are decimal seconds exact to the nanosecond. `retry_after` is empty
//! when the request can never pass (its cost is above the limit);
//! `reset_after` (until the key is back to its full limit) and `refill_after`
//! (until `remaining` next grows) always have a value, 0 when the key is at
//! its full limit.

use limits::{format_seconds, Decision, RetryAfter};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::time::Duration;

/// The header, in the order of every row's fields.
const COLUMNS: [&str; 8] = [
    "time",
    "key",
    "cost",
    "allowed",
    "remaining",
    "retry_after",
    "reset_after",
    "refill_after",
];

pub struct DecisionsWriter {
    out: csv::Writer<BufWriter<File>>,
    waiting: BTreeMap<u64, [String; COLUMNS.len()]>,
    next: u64,
}

impl DecisionsWriter {
    pub fn create(path: &Path) -> Result<DecisionsWriter, String> {
        let file =
            File::create(path).map_err(|e| format!("--decisions {}: {e}", path.display()))?;
        let mut out = csv::Writer::from_writer(BufWriter::new(file));
        out.write_record(COLUMNS).map_err(|e| e.to_string())?;
        Ok(DecisionsWriter {
            out,
            waiting: BTreeMap::new(),
            next: 0,
        })
    }

    /// Records the decision of event number `seq`; writes every row now due.
    pub fn add(
        &mut self,
        seq: u64,
        t: u64,
        key: &str,
        cost: u64,
        d: &Decision,
    ) -> Result<(), String> {
        let retry = match d.retry_after {
            RetryAfter::After(wait) => format_seconds(wait),
            RetryAfter::Never => String::new(),
        };
        let row = [
            format_seconds(Duration::from_nanos(t)),
            key.to_string(),
            cost.to_string(),
            d.allowed.to_string(),
            d.remaining.to_string(),
            retry,
            format_seconds(d.reset_after),
            format_seconds(d.refill_after),
        ];
        if seq == self.next && self.waiting.is_empty() {
            // In order (always for CSV traces): straight out, not via the map.
            self.out.write_record(&row).map_err(|e| e.to_string())?;
            self.next += 1;
            return Ok(());
        }
        self.waiting.insert(seq, row);
        while let Some(row) = self.waiting.remove(&self.next) {
            self.out.write_record(&row).map_err(|e| e.to_string())?;
            self.next += 1;
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<(), String> {
        for row in std::mem::take(&mut self.waiting).into_values() {
            self.out.write_record(&row).map_err(|e| e.to_string())?;
        }
        self.out.flush().map_err(|e| e.to_string())
    }
}
