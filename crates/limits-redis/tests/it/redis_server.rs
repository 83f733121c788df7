//! A real `redis-server` for tests, on a free port of 127.0.0.1 (see
//! `server_port`), with no persistence; killed on drop. Shared by the tests
//! of limits-redis, limits-server and limits-cli (included by path).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server`.
pub struct RedisServer {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    extra: Vec<String>,
    /// A config file read first (a sentinel's, which it rewrites).
    config: Option<PathBuf>,
}

impl RedisServer {
    /// Starts one on a free port and waits until it answers PING.
    pub fn start() -> RedisServer {
        Self::start_with(&[])
    }

    /// Starts one with extra arguments (e.g. `--cluster-enabled yes`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let mut last = String::new();
        for _ in 0..5 {
            // A cluster node also listens on port + 10000 (its bus).
            let port = if extra.contains(&"--cluster-enabled") {
                free_cluster_port()
            } else {
                free_port()
            };
            let mut server = RedisServer {
                child: None,
                port,
                extra: extra.iter().map(|s| s.to_string()).collect(),
                config: None,
            };
            match server.spawn() {
                Ok(()) => return server,
                Err(e) => last = e,
            }
        }
        panic!("could not start redis-server: {last}");
    }

    /// Starts one with the limits Redis module loaded ([`module_path`]),
    /// and `extra` arguments.
    pub fn start_with_module(extra: &[&str]) -> RedisServer {
        let module = module_path();
        let mut args = vec!["--loadmodule", module.as_str()];
        args.extend_from_slice(extra);
        Self::start_with(&args)
    }

    /// Starts one on `port` (one that a test kept free for it, e.g. a
    /// client already pointed at it) and waits until it answers PING.
    pub fn start_on(port: u16) -> Result<RedisServer, String> {
        let mut server = RedisServer {
            child: None,
            port,
            extra: Vec::new(),
            config: None,
        };
        server.spawn()?;
        Ok(server)
    }

    /// Starts a Redis Sentinel (`redis-server --sentinel`) on a free port,
    /// watching the master `name` at 127.0.0.1:`master` with a quorum of one,
    /// and waits until it answers PING. A master is judged down after
    /// `down_after_ms` without an answer.
    pub fn start_sentinel(name: &str, master: u16, down_after_ms: u64) -> RedisServer {
        Self::start_sentinel_with(name, master, down_after_ms, &[])
    }

    /// As [`start_sentinel`](Self::start_sentinel), with `extra` arguments
    /// (TLS, `--requirepass`).
    pub fn start_sentinel_with(
        name: &str,
        master: u16,
        down_after_ms: u64,
        extra: &[&str],
    ) -> RedisServer {
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port();
            let dir = std::env::temp_dir().join(format!("limits-sentinel-{port}"));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("a sentinel's directory");
            let config = dir.join("sentinel.conf");
            let text = format!(
                "sentinel monitor {name} 127.0.0.1 {master} 1\n\
                 sentinel down-after-milliseconds {name} {down_after_ms}\n\
                 sentinel failover-timeout {name} 5000\n\
                 sentinel parallel-syncs {name} 1\n"
            );
            std::fs::write(&config, text).expect("a sentinel's config file");
            let mut server = RedisServer {
                child: None,
                port,
                extra: ["--sentinel"]
                    .iter()
                    .chain(extra)
                    .map(|a| a.to_string())
                    .collect(),
                config: Some(config),
            };
            match server.spawn() {
                Ok(()) => return server,
                Err(e) => last = e,
            }
        }
        panic!("could not start redis-server --sentinel: {last}");
    }

    fn spawn(&mut self) -> Result<(), String> {
        let dir = std::env::temp_dir().join(format!("limits-redis-{}", self.port));
        // A cluster node's nodes.conf from an earlier run would be reused.
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let mut command = Command::new("redis-server");
        // A config file must come first.
        if let Some(config) = &self.config {
            command.arg(config);
        }
        let child = command
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&dir)
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                format!("redis-server: {e} (is it installed? scripts/test installs it: run scripts/test, or apt-get install redis-server)")
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
                return Err(format!("redis-server exited: {status}"));
            }
            // A server with a password answers too, refusing: it is up.
            if self
                .command(&["PING"])
                .is_ok_and(|r| r.contains("PONG") || r.starts_with("-NOAUTH"))
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop();
        Err("redis-server did not answer PING within 10 s".to_owned())
    }

    /// `redis://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills it (as a crash would: no shutdown, nothing saved).
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
            .unwrap_or_else(|e| panic!("restarting redis-server: {e}"));
    }

    /// One command over a plain socket (RESP), the raw reply as text; as
    /// the `--requirepass` user when the server was started with one.
    pub fn command(&self, args: &[&str]) -> Result<String, String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
        if let Some(password) = self.password() {
            let reply = exchange(&mut stream, &["AUTH", &password])?;
            if !reply.starts_with("+OK") {
                return Err(format!("AUTH: {reply}"));
            }
        }
        exchange(&mut stream, args)
    }

    /// The value of its `--requirepass`, if any.
    fn password(&self) -> Option<String> {
        let at = self.extra.iter().position(|a| a == "--requirepass")?;
        self.extra.get(at + 1).cloned()
    }

    /// Writes 64 KiB values until Redis answers OOM (a server started with
    /// `--maxmemory` and `--maxmemory-policy noeviction`), then lowers
    /// `maxmemory` by a quarter: Redis counts clients' buffers as used
    /// memory, so a connection closing could otherwise make room for a few
    /// more writes. How many values fit.
    pub fn fill_until_oom(&self) -> usize {
        let value = "x".repeat(64 * 1024);
        for i in 0..10_000 {
            let reply = self
                .command(&["SET", &format!("fill:{i}"), &value])
                .unwrap();
            if reply.starts_with("-OOM") {
                let config = self.command(&["CONFIG", "GET", "maxmemory"]).unwrap();
                let max: u64 = config
                    .lines()
                    .rev()
                    .find_map(|l| l.parse().ok())
                    .unwrap_or_else(|| panic!("CONFIG GET maxmemory: {config:?}"));
                let lower = (max / 4 * 3).to_string();
                let set = self
                    .command(&["CONFIG", "SET", "maxmemory", &lower])
                    .unwrap();
                assert!(set.starts_with("+OK"), "CONFIG SET maxmemory: {set:?}");
                return i;
            }
            assert!(reply.starts_with("+OK"), "SET fill:{i}: {reply:?}");
        }
        panic!("no OOM after 10,000 writes of 64 KiB: is --maxmemory set?");
    }

    /// A connection that counts what Redis does (see [`Traffic`]).
    pub fn traffic(&self) -> Traffic {
        let stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect to redis-server");
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
        Traffic { stream }
    }

    /// An integer reply (`:N`).
    pub fn integer(&self, args: &[&str]) -> i64 {
        let reply = self.command(args).unwrap();
        reply
            .trim()
            .strip_prefix(':')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{args:?}: {reply:?}"))
    }
}

