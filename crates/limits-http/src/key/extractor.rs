//! The seam for keys only the embedding application can compute (a JWT
//! subject, a tenant id): [`KeyExtractor`], of which [`KeySpec`] is one
//! implementation, and [`Key`], the tagged string a rule's store counts by.
//!
//! A custom extractor's values are namespaced by construction: the only
//! public way to make a [`Key`] from a value is [`Key::custom`], which tags
//! it `custom:TAG=…` and escapes it as [`KeySpec`] escapes its parts. No
//! built-in key starts with `custom:`, so a tenant named `ip=192.0.2.1`
//! cannot spend that address's limit, even in a store two rules share.

use super::text::KeyText;
use super::{KeyError, KeySpec, bounded, escape_into};
use http::request::Parts;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::net::IpAddr;
use std::sync::Arc;

/// A key as a rule's store receives it: tagged, escaped and at most
/// [`MAX_KEY_LEN`](crate::MAX_KEY_LEN) bytes (longer ones are hashed).
///
/// ```
/// use limits_http::Key;
/// assert_eq!(Key::custom("tenant", "acme").as_str(), "custom:tenant=acme");
/// // Values cannot forge a part boundary or another tag.
/// assert_eq!(Key::custom("tenant", "a|ip=1").as_str(), r"custom:tenant=a\|ip=1");
/// assert!(Key::custom("t", &"x".repeat(500)).as_str().starts_with("sha256:"));
/// ```
///
/// A key of up to 64 bytes (an address key is at most 42) is held inline,
/// without an allocation.
#[derive(Clone)]
pub struct Key(KeyText);

impl Key {
    /// An application's own key: `custom:TAG=VALUE`, `\`, `|` (and `=` in
    /// the tag) escaped, hashed when long. Use a different `tag` for each
    /// kind of value (`tenant`, `sub`) so that they never meet.
    pub fn custom(tag: &str, value: &str) -> Key {
        let mut key = KeyText::from("custom:");
        escape_into(&mut key, tag, true);
        key.push('=');
        escape_into(&mut key, value, false);
        Key(bounded(key))
    }

    /// A key [`KeySpec`] built (already tagged and bounded).
    pub(crate) fn built_in(key: KeyText) -> Key {
        Key(key)
    }

    /// The key text the store counts by.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// As the key's text (`Key("ip=192.0.2.1")`), wherever it is held.
impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Key").field(&self.as_str()).finish()
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Key {}

/// As its text hashes (and a `String` of it).
impl Hash for Key {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl From<Key> for String {
    fn from(key: Key) -> String {
        key.0.into()
    }
}

/// How a rule turns a request into a [`Key`], as tower_governor's
/// `KeyExtractor`: [`KeySpec`] is the built-in one; implement it to key on
/// what only your application knows.
///
/// An error makes the layer answer 400 with a problem body naming the rule
/// and [`KeyError::field`]. To fall back to a built-in key, call
/// [`KeySpec::key`](KeyExtractor::key) from yours (see the
/// `custom_key` example).
///
/// ```
/// use http::request::Parts;
/// use limits_http::{Key, KeyError, KeyErrorReason, KeyExtractor};
/// use std::net::IpAddr;
///
/// /// The tenant named by `X-Tenant`, among the tenants we know.
/// struct Tenant(Vec<&'static str>);
///
/// impl KeyExtractor for Tenant {
///     fn key(&self, parts: &Parts, _: Option<IpAddr>, _: Option<&[u8]>) -> Result<Key, KeyError> {
///         let error = |reason| KeyError { field: "header:x-tenant".into(), reason };
///         let tenant = parts.headers.get("x-tenant").ok_or(error(KeyErrorReason::Missing))?;
///         let tenant = tenant.to_str().unwrap_or_default();
///         if !self.0.contains(&tenant) {
///             return Err(error(KeyErrorReason::Invalid("unknown tenant".into())));
///         }
///         Ok(Key::custom("tenant", tenant))
///     }
/// }
///
/// let (parts, _) = http::Request::get("/").header("x-tenant", "acme").body(()).unwrap().into_parts();
/// let key = Tenant(vec!["acme"]).key(&parts, None, None).unwrap();
/// assert_eq!(key.as_str(), "custom:tenant=acme");
/// ```
pub trait KeyExtractor: Send + Sync + 'static {
    /// Whether [`KeyExtractor::key`] reads the body: the layer then reads it
    /// (within [`LayerOptions::max_body`](crate::LayerOptions::max_body) and
    /// the body timeout and budget) and passes it in. By default, no.
    fn needs_body(&self) -> bool {
        false
    }

    /// Whether [`KeyExtractor::key`] keys on the client address (in whole,
    /// in part, or as a fallback). When it does and the server gave the
    /// layer no peer address, the layer answers 500 naming the fix instead
    /// of keying every client alike. By default, no: the extractor is
    /// handed `None` and decides for itself.
    fn uses_client_address(&self) -> bool {
        false
    }

    /// The key of a request, from its head, the client address the layer
    /// resolved (`None` without a peer address), and the body when
    /// [`KeyExtractor::needs_body`] says so (else `None`).
    fn key(
        &self,
        parts: &Parts,
        client: Option<IpAddr>,
        body: Option<&[u8]>,
    ) -> Result<Key, KeyError>;
}

impl KeyExtractor for KeySpec {
    fn needs_body(&self) -> bool {
        KeySpec::needs_body(self)
    }

    fn uses_client_address(&self) -> bool {
        KeySpec::uses_client_address(self)
    }

    /// [`KeySpec::extract`], as a [`Key`].
    fn key(
        &self,
        parts: &Parts,
        client: Option<IpAddr>,
        body: Option<&[u8]>,
    ) -> Result<Key, KeyError> {
        self.build(parts, client, body).map(Key::built_in)
    }
}

/// Rules with different extractors in one policy:
/// `HttpRule<S, Arc<dyn KeyExtractor>>`.
impl<K: KeyExtractor + ?Sized> KeyExtractor for Arc<K> {
    fn needs_body(&self) -> bool {
        (**self).needs_body()
    }

    fn uses_client_address(&self) -> bool {
        (**self).uses_client_address()
    }

    fn key(
        &self,
        parts: &Parts,
        client: Option<IpAddr>,
        body: Option<&[u8]>,
    ) -> Result<Key, KeyError> {
        (**self).key(parts, client, body)
    }
}

impl<K: KeyExtractor + ?Sized> KeyExtractor for Box<K> {
    fn needs_body(&self) -> bool {
        (**self).needs_body()
    }

    fn uses_client_address(&self) -> bool {
        (**self).uses_client_address()
    }

    fn key(
        &self,
        parts: &Parts,
        client: Option<IpAddr>,
        body: Option<&[u8]>,
    ) -> Result<Key, KeyError> {
        (**self).key(parts, client, body)
    }
}
