//! Which client a request belongs to: the key a rule limits by.
//!
//! A key is one part or several joined (`ip+form:username` limits each
//! address's attempts on each account). Parts: the client address, a header,
//! a cookie, a query parameter, and (for a login route, body read up to a
//! small bound) a form or JSON body field.
//!
//! A limiter in front of a login form is a security control, so a client must
//! not be able to choose its key, nor to make the limiter read a request
//! differently from the upstream:
//! - every part is tagged (`ip=…`, `header:x-api-key=…`, `form:username=…`)
//!   and client values are escaped, so no value can produce another part's
//!   tag, a part boundary, the fallback keys (`missing:ip=…`,
//!   `missing:shared`), an application's own keys (`custom:…`, see
//!   [`KeyExtractor`]) or a hashed key (`sha256:…`);
//! - a field repeated with different values is refused ([`KeyError`]): the
//!   upstream may read the other one;
//! - every name a common upstream reads as the field's is the field
//!   (`api.key` is PHP's `api_key`, `X_Api_Key` CGI's `X-Api-Key`);
//! - bodies are read as upstreams read them, as raw UTF-8 bytes: another
//!   charset, a UTF-16 or UTF-32 byte order mark, or two Content-Types are
//!   refused; nesting of any depth is read; and what happens when the field
//!   is missing or unreadable is the rule's choice ([`Missing`]);
//! - client values are normalized per rule ([`Normalize`]), so that `Alice`
//!   and ` alice ` are one account; a control or invisible character left
//!   in a value is refused, since upstreams strip or keep it differently.

use http::header::HeaderName;
use http::request::Parts;
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::net::IpAddr;

mod body;
mod error;
mod extractor;
mod fields;
mod invisible;
mod json;
mod normalize;
mod spec;
#[cfg(test)]
mod tests;
mod text;

pub(crate) use body::content_type;
pub use error::{KeyError, KeyErrorReason};
pub use extractor::{Key, KeyExtractor};
use fields::Lookup;
pub(crate) use fields::decode_plus as percent_decode;
pub use normalize::{Normalize, NormalizeStep};
pub use spec::{KeySpecError, Missing};
use text::KeyText;

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
    /// The path, as normalized (the one the rules match and the upstream
    /// gets): what a limit on distinct pages counts.
    Path,
}

impl KeyPart {
    /// Whether the value comes from the request body.
    fn in_body(&self) -> bool {
        matches!(self, KeyPart::Form(_) | KeyPart::Json(_))
    }
}

/// The parts of a key, in order, and what to do when one is missing or how
/// to normalize client values (each with a default by kind of part).
///
/// ```
/// use limits_http::{KeySpec, Missing, Normalize};
/// let spec: KeySpec = "ip+form:username".parse().unwrap();
/// assert!(spec.needs_body());
/// assert_eq!(spec.to_string(), "ip+form:username");
/// assert!("header:".parse::<KeySpec>().is_err());
/// let spec = spec.with_missing(Missing::Shared).with_normalize(Normalize::NONE);
/// assert_eq!(spec.missing(), Some(Missing::Shared));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KeySpec {
    parts: Vec<KeyPart>,
    missing: Option<Missing>,
    normalize: Option<Normalize>,
}

impl KeySpec {
    /// The client address alone: the default.
    pub fn ip() -> KeySpec {
        KeySpec::from_parts(vec![KeyPart::Ip])
    }

    fn from_parts(parts: Vec<KeyPart>) -> KeySpec {
        KeySpec {
            parts,
            missing: None,
            normalize: None,
        }
    }

    /// The same parts, with `missing` for every part that is missing or
    /// unreadable (instead of the default by kind of part).
    pub fn with_missing(mut self, missing: Missing) -> KeySpec {
        self.missing = Some(missing);
        self
    }

