//! What the loader would read at the configuration path, to tell a change:
//! what [`config_files`] lists (the same walk as the loader: `*.yaml`/`*.yml`,
//! dot names skipped, symlinked files followed), and for each file its size,
//! mtime and inode.

use super::config::config_files;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What the loader would read at a path: each file with its size, mtime and
/// identity, or why the path cannot be read (a state of its own: going from
/// readable to unreadable is a change, reported once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fingerprint(Result<Vec<Stamp>, String>);

#[derive(Clone, Debug, PartialEq, Eq)]
struct Stamp {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
    /// (device, inode) on Unix: a file replaced by another of the same size
    /// and mtime (a ConfigMap's new revision, a `cp -p`) is still a change.
    identity: (u64, u64),
}

impl Fingerprint {
    /// Stats what the loader would read at `path` (following symlinks).
    pub(crate) fn of(path: &Path) -> Fingerprint {
        Fingerprint(stamps(path))
    }
}

fn stamps(path: &Path) -> Result<Vec<Stamp>, String> {
    let mut stamps = Vec::new();
    for file in config_files(path)? {
        let meta = std::fs::metadata(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        stamps.push(Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            identity: identity(&meta),
            path: file,
        });
    }
    Ok(stamps)
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
fn identity(_: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}
