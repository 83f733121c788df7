//! One YAML mapping read as a set of known fields: unknown keys and keys
//! given twice are errors at their line, and each value is read as the type
//! its field has (text, a YAML 1.1 boolean as go-yaml reads it, an integer).

use super::yaml::{Node, Value};

/// The fields of one mapping, with where they came from.
pub(super) struct Fields<'n> {
    pub origin: &'n str,
    /// The line of the mapping itself.
    pub line: usize,
    entries: Vec<(&'n str, usize, &'n Node)>,
}

impl<'n> Fields<'n> {
    /// Reads `node` as a mapping of `what` whose keys are all in `allowed`.
    pub fn of(
        node: &'n Node,
        origin: &'n str,
        what: &str,
        allowed: &[&str],
    ) -> Result<Fields<'n>, String> {
        let pairs: &[(Node, Node)] = match &*node.value {
            Value::Map(pairs) => pairs,
            Value::Null => &[],
            _ => {
                return Err(format!(
                    "{origin}:{}: {what} must be a mapping, not {}",
                    node.line,
                    node.kind()
                ))
            }
        };
        let mut entries: Vec<(&str, usize, &Node)> = Vec::with_capacity(pairs.len());
        for (key, value) in pairs {
            let name = match &*key.value {
                Value::Scalar { text, .. } => text.as_str(),
                _ => {
                    return Err(format!(
                        "{origin}:{}: config error, a key of {what} is {}, not a string",
                        key.line,
                        key.kind()
                    ))
                }
            };
            if !allowed.contains(&name) {
                return Err(format!(
                    "{origin}:{}: config error, unknown key '{name}' in {what} (known: {})",
                    key.line,
                    allowed.join(", ")
                ));
            }
            if let Some((_, first, _)) = entries.iter().find(|(n, _, _)| *n == name) {
                return Err(format!(
                    "{origin}:{}: key '{name}' given twice in {what} (first at line {first})",
                    key.line
                ));
            }
            entries.push((name, key.line, value));
        }
        Ok(Fields {
            origin,
            line: node.line,
            entries,
        })
    }

    /// The same fields, reported at `line` (the line of the key that holds the
    /// mapping, where a block mapping's own line would be its first key's).
    pub fn at(mut self, line: usize) -> Self {
        self.line = line;
        self
    }

    /// The value of `name` and the line of its key, if given (and not null).
    pub fn get(&self, name: &str) -> Option<(usize, &'n Node)> {
        self.entries
            .iter()
            .find(|(n, _, v)| *n == name && !matches!(*v.value, Value::Null))
            .map(|(_, line, v)| (*line, *v))
    }

    /// Whether `name` is given with a value.
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The line of `name`'s key, or of the mapping when it is absent.
    pub fn line_of(&self, name: &str) -> usize {
        self.get(name).map_or(self.line, |(line, _)| line)
    }

    /// `name` as text (any scalar as written; go-yaml reads `value: 123` as
    /// "123" too); absent or null is None.
    pub fn text(&self, name: &str) -> Result<Option<&'n str>, String> {
        match self.get(name) {
            None => Ok(None),
            Some((_, node)) => match &*node.value {
                Value::Scalar { text, .. } => Ok(Some(text)),
                _ => Err(self.wrong(name, "text", node)),
            },
        }
    }

    /// `name` as a boolean (go-yaml's YAML 1.1 spellings); absent is false.
    pub fn flag(&self, name: &str) -> Result<bool, String> {
        let Some((line, node)) = self.get(name) else {
            return Ok(false);
        };
        if let Value::Scalar { text, plain: true } = &*node.value {
            match text.as_str() {
                "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "y" | "Y" | "on" | "On"
                | "ON" => return Ok(true),
                "false" | "False" | "FALSE" | "no" | "No" | "NO" | "n" | "N" | "off" | "Off"
                | "OFF" => return Ok(false),
                _ => {}
            }
        }
        Err(format!(
            "{}:{line}: {name} must be true or false, not {}",
            self.origin,
            shown(node)
        ))
    }

    /// `name` as a whole number no larger than `max`; absent is None.
    pub fn number(&self, name: &str, max: u64) -> Result<Option<u64>, String> {
        let Some((line, node)) = self.get(name) else {
            return Ok(None);
        };
        if let Value::Scalar { text, plain: true } = &*node.value {
            let digits = text.strip_prefix('+').unwrap_or(text).replace('_', "");
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                return match digits.parse::<u64>() {
                    Ok(n) if n <= max => Ok(Some(n)),
                    _ => Err(format!(
                        "{}:{line}: {name} is too large: {text} (at most {max})",
                        self.origin
                    )),
                };
            }
        }
        Err(format!(
            "{}:{line}: {name} must be a whole number from 0 to {max}, not {}",
            self.origin,
            shown(node)
        ))
    }

    /// `name` as a list; absent is empty.
    pub fn list(&self, name: &str) -> Result<&'n [Node], String> {
        match self.get(name) {
            None => Ok(&[]),
            Some((_, node)) => match &*node.value {
                Value::Seq(items) => Ok(items),
                _ => Err(self.wrong(name, "a list", node)),
            },
        }
    }

    fn wrong(&self, name: &str, want: &str, node: &Node) -> String {
        format!(
            "{}:{}: {name} must be {want}, not {}",
            self.origin,
            self.line_of(name),
            node.kind()
        )
    }
}

/// A node as it reads in an error: a scalar's text, else its kind.
fn shown(node: &Node) -> String {
    match &*node.value {
        Value::Scalar { text, .. } => format!("'{}'", text.escape_debug()),
        _ => node.kind().to_string(),
    }
}