    /// The same parts, with `normalize` for every client value (instead of
    /// the default by kind of part). The address is never normalized.
    pub fn with_normalize(mut self, normalize: Normalize) -> KeySpec {
        self.normalize = Some(normalize);
        self
    }

    /// The parts.
    pub fn parts(&self) -> &[KeyPart] {
        &self.parts
    }

    /// The `missing` policy set with [`KeySpec::with_missing`], if any.
    pub fn missing(&self) -> Option<Missing> {
        self.missing
    }

    /// The normalization set with [`KeySpec::with_normalize`], if any.
    pub fn normalize(&self) -> Option<Normalize> {
        self.normalize
    }

    /// What happens when `part` is missing or unreadable: the policy set, or
    /// by default `reject` for body fields (an upstream that reads the body
    /// differently must not get the attempts through) and `ip` for the rest.
    pub fn missing_for(&self, part: &KeyPart) -> Missing {
        self.missing.unwrap_or(if part.in_body() {
            Missing::Reject
        } else {
            Missing::Ip
        })
    }

    /// How `part`'s value is normalized: as set, or by default
    /// [`Normalize::ACCOUNT`] for body fields (account names and emails) and
    /// [`Normalize::NONE`] for the rest (API keys and tokens, where case matters).
    pub fn normalize_for(&self, part: &KeyPart) -> Normalize {
        self.normalize.unwrap_or(if part.in_body() {
            Normalize::ACCOUNT
        } else {
            Normalize::NONE
        })
    }

    /// Whether a part reads the request body.
    pub fn needs_body(&self) -> bool {
        self.parts.iter().any(KeyPart::in_body)
    }

    /// Whether the key is made of the client address, as a part or as what
    /// a missing part falls back to ([`Missing::Ip`]): without an address,
    /// such a key would be the same for every client.
    pub fn uses_client_address(&self) -> bool {
        self.parts.iter().any(|p| match p {
            KeyPart::Ip => true,
            // Every request has a path: it is never missing.
            KeyPart::Path => false,
            _ => self.missing_for(p) == Missing::Ip,
        })
    }

    /// Whether a part takes a value from the client (anything but `ip`):
    /// only such keys can be missing or normalized.
    pub fn reads_client_values(&self) -> bool {
        self.parts.iter().any(|p| *p != KeyPart::Ip)
    }

    /// The key of a request: `TAG=VALUE` for each part (values normalized and
    /// escaped), joined by `|`, hashed when longer than [`MAX_KEY_LEN`]. When
    /// a part is missing, empty or unreadable: `missing:ip=ADDRESS`,
    /// `missing:shared`, or an error, as [`KeySpec::missing_for`] says. A
    /// field repeated with different values, or in a form upstreams read
    /// differently ([`KeyErrorReason::Ambiguous`], [`KeyErrorReason::Charset`]),
    /// is always an error. The body is read as UTF-8.
    pub fn extract(
        &self,
        parts: &Parts,
        client: Option<IpAddr>,
        body: Option<&[u8]>,
    ) -> Result<String, KeyError> {
        self.build(parts, client, body).map(String::from)
    }

