//! A real `limits serve` (or `limits rls`) process on 127.0.0.1, for tests:
//! started on free ports, found by the address it prints, stopped on drop.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT` (`limits rls`: `127.0.0.1:PORT`, as printed)
    pub url: String,
    /// `http://127.0.0.1:PORT` of --admin, when asked for.
    pub admin: Option<String>,
    /// The whole `limits COMMAND: listening on ...` line.
    pub listening: String,
    /// Every line before it (stderr's prefixed `stderr: `), for what is
    /// said at start.
    pub startup: Vec<String>,
    lines: Receiver<String>,
}

impl Server {
    /// `limits serve --config RULES --upstream UPSTREAM ARGS`, the rules
    /// written to a file in a temporary directory (returned: the file lives
    /// as long as it does).
    pub fn with_rules(rules: &str, upstream: &str, args: &[&str]) -> (Server, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let config = super::write(dir.path(), "rules.toml", rules);
        let mut all = vec!["--config", config.to_str().unwrap(), "--upstream", upstream];
        all.extend_from_slice(args);
        (Server::start(&all, false), dir)
    }

    /// `limits serve ARGS --listen 127.0.0.1:0` (plus `--admin 127.0.0.1:0`
    /// with `admin`); waits until it listens.
    pub fn start(args: &[&str], admin: bool) -> Server {
        Self::try_start(args, admin).unwrap_or_else(|e| panic!("limits serve {args:?}: {e}"))
    }

    pub fn try_start(args: &[&str], admin: bool) -> Result<Server, String> {
        Self::try_start_command("serve", args, admin)
    }

    /// `limits COMMAND ARGS --listen 127.0.0.1:0`, for a command that prints
    /// `limits COMMAND: listening on ADDRESS ...` once it listens.
    pub fn start_command(command: &str, args: &[&str], admin: bool) -> Server {
        Self::try_start_command(command, args, admin)
            .unwrap_or_else(|e| panic!("limits {command} {args:?}: {e}"))
    }

    pub fn try_start_command(command: &str, args: &[&str], admin: bool) -> Result<Server, String> {
        Self::try_start_under(Under::Nothing, command, args, admin)
    }

    /// `limits COMMAND ARGS` exactly as given (no `--listen` or `--admin`
    /// added: ARGS say where), for a command that prints
    /// `limits COMMAND: listening on ADDRESS ...` once it listens.
    pub fn try_start_as_given(command: &str, args: &[&str]) -> Result<Server, String> {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_limits"));
        cmd.arg(command).args(args);
        Self::spawn(cmd, command)
    }

