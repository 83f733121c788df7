//! Reading traces as a stream of events: CSV (`time,key[,cost[,value]]`) or an
//! nginx/Apache combined access log. Nothing is held but the current line:
//! CSV records are read into one reused record and trimmed as borrowed
//! slices, and each key is looked up in the trace's [`Keys`], so a line
//! allocates nothing unless its key is new.

use super::access_log::parse_access_line;
use super::keys::{KeyId, Keys};
use limits::parse_seconds;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One request of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// 1-based line in the file.
    pub line: u64,
    /// Nanoseconds: from the trace's zero (CSV) or the Unix epoch (logs).
    pub t: u64,
    /// The client, interned in the trace's [`Keys`].
    pub key: KeyId,
    /// The request's cost, at least 1.
    pub cost: u64,
    /// What a limit on distinct values counts: a hash of the request's
    /// path (access logs) or of the CSV's fourth field, if it has one.
    pub value: Option<u64>,
}

/// A line that could not be read, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    pub line: u64,
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// How the trace is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// Decide from the first line.
    Auto,
    /// `time,key[,cost[,value]]`, time in decimal seconds from the
    /// trace's zero.
    Csv,
    /// nginx/Apache combined (or common) access log.
    Log,
}

/// The input under the format's reader: the first line put back in front.
type Input = io::Chain<Cursor<Vec<u8>>, BufReader<Counting<Box<dyn Read + Send>>>>;

/// Events, or line errors, in file order.
pub enum Events {
    Csv(CsvEvents),
    Log(LogEvents),
}

impl Events {
    /// The next event or line error, its key interned in `keys`; `None` at
    /// the end of the trace.
    pub fn next(&mut self, keys: &mut Keys) -> Option<Result<Event, LineError>> {
        match self {
            Events::Csv(csv) => csv.next(keys),
            Events::Log(log) => log.next(keys),
        }
    }
}

/// Opens `path` (`-`: standard input) and streams its events, with their
/// values if `values` (a limit on distinct values counts them; otherwise
/// no line pays for hashing one). `bytes_read` counts the bytes consumed,
/// for progress. Returns the format in use with the stream.
pub fn open(
    path: &Path,
    format: TraceFormat,
    bytes_read: Arc<AtomicU64>,
    values: bool,
) -> Result<(TraceFormat, Events), String> {
    let source: Box<dyn Read + Send> = if path == Path::new("-") {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(path).map_err(|e| format!("{}: {e}", path.display()))?)
    };
    let mut reader = BufReader::new(Counting {
        inner: source,
        count: bytes_read,
    });
    let head = reader
        .fill_buf()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if head.starts_with(&GZIP_MAGIC) {
        return Err(format!(
            "{0}: the trace is gzip-compressed; decompress it on the way in: zcat {0} | limits replay ... -",
            path.display()
        ));
    }
    // Read the first line to decide the format, then put it back in front.
    let mut first = Vec::new();
    reader
        .read_until(b'\n', &mut first)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if first.iter().all(u8::is_ascii_whitespace) && reader.fill_buf().map_or(true, |b| b.is_empty())
    {
        return Err(format!("{}: the trace is empty", path.display()));
    }
    let format = match format {
        TraceFormat::Auto if looks_like_access_log(&String::from_utf8_lossy(&first)) => {
            TraceFormat::Log
        }
        TraceFormat::Auto => TraceFormat::Csv,
        f => f,
    };
    let whole = Cursor::new(first).chain(reader);
    let events = match format {
        TraceFormat::Log => Events::Log(LogEvents::new(BufReader::new(whole), values)),
        _ => Events::Csv(CsvEvents::new(whole, values)),
    };
    Ok((format, events))
}

fn looks_like_access_log(line: &str) -> bool {
    line.contains(" [") && line.contains("] \"")
}

/// CSV records as events; a first line whose time is not a number is a header.
pub struct CsvEvents {
    reader: csv::Reader<Input>,
    record: csv::StringRecord,
    first: bool,
    /// Whether events carry their values.
    values: bool,
}

impl CsvEvents {
    fn new(input: Input, values: bool) -> CsvEvents {
        // Fields are trimmed as borrowed slices (`field`): the reader's own
        // trimming, `csv::Trim::All`, builds a new record for every line.
        let reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .comment(Some(b'#'))
            .from_reader(input);
        CsvEvents {
            reader,
            record: csv::StringRecord::new(),
            first: true,
            values,
        }
    }

