//! Which client a request belongs to: the key a rule limits by.
//!
//! A key is one part or several joined (`ip+form:username` limits each
//! address's attempts on each account). Parts: the client address, a header,
//! a cookie, a query parameter, and (for a login route, body read up to a
//! small bound) a form or JSON body field. A request missing a part is keyed
//! by its client address alone, so that leaving out a header does not put a
//! client in a bucket shared with everyone else who left it out.

use http::header::{HeaderName, COOKIE};
use http::request::Parts;
use sha2::{Digest, Sha256};
use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// Keys longer than this are stored as a hash, not raw: a client cannot make
/// us hold arbitrarily long keys.
pub const MAX_KEY_LEN: usize = 128;

/// One part of a key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum KeyPart {
    /// The client address (the peer, or the forwarded client when the peer is
    /// a trusted proxy).
    Ip,
    /// A request header, e.g. `X-Api-Key`.
    Header(HeaderName),
    /// A cookie.
    Cookie(String),
    /// A query-string parameter.
    Query(String),
    /// A field of a `application/x-www-form-urlencoded` body.
    Form(String),
    /// A field of a JSON body; dots walk into objects (`user.email`).
    Json(String),
}

/// The parts of a key, in order.
///
/// ```
/// use limits_http::KeySpec;
/// let spec: KeySpec = "ip+form:username".parse().unwrap();
/// assert!(spec.needs_body());
/// assert_eq!(spec.to_string(), "ip+form:username");
/// assert!("header:".parse::<KeySpec>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeySpec(Vec<KeyPart>);

impl KeySpec {
    /// The client address alone: the default.
    pub fn ip() -> KeySpec {
        KeySpec(vec![KeyPart::Ip])
    }

    /// The parts.
    pub fn parts(&self) -> &[KeyPart] {
        &self.0
    }

    /// Whether a part reads the request body.
    pub fn needs_body(&self) -> bool {
        self.0
            .iter()
            .any(|p| matches!(p, KeyPart::Form(_) | KeyPart::Json(_)))
    }

    /// The key of a request: its parts joined by `|` (each escaped), or
    /// `ip:ADDRESS` when a part is missing; hashed when longer than
    /// [`MAX_KEY_LEN`].
    pub fn extract(&self, parts: &Parts, client: Option<IpAddr>, body: Option<&[u8]>) -> String {
        let client_text = client.map_or_else(|| "unknown".to_string(), |ip| ip.to_string());
        let mut values = Vec::with_capacity(self.0.len());
        for part in &self.0 {
            let value = match part {
                KeyPart::Ip => Some(client_text.clone()),
                KeyPart::Header(name) => parts
                    .headers
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
                KeyPart::Cookie(name) => cookie(parts, name),
                KeyPart::Query(name) => parts
                    .uri
                    .query()
                    .and_then(|q| form_field(q.as_bytes(), name)),
                KeyPart::Form(name) => body.and_then(|b| form_field(b, name)),
                KeyPart::Json(path) => body.and_then(|b| json_field(b, path)),
            };
            match value {
                Some(v) if !v.is_empty() => values.push(escape(&v)),
                _ => return bounded(format!("ip:{client_text}")),
            }
        }
        bounded(values.join("|"))
    }
}

fn escape(v: &str) -> String {
    if v.contains(['|', '\\']) {
        v.replace('\\', "\\\\").replace('|', "\\|")
    } else {
        v.to_string()
    }
}

