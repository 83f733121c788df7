//! `--state FILE`: the limiters' state written on graceful shutdown and read
//! back on start, so that a restart does not hand every client a fresh limit.
//! Times are Unix-epoch nanoseconds (the system clock), so state read after a
//! restart means what it meant before.
//!
//! A state file that cannot be written is found at start, not at shutdown
//! when the state would be lost; it is written through a fresh temporary file
//! renamed over it, so a crash leaves the old file or the new one, never half
//! of one. A symlinked state file keeps its link: its target is replaced.
//! State dated after now (beyond [`CLOCK_TOLERANCE`]) is dropped on load.
//!
//! One writer for both servers: `limits serve` saves each rule's store under
//! the rule's name, `limits rls` each limit's under the limit's id; each with
//! a shape saying what the state means ([`Entry`]), so that state saved for
//! a rule that changed since is not loaded into it.

use crate::store::RuleStore;
use limits::{Clock, Store, SystemClock};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How far ahead of this host's clock saved state may be dated and still be
/// loaded: a saved time beyond it comes from a clock that ran ahead (or a
/// forged file), and would deny its key until that time comes. One second
/// covers the skew of an NTP-synchronized host; a key dropped for it merely
/// starts afresh.
pub const CLOCK_TOLERANCE: Duration = Duration::from_secs(1);

/// Symlinks followed at most when resolving the state file (as the kernel's
/// own limit).
const MAX_LINKS: usize = 40;

#[derive(Serialize, Deserialize)]
struct StateFile {
    version: u32,
    rules: BTreeMap<String, SavedRule>,
}

#[derive(Serialize, Deserialize)]
struct SavedRule {
    /// Limiter, rates and key of the rule the state belongs to.
    shape: String,
    /// Each key with its state as numbers (`limits::Rule::encode_state`).
    keys: Vec<(String, Vec<u64>)>,
    /// Each key's standing under the rule's penalty, if it has one
    /// (`limits::Penalty::encode_state`): a ban survives a restart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    penalties: Vec<(String, Vec<u64>)>,
}

const VERSION: u32 = 1;

/// What a server saves and loads: a store under its name, with the shape
/// that identifies what its keys' state means (the rule, and whatever makes
/// the keys). Only a store in this process ([`Store::local`]) is saved.
pub type Entry<'a> = (&'a str, String, &'a RuleStore);

/// Checks at start that the state can be saved to `path`: its directory
/// exists and takes a new file, and `path` is not a directory.
pub fn check_writable(path: &Path) -> Result<(), String> {
    let target = resolve(path)?;
    if target.is_dir() {
        return Err(format!(
            "--state {}: is a directory, not a file",
            path.display()
        ));
    }
    let dir = directory_of(&target);
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(format!(
                "--state {}: {} is not a directory",
                path.display(),
                dir.display()
            ))
        }
        Err(e) => {
            return Err(format!(
                "--state {}: directory {}: {e}",
                path.display(),
                dir.display()
            ))
        }
    }
    tempfile::Builder::new()
        .prefix(".limits-state-check")
        .tempfile_in(dir)
        .and_then(tempfile::NamedTempFile::close)
        .map_err(|e| {
            format!(
                "--state {}: cannot write in {}: {e}",
                path.display(),
                dir.display()
            )
        })
}

/// The file `path` names: itself, or the target of the symlink(s) it is,
/// each relative to its link's directory. A dangling link names the file to
/// be created.
fn resolve(path: &Path) -> Result<PathBuf, String> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&at)
                    .map_err(|e| format!("--state {}: {e}", path.display()))?;
                at = directory_of(&at).join(link);
            }
            _ => return Ok(at),
        }
    }
    Err(format!(
        "--state {}: more than {MAX_LINKS} symlinks",
        path.display()
    ))
}