    fn next(&mut self, keys: &mut Keys) -> Option<Result<Event, LineError>> {
        loop {
            let read = self.reader.read_record(&mut self.record);
            let is_first = std::mem::take(&mut self.first);
            match read {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    let line = e.position().map_or(0, |p| p.line());
                    return Some(Err(LineError {
                        line,
                        message: format!("unreadable CSV: {e}"),
                    }));
                }
            }
            let record = &self.record;
            let line = record.position().map_or(0, |p| p.line());
            let time = field(record, 0).unwrap_or("");
            if is_first && !time.bytes().any(|b| b.is_ascii_digit()) {
                continue; // a header line: its time field is not a number
            }
            if record.len() == 1 && time.is_empty() {
                continue; // a blank line
            }
            return Some(csv_event(line, record, keys, self.values));
        }
    }
}

/// Field `i` of `record`, without surrounding whitespace.
fn field(record: &csv::StringRecord, i: usize) -> Option<&str> {
    record.get(i).map(trim)
}

/// `str::trim`, with a shortcut for the usual field: one that starts and
/// ends with a visible ASCII character (no whitespace is one, and no other
/// character's UTF-8 bytes are ASCII) has nothing to trim.
fn trim(field: &str) -> &str {
    let visible = |b: Option<&u8>| b.is_some_and(|&b| b > b' ' && b < 0x7f);
    if visible(field.as_bytes().first()) && visible(field.as_bytes().last()) {
        field
    } else {
        field.trim()
    }
}

fn csv_event(
    line: u64,
    record: &csv::StringRecord,
    keys: &mut Keys,
    values: bool,
) -> Result<Event, LineError> {
    let fail = |message: String| LineError { line, message };
    if record.len() < 2 || record.len() > 4 {
        return Err(fail(format!(
            "expected time,key[,cost[,value]], found {} field{}",
            record.len(),
            if record.len() == 1 { "" } else { "s" }
        )));
    }
    let time = field(record, 0).unwrap_or("");
    let t = parse_seconds(time)
        .map_err(|_| {
            fail(format!(
                "time {time:?} is not decimal seconds (up to 9 decimals)"
            ))
        })?
        .as_nanos();
    let t = u64::try_from(t).map_err(|_| fail(format!("time {time:?} is too large")))?;
    let key = field(record, 1).unwrap_or("");
    if key.is_empty() {
        return Err(fail("the key is empty".to_string()));
    }
    let cost = match field(record, 2) {
        None | Some("") => 1,
        Some(c) => match c.parse::<u64>() {
            Ok(n) if n > 0 => n,
            _ => return Err(fail(format!("cost {c:?} is not a positive whole number"))),
        },
    };
    let key = intern(keys, key).map_err(fail)?;
    let value = field(record, 3).filter(|v| values && !v.is_empty());
    let value = value.map(value_hash);
    Ok(Event {
        line,
        t,
        key,
        cost,
        value,
    })
}

/// A value as the number a replayed limit on distinct values keeps: the
/// same on every run (a fixed hash), 64 bits (two values of a key collide
/// with odds of one in billions at the largest limits).
fn value_hash(value: &str) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

fn intern(keys: &mut Keys, key: &str) -> Result<KeyId, String> {
    keys.intern(key).ok_or_else(|| {
        format!(
            "key {key:?} is one more than the {} distinct keys a replay holds",
            u64::from(KeyId::MAX) + 1
        )
    })
}

/// Access-log lines as events; blank lines are skipped.
pub struct LogEvents {
    input: BufReader<Input>,
    line_no: u64,
    buf: Vec<u8>,
    /// Whether events carry their paths as values.
    values: bool,
}

impl LogEvents {
    fn new(input: BufReader<Input>, values: bool) -> LogEvents {
        LogEvents {
            input,
            line_no: 0,
            buf: Vec::new(),
            values,
        }
    }

    fn next(&mut self, keys: &mut Keys) -> Option<Result<Event, LineError>> {
        loop {
            self.buf.clear();
            self.line_no += 1;
            let line = self.line_no;
            match self.input.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    return Some(Err(LineError {
                        line,
                        message: format!("read error: {e}"),
                    }))
                }
            }
            let text = String::from_utf8_lossy(&self.buf);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let event = parse_access_line(text).and_then(|read| {
                Ok(Event {
                    line,
                    t: read.t,
                    key: intern(keys, read.client)?,
                    cost: 1,
                    value: read.path.filter(|_| self.values).map(value_hash),
                })
            });
            return Some(event.map_err(|message| LineError { line, message }));
        }
    }
}

/// The first bytes of a gzip stream (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Counts the bytes read through it, for the progress bar.
struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn trim_is_str_trim() {
        for s in [
            "",
            " ",
            "a",
            " a",
            "a ",
            "\tk1\r",
            "x,y",
            "\u{a0}k\u{a0}",
            "k\u{85}",
            "\u{3000}k",
            "é",
            "~k~",
            "\u{7f}",
        ] {
            assert_eq!(super::trim(s), s.trim(), "{s:?}");
        }
    }
}
