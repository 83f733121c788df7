//! The repository's Markdown documents read as tests read them: their
//! fenced blocks, and the `limits` commands in them as arguments, so that
//! what the documents show is what the tests run.

use std::path::{Path, PathBuf};

/// The workspace's root, where the documents' relative paths start.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The text of the document `name` (e.g. `README.md`) at the root.
pub fn read(name: &str) -> String {
    std::fs::read_to_string(root().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The fenced blocks of `text` (from the document `name`), in order:
/// (language, text).
pub fn fenced_blocks(text: &str, name: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => open = Some((lang.trim().to_string(), String::new())),
            (Some(_), Some(_)) => blocks.push(open.take().unwrap()),
            (Some((_, text)), None) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed block in {name}");
    blocks
}

/// A command line of an `sh` block as arguments to the `limits` binary:
/// continuation lines joined, `cargo run --release --` or `limits` dropped,
/// and `--flag value` pairs named in `drop` removed. Plain words only (the
/// documents' commands quote nothing).
pub fn arguments(command: &str, drop: &[&str]) -> Vec<String> {
    let joined = command.replace("\\\n", " ");
    let words: Vec<&str> = joined.split_whitespace().collect();
    let words = match words.as_slice() {
        ["cargo", "run", "--release", "--", rest @ ..] => rest,
        ["limits", rest @ ..] => rest,
        _ => panic!("not a limits command: {command}"),
    };
    let mut out = Vec::new();
    let mut skip = false;
    for w in words {
        if skip {
            skip = false;
        } else if drop.contains(w) {
            skip = true;
        } else {
            out.push(w.to_string());
        }
    }
    out
}

/// `arguments` of a `limits serve` command, without `serve`.
pub fn serve_arguments(command: &str) -> Vec<String> {
    let mut args = arguments(command, &[]);
    assert_eq!(
        args.first().map(String::as_str),
        Some("serve"),
        "not a serve command: {command}"
    );
    args.remove(0);
    args
}