    /// [`KeySpec::extract`], written inline where it fits (see
    /// [`KeyText`]).
    pub(crate) fn build(
        &self,
        parts: &Parts,
        client: Option<IpAddr>,
        body: Option<&[u8]>,
    ) -> Result<KeyText, KeyError> {
        // The address alone (the common key): written in one step.
        if let [KeyPart::Ip] = self.parts.as_slice() {
            let mut key = KeyText::new();
            key.push_ip_part(client);
            return Ok(key);
        }
        let client_text = || client.map_or_else(|| "unknown".to_string(), |ip| ip.to_string());
        // Looked up only for a body's key (an address key needs none).
        let content_type = || body::content_type(&parts.headers);
        let body_text = |b, json| content_type().and_then(|ct| body::text(ct, b, json));
        // The key is written as it is found, into one string: the parts'
        // tags and values escaped, joined by `|`.
        let mut key = KeyText::new();
        let mut failed = None;
        for part in &self.parts {
            let lookup = match part {
                KeyPart::Ip => {
                    if failed.is_none() {
                        if !key.is_empty() {
                            key.push('|');
                        }
                        key.push_ip_part(client);
                    }
                    continue;
                }
                KeyPart::Header(name) => fields::header(&parts.headers, name),
                KeyPart::Cookie(name) => fields::cookie(&parts.headers, name),
                KeyPart::Query(name) => match parts.uri.query() {
                    Some(q) => fields::pairs(q, name),
                    None => Lookup::Absent,
                },
                KeyPart::Form(name) => match body.map(|b| body_text(b, false)) {
                    None => Lookup::Absent,
                    Some(Ok(text)) => fields::pairs(text, name),
                    Some(Err(why)) => Lookup::Refused(why),
                },
                KeyPart::Json(path) => match body.map(|b| body_text(b, true)) {
                    None => Lookup::Absent,
                    Some(Ok(text)) => json::field(text, path),
                    Some(Err(why)) => Lookup::Refused(why),
                },
                KeyPart::Path => Lookup::Found(parts.uri.path().to_string()),
            };
            let reason = match lookup {
                Lookup::Found(v) => {
                    let v = self.normalize_for(part).apply(&v);
                    if let Some(why) = invisible::refusal(&v) {
                        return Err(KeyError {
                            field: part.to_string(),
                            reason: KeyErrorReason::Ambiguous(why),
                        });
                    }
                    if !v.is_empty() {
                        if failed.is_none() {
                            if !key.is_empty() {
                                key.push('|');
                            }
                            escape_into(&mut key, &part.to_string(), true);
                            key.push('=');
                            escape_into(&mut key, &v, false);
                        }
                        continue;
                    }
                    KeyErrorReason::Missing
                }
                Lookup::Absent => KeyErrorReason::Missing,
                Lookup::Unreadable(why) => KeyErrorReason::Unreadable(why),
                Lookup::Refused(reason) if reason.missing_policy_applies() => reason,
                Lookup::Refused(reason) => {
                    return Err(KeyError {
                        field: part.to_string(),
                        reason,
                    });
                }
                Lookup::Repeated => {
                    return Err(KeyError {
                        field: part.to_string(),
                        reason: KeyErrorReason::Repeated,
                    });
                }
            };
            failed.get_or_insert((part, reason));
        }
        let Some((part, reason)) = failed else {
            return Ok(bounded(key));
        };
        match self.missing_for(part) {
            Missing::Ip => {
                let mut key = KeyText::from("missing:ip=");
                escape_into(&mut key, &client_text(), false);
                Ok(bounded(key))
            }
            Missing::Shared => Ok(KeyText::from("missing:shared")),
            Missing::Reject => Err(KeyError {
                field: part.to_string(),
                reason,
            }),
        }
    }
}

/// `\` becomes `\\`, `|` becomes `\|`, and (in a tag) `=` becomes `\=`: so
/// that `|` only ever separates parts and the first bare `=` of a part only
/// ever ends its tag, and a key decodes to one list of (tag, value). `v`,
/// escaped so, is appended to `out`.
fn escape_into(out: &mut KeyText, v: &str, tag: bool) {
    for c in v.chars() {
        if c == '\\' || c == '|' || (tag && c == '=') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// Long keys become `sha256:` and 32 hex digits (128 bits of the digest of
/// the whole key). No unhashed key starts with `sha256:`: every one starts
/// with a part's tag, `missing:` or `custom:`.
fn bounded(key: KeyText) -> KeyText {
    if key.len() <= MAX_KEY_LEN {
        return key;
    }
    let digest = Sha256::digest(key.as_str().as_bytes());
    let mut hashed = KeyText::from("sha256:");
    for b in &digest[..16] {
        let _ = write!(hashed, "{b:02x}");
    }
    hashed
}
