//! A descriptor's `metadata`: any YAML mapping, kept as the protobuf
//! `Struct` the response's dynamic metadata carries. Values are typed as
//! go-yaml types them for the reference (a plain `true` is a boolean, a
//! plain `42` or `1.5` a number, `~` null, anything quoted a string), so
//! that Envoy sees the same metadata from either service.

use super::yaml::{Node, Value};
use prost_types::value::Kind;
use prost_types::{ListValue, Struct};

/// `node` (the value of the `metadata` key at `line`) as a `Struct`.
pub(super) fn of(node: &Node, line: usize, origin: &str) -> Result<Struct, String> {
    match &*node.value {
        Value::Map(pairs) => Ok(mapping(pairs)),
        _ => Err(format!(
            "{origin}:{line}: metadata must be a mapping, not {}",
            node.kind()
        )),
    }
}

fn mapping(pairs: &[(Node, Node)]) -> Struct {
    let mut fields = std::collections::BTreeMap::new();
    for (key, value) in pairs {
        // go-yaml's keys may be of any type; the reference prints each
        // as text, as this does.
        let name = match &*key.value {
            Value::Scalar { text, .. } => text.clone(),
            Value::Null => "<nil>".to_string(),
            _ => key.kind().to_string(),
        };
        fields.insert(name, to_value(value));
    }
    Struct { fields }
}

fn to_value(node: &Node) -> prost_types::Value {
    let kind = match &*node.value {
        Value::Null => Kind::NullValue(0),
        Value::Scalar { text, plain: false } => Kind::StringValue(text.clone()),
        Value::Scalar { text, plain: true } => scalar(text),
        Value::Seq(items) => Kind::ListValue(ListValue {
            values: items.iter().map(to_value).collect(),
        }),
        Value::Map(pairs) => Kind::StructValue(mapping(pairs)),
    };
    prost_types::Value { kind: Some(kind) }
}

/// A plain scalar as YAML 1.1 (go-yaml v2) types it.
fn scalar(text: &str) -> Kind {
    match text {
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => {
            return Kind::BoolValue(true)
        }
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
            return Kind::BoolValue(false)
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Kind::NumberValue(f64::INFINITY)
        }
        "-.inf" | "-.Inf" | "-.INF" => return Kind::NumberValue(f64::NEG_INFINITY),
        _ => {}
    }
    let digits = text.replace('_', "");
    let numeric = !digits.is_empty()
        && digits.bytes().any(|b| b.is_ascii_digit())
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'));
    if numeric {
        if let Ok(n) = digits.parse::<i64>() {
            // A protobuf number is a double, as the reference's is.
            return Kind::NumberValue(n as f64);
        }
        if let Ok(x) = digits.parse::<f64>() {
            return Kind::NumberValue(x);
        }
    }
    Kind::StringValue(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(yaml: &str) -> Struct {
        let root = super::super::yaml::parse(yaml, "t.yaml").unwrap();
        of(&root, 1, "t.yaml").unwrap()
    }

    #[test]
    fn plain_scalars_are_typed_and_quoted_ones_are_text() {
        let s = kinds("a: true\nb: 42\nc: 1.5\nd: \"42\"\ne: hello\nf: ~\ng: [1, x]\nh: {i: no}\n");
        let get = |k: &str| s.fields[k].kind.clone().unwrap();
        assert_eq!(get("a"), Kind::BoolValue(true));
        assert_eq!(get("b"), Kind::NumberValue(42.0));
        assert_eq!(get("c"), Kind::NumberValue(1.5));
        assert_eq!(get("d"), Kind::StringValue("42".into()));
        assert_eq!(get("e"), Kind::StringValue("hello".into()));
        assert_eq!(get("f"), Kind::NullValue(0));
        let Kind::ListValue(list) = get("g") else {
            panic!("a list")
        };
        assert_eq!(list.values.len(), 2);
        let Kind::StructValue(inner) = get("h") else {
            panic!("a struct")
        };
        assert_eq!(inner.fields["i"].kind, Some(Kind::BoolValue(false)));
    }

    #[test]
    fn metadata_that_is_no_mapping_is_refused_at_its_line() {
        let root = super::super::yaml::parse("- a\n", "t.yaml").unwrap();
        let e = of(&root, 7, "t.yaml").unwrap_err();
        assert_eq!(e, "t.yaml:7: metadata must be a mapping, not a list");
    }
}
