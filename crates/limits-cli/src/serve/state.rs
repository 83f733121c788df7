//! `--state FILE`: the limiters' state written on graceful shutdown and read
//! back on start, so that a restart does not hand every client a fresh limit.
//! Times are Unix-epoch nanoseconds (the system clock), so state read after a
//! restart means what it meant before.

use super::rules::RuleSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

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
}

const VERSION: u32 = 1;

/// Writes every rule's state to `path` (atomically: a temporary file renamed
/// over it). Returns how many keys were saved.
pub fn save(path: &Path, rules: &RuleSet) -> Result<usize, String> {
    let mut file = StateFile {
        version: VERSION,
        rules: BTreeMap::new(),
    };
    let mut saved = 0;
    for (config, store) in &rules.entries {
        let keys = store.export();
        saved += keys.len();
        file.rules.insert(
            config.name.clone(),
            SavedRule {
                shape: RuleSet::fingerprint(config),
                keys,
            },
        );
    }
    let text = serde_json::to_vec(&file).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("--state {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("--state {}: {e}", path.display()))?;
    Ok(saved)
}

/// Loads the state in `path` into the rules of the same name and shape.
/// A missing file is a first start: nothing to load. Returns the keys loaded.
pub fn load(path: &Path, rules: &RuleSet) -> Result<usize, String> {
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
    let mut loaded = 0;
    for (config, store) in &rules.entries {
        match file.rules.get(&config.name) {
            Some(saved) if saved.shape == RuleSet::fingerprint(config) => {
                loaded += store.import(saved.keys.iter().cloned());
            }
            Some(saved) => tracing::warn!(
                rule = %config.name,
                saved = %saved.shape,
                now = %RuleSet::fingerprint(config),
                "rule changed since the state was saved; starting it afresh"
            ),
            None => {}
        }
    }
    Ok(loaded)
}
