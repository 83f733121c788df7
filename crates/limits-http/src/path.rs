//! The request path as the upstream will act on it.
//!
//! A rule on `/login` is worth nothing if `/%6cogin`, `//login`, `/./login`
//! or `/x/../login` reach the same handler upstream without meeting it. So
//! the layer normalizes the path once, matches rules on the result, and
//! rewrites the request to it: whatever serves the request next (the reverse
//! proxy, or the app behind the layer) sees the very path the rules saw, and
//! the limiter and the upstream never disagree about which route it is.
//!
//! What [`normalize`] does, in this order (as nginx does with
//! `merge_slashes on`, and Envoy with `normalize_path` and `merge_slashes`):
//!
//! 1. percent-decodes the unreserved characters (`A-Z a-z 0-9 - . _ ~`,
//!    RFC 3986 section 2.3: decoding them never changes a URI's meaning) and
//!    writes every other percent-escape with upper-case hex digits;
//! 2. merges repeated slashes (`//login` is `/login`);
//! 3. removes dot segments (RFC 3986 section 5.2.4: `/x/../login` is `/login`).
//!
//! It refuses, rather than guesses: a backslash, raw or encoded, and an
//! encoded slash (`\`, `%5C`, `%2F`: some upstreams read them as
//! separators, others do not), a malformed escape (`%4`, `%zz`), and a path
//! whose `..` would climb above the root. Case is kept (upstreams differ:
//! a rule says whether it matches without regard to case, see
//! [`PathMatch`](crate::PathMatch)), and so are `;` parameters: the path forwarded is the normalized path, parameters and all.
//! Rule matching ([`match_path`]) then reads each segment up to its first `;`
//! (encoded or not), so `/login;x` meets the rules of `/login`, as it would
//! meet that route on an upstream that strips path parameters.

use std::borrow::Cow;
use std::fmt;

/// Why a path was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathError {
    /// `%2F` or `%5C`: an encoded slash or backslash.
    EncodedSeparator,
    /// A raw `\`: WHATWG URL parsers (Node's `new URL`, Bun, Deno) and IIS
    /// read it as `/`, other upstreams as a character of the segment.
    Backslash,
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// More `..` segments than there are segments to remove.
    EscapesRoot,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PathError::EncodedSeparator => {
                "the path has an encoded slash or backslash (%2F, %5C), which upstreams read differently"
            }
            PathError::Backslash => {
                "the path has a backslash, which some upstreams read as '/' and others do not"
            }
            PathError::BadEscape => "the path has a '%' not followed by two hex digits",
            PathError::EscapesRoot => "the path climbs above the root with '..'",
        })
    }
}

impl std::error::Error for PathError {}

/// The normalized form of an origin-form path (`/...`); borrowed when it is
/// already normal.
///
/// ```
/// use limits_http::{normalize_path, PathError};
/// assert_eq!(normalize_path("/%6cogin").unwrap(), "/login");
/// assert_eq!(normalize_path("//login").unwrap(), "/login");
/// assert_eq!(normalize_path("/./login").unwrap(), "/login");
/// assert_eq!(normalize_path("/x/../login").unwrap(), "/login");
/// assert_eq!(normalize_path("/a%2fb"), Err(PathError::EncodedSeparator));
/// assert_eq!(normalize_path("/x\\..\\login"), Err(PathError::Backslash));
/// assert_eq!(normalize_path("/../etc/passwd"), Err(PathError::EscapesRoot));
/// ```
pub fn normalize_path(path: &str) -> Result<Cow<'_, str>, PathError> {
    if path.contains('\\') {
        return Err(PathError::Backslash);
    }
    let decoded = decode_unreserved(path)?;
    if is_normal(&decoded) {
        return Ok(decoded);
    }
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = decoded.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    // A trailing "/" (an empty last segment) or a last "." / ".." keeps the
    // path ending in "/", as RFC 3986 section 5.2.4 does.
    let mut trailing_slash = false;
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            "" | "." => trailing_slash = i == last,
            ".." => {
                if out.pop().is_none() {
                    return Err(PathError::EscapesRoot);
                }
                trailing_slash = i == last;
            }
            s => {
                out.push(s);
                trailing_slash = false;
            }
        }
    }
    let mut normal = String::with_capacity(decoded.len());
    for segment in &out {
        normal.push('/');
        normal.push_str(segment);
    }
    if trailing_slash || out.is_empty() {
        normal.push('/');
    }
    Ok(Cow::Owned(normal))
}

