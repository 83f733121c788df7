//! What a request's answer is, once each descriptor is decided: the
//! overall code (quota mode and the global shadow mode as the reference
//! has them), the soft-limit mark for the upstream, and the dynamic
//! metadata. Pure functions of the statuses, so that each rule is tested
//! on its own.
//!
//! Quota mode (a limit's `quota_mode`, or every limit's with the global
//! switch): a descriptor over its limit still reports OVER_LIMIT, but the
//! request is over only if every quota group is. Descriptors are grouped as
//! the reference groups them: by their `backend_name` and
//! `model_name_override` entries when they have either (the buckets of one
//! model decide together: any over puts the model over), else each by its
//! whole entry list. So a request with a choice of backends passes while
//! one still has quota. Any descriptor not in quota mode over its limit
//! makes the request over, as without quota mode.

use super::config::RlsLimit;
use super::proto::rate_limit_response::{Code, DescriptorStatus};
use super::proto::{HeaderValue, RateLimitDescriptor, RateLimitRequest};
use prost_types::value::Kind;
use prost_types::{ListValue, Struct, Value};
use std::collections::{BTreeMap, HashMap};

/// The header an admitted request past a limit's `soft_requests_per_unit`
/// carries to the upstream, as the reference names it.
pub const SOFT_BREACH_HEADER: &str = "x-ratelimit-soft-breached";

const BACKEND: &str = "backend_name";
const MODEL: &str = "model_name_override";

/// One decided descriptor of a request.
pub struct Decided<'a> {
    /// The descriptor as the request sent it.
    pub descriptor: &'a RateLimitDescriptor,
    /// What the answer says of it.
    pub status: &'a DescriptorStatus,
    /// The limit that decided it; None when none matched.
    pub limit: Option<&'a RlsLimit>,
}

impl Decided<'_> {
    fn unlimited(&self) -> bool {
        self.limit.is_some_and(RlsLimit::is_unlimited)
    }

    fn over(&self) -> bool {
        self.status.code == Code::OverLimit as i32
    }
}

/// The request's overall verdict.
#[derive(Debug, PartialEq, Eq)]
pub struct Overall {
    /// Whether the request is OVER_LIMIT (before the global shadow mode).
    pub over: bool,
    /// For each descriptor, whether it is in a quota group that is over.
    pub exhausted: Vec<bool>,
    /// Whether any descriptor was in quota mode.
    pub quota: bool,
}

