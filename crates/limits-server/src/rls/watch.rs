//! Reload on change: the configuration path is polled every
//! `watch_interval` and reloaded, through the same code as SIGHUP, when what
//! the loader would read has changed.
//!
//! Why polling rather than inotify/kqueue (the `notify` crate): a stat of each
//! config file once a second costs nothing next to the service's work, needs
//! no new dependency, behaves the same on every platform and filesystem
//! (inotify misses changes on NFS and some container mounts), and sees a
//! Kubernetes ConfigMap update, which swaps a `..data` symlink to a new
//! directory rather than writing any watched file: the fingerprint follows
//! symlinks, so the files behind the links change identity (inode), size or
//! mtime. The price is up to one interval of delay.
//!
//! The fingerprint is what [`config_files`] lists (the same walk as the
//! loader: `*.yaml`/`*.yml`, dot names skipped, symlinked files followed),
//! and for each file its size, mtime and inode. A change is reloaded once it
//! has settled (two polls in a row agree), so a file caught half written is
//! not read; an edit that keeps the size and the mtime to the filesystem's
//! resolution and is written in place is not seen (SIGHUP still reloads).
//! A failed reload remembers the fingerprint too: a bad file is reported once
//! per distinct change, not on every poll.

use super::config::config_files;
use super::server::RlsReloader;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

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

/// Polls `path` every `every` and has `reloader` reload a settled change,
/// until aborted.
pub(super) fn watch_changes(
    reloader: RlsReloader,
    path: PathBuf,
    every: Duration,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut last: Option<Fingerprint> = None;
        loop {
            tick.tick().await;
            let (reloader, path) = (reloader.clone(), path.clone());
            let polled = tokio::task::spawn_blocking(move || {
                let now = Fingerprint::of(&path);
                if last.as_ref() == Some(&now) {
                    // Settled: reloads only if it differs from what was loaded.
                    let _ = reloader.reload_if_changed();
                }
                now
            })
            .await;
            last = polled.ok();
        }
    })
}
