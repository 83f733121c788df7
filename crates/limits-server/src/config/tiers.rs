//! `tiers = { free = "100/hour", pro = "10000/hour" }` with `tier_from`,
//! `default_tier` and, optionally, `tier_file`: a rule whose rates depend
//! on who is asking. The rule becomes one rule per tier, named
//! `NAME.TIER`, each with its tier's rates and a store of its own (so no
//! count is shared across tiers), and each deciding only the requests of
//! its tier ([`limits_http::Tiers`]).
//!
//! Without `tier_file`, the header's value is the tier's name, believed
//! only from `--trust-proxy` peers. With it, the header's value (an API
//! key) is looked up in the file, lines of `VALUE TIER`, from any peer.

use super::files;
use super::raw::RawTiers;
use super::Problems;
use http::HeaderName;
use limits::Rates;
use limits_http::Tiers;
use serde_spanned::Spanned;
use std::path::Path;
use std::sync::Arc;

/// A tiered rule's tiers, checked: each tier's name and rates, in the
/// file's order, and what chooses among them.
pub(super) struct TierRates {
    pub tiers: Arc<Tiers>,
    pub rates: Vec<(String, Rates)>,
}

/// The tiers of `raw`, every field checked (its problems added); None if
/// there is any. `label` names the rule in problems.
pub(super) fn tiers(
    raw: RawTiers,
    label: &str,
    folder: &Path,
    p: &mut Problems<'_>,
) -> Option<TierRates> {
    let before = p.found.len() + p.elsewhere.len();
    let Some(listed) = raw.tiers else {
        let given = [
            ("tier_from", raw.tier_from.map(|s| s.span())),
            ("default_tier", raw.default_tier.map(|s| s.span())),
            ("tier_file", raw.tier_file.map(|s| s.span())),
        ];
        for (field, span) in given {
            if let Some(span) = span {
                let problem = format!(
                    "{field} goes with tiers = {{ NAME = \"RATES\", ... }}: add the tiers, or leave {field} out"
                );
                p.add(&span, problem);
            }
        }
        return None;
    };
    let span = listed.span();
    let mut rates = Vec::new();
    if listed.get_ref().is_empty() {
        p.add(&span, "tiers is empty: name each tier and its rates");
    }
    // Every tier named, whatever its rates: what the rest is checked against.
    let declared: Vec<String> = listed.get_ref().keys().cloned().collect();
    let names: Vec<&str> = declared.iter().map(String::as_str).collect();
    for (name, text) in listed.into_inner() {
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
        {
            let problem =
                format!("tier name {name:?} has {c:?}: use only letters, digits, '_' and '-'");
            p.add(&text.span(), problem);
            continue;
        }
        match text.get_ref().parse::<Rates>() {
            Ok(r) => rates.push((name, r)),
            Err(e) => p.add(&text.span(), format!("tier {name:?}: {e}")),
        }
    }
    let header = match &raw.tier_from {
        None => {
            let problem = format!(
                "{label} has tiers but no tier_from: add tier_from = \"header:NAME\" (a header your auth proxy sets)"
            );
            p.add(&span, problem);
            None
        }
        Some(from) => header(from, p),
    };
    let default = match &raw.default_tier {
        None => {
            let problem = format!(
                "{label} has tiers but no default_tier: add default_tier = \"NAME\", the tier of a request whose tier is missing or unknown"
            );
            p.add(&span, problem);
            None
        }
        Some(default) => Some(default),
    };
    if let Some(default) = default {
        if !names.is_empty() && !names.contains(&default.get_ref().as_str()) {
            let problem = format!(
                "default_tier {:?} is not one of the tiers ({})",
                default.get_ref(),
                names.join(", ")
            );
            p.add(&default.span(), problem);
        }
    }
    let lookup = raw
        .tier_file
        .as_ref()
        .map(|file| lookup(file, folder, &names, p));
    if p.found.len() + p.elsewhere.len() != before {
        return None;
    }
    let (header, default) = (header?, default?.get_ref());
    let tiers = match lookup {
        None => Tiers::from_header(names, default, header),
        Some(values) => Tiers::from_lookup(names, default, header, values?),
    };
    match tiers {
        Ok(tiers) => Some(TierRates {
            tiers: Arc::new(tiers),
            rates,
        }),
        Err(e) => {
            p.add(&span, format!("tiers: {e}"));
            None
        }
    }
}

/// The header of `tier_from = "header:NAME"`.
fn header(from: &Spanned<String>, p: &mut Problems<'_>) -> Option<HeaderName> {
    let name = from.get_ref().strip_prefix("header:");
    match name.map(|n| HeaderName::from_bytes(n.as_bytes())) {
        Some(Ok(name)) => Some(name),
        _ => {
            let problem = format!(
                "tier_from {:?} is not \"header:NAME\" (a header your auth proxy sets, or one looked up in tier_file)",
                from.get_ref()
            );
            p.add(&from.span(), problem);
            None
        }
    }
}

/// The pairs of value and tier of the tier file `file` names, each tier one
/// of `names`; a problem names the file's line, never the value (an API
/// key).
fn lookup(
    file: &Spanned<String>,
    folder: &Path,
    names: &[&str],
    p: &mut Problems<'_>,
) -> Option<Vec<(String, String)>> {
    let (shown, text) = files::read(file, folder, "tier_file", p)?;
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (line, entry) in files::entries(&text) {
        let mut words = entry.split_whitespace();
        let (Some(value), Some(tier), None) = (words.next(), words.next(), words.next()) else {
            p.elsewhere.push(format!(
                "{shown}:{line}: tier_file lines are VALUE TIER, two words"
            ));
            continue;
        };
        if !names.contains(&tier) {
            p.elsewhere.push(format!(
                "{shown}:{line}: tier {tier:?} is not one of the rule's tiers ({})",
                names.join(", ")
            ));
        } else if let Some(first) = seen.insert(value.to_string(), line) {
            p.elsewhere.push(format!(
                "{shown}:{line}: this value is given a tier on line {first} already"
            ));
        } else {
            pairs.push((value.to_string(), tier.to_string()));
        }
    }
    Some(pairs)
}