/// The directory a file is in (`.` for a bare name).
fn directory_of(file: &Path) -> &Path {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

/// Replaces `target` with `bytes`: a new temporary file beside it (created
/// exclusively, with a random name), written, flushed to disk, renamed over
/// `target`, and the directory flushed so that the rename survives a crash.
fn write_atomically(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = directory_of(target);
    let mut tmp = tempfile::Builder::new()
        .prefix(".limits-state")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(target).map_err(|e| e.error)?;
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

/// Writes the state of every entry whose store is in this process to `path`
/// (atomically: a temporary file renamed over it, or over the target of the
/// symlink `path` is). Returns how many keys (and penalty states) were saved.
pub fn save<'a>(
    path: &Path,
    entries: impl IntoIterator<Item = Entry<'a>>,
) -> Result<usize, String> {
    let mut file = StateFile {
        version: VERSION,
        rules: BTreeMap::new(),
    };
    let mut saved = 0;
    for (name, shape, store) in entries {
        let Some(local) = store.local() else {
            continue;
        };
        let keys = local.export();
        let penalties = local.export_penalties();
        saved += keys.len() + penalties.len();
        let rule = SavedRule {
            shape,
            keys,
            penalties,
        };
        file.rules.insert(name.to_string(), rule);
    }
    let text = serde_json::to_vec(&file).map_err(|e| e.to_string())?;
    let target = resolve(path)?;
    write_atomically(&target, &text).map_err(|e| format!("--state {}: {e}", path.display()))?;
    Ok(saved)
}

/// Loads the state in `path` into the entries of the same name and shape
/// whose store is in this process,
/// without the keys dated after now + [`CLOCK_TOLERANCE`] (counted in the
/// log). A missing file is a first start: nothing to load. Returns the keys
/// loaded.
pub fn load<'a>(
    path: &Path,
    entries: impl IntoIterator<Item = Entry<'a>>,
) -> Result<usize, String> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(format!("--state {}: {e}", path.display())),
    };
    let file: StateFile = serde_json::from_slice(&text)
        .map_err(|e| format!("--state {}: not a state file: {e}", path.display()))?;
    if file.version != VERSION {
        return Err(format!(
            "--state {}: version {} is not {VERSION}",
            path.display(),
            file.version
        ));
    }
    let tolerance = u64::try_from(CLOCK_TOLERANCE.as_nanos()).unwrap_or(u64::MAX);
    let latest = SystemClock::new().now().saturating_add(tolerance);
    let (mut loaded, mut dropped) = (0, 0);
    for (name, shape, store) in entries {
        let (Some(local), Some(saved)) = (store.local(), file.rules.get(name)) else {
            continue;
        };
        if saved.shape != shape {
            tracing::warn!(
                rule = %name,
                saved = %saved.shape,
                now = %shape,
                "rule changed since the state was saved; starting it afresh"
            );
            continue;
        }
        let limiter = store.rule();
        let (future, keys): (Vec<_>, Vec<_>) =
            saved.keys.iter().cloned().partition(|(_, words)| {
                limiter
                    .decode_state(words)
                    .is_some_and(|s| limiter.is_state_later_than(&s, latest))
            });
        dropped += future.len();
        loaded += local.import(keys);
        if let Some(penalty) = store.penalty() {
            let (future, penalties): (Vec<_>, Vec<_>) =
                saved.penalties.iter().cloned().partition(|(_, words)| {
                    penalty
                        .decode_state(words)
                        .is_some_and(|s| s.latest() > latest)
                });
            dropped += future.len();
            loaded += local.import_penalties(penalties);
        }
    }
    if dropped > 0 {
        let entries = if dropped == 1 { "entry" } else { "entries" };
        tracing::warn!(
            file = %path.display(),
            "state: dropped {dropped} future {entries} (dated more than {}s ahead of this clock)",
            CLOCK_TOLERANCE.as_secs()
        );
    }
    Ok(loaded)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_chain_of_relative_links_resolves_to_the_last_target_even_if_missing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("a")).unwrap();
        std::fs::create_dir(root.join("b")).unwrap();
        std::os::unix::fs::symlink("a/one", root.join("state.json")).unwrap();
        std::os::unix::fs::symlink("../b/two", root.join("a/one")).unwrap();
        let target = resolve(&root.join("state.json")).unwrap();
        assert_eq!(target, root.join("a/../b/two"));
        write_atomically(&target, b"{}").unwrap();
        assert_eq!(std::fs::read(root.join("b/two")).unwrap(), b"{}");
        assert!(std::fs::symlink_metadata(root.join("a/one"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn a_symlink_loop_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        std::os::unix::fs::symlink("state.json", &path).unwrap();
        let err = resolve(&path).unwrap_err();
        assert!(
            err.contains("state.json") && err.contains("symlinks"),
            "{err}"
        );
    }
}