/// Long keys become `sha256:` and 32 hex digits (128 bits of the digest).
fn bounded(key: String) -> String {
    if key.len() <= MAX_KEY_LEN {
        return key;
    }
    let digest = Sha256::digest(key.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn cookie(parts: &Parts, name: &str) -> Option<String> {
    parts
        .headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| k.trim() == name)
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
}

fn form_field(input: &[u8], name: &str) -> Option<String> {
    form_urlencoded::parse(input)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn json_field(body: &[u8], path: &str) -> Option<String> {
    let mut value: serde_json::Value = serde_json::from_slice(body).ok()?;
    for step in path.split('.') {
        value = value.get_mut(step)?.take();
    }
    match value {
        serde_json::Value::String(s) => Some(s),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Why a key spec did not parse.
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

    /// `ip`, `header:NAME`, `cookie:NAME`, `query:NAME`, `form:NAME`,
    /// `json:PATH`, several joined by `+`.
    fn from_str(s: &str) -> Result<KeySpec, KeySpecError> {
        let parts = s
            .split('+')
            .map(|p| parse_part(p.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(KeySpec(parts))
    }
}

fn parse_part(p: &str) -> Result<KeyPart, KeySpecError> {
    let err = |why: &str| {
        KeySpecError(format!(
            "invalid key {p:?}: {why} (expected ip, header:NAME, cookie:NAME, query:NAME, form:NAME or json:PATH, joined by +)"
        ))
    };
    if p == "ip" {
        return Ok(KeyPart::Ip);
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

impl fmt::Display for KeySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, part) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("+")?;
            }
            match part {
                KeyPart::Ip => f.write_str("ip")?,
                KeyPart::Header(n) => write!(f, "header:{n}")?,
                KeyPart::Cookie(n) => write!(f, "cookie:{n}")?,
                KeyPart::Query(n) => write!(f, "query:{n}")?,
                KeyPart::Form(n) => write!(f, "form:{n}")?,
                KeyPart::Json(n) => write!(f, "json:{n}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(uri: &str, headers: &[(&str, &str)]) -> Parts {
        let mut b = http::Request::builder().uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap().into_parts().0
    }

    const IP: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1)));

    #[test]
    fn every_part_kind_extracts() {
        let p = parts(
            "/login?api_key=k1",
            &[("x-api-key", "abc"), ("cookie", "a=1; session=s9; b=2")],
        );
        let key =
            |s: &str, body: Option<&[u8]>| s.parse::<KeySpec>().unwrap().extract(&p, IP, body);
        assert_eq!(key("ip", None), "192.0.2.1");
        assert_eq!(key("header:X-Api-Key", None), "abc");
        assert_eq!(key("cookie:session", None), "s9");
        assert_eq!(key("query:api_key", None), "k1");
        assert_eq!(
            key("form:username", Some(b"username=alice&password=x")),
            "alice"
        );
        assert_eq!(
            key("json:user.name", Some(br#"{"user":{"name":"bob"}}"#)),
            "bob"
        );
        assert_eq!(
            key("ip+form:username", Some(b"username=a%7Cb")),
            "192.0.2.1|a\\|b"
        );
    }

    #[test]
    fn a_missing_part_falls_back_to_the_client_address() {
        let p = parts("/", &[]);
        let spec: KeySpec = "header:X-Api-Key".parse().unwrap();
        assert_eq!(spec.extract(&p, IP, None), "ip:192.0.2.1");
        let spec: KeySpec = "json:user".parse().unwrap();
        assert_eq!(spec.extract(&p, IP, Some(b"not json")), "ip:192.0.2.1");
    }

    #[test]
    fn long_keys_are_hashed() {
        let long = "k".repeat(10_000);
        let p = parts("/", &[("x-api-key", long.as_str())]);
        let key = "header:x-api-key"
            .parse::<KeySpec>()
            .unwrap()
            .extract(&p, IP, None);
        assert!(key.starts_with("sha256:") && key.len() == 7 + 32, "{key}");
        let other = parts("/", &[("x-api-key", &("k".repeat(9_999) + "j"))]);
        let key2 = "header:x-api-key"
            .parse::<KeySpec>()
            .unwrap()
            .extract(&other, IP, None);
        assert_ne!(key, key2);
    }

    #[test]
    fn bad_specs_say_what_is_expected() {
        for bad in ["", "ipv6", "header:", "header:bad name", "smell:x", "ip+"] {
            let err = bad.parse::<KeySpec>().unwrap_err().to_string();
            assert!(err.contains("expected ip, header:NAME"), "{bad}: {err}");
        }
    }
}
