//! One TCP connection speaking memcached's meta protocol: the few commands
//! the store needs (`mg` with the value and its CAS token, `ms` as a CAS
//! write or an add, `md`, `mn`, and `stats`), each answered before the next is sent.
//!
//! A connection that fails or is abandoned mid-answer is dropped by its
//! owner, never reused: what is left unread on it would be read as the next
//! command's answer.

use std::fmt;
use std::io;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// The longest answer line read: an `mg` answer with the flags we ask for
/// is short; anything longer is not an answer of ours.
const MAX_LINE: usize = 1024;

/// Why a command got no answer the store can use.
#[derive(Debug)]
pub(crate) enum MetaError {
    /// The socket failed (refused, reset, closed).
    Io(io::Error),
    /// The server answered `SERVER_ERROR` (e.g. out of memory).
    Server(String),
    /// An answer that is not one of the protocol's (or `CLIENT_ERROR`).
    Protocol(String),
}

impl MetaError {
    /// Whether the server said it has no memory for the item.
    pub(crate) fn is_out_of_memory(&self) -> bool {
        matches!(self, MetaError::Server(text) if text.contains("out of memory"))
    }
}

impl fmt::Display for MetaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetaError::Io(e) => write!(f, "{e}"),
            MetaError::Server(text) => write!(f, "SERVER_ERROR {text}"),
            MetaError::Protocol(text) => write!(f, "unexpected answer: {text}"),
        }
    }
}

impl From<io::Error> for MetaError {
    fn from(e: io::Error) -> MetaError {
        MetaError::Io(e)
    }
}

/// An item's value and its CAS token.
#[derive(Debug)]
pub(crate) struct Item {
    pub value: Vec<u8>,
    pub cas: u64,
}

/// How an `ms` writes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Write {
    /// Only if no item has the key (`add`: mode `E`).
    Add,
    /// Only if the item's CAS token is still this one.
    Cas(u64),
}

/// What an `ms` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written {
    /// `HD`: stored.
    Stored,
    /// `NS`, `EX` or `NF`: another writer came first (an add found an item,
    /// the CAS token changed, or the item is gone).
    Conflict,
}

/// One connection to one memcached.
pub(crate) struct Connection {
    stream: BufReader<TcpStream>,
    /// The command being written, reused.
    out: Vec<u8>,
    /// The answer line being read, reused.
    line: Vec<u8>,
}

impl Connection {
    /// Connects to `addr` (`HOST:PORT`).
    pub(crate) async fn open(addr: &str) -> io::Result<Connection> {
        let stream = TcpStream::connect(addr).await?;
        // One small command per round trip: never wait for more to send.
        stream.set_nodelay(true)?;
        Ok(Connection {
            stream: BufReader::new(stream),
            out: Vec::with_capacity(256),
            line: Vec::with_capacity(64),
        })
    }