/// The path rules are matched on: the normalized path with each segment cut
/// at its first `;` or `%3B`, the start of path parameters.
///
/// ```
/// assert_eq!(limits_http::match_path("/login;jsessionid=1"), "/login");
/// assert_eq!(limits_http::match_path("/a;x/b%3By/c"), "/a/b/c");
/// assert_eq!(limits_http::match_path("/api/items"), "/api/items");
/// ```
pub fn match_path(normal: &str) -> Cow<'_, str> {
    // Most paths have neither `;` nor `%`: one pass over the bytes says so.
    let plain = !normal.bytes().any(|b| b == b';' || b == b'%');
    if plain || (!normal.contains(';') && !normal.contains("%3B")) {
        return Cow::Borrowed(normal);
    }
    let cut: Vec<&str> = normal
        .split('/')
        .map(|segment| {
            let end = [segment.find(';'), segment.find("%3B")]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(segment.len());
            &segment[..end]
        })
        .collect();
    Cow::Owned(cut.join("/"))
}

/// `path` as a rule that matches without regard to case compares it:
/// percent-escapes of non-ASCII bytes read as the characters they spell
/// (ASP.NET Core compares decoded paths), then Unicode lower case. A rule's
/// prefix goes through the same, so `/Café`, `/CAF%C3%89` and `/café` meet.
pub(crate) fn fold_case(path: &str) -> Cow<'_, str> {
    if path.is_ascii() && !path.contains('%') {
        if !path.bytes().any(|b| b.is_ascii_uppercase()) {
            return Cow::Borrowed(path);
        }
        return Cow::Owned(path.to_ascii_lowercase());
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |j: usize| bytes.get(j).and_then(|&b| (b as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(hi), Some(lo)) if hi >= 8 => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    // Bytes that spell no character fold to U+FFFD: two such paths then
    // meet, which only widens what a rule covers.
    Cow::Owned(String::from_utf8_lossy(&out).to_lowercase())
}

/// Starts with `/`; no `//`, no `.` or `..` segment. One pass over the
/// bytes, rather than a search for `//` and a split: it runs on every
/// request, and most paths are normal.
fn is_normal(path: &str) -> bool {
    let bytes = path.as_bytes();
    if bytes.first() != Some(&b'/') {
        return false;
    }
    // The segment being read: its length and how many of it are dots.
    let (mut len, mut dots) = (0usize, 0usize);
    let dot_segment = |len: usize, dots: usize| len > 0 && len <= 2 && dots == len;
    let mut previous = 0u8;
    for &b in bytes {
        if b == b'/' {
            if previous == b'/' || dot_segment(len, dots) {
                return false;
            }
            (len, dots) = (0, 0);
        } else {
            len += 1;
            dots += usize::from(b == b'.');
        }
        previous = b;
    }
    !dot_segment(len, dots)
}

/// Decodes `%XX` of unreserved characters, upper-cases the hex of the rest.
fn decode_unreserved(path: &str) -> Result<Cow<'_, str>, PathError> {
    if !path.contains('%') {
        return Ok(Cow::Borrowed(path));
    }
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'%' {
            // Copy up to the next '%' (char boundaries are kept: '%' is ASCII).
            let next = path[i..].find('%').map_or(bytes.len(), |n| i + n);
            out.push_str(&path[i..next]);
            i = next;
            continue;
        }
        let hex = |b: u8| (b as char).to_digit(16);
        let (Some(hi), Some(lo)) = (
            bytes.get(i + 1).and_then(|&b| hex(b)),
            bytes.get(i + 2).and_then(|&b| hex(b)),
        ) else {
            return Err(PathError::BadEscape);
        };
        let byte = (hi * 16 + lo) as u8;
        match byte {
            b'/' | b'\\' => return Err(PathError::EncodedSeparator),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            _ => {
                out.push('%');
                out.push_str(&format!("{byte:02X}"));
            }
        }
        i += 3;
    }
    Ok(if out == path {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(out)
    })
}

/// Normalizes the request's path (rewriting the request so that whatever
/// serves it sees the same path); returns the path rules match on when it
/// is not `match_path` of the request's path as it now is (`None`: it is).
/// `OPTIONS *` and `CONNECT host:port` have no path: they meet the rules of
/// `/`, as any other request to the server would.
pub(crate) fn normalize_target(
    parts: &mut http::request::Parts,
) -> Result<Option<String>, PathError> {
    let path = parts.uri.path();
    if !path.starts_with('/') {
        return Ok(Some("/".to_string()));
    }
    let normal = match normalize_path(path)? {
        std::borrow::Cow::Borrowed(_) => return Ok(None),
        std::borrow::Cow::Owned(normal) => normal,
    };
    let matched = match_path(&normal).into_owned();
    let target = match parts.uri.query() {
        Some(query) => format!("{normal}?{query}"),
        None => normal,
    };
    let mut uri = std::mem::take(&mut parts.uri).into_parts();
    // The normalized path is built from the valid one: it stays valid.
    uri.path_and_query = http::uri::PathAndQuery::try_from(target).ok();
    parts.uri = http::Uri::from_parts(uri).unwrap_or_default();
    Ok(Some(matched))
}

