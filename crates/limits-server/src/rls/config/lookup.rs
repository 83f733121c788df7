//! The reference service's `GetLimit`, and the store key of a descriptor.

use super::build::{DNode, Domain, Level};
use super::Matched;

/// How an entry found its node.
#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    Exact,
    Wildcard,
    KeyOnly,
}

/// The limit for `entries` in `domain`, walking the tree one entry per level.
pub(super) fn lookup<'a>(domain: &'a Domain, entries: &[(&str, &str)]) -> Option<Matched<'a>> {
    let mut level = &domain.root;
    let mut found = None;
    let mut key = String::new();
    // The metric names, built as the walk goes (see `Matched::metric_name`).
    let mut detailed = domain.name.clone();
    let mut shared_detailed = domain.name.clone();
    let mut any_shared = false;
    let mut valued = domain.name.clone();
    for (i, &(k, v)) in entries.iter().enumerate() {
        let (node, how) = find(level, k, v)?;
        if i > 0 {
            key.push('|');
        }
        push_escaped(&mut key, k);
        key.push('=');
        push_escaped(&mut key, node.shared.as_deref().unwrap_or(v));

        detailed.push('.');
        detailed.push_str(k);
        detailed.push('_');
        detailed.push_str(v);
        let shared = node.shared.as_deref().filter(|_| how == How::Wildcard);
        any_shared |= shared.is_some();
        shared_detailed.push('.');
        shared_detailed.push_str(k);
        if let Some(value) = shared.or(Some(v).filter(|v| !v.is_empty())) {
            shared_detailed.push('_');
            shared_detailed.push_str(value);
        }
        let shown = match how {
            How::Wildcard if shared.is_some() => shared,
            How::Wildcard if node.value_to_metric => Some(v),
            How::Wildcard => node.pattern.as_deref(),
            How::Exact => Some(v),
            How::KeyOnly if node.value_to_metric => Some(v),
            How::KeyOnly => None,
        };
        valued.push('.');
        valued.push_str(k);
        if let Some(value) = shown.filter(|s| !s.is_empty()) {
            valued.push('_');
            valued.push_str(value);
        }

        if i + 1 == entries.len() {
            found = node.limit;
        }
        if node.children.nodes.is_empty() {
            break;
        }
        level = &node.children;
    }
    let limit = &domain.limits[found?];
    let metric = if limit.detailed_metric {
        Some(if any_shared {
            shared_detailed
        } else {
            detailed
        })
    } else {
        Some(valued).filter(|name| *name != limit.id)
    };
    Some(Matched { limit, key, metric })
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
/// then the key-only node; and how it was found.
fn find<'a>(level: &'a Level, key: &str, value: &str) -> Option<(&'a DNode, How)> {
    let nodes = level.by_key.get(key)?;
    let (index, how) = nodes
        .exact
        .get(value)
        .map(|&i| (i, How::Exact))
        .or_else(|| {
            nodes
                .wildcards
                .iter()
                .find(|(pattern, _)| pattern.matches(value))
                .map(|&(_, i)| (i, How::Wildcard))
        })
        .or(nodes.default.map(|i| (i, How::KeyOnly)))?;
    Some((level.nodes.get(index)?, how))
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
