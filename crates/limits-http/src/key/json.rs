//! One field of a JSON body, found by walking a dotted path (`user.email`)
//! while the document streams past, so that:
//! - an object member along the path that appears twice with different
//!   values is [`Lookup::Repeated`] (JSON parsers differ: most keep the last
//!   member, some the first; `serde_json::Value` would silently keep one);
//! - member names are compared without regard to case, as ASP.NET Core's
//!   JSON binding reads them (`Username` is `username` there);
//! - nesting of any depth is read (an upstream with no depth limit would
//!   otherwise read a body we call unreadable): serde_json's recursion limit
//!   is off, and `serde_stacker` grows the stack on the heap instead of
//!   overflowing it.

use super::fields::Lookup;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;

/// The scalar at `path` in the JSON document `text` (a string, a number or a
/// boolean, as text); `Absent` if there is none there (or it is null, an
/// array or an object); `Unreadable` if `text` is not one JSON document.
pub(super) fn field(text: &str, path: &str) -> Lookup {
    let steps: Vec<&str> = path.split('.').collect();
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let found = At(&steps).deserialize(serde_stacker::Deserializer::new(&mut de));
    match found.and_then(|found| de.end().map(|()| found)) {
        Ok(found) => found,
        Err(e) => Lookup::Unreadable(format!("the body is not JSON ({e})")),
    }
}

/// The rest of the path, from the value being read.
struct At<'a>(&'a [&'a str]);

impl At<'_> {
    fn scalar<E>(&self, text: String) -> Result<Lookup, E> {
        Ok(if self.0.is_empty() {
            Lookup::Found(text)
        } else {
            Lookup::Absent
        })
    }
}

impl<'de> DeserializeSeed<'de> for At<'_> {
    type Value = Lookup;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Lookup, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for At<'_> {
    type Value = Lookup;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Lookup, E> {
        self.scalar(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Lookup, E> {
        self.scalar(v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Lookup, E> {
        self.scalar(v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Lookup, E> {
        self.scalar(v.to_string())
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Lookup, E> {
        self.scalar(v.to_string())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Lookup, E> {
        Ok(Lookup::Absent)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Lookup, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Lookup::Absent)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Lookup, A::Error> {
        let Some((step, rest)) = self.0.split_first() else {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(Lookup::Absent);
        };
        let mut seen: Option<Lookup> = None;
        while let Some(name) = map.next_key::<String>()? {
            if !same_name(&name, step) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value = map.next_value_seed(At(rest))?;
            seen = Some(match seen {
                None => value,
                Some(before) if before == value => before,
                Some(_) => Lookup::Repeated,
            });
        }
        Ok(seen.unwrap_or(Lookup::Absent))
    }
}

/// Whether member `name` is the path's `step`, case aside.
fn same_name(name: &str, step: &str) -> bool {
    if name.is_ascii() && step.is_ascii() {
        return name.eq_ignore_ascii_case(step);
    }
    name.to_lowercase() == step.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(v: &str) -> Lookup {
        Lookup::Found(v.to_string())
    }

    #[test]
    fn a_path_walks_into_objects_and_reads_scalars() {
        let doc = r#"{"user":{"name":"bob","id":7,"admin":false,"tags":[1]},"x":null}"#;
        assert_eq!(field(doc, "user.name"), found("bob"));
        assert_eq!(field(doc, "user.id"), found("7"));
        assert_eq!(field(doc, "user.admin"), found("false"));
        assert_eq!(field(doc, "user.tags"), Lookup::Absent);
        assert_eq!(field(doc, "user"), Lookup::Absent);
        assert_eq!(field(doc, "x"), Lookup::Absent);
        assert_eq!(field(doc, "user.name.first"), Lookup::Absent);
        assert_eq!(field(r#"{"user\u006eame":"e"}"#, "username"), found("e"));
    }

    #[test]
    fn a_duplicate_member_with_different_values_is_repeated() {
        let twice = r#"{"username":"alice","username":"mallory"}"#;
        assert_eq!(field(twice, "username"), Lookup::Repeated);
        let same = r#"{"username":"alice","username":"alice"}"#;
        assert_eq!(field(same, "username"), found("alice"));
        let nested = r#"{"user":{"name":"a"},"user":{"name":"b"}}"#;
        assert_eq!(field(nested, "user.name"), Lookup::Repeated);
        let null_then = r#"{"username":null,"username":"alice"}"#;
        assert_eq!(field(null_then, "username"), Lookup::Repeated);
        let inner = r#"{"user":{"name":"a","name":"b"}}"#;
        assert_eq!(field(inner, "user.name"), Lookup::Repeated);
        // Regression: ASP.NET Core binds `Username` to `username`.
        let cased = r#"{"Username":"rnd","username":"alice"}"#;
        assert_eq!(field(cased, "username"), Lookup::Repeated);
        assert_eq!(field(r#"{"USER":{"Name":"a"}}"#, "user.name"), found("a"));
    }

    #[test]
    fn nesting_deeper_than_serde_jsons_limit_is_read_without_overflow() {
        let deep = "[".repeat(16 * 1024) + &"]".repeat(16 * 1024);
        let doc = format!(r#"{{"x":{deep},"username":"alice"}}"#);
        assert_eq!(field(&doc, "username"), found("alice"));
        let open = "[".repeat(16 * 1024);
        assert!(matches!(field(&open, "a"), Lookup::Unreadable(_)));
        let objects = r#"{"a":"#.repeat(200) + "1" + &"}".repeat(200);
        let path = vec!["a"; 200].join(".");
        assert_eq!(field(&objects, &path), found("1"));
    }

    #[test]
    fn what_is_not_one_json_document_is_unreadable() {
        for bad in ["", "not json", "{\"a\":1} {}", "{\"a\":1,}", "[[[["] {
            assert!(matches!(field(bad, "a"), Lookup::Unreadable(_)), "{bad}");
        }
    }
}
