//! Running the real `limits` binary from tests.

#![allow(dead_code)]

pub mod server;
pub mod upstream;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `limits ARGS`; returns (stdout, stderr, exit code).
pub fn limits(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_limits"))
        .args(args)
        .output()
        .expect("run limits");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// Writes `text` to `dir/name`; returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}
