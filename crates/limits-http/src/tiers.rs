//! Tiers: a limit that depends on who is asking (a plan, an account class).
//!
//! A tiered limit is one [`HttpRule`](crate::HttpRule) per tier, each with
//! its own rates and its own store, and each a member ([`Tier`]) of one
//! [`Tiers`], which says which tier a request is in. Of the members that
//! match a request, only those of its tier decide: the others are taken out
//! before any rule decides, as an allow list takes out the rules it exempts.
//! Counts are never shared across tiers (each tier's store keeps its own),
//! so a key whose tier changes is decided under its new tier's limit from
//! its next request on.

use http::request::Parts;
use http::{HeaderMap, HeaderName};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// Which tier each request is in: the tiers' names, the default tier (for
/// a request whose tier is missing or unknown), and where a request's tier
/// comes from.
///
/// ```
/// use limits::{Algorithm, KeyedLimiter, Rule};
/// use limits_http::{HttpRule, KeySpec, RateLimitLayer, Tiers};
/// use std::sync::Arc;
///
/// // The plan comes from a header that our auth proxy sets.
/// let plans = Arc::new(
///     Tiers::from_header(["free", "pro"], "free", "x-plan".parse().unwrap()).unwrap(),
/// );
/// let rule = |tier: &str, rates: &str| {
///     let store = KeyedLimiter::<String>::new(Rule::new(Algorithm::SlidingLog, rates.parse().unwrap()));
///     let key: KeySpec = "header:x-api-key".parse().unwrap();
///     HttpRule::new(format!("api.{tier}"), store, key)
///         .path("/api")
///         .tier(plans.tier(tier).unwrap())
/// };
/// let layer = RateLimitLayer::builder()
///     .rule(rule("free", "100/hour"))
///     .rule(rule("pro", "10000/hour"))
///     .build();
/// # let _ = layer;
/// ```
pub struct Tiers {
    names: Vec<String>,
    default: usize,
    source: Source,
}

/// Where a request's tier comes from.
enum Source {
    /// A header's value: the tier's name, believed only from a trusted
    /// proxy (`lookup` None), or a value (an API key) looked up among those
    /// whose tier is known, from any peer.
    Header {
        name: HeaderName,
        lookup: Option<HashMap<String, usize>>,
    },
    /// The embedder's own choice.
    Chosen(ChooseTier),
}

type ChooseTier = Box<dyn Fn(&Parts) -> Option<usize> + Send + Sync>;

