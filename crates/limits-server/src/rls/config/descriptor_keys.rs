//! The reference's descriptor key file: which entries of a descriptor that
//! carries its own limit (`RateLimitDescriptor.limit`) are named in the
//! metrics with their value. Without the file every entry with a value is
//! (`DOMAIN.key_value.key2_value2`); with it, only the keys it lists for
//! the domain (or, for a domain it does not list, by default), the others
//! by their key alone (`DOMAIN.key.key2_value2`), so that a value per user
//! does not make a series per user.
//!
//! ```yaml
//! default:
//!   include_entry_value_for_keys: [tenant]
//! domains:
//!   edge:
//!     include_entry_value_for_keys: [route, method]
//! ```

use super::fields::Fields;
use super::yaml::{self, Node, Value};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// Which entries keep their value in an override's metric name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DescriptorKeys {
    default: HashSet<String>,
    domains: HashMap<String, HashSet<String>>,
}

impl DescriptorKeys {
    /// Reads the file at `path`; errors read "FILE:LINE: what is wrong".
    pub fn load(path: &Path) -> Result<DescriptorKeys, String> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{origin}: cannot read the descriptor key config: {e}"))?;
        DescriptorKeys::parse(&text, &origin)
    }

    /// Reads the file's text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<DescriptorKeys, String> {
        let root = yaml::parse(text, origin)?;
        let f = Fields::of(
            &root,
            origin,
            "the descriptor key config",
            &["default", "domains"],
        )?;
        let mut keys = DescriptorKeys::default();
        if let Some((_, node)) = f.get("default") {
            keys.default = rule(node, origin, "default")?;
        }
        if let Some((line, node)) = f.get("domains") {
            let Value::Map(pairs) = &*node.value else {
                return Err(format!(
                    "{origin}:{line}: domains must be a mapping of domain to its keys, not {}",
                    node.kind()
                ));
            };
            for (name, rules) in pairs {
                let Value::Scalar { text: name, .. } = &*name.value else {
                    return Err(format!("{origin}:{}: a domain must be a name", name.line));
                };
                keys.domains
                    .insert(name.clone(), rule(rules, origin, name)?);
            }
        }
        Ok(keys)
    }

    /// Whether `key`'s value names an override of `domain` in the metrics.
    pub fn includes_value(&self, domain: &str, key: &str) -> bool {
        self.domains
            .get(domain)
            .unwrap_or(&self.default)
            .contains(key)
    }
}

/// One `include_entry_value_for_keys` rule.
fn rule(node: &Node, origin: &str, what: &str) -> Result<HashSet<String>, String> {
    let f = Fields::of(node, origin, what, &["include_entry_value_for_keys"])?;
    let mut keys = HashSet::new();
    for item in f.list("include_entry_value_for_keys")? {
        match &*item.value {
            Value::Scalar { text, .. } => {
                keys.insert(text.clone());
            }
            _ => {
                return Err(format!(
                    "{origin}:{}: include_entry_value_for_keys holds keys, not {}",
                    item.line,
                    item.kind()
                ))
            }
        }
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_domain_listed_uses_its_keys_and_any_other_the_default() {
        let keys = DescriptorKeys::parse(
            "default:\n  include_entry_value_for_keys: [foo]\ndomains:\n  d:\n    include_entry_value_for_keys:\n      - subkey1\n",
            "k.yaml",
        )
        .unwrap();
        assert!(keys.includes_value("d", "subkey1"));
        assert!(!keys.includes_value("d", "foo"));
        assert!(keys.includes_value("unknown-domain", "foo"));
        assert!(!keys.includes_value("unknown-domain", "bar"));
    }

    #[test]
    fn a_mistake_is_named_at_its_line() {
        let e = DescriptorKeys::parse(
            "domains:\n  d:\n    include_entry_value_for_key: [a]\n",
            "k.yaml",
        )
        .unwrap_err();
        assert!(
            e.starts_with("k.yaml:3: config error, unknown key 'include_entry_value_for_key'"),
            "{e}"
        );
    }
}