    /// `mg KEY v c`: the item's value and CAS token, `None` if there is none.
    pub(crate) async fn get(&mut self, key: &str) -> Result<Option<Item>, MetaError> {
        let Some(line) = self.meta_get(key, "v c").await? else {
            return Ok(None);
        };
        let mut words = line.split(' ');
        if words.next() != Some("VA") {
            return Err(answer_error(&line));
        }
        let size: usize = words
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| MetaError::Protocol(line.clone()))?;
        let cas = flag(words, 'c').ok_or_else(|| MetaError::Protocol(line.clone()))?;
        let mut value = vec![0; size + 2];
        self.stream.read_exact(&mut value).await?;
        if !value.ends_with(b"\r\n") {
            return Err(MetaError::Protocol(format!(
                "{line}: a value without its CRLF"
            )));
        }
        value.truncate(size);
        Ok(Some(Item { value, cas }))
    }

    /// `ms KEY LEN T<ttl> (ME | C<cas>)`: writes `value` if `how` holds.
    pub(crate) async fn set(
        &mut self,
        key: &str,
        value: &[u8],
        ttl: u64,
        how: Write,
    ) -> Result<Written, MetaError> {
        self.out.clear();
        self.out.extend_from_slice(b"ms ");
        self.out.extend_from_slice(key.as_bytes());
        let condition = match how {
            Write::Add => "ME".to_owned(),
            Write::Cas(cas) => format!("C{cas}"),
        };
        let head = format!(" {} T{ttl} {condition}\r\n", value.len());
        self.out.extend_from_slice(head.as_bytes());
        self.out.extend_from_slice(value);
        self.out.extend_from_slice(b"\r\n");
        self.send().await?;
        self.read_line().await?;
        let line = self.line_text();
        match line.split(' ').next() {
            Some("HD") => Ok(Written::Stored),
            Some("NS" | "EX" | "NF") => Ok(Written::Conflict),
            _ => Err(answer_error(&line)),
        }
    }

    /// `mg KEY t`: the seconds the item has left (`-1`: it never expires),
    /// `None` if there is none.
    pub(crate) async fn ttl(&mut self, key: &str) -> Result<Option<i64>, MetaError> {
        let Some(line) = self.meta_get(key, "t").await? else {
            return Ok(None);
        };
        let mut words = line.split(' ');
        if words.next() != Some("HD") {
            return Err(answer_error(&line));
        }
        words
            .find_map(|w| w.strip_prefix('t').and_then(|t| t.parse().ok()))
            .map(Some)
            .ok_or(MetaError::Protocol(line))
    }

    /// `md KEY`: deletes the item; whether there was one.
    pub(crate) async fn delete(&mut self, key: &str) -> Result<bool, MetaError> {
        self.out.clear();
        for part in ["md ", key, "\r\n"] {
            self.out.extend_from_slice(part.as_bytes());
        }
        self.send().await?;
        self.read_line().await?;
        match self.line.as_slice() {
            b"HD" => Ok(true),
            b"NF" => Ok(false),
            _ => Err(answer_error(&self.line_text())),
        }
    }

    /// `stats`: the general statistics, as `(NAME, VALUE)` pairs.
    pub(crate) async fn stats(&mut self) -> Result<Vec<(String, String)>, MetaError> {
        self.out.clear();
        self.out.extend_from_slice(b"stats\r\n");
        self.send().await?;
        let mut stats = Vec::new();
        loop {
            self.read_line().await?;
            let line = self.line_text();
            if line == "END" {
                return Ok(stats);
            }
            let mut words = line.splitn(3, ' ');
            match (words.next(), words.next(), words.next()) {
                (Some("STAT"), Some(name), Some(value)) => {
                    stats.push((name.to_owned(), value.to_owned()))
                }
                _ => return Err(answer_error(&line)),
            }
        }
    }

    /// `mn`: the server answers (`MN`).
    pub(crate) async fn noop(&mut self) -> Result<(), MetaError> {
        self.out.clear();
        self.out.extend_from_slice(b"mn\r\n");
        self.send().await?;
        self.read_line().await?;
        match self.line.as_slice() {
            b"MN" => Ok(()),
            _ => Err(answer_error(&self.line_text())),
        }
    }

    /// `mg KEY FLAGS`: the answer line, `None` for a miss (`EN`).
    async fn meta_get(&mut self, key: &str, flags: &str) -> Result<Option<String>, MetaError> {
        self.out.clear();
        for part in ["mg ", key, " ", flags, "\r\n"] {
            self.out.extend_from_slice(part.as_bytes());
        }
        self.send().await?;
        self.read_line().await?;
        let line = self.line_text();
        Ok((line != "EN").then_some(line))
    }

    async fn send(&mut self) -> io::Result<()> {
        self.stream.get_mut().write_all(&self.out).await
    }

    /// One answer line into `self.line`, without its CRLF.
    async fn read_line(&mut self) -> Result<(), MetaError> {
        self.line.clear();
        let read = (&mut self.stream)
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut self.line)
            .await?;
        if read == 0 {
            return Err(MetaError::Io(io::ErrorKind::UnexpectedEof.into()));
        }
        if !self.line.ends_with(b"\r\n") {
            return Err(MetaError::Protocol(format!(
                "an answer line longer than {MAX_LINE} bytes or cut short"
            )));
        }
        self.line.truncate(self.line.len() - 2);
        Ok(())
    }

    fn line_text(&self) -> String {
        String::from_utf8_lossy(&self.line).into_owned()
    }
}

/// A flag's number in an answer's flags (`c123` for `c`).
fn flag<'a>(mut words: impl Iterator<Item = &'a str>, name: char) -> Option<u64> {
    words.find_map(|w| w.strip_prefix(name).and_then(|n| n.parse().ok()))
}

/// The error an unexpected answer line stands for.
fn answer_error(line: &str) -> MetaError {
    match line.strip_prefix("SERVER_ERROR ") {
        Some(text) => MetaError::Server(text.to_owned()),
        None => MetaError::Protocol(line.to_owned()),
    }
}
