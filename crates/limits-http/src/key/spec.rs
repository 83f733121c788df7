//! The text of a key spec (`ip+form:username`) and of its `missing` policy:
//! the same words on the command line, in the configuration file and in
//! messages.

use super::{KeyPart, KeySpec};
use http::header::HeaderName;
use std::fmt;
use std::str::FromStr;

/// What a rule does with a request whose key part is missing, empty or
/// unreadable (a body it cannot parse).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Missing {
    /// Count it by the client address, apart from every keyed request
    /// (`missing:ip=ADDRESS`): leaving out a header does not put a client
    /// in a bucket shared with everyone else who left it out.
    Ip,
    /// Refuse it: 400 with a problem body naming the field.
    Reject,
    /// Count every such request in one bucket (`missing:shared`).
    Shared,
}

impl Missing {
    /// The name in configuration: `ip`, `reject` or `shared`.
    pub fn as_str(self) -> &'static str {
        match self {
            Missing::Ip => "ip",
            Missing::Reject => "reject",
            Missing::Shared => "shared",
        }
    }
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Missing {
    type Err = KeySpecError;

    /// `ip`, `reject` or `shared`.
    fn from_str(s: &str) -> Result<Missing, KeySpecError> {
        match s {
            "ip" => Ok(Missing::Ip),
            "reject" => Ok(Missing::Reject),
            "shared" => Ok(Missing::Shared),
            _ => Err(KeySpecError(format!(
                "unknown missing policy {s:?} (expected ip, reject or shared)"
            ))),
        }
    }
}

/// Why a key spec, a `missing` policy or a normalization did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeySpecError(pub String);

impl fmt::Display for KeySpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KeySpecError {}

impl FromStr for KeySpec {
    type Err = KeySpecError;

    /// `ip`, `path`, `header:NAME`, `cookie:NAME`, `query:NAME`,
    /// `form:NAME`, `json:PATH`, several joined by `+`; the default `missing` and
    /// normalization.
    fn from_str(s: &str) -> Result<KeySpec, KeySpecError> {
        let parts = s
            .split('+')
            .map(|p| parse_part(p.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(KeySpec::from_parts(parts))
    }
}

fn parse_part(p: &str) -> Result<KeyPart, KeySpecError> {
    let err = |why: &str| {
        KeySpecError(format!(
            "invalid key {p:?}: {why} (expected ip, path, header:NAME, cookie:NAME, query:NAME, form:NAME or json:PATH, joined by +)"
        ))
    };
    match p {
        "ip" => return Ok(KeyPart::Ip),
        "path" => return Ok(KeyPart::Path),
        _ => {}
    }
    let (kind, name) = p.split_once(':').ok_or_else(|| err("unknown key"))?;
    if name.is_empty() {
        return Err(err("the name is empty"));
    }
    Ok(match kind {
        "header" => KeyPart::Header(
            HeaderName::from_bytes(name.as_bytes()).map_err(|_| err("not a header name"))?,
        ),
        "cookie" => KeyPart::Cookie(name.to_string()),
        "query" => KeyPart::Query(name.to_string()),
        "form" => KeyPart::Form(name.to_string()),
        "json" => KeyPart::Json(name.to_string()),
        _ => return Err(err("unknown kind")),
    })
}

impl fmt::Display for KeyPart {
    /// As written in a spec: `ip`, `header:x-api-key`, `json:user.email`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyPart::Ip => f.write_str("ip"),
            KeyPart::Header(n) => write!(f, "header:{n}"),
            KeyPart::Cookie(n) => write!(f, "cookie:{n}"),
            KeyPart::Query(n) => write!(f, "query:{n}"),
            KeyPart::Form(n) => write!(f, "form:{n}"),
            KeyPart::Json(n) => write!(f, "json:{n}"),
            KeyPart::Path => f.write_str("path"),
        }
    }
}

impl fmt::Display for KeySpec {
    /// The parts joined by `+` (not the `missing` policy or normalization).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            write!(f, "{part}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_specs_say_what_is_expected() {
        for bad in ["", "ipv6", "header:", "header:bad name", "smell:x", "ip+"] {
            let err = bad.parse::<KeySpec>().unwrap_err().to_string();
            assert!(
                err.contains("expected ip, path, header:NAME"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn missing_policies_parse_and_print() {
        for m in [Missing::Ip, Missing::Reject, Missing::Shared] {
            assert_eq!(m.as_str().parse::<Missing>(), Ok(m));
        }
        let err = "drop".parse::<Missing>().unwrap_err().to_string();
        assert!(err.contains("\"drop\"") && err.contains("ip, reject or shared"));
    }
}
