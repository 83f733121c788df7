//! The reference service's `GetLimit`, and the store key of a descriptor.

use super::build::{DNode, Domain, Level};
use super::Matched;

/// The limit for `entries` in `domain`, walking the tree one entry per level.
pub(super) fn lookup<'a>(domain: &'a Domain, entries: &[(&str, &str)]) -> Option<Matched<'a>> {
    let mut level = &domain.root;
    let mut found = None;
    let mut detail = None;
    let mut key = String::new();
    for (i, &(k, v)) in entries.iter().enumerate() {
        let node = find(level, k, v)?;
        if i > 0 {
            key.push('|');
        }
        push_escaped(&mut key, k);
        key.push('=');
        push_escaped(&mut key, node.shared.as_deref().unwrap_or(v));
        if i + 1 == entries.len() {
            found = node.limit;
        }
        if node.children.nodes.is_empty() {
            // The reference names a detailed metric after the value where
            // the walk stops, for a limit that applies there.
            detail = Some(v);
            break;
        }
        level = &node.children;
    }
    let limit = &domain.limits[found?];
    Some(Matched {
        limit,
        key,
        detail: detail.filter(|_| limit.detailed_metric).map(str::to_string),
        stat: None,
    })
}

/// The store key of `entries` taken as they are (a request's own limit:
/// no node stands for them).
pub(super) fn store_key(entries: &[(&str, &str)]) -> String {
    let mut key = String::new();
    for (i, &(k, v)) in entries.iter().enumerate() {
        if i > 0 {
            key.push('|');
        }
        push_escaped(&mut key, k);
        key.push('=');
        push_escaped(&mut key, v);
    }
    key
}

/// The node for one entry: exact value, then the first matching wildcard,
/// then the key-only node.
fn find<'a>(level: &'a Level, key: &str, value: &str) -> Option<&'a DNode> {
    let nodes = level.by_key.get(key)?;
    let index = nodes
        .exact
        .get(value)
        .copied()
        .or_else(|| {
            nodes
                .wildcards
                .iter()
                .find(|(pattern, _)| pattern.matches(value))
                .map(|&(_, i)| i)
        })
        .or(nodes.default)?;
    level.nodes.get(index)
}

/// Appends `text` with `\`, `=` and `|` escaped by a `\`, so that the key
/// `k=v|k2=v2` reads back one way only.
fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        if matches!(c, '\\' | '=' | '|') {
            out.push('\\');
        }
        out.push(c);
    }
}