/// One connection kept open to count what Redis does between two looks:
/// the reads of its clients' sockets (`total_reads_processed` of `INFO
/// stats`; commands written together arrive together and are read in one
/// read, so reads count round trips) and the script calls it ran
/// (`EVALSHA` in `INFO commandstats`; the commands a script runs are
/// counted apart, under their own names). Kept open, so that no connection
/// closing (a read too) falls between two looks.
pub struct Traffic {
    stream: TcpStream,
}

impl Traffic {
    /// (reads, script calls) so far, this look's own read counted.
    pub fn now(&mut self) -> (u64, u64) {
        let info = self.info();
        let field = |name: &str| -> Option<u64> {
            info.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(|v| v.trim().to_owned())
                .and_then(|v| {
                    // `calls=N,usec=...` or a plain number.
                    let n = v.strip_prefix("calls=").unwrap_or(&v);
                    n.split(',').next()?.parse().ok()
                })
        };
        let reads = field("total_reads_processed").unwrap_or_else(|| {
            panic!("no total_reads_processed (Redis 6 or later has it): {info}")
        });
        (reads, field("cmdstat_evalsha").unwrap_or(0))
    }

    /// (reads, script calls) since `before` (an earlier [`now`](Self::now)),
    /// without the look's own read.
    pub fn since(&mut self, before: (u64, u64)) -> (u64, u64) {
        let now = self.now();
        (now.0 - before.0 - 1, now.1 - before.1)
    }

