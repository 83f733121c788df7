//! One file's domain: its descriptor tree, checked as the reference's
//! `loadDescriptors` checks it, and its limits.

use super::fields::Fields;
use super::metadata;
use super::pattern::Pattern;
use super::rate;
use super::yaml::{self, Node};
use super::RlsLimit;
use limits::Algorithm;
use std::collections::HashMap;

/// More descriptors than this in one file is refused (aliases could
/// otherwise make a small file describe an enormous tree).
pub(super) const MAX_DESCRIPTORS: usize = 100_000;

/// One domain: its tree and its limits.
#[derive(Debug)]
pub(super) struct Domain {
    pub name: String,
    /// "FILE:LINE" of the `domain` key.
    pub origin: String,
    /// The file the domain was read from (the first, when merged).
    pub file: String,
    pub root: Level,
    pub limits: Vec<RlsLimit>,
    /// The file's `algorithm` (fixed-window unless it says otherwise).
    pub algorithm: Algorithm,
}

/// The descriptors of one level, indexed by key.
#[derive(Debug, Default)]
pub(super) struct Level {
    pub nodes: Vec<DNode>,
    pub by_key: HashMap<String, KeyNodes>,
}

/// The nodes of one key on one level.
#[derive(Debug, Default)]
pub(super) struct KeyNodes {
    /// By exact value (wildcards too, by their value with the `*`, as the
    /// reference's map of `key_value` holds them).
    pub exact: HashMap<String, usize>,
    /// Wildcards in file order: (pattern, node).
    pub wildcards: Vec<(Pattern, usize)>,
    /// The key-only node.
    pub default: Option<usize>,
}

/// One descriptor node.
#[derive(Debug)]
pub(super) struct DNode {
    /// The line of the descriptor in its file.
    pub line: usize,
    /// For a wildcard with `share_threshold`: its value, which stands for
    /// every value it matches in the store key.
    pub shared: Option<String>,
    /// For a wildcard: its value, as metric names show it.
    pub pattern: Option<String>,
    /// `value_to_metric`: metric names show the request's value here.
    pub value_to_metric: bool,
    /// Index into the domain's limits.
    pub limit: Option<usize>,
    pub children: Level,
}

const ROOT_KEYS: &[&str] = &["domain", "descriptors", "algorithm"];
const DESCRIPTOR_KEYS: &[&str] = &[
    "key",
    "value",
    "rate_limit",
    "descriptors",
    "shadow_mode",
    "detailed_metric",
    "share_threshold",
    "value_to_metric",
    "quota_mode",
    "metadata",
];

/// What a descriptor node says of the limit it holds, beside its
/// `rate_limit`.
struct Modes {
    shadow: bool,
    quota: bool,
    detailed_metric: bool,
    metadata: Option<prost_types::Struct>,
}

struct Builder<'a> {
    origin: &'a str,
    domain: String,
    algorithm: Algorithm,
    limits: Vec<RlsLimit>,
    ids: HashMap<String, usize>,
    count: usize,
}

/// Parses one file into its domain.
pub(super) fn domain(text: &str, origin: &str) -> Result<Domain, String> {
    let root = yaml::parse(text, origin)?;
    let f = Fields::of(&root, origin, "the file", ROOT_KEYS)?;
    let name = f.text("domain")?.unwrap_or("");
    if name.is_empty() {
        return Err(format!(
            "{origin}:{}: config file cannot have empty domain",
            f.line_of("domain")
        ));
    }
    let algorithm = match f.text("algorithm")? {
        Some(a) => a
            .parse()
            .map_err(|e| format!("{origin}:{}: {e}", f.line_of("algorithm")))?,
        None => Algorithm::FixedWindow,
    };
    let mut b = Builder {
        origin,
        domain: name.to_string(),
        algorithm,
        limits: Vec::new(),
        ids: HashMap::new(),
        count: 0,
    };
    let tree = b.level(f.list("descriptors")?, &format!("{name}."))?;
    Ok(Domain {
        name: name.to_string(),
        origin: format!("{origin}:{}", f.line_of("domain")),
        file: origin.to_string(),
        root: tree,
        limits: b.limits,
        algorithm,
    })
}

