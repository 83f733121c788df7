//! The file as TOML gives it: every value with its byte span, so that each
//! problem found later can name its line. Only the shape is checked here
//! (names of keys, types of values); what the values mean is checked by the
//! parent module.

use serde::de::{self, Deserializer, SeqAccess, Unexpected, Visitor};
use serde::Deserialize;
use serde_spanned::Spanned;
use std::collections::BTreeMap;
use std::fmt;

/// The whole file: `[[rule]]` tables, and the lists for every request.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub rule: Option<Spanned<RuleList>>,
    /// Lists for every request (see `lists.rs`).
    pub allow: Option<Spanned<Vec<Spanned<String>>>>,
    pub deny: Option<Spanned<Vec<Spanned<String>>>>,
    pub allow_file: Option<Spanned<String>>,
    pub deny_file: Option<Spanned<String>>,
}

/// One `[[rule]]` table; every field may be missing.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRule {
    pub name: Option<Spanned<String>>,
    pub path: Option<Spanned<String>>,
    pub case_insensitive: Option<bool>,
    pub format_suffixes: Option<bool>,
    pub methods: Option<Spanned<Vec<Spanned<String>>>>,
    pub key: Option<Spanned<KeyField>>,
    pub missing: Option<Spanned<String>>,
    pub normalize: Option<Spanned<Vec<Spanned<String>>>>,
    pub limiter: Option<Spanned<String>>,
    pub rates: Option<Spanned<String>>,
    pub limit: Option<Spanned<Whole>>,
    pub window: Option<Spanned<String>>,
    pub cost: Option<Spanned<Whole>>,
    pub burst: Option<Spanned<Whole>>,
    pub store: Option<Spanned<String>>,
    pub memory: Option<Spanned<String>>,
    pub count: Option<Spanned<RawCount>>,
    pub cost_from: Option<Spanned<String>>,
    pub max_cost: Option<Spanned<Whole>>,
    pub penalty: Option<Spanned<RawPenalty>>,
    pub allow: Option<Spanned<Vec<Spanned<String>>>>,
    pub deny: Option<Spanned<Vec<Spanned<String>>>>,
    pub allow_file: Option<Spanned<String>>,
    pub deny_file: Option<Spanned<String>>,
    pub tiers: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    pub tier_from: Option<Spanned<String>>,
    pub tier_file: Option<Spanned<String>>,
    pub default_tier: Option<Spanned<String>>,
    pub concurrency: Option<Spanned<Whole>>,
    pub lease: Option<Spanned<String>>,
    pub distinct: Option<Spanned<RawDistinct>>,
}

/// A rule's tier fields (see `tiers.rs`).
pub(super) struct RawTiers {
    pub tiers: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    pub tier_from: Option<Spanned<String>>,
    pub tier_file: Option<Spanned<String>>,
    pub default_tier: Option<Spanned<String>>,
}

/// `penalty = { after = 5, within = "1m", ban = "15m", escalate = 2 }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPenalty {
    pub after: Option<Spanned<Whole>>,
    pub within: Option<Spanned<String>>,
    pub ban: Option<Spanned<String>>,
    pub escalate: Option<Spanned<Whole>>,
}

/// `distinct = { of, at_most, window, sketch }` as TOML gives it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDistinct {
    pub of: Option<Spanned<String>>,
    pub missing: Option<Spanned<String>>,
    pub normalize: Option<Spanned<Vec<Spanned<String>>>>,
    pub at_most: Option<Spanned<Whole>>,
    pub window: Option<Spanned<String>>,
    pub sketch: Option<Spanned<RawSketch>>,
}

/// `sketch = { from = 256, registers = 1024, sub_windows = 8 }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSketch {
    pub from: Option<Spanned<Whole>>,
    pub registers: Option<Spanned<Whole>>,
    pub sub_windows: Option<Spanned<Whole>>,
}

/// `count = { status = [401, 403] }`, or `unless_status`, or both.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCount {
    pub status: Option<Spanned<Vec<Spanned<Whole>>>>,
    pub unless_status: Option<Spanned<Vec<Spanned<Whole>>>>,
}

/// A whole number of 0 or more (TOML integers are signed).
pub(super) struct Whole(pub u64);

impl<'de> Deserialize<'de> for Whole {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Whole, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Whole;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a whole number such as 10")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Whole, E> {
                Ok(Whole(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Whole, E> {
                u64::try_from(n)
                    .map(Whole)
                    .map_err(|_| E::invalid_value(Unexpected::Signed(n), &self))
            }
            // TOML integers beyond i64 arrive as 128-bit numbers: say what is
            // wrong with them rather than "invalid type ... as i128".
            fn visit_i128<E: de::Error>(self, n: i128) -> Result<Whole, E> {
                if n < 0 {
                    let n = n.to_string();
                    return Err(E::invalid_value(
                        Unexpected::Other(&format!("integer `{n}`")),
                        &self,
                    ));
                }
                self.visit_u128(n.unsigned_abs())
            }
            fn visit_u128<E: de::Error>(self, n: u128) -> Result<Whole, E> {
                u64::try_from(n)
                    .map(Whole)
                    .map_err(|_| E::custom(format!("{n} is too large (at most {})", u64::MAX)))
            }
        }
        d.deserialize_any(V)
    }
}

/// The `[[rule]]` tables; a lone `[rule]` gets a hint.
pub(super) struct RuleList(pub Vec<Spanned<RawRule>>);

impl<'de> Deserialize<'de> for RuleList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RuleList, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RuleList;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("[[rule]] tables (write [[rule]], not [rule])")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RuleList, A::Error> {
                let mut rules = Vec::new();
                while let Some(rule) = seq.next_element()? {
                    rules.push(rule);
                }
                Ok(RuleList(rules))
            }
        }
        d.deserialize_any(V)
    }
}

/// `key = "ip+form:username"` or `key = ["ip", "form:username"]`.
pub(super) enum KeyField {
    One(String),
    Many(Vec<Spanned<String>>),
}

impl<'de> Deserialize<'de> for KeyField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<KeyField, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KeyField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key such as \"ip\", or a list such as [\"ip\", \"form:username\"]")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<KeyField, E> {
                Ok(KeyField::One(s.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<KeyField, A::Error> {
                let mut parts = Vec::new();
                while let Some(part) = seq.next_element()? {
                    parts.push(part);
                }
                Ok(KeyField::Many(parts))
            }
        }
        d.deserialize_any(V)
    }
}