impl Tiers {
    /// Tiers named `names`, whose tier is the value of the header `header`,
    /// believed only from a peer that [`ClientIp`](crate::ClientIp) trusts
    /// (a proxy that sets it after authenticating the client, and drops a
    /// client's own): from any other peer, or missing, sent twice with two
    /// values, or naming no tier, a request is in tier `default`.
    ///
    /// Errors: no names, a name given twice or empty, `default` not among
    /// them.
    pub fn from_header<I, N>(names: I, default: &str, header: HeaderName) -> Result<Tiers, String>
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        Tiers::with_source(names, default, |_| {
            Ok(Source::Header {
                name: header,
                lookup: None,
            })
        })
    }

    /// Tiers named `names`, whose tier is looked up by the value of the
    /// header `header` (an API key) in `lookup`, pairs of a value and its
    /// tier's name, from any peer: a client can claim only the tier of a
    /// value it holds. A request without the header, or whose value is not
    /// in `lookup`, is in tier `default`.
    ///
    /// ```
    /// use limits_http::Tiers;
    /// let plans = Tiers::from_lookup(
    ///     ["free", "pro"],
    ///     "free",
    ///     "x-api-key".parse().unwrap(),
    ///     [("k-123", "pro")],
    /// )
    /// .unwrap();
    /// let request = |key: &str| http::Request::get("/").header("x-api-key", key).body(()).unwrap().into_parts().0;
    /// assert_eq!(plans.choose(&request("k-123"), false), "pro");
    /// assert_eq!(plans.choose(&request("k-999"), false), "free");
    /// ```
    ///
    /// Errors: as [`from_header`](Tiers::from_header), and a value in
    /// `lookup` twice or given a tier not in `names` (naming the value's
    /// place in `lookup`, never the value).
    pub fn from_lookup<I, N, L, V, T>(
        names: I,
        default: &str,
        header: HeaderName,
        lookup: L,
    ) -> Result<Tiers, String>
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
        L: IntoIterator<Item = (V, T)>,
        V: Into<String>,
        T: AsRef<str>,
    {
        Tiers::with_source(names, default, |names| {
            let mut values = HashMap::new();
            for (place, (value, tier)) in lookup.into_iter().enumerate() {
                let tier = tier.as_ref();
                let Some(index) = names.iter().position(|n| n == tier) else {
                    return Err(format!(
                        "lookup entry {}: tier {tier:?} is not one of {}",
                        place + 1,
                        listed(names)
                    ));
                };
                if values.insert(value.into(), index).is_some() {
                    return Err(format!(
                        "lookup entry {}: its value is given a tier twice",
                        place + 1
                    ));
                }
            }
            Ok(Source::Header {
                name: header,
                lookup: Some(values),
            })
        })
    }

    /// Tiers named `names`, whose tier `choose` names from the request's
    /// head (after the layer normalized its path); None, or a name not
    /// among them, is tier `default`. Believing what the request says is up
    /// to `choose`.
    ///
    /// ```
    /// use limits_http::Tiers;
    /// let plans = Tiers::from_fn(["free", "pro"], "free", |head: &http::request::Parts| {
    ///     head.uri.path().starts_with("/partners/").then_some("pro")
    /// })
    /// .unwrap();
    /// let request = |path: &str| http::Request::get(path).body(()).unwrap().into_parts().0;
    /// assert_eq!(plans.choose(&request("/partners/x"), false), "pro");
    /// assert_eq!(plans.choose(&request("/x"), false), "free");
    /// ```
    pub fn from_fn<I, N, F, T>(names: I, default: &str, choose: F) -> Result<Tiers, String>
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
        F: Fn(&Parts) -> Option<T> + Send + Sync + 'static,
        T: AsRef<str>,
    {
        Tiers::with_source(names, default, |names| {
            let names = names.to_vec();
            let choose: ChooseTier = Box::new(move |head| {
                let tier = choose(head)?;
                names.iter().position(|n| n == tier.as_ref())
            });
            Ok(Source::Chosen(choose))
        })
    }

    fn with_source<I, N>(
        names: I,
        default: &str,
        source: impl FnOnce(&[String]) -> Result<Source, String>,
    ) -> Result<Tiers, String>
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        let mut checked: Vec<String> = Vec::new();
        for name in names {
            let name = name.into();
            if name.is_empty() {
                return Err("a tier's name is empty".into());
            }
            if checked.contains(&name) {
                return Err(format!("tier {name:?} is named twice"));
            }
            checked.push(name);
        }
        if checked.is_empty() {
            return Err("no tiers: name at least one".into());
        }
        let Some(default) = checked.iter().position(|n| n == default) else {
            return Err(format!(
                "the default tier {default:?} is not one of {}",
                listed(&checked)
            ));
        };
        let source = source(&checked)?;
        Ok(Tiers {
            names: checked,
            default,
            source,
        })
    }

    /// The tiers' names, as given.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The tier of a request whose tier is missing or unknown.
    pub fn default_tier(&self) -> &str {
        &self.names[self.default]
    }

    /// The membership of tier `name`, for [`HttpRule::tier`](crate::HttpRule::tier);
    /// None if there is no such tier.
    pub fn tier(self: &Arc<Self>, name: &str) -> Option<Tier> {
        let index = self.names.iter().position(|n| n == name)?;
        Some(Tier {
            tiers: self.clone(),
            index,
        })
    }

    /// The tier of a request with head `head`, from a peer that is
    /// (`trusted_peer`) or is not a trusted proxy.
    pub fn choose(&self, head: &Parts, trusted_peer: bool) -> &str {
        &self.names[self.index_of(head, trusted_peer)]
    }

    pub(crate) fn index_of(&self, head: &Parts, trusted_peer: bool) -> usize {
        let chosen = match &self.source {
            Source::Header { name, lookup } => {
                let value = one_value(&head.headers, name);
                match lookup {
                    Some(values) => value.and_then(|v| values.get(v).copied()),
                    None if trusted_peer => {
                        value.and_then(|v| self.names.iter().position(|n| n == v))
                    }
                    None => None,
                }
            }
            Source::Chosen(choose) => choose(head),
        };
        chosen.unwrap_or(self.default)
    }

    /// Whether a request's tier is believed only from a trusted proxy.
    pub fn needs_trusted_proxy(&self) -> bool {
        matches!(self.source, Source::Header { lookup: None, .. })
    }
}

impl fmt::Debug for Tiers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = match &self.source {
            Source::Header { name, lookup: None } => format!("header {name}"),
            Source::Header {
                name,
                lookup: Some(values),
            } => format!("header {name} looked up among {} values", values.len()),
            Source::Chosen(_) => "chosen by a function".into(),
        };
        f.debug_struct("Tiers")
            .field("names", &self.names)
            .field("default", &self.default_tier())
            .field("source", &source)
            .finish()
    }
}

