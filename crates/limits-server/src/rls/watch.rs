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
//! A change is reloaded once it has settled (two polls in a row agree on
//! its [`Fingerprint`]), so a file caught half written is not read; an edit
//! that keeps the size and the mtime to the filesystem's resolution and is
//! written in place is not seen (SIGHUP still reloads). A failed reload
//! remembers the fingerprint too: a bad file is reported once per distinct
//! change, not on every poll.

use super::fingerprint::Fingerprint;
use super::reloader::RlsReloader;
use std::path::PathBuf;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

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