    /// `limits COMMAND ARGS` exactly as given, with the variables `envs`
    /// set (and RUST_LOG only if they set it), for a command that prints
    /// `limits COMMAND: listening on ADDRESS ...` once it listens.
    pub fn try_start_with_env(
        command: &str,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Result<Server, String> {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_limits"));
        cmd.arg(command).args(args).envs(envs.iter().copied());
        let log = envs.iter().find(|(k, _)| *k == "RUST_LOG").map(|(_, v)| *v);
        Self::spawn_logging(cmd, command, log)
    }

    /// `limits COMMAND ARGS ...` started by `sh` after `ulimit ULIMIT`
    /// (`-n 128`: a file limit of 128, soft and hard; `-Sn 100`: the soft
    /// one only), as a service manager's limit would start it.
    pub fn start_with_ulimit(ulimit: &str, command: &str, args: &[&str], admin: bool) -> Server {
        Self::try_start_under(Under::Ulimit(ulimit), command, args, admin)
            .unwrap_or_else(|e| panic!("ulimit {ulimit}; limits {command} {args:?}: {e}"))
    }

    /// `limits serve ARGS ...` (with `--admin`) with libfaketime's clock
    /// `OFFSET` (`+0.25s`: a quarter second ahead of this machine's).
    pub fn start_with_faketime(offset: &str, args: &[&str]) -> Server {
        Self::try_start_under(Under::Faketime(offset), "serve", args, true)
            .unwrap_or_else(|e| panic!("faketime {offset} limits serve {args:?}: {e}"))
    }

    fn try_start_under(
        under: Under<'_>,
        command: &str,
        args: &[&str],
        admin: bool,
    ) -> Result<Server, String> {
        let limits = env!("CARGO_BIN_EXE_limits");
        let mut cmd = match under {
            Under::Nothing => Command::new(limits),
            Under::Ulimit(ulimit) => {
                // `exec`: the shell becomes `limits`, with its pid.
                let mut sh = Command::new("sh");
                sh.arg("-c")
                    .arg(format!("ulimit {ulimit} && exec \"$0\" \"$@\""))
                    .arg(limits);
                sh
            }
            Under::Faketime(offset) => {
                // libfaketime preloaded into `limits` itself, as `faketime
                // -f` would, but without `faketime`'s own process in
                // between, which a kill would leave its child behind.
                let mut faked = Command::new(limits);
                faked
                    .env("LD_PRELOAD", libfaketime())
                    .env("FAKETIME", offset);
                faked
            }
        };
        cmd.arg(command)
            .args(args)
            .args(["--listen", "127.0.0.1:0"]);
        if admin {
            cmd.args(["--admin", "127.0.0.1:0"]);
        }
        Self::spawn(cmd, command)
    }

    /// Runs `cmd` (`limits COMMAND ...`), reading its output, until it
    /// says it listens.
    fn spawn(cmd: Command, command: &str) -> Result<Server, String> {
        Self::spawn_logging(cmd, command, Some("warn"))
    }

    /// [`spawn`](Self::spawn) with RUST_LOG set to `log`, or unset.
    fn spawn_logging(mut cmd: Command, command: &str, log: Option<&str>) -> Result<Server, String> {
        match log {
            Some(log) => cmd.env("RUST_LOG", log),
            None => cmd.env_remove("RUST_LOG"),
        };
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = channel();
        let tx2 = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx2.send(format!("stderr: {line}"));
            }
        });
        let mut server = Server {
            child,
            url: String::new(),
            admin: None,
            listening: String::new(),
            startup: Vec::new(),
            lines,
        };
        loop {
            let line = server
                .lines
                .recv_timeout(Duration::from_secs(60))
                .map_err(|_| "no 'listening' line within 60 s".to_string())?;
            if let Some(rest) = line.strip_prefix(&format!("limits {command}: admin on ")) {
                server.admin = Some(rest.trim_end_matches("/metrics").to_string());
            }
            if let Some(rest) = line.strip_prefix(&format!("limits {command}: listening on ")) {
                server.url = rest.split(' ').next().unwrap_or_default().to_string();
                server.listening = line.clone();
                return Ok(server);
            }
            if line.starts_with("stderr: error") {
                return Err(line);
            }
            server.startup.push(line);
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a signal by name (TERM, HUP, INT).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.pid().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }

    /// The lines that have come since the last read, without waiting.
    pub fn lines_so_far(&self) -> Vec<String> {
        self.lines.try_iter().collect()
    }

    /// The first line since the start containing `needle`: among those
    /// before the listening line, or the next to come. Stdout and stderr are
    /// read on two threads, so a line the server wrote to stderr before it
    /// said it listens may arrive after that.
    pub fn line_since_start(&self, needle: &str) -> String {
        match self.startup.iter().find(|l| l.contains(needle)) {
            Some(line) => line.clone(),
            None => self.wait_for_line(needle),
        }
    }

    /// Waits for the next stdout line containing `needle`.
    pub fn wait_for_line(&self, needle: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no line with {needle:?} within 30 s"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// Waits until a line containing each of `needles` has come, in any
    /// order (stdout and stderr are read by two threads, so a line on one
    /// can overtake an earlier line on the other); the lines, in the order
    /// of `needles`.
    pub fn wait_for_lines(&self, needles: &[&str]) -> Vec<String> {
        let mut found: Vec<Option<String>> = vec![None; needles.len()];
        while found.iter().any(Option::is_none) {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no lines with all of {needles:?} within 30 s"));
            for (needle, slot) in needles.iter().zip(&mut found) {
                if slot.is_none() && line.contains(needle) {
                    *slot = Some(line.clone());
                }
            }
        }
        found.into_iter().flatten().collect()
    }

    /// Waits for the process to exit; its exit code.
    pub fn wait(mut self) -> i32 {
        for _ in 0..600 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code().unwrap_or(-1);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("limits did not exit within 30 s");
    }

    /// Resident memory in KiB (Linux).
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// The value of a metric line starting with `prefix` on /metrics.
    pub async fn metric(&self, prefix: &str) -> Option<f64> {
        let admin = self.admin.as_ref()?;
        let text = reqwest::get(format!("{admin}/metrics"))
            .await
            .ok()?
            .text()
            .await
            .ok()?;
        text.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Debian's libfaketime (package faketime), in its multiarch directory.
fn libfaketime() -> PathBuf {
    let found = std::fs::read_dir("/usr/lib").ok().and_then(|dirs| {
        dirs.filter_map(Result::ok)
            .map(|d| d.path().join("faketime/libfaketime.so.1"))
            .find(|lib| lib.exists())
    });
    found.expect("no /usr/lib/*/faketime/libfaketime.so.1 (scripts/test installs faketime)")
}

/// What a server is started under.
enum Under<'a> {
    Nothing,
    /// `sh -c 'ulimit ARGS && exec limits ...'`.
    Ulimit(&'a str),
    /// `LD_PRELOAD=libfaketime FAKETIME=OFFSET limits ...`.
    Faketime(&'a str),
}
