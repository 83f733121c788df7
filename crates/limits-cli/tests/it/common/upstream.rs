//! A raw upstream for proxy tests: a TCP listener on 127.0.0.1 that records
//! the bytes of every request it receives and answers each with a small 200,
//! so that a test can assert exactly what the upstream saw; a login whose
//! body says `password=wrong` gets a 401, as a login page answers it, and
//! a request with `x-answer-tokens: N` an `x-tokens-used: N` header, as an
//! LLM API reports what an answer used; a request with `x-body-after-ms: N`
//! gets its response head at once and its body N ms later, as a slow
//! download or a stream.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct RecordingUpstream {
    /// `http://127.0.0.1:PORT`
    pub url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl RecordingUpstream {
    pub fn start() -> RecordingUpstream {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let seen = seen.clone();
                std::thread::spawn(move || answer(stream, &seen));
            }
        });
        RecordingUpstream { url, requests }
    }

    /// Every request so far, head and body, as text.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }

    /// The request line of every request so far (`GET /login HTTP/1.1`).
    pub fn request_lines(&self) -> Vec<String> {
        self.requests()
            .iter()
            .map(|r| r.lines().next().unwrap_or_default().to_string())
            .collect()
    }
}

/// Reads requests on one connection (keep-alive), recording each.
fn answer(mut stream: TcpStream, seen: &Mutex<Vec<String>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        while let Some(end) = request_end(&buffer) {
            let request: Vec<u8> = buffer.drain(..end).collect();
            let text = String::from_utf8_lossy(&request).into_owned();
            let reply: &[u8] = if text.contains("password=wrong") {
                b"HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nno"
            } else {
                b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"
            };
            let reply = with_tokens_used(reply, &text);
            let body_after = header_value(&text, "x-body-after-ms").and_then(|v| v.parse().ok());
            seen.lock().unwrap().push(text);
            let (head, body) = match body_after {
                Some(ms) => {
                    let head_end = reply.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
                    let (head, body) = reply.split_at(head_end);
                    if stream.write_all(head).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(ms));
                    (&[][..], body)
                }
                None => (&reply[..], &[][..]),
            };
            if stream
                .write_all(head)
                .and_then(|()| stream.write_all(body))
                .is_err()
            {
                return;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

/// `reply` with `x-tokens-used: N` after its status line when the request
/// asks for it with `x-answer-tokens: N`, as an LLM API reports the tokens
/// an answer used.
fn with_tokens_used(reply: &[u8], request: &str) -> Vec<u8> {
    let Some(tokens) = header_value(request, "x-answer-tokens") else {
        return reply.to_vec();
    };
    let line_end = reply.windows(2).position(|w| w == b"\r\n").unwrap_or(0) + 2;
    let mut out = reply[..line_end].to_vec();
    out.extend_from_slice(format!("x-tokens-used: {tokens}\r\n").as_bytes());
    out.extend_from_slice(&reply[line_end..]);
    out
}

/// The value of the header `name` in the request `text`, if it has one.
fn header_value(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (field, value) = line.split_once(':')?;
        field
            .eq_ignore_ascii_case(name)
            .then(|| value.trim().to_string())
    })
}

/// Where the first complete request in `buffer` ends: its head, plus a
/// Content-Length body or a chunked body up to its last chunk.
fn request_end(buffer: &[u8]) -> Option<usize> {
    let head_end = buffer.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    if let Some(length) = length {
        return (buffer.len() >= head_end + length).then_some(head_end + length);
    }
    if head.contains("transfer-encoding: chunked") {
        let body = &buffer[head_end..];
        return body
            .windows(5)
            .position(|w| w == b"0\r\n\r\n")
            .map(|p| head_end + p + 5);
    }
    Some(head_end)
}