impl Builder<'_> {
    fn level(&mut self, items: &[Node], parent: &str) -> Result<Level, String> {
        let origin = self.origin;
        let mut level = Level::default();
        let mut composite: HashMap<String, usize> = HashMap::new();
        for item in items {
            self.count += 1;
            if self.count > MAX_DESCRIPTORS {
                return Err(format!(
                    "{origin}:{}: more than {MAX_DESCRIPTORS} descriptors",
                    item.line
                ));
            }
            let f = Fields::of(item, origin, "a descriptor", DESCRIPTOR_KEYS)?;
            let key = f.text("key")?.unwrap_or("");
            if key.is_empty() {
                return Err(format!("{origin}:{}: descriptor has empty key", f.line));
            }
            let value = f.text("value")?.filter(|v| !v.is_empty());
            let final_key = match value {
                Some(v) => format!("{key}_{v}"),
                None => key.to_string(),
            };
            let id = format!("{parent}{final_key}");
            if let Some(first) = composite.insert(final_key, f.line) {
                return Err(format!(
                    "{origin}:{}: duplicate descriptor composite key '{id}' (first at line {first})",
                    f.line
                ));
            }
            let wildcard = value.and_then(Pattern::of);
            let share = f.flag("share_threshold")?;
            if share && wildcard.is_none() {
                return Err(format!(
                    "{origin}:{}: share_threshold needs a wildcard value (one with a '*')",
                    f.line_of("share_threshold")
                ));
            }
            let modes = Modes {
                shadow: f.flag("shadow_mode")?,
                quota: f.flag("quota_mode")?,
                detailed_metric: f.flag("detailed_metric")?,
                metadata: match f.get("metadata") {
                    None => None,
                    Some((line, node)) => Some(metadata::of(node, line, origin)?),
                },
            };
            let limit = match f.get("rate_limit") {
                None => None,
                Some((line, node)) => Some(self.limit(line, node, &id, modes)?),
            };
            let value_to_metric = f.flag("value_to_metric")?;
            let children = self.level(f.list("descriptors")?, &format!("{id}."))?;
            let index = level.nodes.len();
            level.nodes.push(DNode {
                line: f.line,
                shared: share.then(|| value.unwrap_or_default().to_string()),
                pattern: wildcard.as_ref().and(value).map(str::to_string),
                value_to_metric,
                limit,
                children,
            });
            let nodes = level.by_key.entry(key.to_string()).or_default();
            match (value, wildcard) {
                (None, _) => nodes.default = Some(index),
                (Some(v), w) => {
                    nodes.exact.insert(v.to_string(), index);
                    if let Some(pattern) = w {
                        nodes.wildcards.push((pattern, index));
                    }
                }
            }
        }
        Ok(level)
    }

    fn limit(&mut self, line: usize, node: &Node, id: &str, modes: Modes) -> Result<usize, String> {
        let origin = self.origin;
        let parsed = rate::rate_limit(node, line, origin, self.algorithm)?;
        if let Some(first) = self.ids.get(id) {
            return Err(format!(
                "{origin}:{line}: the limit '{id}' has the same name as the one at line {first}"
            ));
        }
        self.ids.insert(id.to_string(), line);
        self.limits.push(RlsLimit {
            id: id.to_string(),
            domain: self.domain.clone(),
            name: parsed.name,
            rule: parsed.rule,
            reported: parsed.reported,
            shadow_mode: modes.shadow,
            quota_mode: modes.quota,
            soft_requests_per_unit: parsed.soft,
            metadata: modes.metadata,
            replaces: parsed.replaces,
            detailed_metric: modes.detailed_metric,
            blocked: parsed.blocked,
            origin: format!("{origin}:{line}"),
        });
        Ok(self.limits.len() - 1)
    }
}

impl Level {
    /// The reference's composite key of every node of this level
    /// (`key_value`, or `key` alone), with the node's index.
    fn composite_keys(&self) -> HashMap<String, usize> {
        let mut keys = HashMap::new();
        for (key, nodes) in &self.by_key {
            if let Some(i) = nodes.default {
                keys.insert(key.clone(), i);
            }
            for (value, &i) in &nodes.exact {
                keys.insert(format!("{key}_{value}"), i);
            }
        }
        keys
    }

    /// Adds `by` to every limit index under this level.
    fn shift_limits(&mut self, by: usize) {
        for node in &mut self.nodes {
            if let Some(limit) = &mut node.limit {
                *limit += by;
            }
            node.children.shift_limits(by);
        }
    }
}

impl Domain {
    /// Why `other` cannot be merged into this domain, if it cannot: a
    /// top-level descriptor both have (see [`merge`](Self::merge)).
    pub fn check_merge(&self, other: &Domain) -> Result<(), String> {
        let ours = self.root.composite_keys();
        let mut theirs: Vec<(String, usize)> = other.root.composite_keys().into_iter().collect();
        theirs.sort_by_key(|(_, i)| *i);
        for (key, i) in theirs {
            if let Some(&first) = ours.get(&key) {
                return Err(format!(
                    "{}:{}: duplicate descriptor composite key '{}.{key}' (also at {}:{})",
                    other.file,
                    other.root.nodes[i].line,
                    self.name,
                    self.file,
                    self.root.nodes[first].line
                ));
            }
        }
        Ok(())
    }

    /// Merges `other`, a later file of the same domain, into this one as
    /// the reference's `MERGE_DOMAIN_CONFIG` does: its top-level
    /// descriptors join this domain's, and one that has the composite key
    /// of a descriptor already there is refused (at its line in the later
    /// file), as within one file.
    pub fn merge(&mut self, mut other: Domain) -> Result<(), String> {
        self.check_merge(&other)?;
        other.root.shift_limits(self.limits.len());
        let offset = self.root.nodes.len();
        for (key, nodes) in other.root.by_key {
            let into = self.root.by_key.entry(key).or_default();
            if let Some(i) = nodes.default {
                into.default = Some(i + offset);
            }
            for (value, i) in nodes.exact {
                into.exact.insert(value, i + offset);
            }
            for (pattern, i) in nodes.wildcards {
                into.wildcards.push((pattern, i + offset));
            }
        }
        self.root.nodes.extend(other.root.nodes);
        self.limits.extend(other.limits);
        Ok(())
    }
}