/// The overall verdict of `decided` (see the module's doc); with
/// `global_quota` every descriptor is in quota mode.
pub fn overall(decided: &[Decided<'_>], global_quota: bool) -> Overall {
    let mut groups: HashMap<String, bool> = HashMap::new();
    let mut keys: Vec<Option<String>> = Vec::with_capacity(decided.len());
    let mut over = false;
    for d in decided {
        if d.unlimited() {
            keys.push(None);
            continue;
        }
        if global_quota || d.limit.is_some_and(|l| l.quota_mode) {
            let key = group_key(d.descriptor);
            *groups.entry(key.clone()).or_default() |= d.over();
            keys.push(Some(key));
        } else {
            over |= d.over();
            keys.push(None);
        }
    }
    let quota_over = !groups.is_empty() && groups.values().all(|&g| g);
    Overall {
        over: over || quota_over,
        exhausted: keys
            .iter()
            .map(|k| k.as_ref().is_some_and(|k| groups[k]))
            .collect(),
        quota: !groups.is_empty(),
    }
}

/// The quota group of a descriptor (see the module's doc).
fn group_key(descriptor: &RateLimitDescriptor) -> String {
    let (backend, model) = backend_and_model(descriptor);
    if !backend.is_empty() || !model.is_empty() {
        return format!("{backend}|{model}");
    }
    let mut all = String::new();
    for e in &descriptor.entries {
        all.push_str(&e.key);
        all.push('=');
        all.push_str(&e.value);
        all.push(';');
    }
    all
}

fn backend_and_model(descriptor: &RateLimitDescriptor) -> (&str, &str) {
    let (mut backend, mut model) = ("", "");
    for e in &descriptor.entries {
        match e.key.as_str() {
            BACKEND => backend = &e.value,
            MODEL => model = &e.value,
            _ => {}
        }
    }
    (backend, model)
}

/// The mark for the upstream when an admitted request left more than a
/// limit's `soft_requests_per_unit` used: the first such descriptor, as the
/// reference looks; None when `over` or when none is past its threshold.
pub fn soft_breach(decided: &[Decided<'_>], over: bool) -> Option<HeaderValue> {
    if over {
        return None;
    }
    let breached = decided.iter().any(|d| {
        let soft = d.limit.map_or(0, |l| l.soft_requests_per_unit);
        let Some(limit) = &d.status.current_limit else {
            return false;
        };
        soft > 0
            && !d.unlimited()
            && limit
                .requests_per_unit
                .saturating_sub(d.status.limit_remaining)
                > soft
    });
    breached.then(|| HeaderValue {
        key: SOFT_BREACH_HEADER.into(),
        value: "1".into(),
        raw_value: Vec::new(),
    })
}

/// The response's dynamic metadata as the reference builds it: `domain`;
/// `descriptors`, each with its `entries` (as `key=value`), its own
/// `limit` if any and its `hitsAddend` if set; the request's `hitsAddend`
/// if set; `metadata`, the `metadata` of every limit that passed (not
/// unlimited, not over, not in an exhausted quota group) merged in order,
/// the first to give a field keeping it (mappings merged field by field);
/// and with quota mode, `passedBackends`: each distinct `backend_name` and
/// `model_name_override` pair of those that passed.
pub fn dynamic_metadata(
    request: &RateLimitRequest,
    decided: &[Decided<'_>],
    overall: &Overall,
) -> Struct {
    let mut fields = BTreeMap::new();
    fields.insert("domain".to_string(), text(&request.domain));
    let descriptors = request.descriptors.iter().map(descriptor).collect();
    fields.insert("descriptors".to_string(), list(descriptors));
    if request.hits_addend != 0 {
        fields.insert("hitsAddend".into(), number(request.hits_addend.into()));
    }
    let passed: Vec<usize> = decided
        .iter()
        .enumerate()
        .filter(|(i, d)| !d.unlimited() && !d.over() && !overall.exhausted[*i])
        .map(|(i, _)| i)
        .collect();
    let mut merged = Struct::default();
    for &i in &passed {
        if let Some(metadata) = decided[i].limit.and_then(|l| l.metadata.as_ref()) {
            merge(&mut merged, metadata);
        }
    }
    if !merged.fields.is_empty() {
        fields.insert(
            "metadata".into(),
            Value {
                kind: Some(Kind::StructValue(merged)),
            },
        );
    }
    if overall.quota {
        let mut seen = Vec::new();
        let mut backends = Vec::new();
        for &i in &passed {
            let d = decided[i].descriptor;
            let (backend, model) = backend_and_model(d);
            if (backend.is_empty() && model.is_empty()) || seen.contains(&(backend, model)) {
                continue;
            }
            seen.push((backend, model));
            let pair = BTreeMap::from([
                (BACKEND.to_string(), text(backend)),
                (MODEL.to_string(), text(model)),
            ]);
            backends.push(Value {
                kind: Some(Kind::StructValue(Struct { fields: pair })),
            });
        }
        if !backends.is_empty() {
            fields.insert("passedBackends".into(), list(backends));
        }
    }
    Struct { fields }
}

fn descriptor(d: &RateLimitDescriptor) -> Value {
    let mut fields = BTreeMap::new();
    let entries = d
        .entries
        .iter()
        .map(|e| text(&format!("{}={}", e.key, e.value)))
        .collect();
    fields.insert("entries".to_string(), list(entries));
    if let Some(limit) = &d.limit {
        // The reference writes the override in protobuf's text form.
        let unit = super::config::Unit::ALL
            .into_iter()
            .find(|u| *u as i32 == limit.unit)
            .map_or("UNKNOWN".to_string(), |u| u.name().to_uppercase());
        let shown = format!("requests_per_unit:{} unit:{unit}", limit.requests_per_unit);
        fields.insert("limit".into(), text(&shown));
    }
    if let Some(hits) = d.hits_addend {
        fields.insert("hitsAddend".into(), number(hits as f64));
    }
    Value {
        kind: Some(Kind::StructValue(Struct { fields })),
    }
}

/// Adds `from`'s fields that `into` lacks; a mapping both have is merged
/// the same way, and any other field `into` has is kept.
fn merge(into: &mut Struct, from: &Struct) {
    for (key, value) in &from.fields {
        match into.fields.get_mut(key) {
            None => {
                into.fields.insert(key.clone(), value.clone());
            }
            Some(Value {
                kind: Some(Kind::StructValue(ours)),
            }) => {
                if let Some(Kind::StructValue(theirs)) = &value.kind {
                    merge(ours, theirs);
                }
            }
            Some(_) => {}
        }
    }
}

fn text(s: &str) -> Value {
    Value {
        kind: Some(Kind::StringValue(s.to_string())),
    }
}

fn number(n: f64) -> Value {
    Value {
        kind: Some(Kind::NumberValue(n)),
    }
}

fn list(values: Vec<Value>) -> Value {
    Value {
        kind: Some(Kind::ListValue(ListValue { values })),
    }
}
