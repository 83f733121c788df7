//! Which files a config directory holds.
//!
//! The reference service reads every file under its directory, walking
//! subdirectories (goruntime's `filepath.Walk`, which does not follow a
//! symlinked directory but reads a symlinked file); its README promises
//! `*.yaml`. We take `*.yaml` and `*.yml` files the same way, and skip names
//! starting with `.`: a Kubernetes ConfigMap mount keeps its real files in
//! `..data/` beside the links to them, which would otherwise load twice (the
//! reference's `RUNTIME_IGNOREDOTFILES`).

use std::path::{Path, PathBuf};

/// The config files at `path`: the file itself, or the directory's YAML
/// files, in name order.
pub(crate) fn config_files(path: &Path) -> Result<Vec<PathBuf>, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    walk(path, &mut files)?;
    if files.is_empty() {
        return Err(format!(
            "{}: no *.yaml or *.yml file in this directory",
            path.display()
        ));
    }
    Ok(files)
}

fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let read = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut entries = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        entries.push(entry.path());
    }
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') {
            continue;
        }
        let link =
            std::fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if link.is_dir() {
            walk(&path, files)?;
        } else if name.ends_with(".yaml") || name.ends_with(".yml") {
            let target =
                std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if target.is_file() {
                files.push(path);
            }
        }
    }
    Ok(())
}

/// Whether `path` is a directory holding no config file (what
/// [`config_files`] refuses), as a mounted ConfigMap is before its data.
pub(crate) fn is_empty_dir(path: &Path) -> bool {
    let mut files = Vec::new();
    std::fs::metadata(path).is_ok_and(|m| m.is_dir())
        && walk(path, &mut files).is_ok()
        && files.is_empty()
}