    /// A command whose answer is one line (`+OK`, `:N`, an error), on this
    /// connection: no connection opened or closed between two looks.
    pub fn command(&mut self, args: &[&str]) -> String {
        let mut request = format!("*{}\r\n", args.len());
        for a in args {
            request.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        self.stream
            .write_all(request.as_bytes())
            .expect("send a command");
        let mut answer = Vec::new();
        let mut byte = [0u8; 1];
        while !answer.ends_with(b"\r\n") {
            let n = self.stream.read(&mut byte).expect("read an answer");
            assert!(n > 0, "redis-server closed the connection");
            answer.push(byte[0]);
        }
        String::from_utf8_lossy(&answer).trim_end().to_owned()
    }

    /// The text of `INFO stats` and `INFO commandstats`, in one command.
    fn info(&mut self) -> String {
        let request = "*3\r\n$4\r\nINFO\r\n$5\r\nstats\r\n$12\r\ncommandstats\r\n";
        self.stream
            .write_all(request.as_bytes())
            .expect("send INFO");
        let mut answer = Vec::new();
        let mut buf = [0u8; 16384];
        loop {
            let n = self.stream.read(&mut buf).expect("read INFO");
            assert!(n > 0, "redis-server closed the connection");
            answer.extend_from_slice(&buf[..n]);
            // `$LEN\r\n` then LEN bytes and `\r\n`.
            let Some(head) = answer.iter().position(|&b| b == b'\n') else {
                continue;
            };
            let len: usize = std::str::from_utf8(&answer[1..head - 1])
                .ok()
                .and_then(|l| l.parse().ok())
                .unwrap_or_else(|| panic!("INFO answered {:?}", String::from_utf8_lossy(&answer)));
            if answer.len() >= head + 1 + len + 2 {
                return String::from_utf8_lossy(&answer[head + 1..head + 1 + len]).into_owned();
            }
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Sends one command on `stream`, the raw reply as text.
fn exchange(stream: &mut TcpStream, args: &[&str]) -> Result<String, String> {
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    stream
        .write_all(req.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 1 << 16];
    let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

pub use crate::server_port::free_port;

/// The limits Redis module as the workspace builds it for its tests
/// (`cargo build --profile test -p limits-redis-module`, which
/// scripts/test runs first), or `LIMITS_REDIS_MODULE`.
pub fn module_path() -> String {
    if let Ok(path) = std::env::var("LIMITS_REDIS_MODULE") {
        return path;
    }
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let path = target.join("debug/liblimits_redis_module.so");
    assert!(
        path.exists(),
        "no Redis module at {}: build it with `cargo build --profile test -p limits-redis-module` (scripts/test does), or set LIMITS_REDIS_MODULE",
        path.display()
    );
    path.display().to_string()
}

/// A free port whose cluster bus port (+10000) is free too, both below
/// the ephemeral ports.
pub fn free_cluster_port() -> u16 {
    let below = crate::server_port::ephemeral_start();
    crate::server_port::free_port_where(|port| {
        u32::from(port) + 10_000 < below && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok()
    })
}

/// A 3-master Redis Cluster on free ports (no replicas), made with
/// `redis-cli --cluster create`; stopped on drop.
pub struct RedisCluster {
    /// The nodes.
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts three nodes, joins them, and waits for `cluster_state:ok`.
    pub fn start() -> RedisCluster {
        Self::start_with(&[])
    }

    /// As [`start`](Self::start), each node with `extra` arguments too
    /// (e.g. `--requirepass`, which `redis-cli` is then given).
    pub fn start_with(extra: &[&str]) -> RedisCluster {
        let args: Vec<&str> = ["--cluster-enabled", "yes"]
            .into_iter()
            .chain(extra.iter().copied())
            .collect();
        let nodes: Vec<RedisServer> = (0..3).map(|_| RedisServer::start_with(&args)).collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        Self::join(nodes, &addrs, &[])
    }

    /// Joins `nodes` into a cluster with `redis-cli --cluster create`,
    /// which reaches them at `addrs` with the arguments `cli` (TLS) and
    /// their `--requirepass`, and waits for `cluster_state:ok`.
    pub fn join(nodes: Vec<RedisServer>, addrs: &[String], cli: &[String]) -> RedisCluster {
        let auth: Vec<String> = match nodes[0].password() {
            Some(password) => vec!["-a".to_owned(), password, "--no-auth-warning".to_owned()],
            None => Vec::new(),
        };
        let out = Command::new("redis-cli")
            .args(cli)
            .args(&auth)
            .args(["--cluster", "create"])
            .args(addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli (scripts/test installs redis-server, which brings it)");
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while !nodes.iter().all(|n| {
            n.command(&["CLUSTER", "INFO"])
                .is_ok_and(|info| info.contains("cluster_state:ok"))
        }) {
            assert!(
                Instant::now() < deadline,
                "the cluster is not ok after 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        RedisCluster { nodes }
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3`
    pub fn url(&self) -> String {
        let addrs: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", addrs.join(","))
    }
}
