//! A real `memcached` for tests, on a free port of 127.0.0.1 (TCP only);
//! killed on drop. Shared by the tests of limits-memcached and limits-cli
//! (included by path).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `memcached`.
pub struct MemcachedServer {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl MemcachedServer {
    /// Starts one on a free port and waits until it answers `mn`.
    pub fn start() -> MemcachedServer {
        let mut last = String::new();
        for _ in 0..5 {
            let mut server = MemcachedServer {
                child: None,
                port: free_port(),
            };
            match server.spawn() {
                Ok(()) => return server,
                Err(e) => last = e,
            }
        }
        panic!("could not start memcached: {last}");
    }

    fn spawn(&mut self) -> Result<(), String> {
        let child = Command::new("memcached")
            .args(["-l", "127.0.0.1", "-p", &self.port.to_string(), "-U", "0"])
            // memcached refuses to run as root unless told which user to be.
            .args(["-u", &whoami()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!("memcached: {e} (is it installed? scripts/test installs it: run scripts/test, or apt-get install memcached)")
            })?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                return Err(format!("memcached exited: {status}"));
            }
            if self.command("mn").is_ok_and(|r| r == "MN") {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop();
        Err("memcached did not answer mn within 10 s".to_owned())
    }

    /// `memcached://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("memcached://127.0.0.1:{}", self.port)
    }

    /// Kills it (as a crash would).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port, empty.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn()
            .unwrap_or_else(|e| panic!("restarting memcached: {e}"));
    }

    /// One command line over a plain socket, the first answer line.
    pub fn command(&self, line: &str) -> Result<String, String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
        stream
            .write_all(format!("{line}\r\n").as_bytes())
            .map_err(|e| e.to_string())?;
        let mut answer = String::new();
        BufReader::new(stream)
            .read_line(&mut answer)
            .map_err(|e| e.to_string())?;
        Ok(answer.trim_end().to_owned())
    }
}

impl Drop for MemcachedServer {
    fn drop(&mut self) {
        self.stop();
    }
}

pub use crate::server_port::free_port;

/// The user the tests run as (memcached's `-u`).
fn whoami() -> String {
    Command::new("id")
        .arg("-un")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "root".to_owned())
}
