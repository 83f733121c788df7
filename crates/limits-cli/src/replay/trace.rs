//! Reading traces as a stream of events: CSV (`time,key[,cost]`) or an
//! nginx/Apache combined access log. Nothing is held but the current line.

use super::access_log::parse_access_line;
use limits::parse_seconds;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One request of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// 1-based line in the file.
    pub line: u64,
    /// Nanoseconds: from the trace's zero (CSV) or the Unix epoch (logs).
    pub t: u64,
    /// The client.
    pub key: String,
    /// The request's cost, at least 1.
    pub cost: u64,
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
    /// `time,key[,cost]`, time in decimal seconds from the trace's zero.
    Csv,
    /// nginx/Apache combined (or common) access log.
    Log,
}

/// Events, or line errors, in file order.
pub type Events = Box<dyn Iterator<Item = Result<Event, LineError>>>;

/// Opens `path` and streams its events. `bytes_read` counts the bytes consumed,
/// for progress. Returns the format in use with the stream.
pub fn open(
    path: &Path,
    format: TraceFormat,
    bytes_read: Arc<AtomicU64>,
) -> Result<(TraceFormat, Events), String> {
    let file = File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut reader = BufReader::new(Counting {
        inner: file,
        count: bytes_read,
    });
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
    let events: Events = match format {
        TraceFormat::Log => Box::new(log_events(BufReader::new(whole))),
        _ => Box::new(csv_events(whole)),
    };
    Ok((format, events))
}

fn looks_like_access_log(line: &str) -> bool {
    line.contains(" [") && line.contains("] \"")
}

/// CSV records as events; a first line whose time is not a number is a header.
fn csv_events(input: impl Read + 'static) -> impl Iterator<Item = Result<Event, LineError>> {
    let reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(input);
    let mut first = true;
    reader.into_records().filter_map(move |record| {
        let is_first = std::mem::take(&mut first);
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                return Some(Err(LineError {
                    line,
                    message: format!("unreadable CSV: {e}"),
                }));
            }
        };
        let line = record.position().map_or(0, |p| p.line());
        let time = record.get(0).unwrap_or("");
        if is_first && !time.bytes().any(|b| b.is_ascii_digit()) {
            return None; // a header line: its time field is not a number
        }
        if record.len() == 1 && time.is_empty() {
            return None; // a blank line
        }
        Some(csv_event(line, &record))
    })
}

fn csv_event(line: u64, record: &csv::StringRecord) -> Result<Event, LineError> {
    let fail = |message: String| LineError { line, message };
    if record.len() < 2 || record.len() > 3 {
        return Err(fail(format!(
            "expected time,key[,cost], found {} field{}",
            record.len(),
            if record.len() == 1 { "" } else { "s" }
        )));
    }
    let t = parse_seconds(&record[0])
        .map_err(|_| {
            fail(format!(
                "time {:?} is not decimal seconds (up to 9 decimals)",
                &record[0]
            ))
        })?
        .as_nanos();
    let t = u64::try_from(t).map_err(|_| fail(format!("time {:?} is too large", &record[0])))?;
    let key = record[1].to_string();
    if key.is_empty() {
        return Err(fail("the key is empty".to_string()));
    }
    let cost = match record.get(2) {
        None | Some("") => 1,
        Some(c) => match c.parse::<u64>() {
            Ok(n) if n > 0 => n,
            _ => return Err(fail(format!("cost {c:?} is not a positive whole number"))),
        },
    };
    Ok(Event { line, t, key, cost })
}

/// Access-log lines as events; blank lines are skipped.
fn log_events(mut input: impl BufRead + 'static) -> impl Iterator<Item = Result<Event, LineError>> {
    let mut line_no = 0u64;
    let mut buf = Vec::new();
    std::iter::from_fn(move || loop {
        buf.clear();
        line_no += 1;
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) => {
                return Some(Err(LineError {
                    line: line_no,
                    message: format!("read error: {e}"),
                }))
            }
        }
        let text = String::from_utf8_lossy(&buf);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        return Some(
            parse_access_line(text)
                .map(|(t, key)| Event {
                    line: line_no,
                    t,
                    key,
                    cost: 1,
                })
                .map_err(|message| LineError {
                    line: line_no,
                    message,
                }),
        );
    })
}

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