#[cfg(test)]
mod tests {
    mod normal;

    use super::*;

    #[test]
    fn every_spelling_of_login_in_the_issue_is_login() {
        for spelling in [
            "/login",
            "/%6cogin",
            "/%6Cogin",
            "//login",
            "///login",
            "/./login",
            "/x/../login",
            "/x//../login",
            "/%2e/login",
            "/x/%2E%2E/login",
            "/a/b/../../login",
        ] {
            assert_eq!(normalize_path(spelling).unwrap(), "/login", "{spelling}");
        }
        assert_eq!(match_path(&normalize_path("/login;x").unwrap()), "/login");
        assert_eq!(match_path(&normalize_path("/login%3bx").unwrap()), "/login");
    }

    #[test]
    fn normal_paths_are_borrowed_and_kept() {
        for path in ["/", "/api/items", "/api/items/", "/a%20b", "/a;b=c/d"] {
            assert!(matches!(normalize_path(path), Ok(Cow::Borrowed(p)) if p == path));
        }
    }

    #[test]
    fn trailing_slashes_and_dots_follow_rfc_3986() {
        assert_eq!(normalize_path("/a/b/.").unwrap(), "/a/b/");
        assert_eq!(normalize_path("/a/b/..").unwrap(), "/a/");
        assert_eq!(normalize_path("/a/..").unwrap(), "/");
        assert_eq!(normalize_path("/.").unwrap(), "/");
        assert_eq!(normalize_path("/a//").unwrap(), "/a/");
        assert_eq!(normalize_path("/a/.hidden/..x").unwrap(), "/a/.hidden/..x");
    }

    #[test]
    fn escapes_other_than_unreserved_stay_escaped_in_upper_case() {
        assert_eq!(normalize_path("/a%2fb"), Err(PathError::EncodedSeparator));
        assert_eq!(normalize_path("/a%5cb"), Err(PathError::EncodedSeparator));
        assert_eq!(normalize_path("/a%3f").unwrap(), "/a%3F");
        assert_eq!(normalize_path("/%25%7e").unwrap(), "/%25~");
        assert_eq!(normalize_path("/%c3%a9").unwrap(), "/%C3%A9");
        for bad in ["/%", "/%4", "/%zz", "/%4g"] {
            assert_eq!(normalize_path(bad), Err(PathError::BadEscape), "{bad}");
        }
    }

    #[test]
    fn a_raw_backslash_is_refused_like_an_encoded_one() {
        // Regression: `/x\..\login` reached a WHATWG-parsing upstream's
        // `/login` without meeting its rules.
        for bad in ["/x\\..\\login", "/\\login", "/login\\", "/a\\b"] {
            assert_eq!(normalize_path(bad), Err(PathError::Backslash), "{bad}");
        }
    }

    #[test]
    fn case_folding_reads_non_ascii_escapes_as_characters() {
        assert_eq!(fold_case("/login"), "/login");
        assert_eq!(fold_case("/LogIn"), "/login");
        assert_eq!(fold_case("/CAF%C3%89"), "/café");
        assert_eq!(fold_case("/Café"), "/café");
        assert_eq!(fold_case("/a%20B"), "/a%20b");
    }

    #[test]
    fn climbing_above_the_root_is_refused() {
        for bad in ["/..", "/../x", "/a/../../x", "/%2e%2e/x"] {
            assert_eq!(normalize_path(bad), Err(PathError::EscapesRoot), "{bad}");
        }
    }

    proptest::proptest! {
        /// A normalized path meets no further normalization upstream.
        #[test]
        fn normalizing_twice_changes_nothing(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["/", "a", ".", "..", "%2e", "%41", "%20", ";", "%3B", "x", "%"]),
                0..12,
            )
        ) {
            let path = format!("/{}", parts.concat());
            if let Ok(once) = normalize_path(&path) {
                let twice = normalize_path(&once).unwrap();
                proptest::prop_assert_eq!(&once, &twice);
                proptest::prop_assert!(is_normal(&once), "{} -> {}", path, once);
            }
        }
    }
}
