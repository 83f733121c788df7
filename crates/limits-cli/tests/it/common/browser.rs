//! A real browser for tests: Debian's Chromium, headless, one fresh
//! profile per run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Chromium: `LIMITS_CHROMIUM`, else `chromium` on the PATH (scripts/test
/// installs Debian's package).
fn chromium() -> PathBuf {
    if let Some(path) = std::env::var_os("LIMITS_CHROMIUM") {
        return path.into();
    }
    let found = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("chromium"))
        .find(|p| p.is_file());
    found.expect("chromium not found: scripts/test installs it (apt-get install chromium), or set LIMITS_CHROMIUM")
}

/// What Chromium shows of `url` after `budget` of the page's own time
/// (its timers run, its fetches answer): the document (`--dump-dom`), or
/// a screenshot written to `out`; and the console messages it logged.
pub fn browse(url: &str, budget: Duration, out: Option<&Path>) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let mut command = Command::new(chromium());
    command.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1100,760",
    ]);
    command.arg(format!("--user-data-dir={}", profile.path().display()));
    command.arg(format!("--virtual-time-budget={}", budget.as_millis()));
    match out {
        Some(path) => command.arg(format!("--screenshot={}", path.display())),
        None => command.arg("--dump-dom"),
    };
    let done = command.arg(url).output().expect("chromium runs");
    assert!(
        done.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&done.stderr)
    );
    let console = String::from_utf8_lossy(&done.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect();
    (String::from_utf8_lossy(&done.stdout).into_owned(), console)
}