/// The header's one value as text: None if it is missing, not text, or
/// sent more than once with different values (which of them the upstream
/// reads is not ours to guess).
fn one_value<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Option<&'h str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.any(|other| other != first) {
        return None;
    }
    first.to_str().ok()
}

fn listed(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A rule's membership of one tier of a [`Tiers`]: the rule decides only
/// the requests of that tier.
#[derive(Clone, Debug)]
pub struct Tier {
    tiers: Arc<Tiers>,
    index: usize,
}

impl Tier {
    /// The tier's name.
    pub fn name(&self) -> &str {
        &self.tiers.names[self.index]
    }

    /// The tiers it is one of.
    pub fn tiers(&self) -> &Arc<Tiers> {
        &self.tiers
    }
}

/// Takes out of `rules` (indexes of rules, in order; `tier_of` gives the
/// tier of each) the members of a tier that the request with head `head`
/// is not in. Each request's tier is chosen once per [`Tiers`] its rules
/// are members of.
pub(crate) fn screen<'t>(
    rules: &mut smallvec::SmallVec<[usize; 4]>,
    tier_of: impl Fn(usize) -> Option<&'t Tier>,
    head: &Parts,
    trusted_peer: bool,
) {
    let mut chosen: smallvec::SmallVec<[(&Arc<Tiers>, usize); 1]> = smallvec::SmallVec::new();
    rules.retain(|&mut i| {
        let Some(tier) = tier_of(i) else {
            return true;
        };
        let index = match chosen.iter().find(|(t, _)| Arc::ptr_eq(t, &tier.tiers)) {
            Some(&(_, index)) => index,
            None => {
                let index = tier.tiers.index_of(head, trusted_peer);
                chosen.push((&tier.tiers, index));
                index
            }
        };
        tier.index == index
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(headers: &[(&str, &str)]) -> Parts {
        let mut request = http::Request::get("/");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    fn plans() -> Tiers {
        Tiers::from_header(["free", "pro"], "free", HeaderName::from_static("x-plan")).unwrap()
    }

    #[test]
    fn a_header_names_the_tier_only_from_a_trusted_proxy() {
        let pro = head(&[("x-plan", "pro")]);
        assert_eq!(plans().choose(&pro, true), "pro");
        assert_eq!(plans().choose(&pro, false), "free");
        assert!(plans().needs_trusted_proxy());
    }

    #[test]
    fn a_missing_unknown_or_ambiguous_tier_is_the_default() {
        let plans = plans();
        assert_eq!(plans.choose(&head(&[]), true), "free");
        assert_eq!(plans.choose(&head(&[("x-plan", "gold")]), true), "free");
        assert_eq!(plans.choose(&head(&[("x-plan", "PRO")]), true), "free");
        let twice = head(&[("x-plan", "pro"), ("x-plan", "free")]);
        assert_eq!(plans.choose(&twice, true), "free");
        let same_twice = head(&[("x-plan", "pro"), ("x-plan", "pro")]);
        assert_eq!(plans.choose(&same_twice, true), "pro");
    }

    #[test]
    fn a_lookup_is_believed_from_any_peer() {
        let header = HeaderName::from_static("x-api-key");
        let plans = Tiers::from_lookup(
            ["free", "pro"],
            "free",
            header,
            [("k1", "pro"), ("k2", "free")],
        )
        .unwrap();
        assert!(!plans.needs_trusted_proxy());
        assert_eq!(plans.choose(&head(&[("x-api-key", "k1")]), false), "pro");
        assert_eq!(plans.choose(&head(&[("x-api-key", "k2")]), false), "free");
        assert_eq!(plans.choose(&head(&[("x-api-key", "pro")]), false), "free");
    }

    #[test]
    fn bad_tiers_say_what_is_wrong() {
        let header = || HeaderName::from_static("x-plan");
        let err = |r: Result<Tiers, String>| r.unwrap_err();
        let none: [&str; 0] = [];
        assert_eq!(
            err(Tiers::from_header(none, "free", header())),
            "no tiers: name at least one"
        );
        assert_eq!(
            err(Tiers::from_header(["free", "free"], "free", header())),
            "tier \"free\" is named twice"
        );
        assert_eq!(
            err(Tiers::from_header(["free", "pro"], "gold", header())),
            "the default tier \"gold\" is not one of \"free\", \"pro\""
        );
        let lookup = Tiers::from_lookup(["free"], "free", header(), [("secret", "pro")]);
        let e = err(lookup);
        assert_eq!(e, "lookup entry 1: tier \"pro\" is not one of \"free\"");
        let twice = Tiers::from_lookup(["free"], "free", header(), [("s", "free"), ("s", "free")]);
        assert_eq!(
            err(twice),
            "lookup entry 2: its value is given a tier twice"
        );
    }
}
