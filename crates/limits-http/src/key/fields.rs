//! Looking up one named field in headers, cookies, a query string or a form
//! body, every occurrence of it under every name a common upstream reads
//! as its name: a field sent twice with different values is
//! [`Lookup::Repeated`], since the limiter cannot know which one the
//! upstream reads (many take the last, others the first).
//!
//! The names one field goes by:
//! - parameters (query, form, cookie): PHP turns spaces and dots in a name
//!   into `_`, a `[` without its `]` too, and ignores leading spaces
//!   (`api.key`, `api key`, `api[key` are `api_key`); `api_key[]` is an
//!   array of `api_key` to PHP, Rails and Express; ASP.NET Core reads names
//!   without regard to case. Names are compared after all of these.
//! - headers: CGI-style upstreams (PHP, WSGI, CGI) read `X_Api_Key` and
//!   `X-Api-Key` as one `HTTP_X_API_KEY` (Apache, any character but a
//!   letter or digit as `_`).
//! - a query or form splits at `&`, and at `;` too for some upstreams
//!   (Python before 3.9.2, Rack before 3, Go before 1.17): a field found in
//!   either reading counts, and a key field whose value a `;` would cut is
//!   ambiguous.
//!
//! Values are percent-decoded (`+` is a space) as every upstream decodes a
//! query or form, and as PHP, Express and Rails decode a cookie (Go and
//! Java keep a cookie as sent: decoding groups every spelling they keep
//! apart, so no spelling escapes the count). What two upstreams decode
//! differently is [`Lookup::Refused`]: a malformed escape (kept by some,
//! dropped by others), escapes that are not UTF-8 (bytes to some,
//! U+FFFD to others), and a quoted cookie with a `\` (an escape to
//! Python's `http.cookies`, a character to the rest).

use super::KeyErrorReason;
use http::header::{COOKIE, HeaderMap, HeaderName};

/// What a request says about one key field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    /// Present once, or several times with this one value.
    Found(String),
    /// Not there.
    Absent,
    /// There, but not readable (why).
    Unreadable(String),
    /// There several times, with different values.
    Repeated,
    /// There, in a form upstreams read differently: refused whatever the
    /// rule's `missing` policy.
    Refused(KeyErrorReason),
}

impl Lookup {
    /// Folds one more occurrence in: same value stays, another is `Repeated`.
    pub(super) fn and(self, next: Lookup) -> Lookup {
        match (self, next) {
            (Lookup::Refused(why), _) | (_, Lookup::Refused(why)) => Lookup::Refused(why),
            (Lookup::Absent, next) | (next, Lookup::Absent) => next,
            (Lookup::Found(a), Lookup::Found(b)) if a == b => Lookup::Found(a),
            (Lookup::Unreadable(why), Lookup::Found(_) | Lookup::Unreadable(_))
            | (Lookup::Found(_), Lookup::Unreadable(why)) => Lookup::Unreadable(why),
            _ => Lookup::Repeated,
        }
    }

    fn all(occurrences: impl Iterator<Item = Lookup>) -> Lookup {
        occurrences.fold(Lookup::Absent, Lookup::and)
    }

    fn ambiguous(why: &str) -> Lookup {
        Lookup::Refused(KeyErrorReason::Ambiguous(why.to_string()))
    }
}

/// Every line of header `name`, and of every header a CGI-style upstream
/// reads as it (Apache's CGI environment writes every character but a
/// letter or digit as `_`: `X_Api_Key` and `X.Api.Key` are `X-Api-Key`).
pub(super) fn header(headers: &HeaderMap, name: &HeaderName) -> Lookup {
    let lines = |name: &HeaderName| {
        Lookup::all(headers.get_all(name).iter().map(|v| match v.to_str() {
            Ok(v) => Lookup::Found(v.to_string()),
            Err(_) => Lookup::Unreadable(format!("header {name} is not visible ASCII")),
        }))
    };
    let mut found = lines(name);
    let same = |other: &HeaderName| {
        let (a, b) = (other.as_str().as_bytes(), name.as_str().as_bytes());
        let dash = |b: u8| if b.is_ascii_alphanumeric() { b } else { b'-' };
        a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| dash(x) == dash(y))
    };
    for other in headers.keys() {
        if other != name && same(other) {
            found = found.and(lines(other));
        }
    }
    found
}

/// Every `name=value` pair of every Cookie header; the value without
/// surrounding white space or double quotes, percent-decoded.
pub(super) fn cookie(headers: &HeaderMap, name: &str) -> Lookup {
    let want = param_name(name);
    Lookup::all(headers.get_all(COOKIE).iter().map(|line| {
        let Ok(line) = line.to_str() else {
            return Lookup::Unreadable("a Cookie header is not visible ASCII".to_string());
        };
        Lookup::all(
            line.split(';')
                .filter_map(|pair| pair.split_once('='))
                .filter(|(k, _)| is_named(k.trim(), &want))
                .map(|(_, v)| cookie_value(v.trim())),
        )
    }))
}

/// A cookie's value as the key reads it: decoded, and `+` (sent or
/// escaped) one character with a space, since PHP and Rack read a `+` as a
/// space and Express and Go as a `+`.
fn cookie_value(v: &str) -> Lookup {
    let v = match v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        Some(inner) if inner.contains('\\') => {
            return Lookup::ambiguous(
                "a quoted cookie value has a '\\' (an escape to Python's http.cookies)",
            );
        }
        Some(inner) => inner,
        None => v,
    };
    match value(v) {
        Lookup::Found(v) if v.contains('+') => Lookup::Found(v.replace('+', " ")),
        other => other,
    }
}

/// Every `name=value` pair of a query string or form body, split at `&`
/// and at `;`.
pub(super) fn pairs(input: &str, name: &str) -> Lookup {
    let want = param_name(name);
    let mut found = Lookup::Absent;
    for field in input.split('&') {
        let (k, v) = field.split_once('=').unwrap_or((field, ""));
        if is_named(k, &want) {
            found = found.and(if v.contains(';') {
                Lookup::ambiguous("its value has a ';', where some upstreams end it")
            } else {
                value(v)
            });
        }
        if !field.contains(';') {
            continue;
        }
        // The reading of upstreams that split at ';' too. Its first piece
        // has the name the `&` reading has when it holds a '=': read above.
        for (i, piece) in field.split(';').enumerate() {
            let (k, v) = piece.split_once('=').unwrap_or((piece, ""));
            if (i > 0 || !piece.contains('=')) && is_named(k, &want) {
                found = found.and(value(v));
            }
        }
    }
    found
}

/// A value percent-decoded, `+` as a space; refused when upstreams would
/// decode it differently.
fn value(v: &str) -> Lookup {
    match decode(v, true) {
        Ok(decoded) => Lookup::Found(decoded),
        Err(why) => Lookup::ambiguous(why),
    }
}

/// `raw` as a query or form decodes it (`+` a space); an error for a
/// malformed escape or bytes that are not UTF-8.
pub(crate) fn decode_plus(raw: &str) -> Result<String, &'static str> {
    decode(raw, true)
}

/// `raw` with its `%XX` escapes decoded (and `+` as a space when
/// `plus`); an error for a malformed escape or bytes that are not UTF-8.
fn decode(raw: &str, plus: bool) -> Result<String, &'static str> {
    if !raw.contains(['%', '+']) {
        return Ok(raw.to_string());
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = |j: usize| bytes.get(j).and_then(|&b| (b as char).to_digit(16));
                let (Some(hi), Some(lo)) = (hex(i + 1), hex(i + 2)) else {
                    return Err("it has a '%' not followed by two hex digits");
                };
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            b'+' if plus => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| "its percent-escapes are not UTF-8")
}

/// A parameter name as every common upstream's reading of it compares:
/// decoded, leading spaces dropped, lower case, spaces and dots as `_`, an
/// unclosed `[` as `_`, and a closed `[...]` (an array's index) cut off.
pub(super) fn param_name(raw: &str) -> String {
    let decoded = match decode(raw, true) {
        Ok(d) => d,
        Err(_) => raw.to_string(),
    };
    let name = decoded.trim_start_matches(' ');
    let mut out = String::with_capacity(name.len());
    for (i, c) in name.char_indices() {
        match c {
            ' ' | '.' => out.push('_'),
            '[' if name[i..].contains(']') => break,
            '[' => out.push('_'),
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// Whether the name `raw` is `want` (a [`param_name`]).
fn is_named(raw: &str, want: &str) -> bool {
    // Most names are plain: compared without building their reading.
    let plain = raw
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain && !raw.is_empty() {
        return raw.eq_ignore_ascii_case(want);
    }
    param_name(raw) == want
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(v: &str) -> Lookup {
        Lookup::Found(v.to_string())
    }

    #[test]
    fn a_repeated_query_field_with_different_values_is_repeated() {
        assert_eq!(
            pairs("api_key=r1&api_key=real", "api_key"),
            Lookup::Repeated
        );
        assert_eq!(pairs("api_key=r1&x=2&api_key=r1", "api_key"), found("r1"));
        assert_eq!(pairs("a=1", "api_key"), Lookup::Absent);
    }

    #[test]
    fn repeated_headers_and_cookies_are_compared_across_lines() {
        let mut h = HeaderMap::new();
        let name = HeaderName::from_static("x-api-key");
        h.append(&name, "a".parse().unwrap());
        h.append(&name, "a".parse().unwrap());
        assert_eq!(header(&h, &name), found("a"));
        h.append(&name, "b".parse().unwrap());
        assert_eq!(header(&h, &name), Lookup::Repeated);

        let mut h = HeaderMap::new();
        h.append(COOKIE, "s=1; t=2".parse().unwrap());
        h.append(COOKIE, "s=\"1\"".parse().unwrap());
        assert_eq!(cookie(&h, "s"), found("1"));
        h.append(COOKIE, "u=0; s=2".parse().unwrap());
        assert_eq!(cookie(&h, "s"), Lookup::Repeated);
    }

    #[test]
    fn an_unreadable_header_is_unreadable() {
        let mut h = HeaderMap::new();
        let name = HeaderName::from_static("x-api-key");
        h.append(&name, http::HeaderValue::from_bytes(b"caf\xe9").unwrap());
        assert!(matches!(header(&h, &name), Lookup::Unreadable(_)));
    }

    fn ambiguous(l: Lookup) -> bool {
        matches!(l, Lookup::Refused(KeyErrorReason::Ambiguous(_)))
    }

    #[test]
    fn every_name_php_or_aspnet_reads_as_api_key_is_api_key() {
        for name in [
            "api_key",
            "api.key",
            "api key",
            "api+key",
            "api%20key",
            "api[key",
            " api_key",
            "API_KEY",
            "Api.Key",
            "api%2Ekey",
            "api_key[]",
            "api_key[0]",
        ] {
            assert_eq!(param_name(name), "api_key", "{name}");
            let q = format!("api_key=rnd&{name}=REAL");
            assert_eq!(pairs(&q, "api_key"), Lookup::Repeated, "{q}");
            let q = format!("{name}=REAL");
            assert_eq!(pairs(&q, "api_key"), found("REAL"), "{q}");
        }
        for other in ["apikey", "api-key", "api_key2", "xapi_key"] {
            assert_eq!(
                pairs(&format!("api_key=a&{other}=b"), "api_key"),
                found("a")
            );
        }
    }

    #[test]
    fn a_query_split_at_semicolons_too_is_read_both_ways() {
        assert_eq!(pairs("x=1;api_key=REAL", "api_key"), found("REAL"));
        assert_eq!(
            pairs("api_key=rnd&x=1;api_key=REAL", "api_key"),
            Lookup::Repeated
        );
        assert!(ambiguous(pairs("api_key=REAL;x=1", "api_key")));
        assert_eq!(pairs("a=1;b=2&api_key=k", "api_key"), found("k"));
    }

    #[test]
    fn values_two_upstreams_decode_differently_are_refused() {
        assert_eq!(pairs("u=al%69ce+b", "u"), found("alice b"));
        assert!(ambiguous(pairs("u=alice%zz", "u")));
        assert!(ambiguous(pairs("u=alice%FF", "u")));
        assert!(ambiguous(pairs("u=alice%4", "u")));
    }

    #[test]
    fn cookies_are_keyed_decoded_and_refused_where_upstreams_disagree() {
        let jar = |line: &str| {
            let mut h = HeaderMap::new();
            h.append(COOKIE, line.parse().unwrap());
            cookie(&h, "session")
        };
        for spelling in ["alice", "al%69ce", "%61lice", "\"alice\"", "\"al%69ce\""] {
            assert_eq!(
                jar(&format!("session={spelling}")),
                found("alice"),
                "{spelling}"
            );
        }
        // '+' and a space are one character to the key: PHP and Rack read
        // '+' as a space, Express and Go as '+'.
        assert_eq!(jar("session=a+b"), found("a b"));
        assert_eq!(jar("session=a%2Bb"), found("a b"));
        assert_eq!(jar("session=a%20b"), found("a b"));
        // Python's http.cookies undoes octal escapes in a quoted value.
        assert!(ambiguous(jar("session=\"\\141lice\"")));
        assert!(ambiguous(jar("session=al%zzice")));
        assert!(ambiguous(jar("session=al%FFice")));
        // ASP.NET Core reads cookie names without regard to case.
        assert_eq!(jar("Session=a; session=a"), found("a"));
        assert_eq!(jar("Session=a; session=b"), Lookup::Repeated);
    }

    #[test]
    fn cgi_reads_an_underscored_header_as_its_dashed_name() {
        let name = HeaderName::from_static("x-api-key");
        let mut h = HeaderMap::new();
        h.append("x_api_key", "REAL".parse().unwrap());
        assert_eq!(header(&h, &name), found("REAL"));
        h.append(&name, "rnd".parse().unwrap());
        assert_eq!(header(&h, &name), Lookup::Repeated);
        let mut h = HeaderMap::new();
        h.append("x_api_key", "k".parse().unwrap());
        h.append("x-api-key", "k".parse().unwrap());
        h.append("x-api_keys", "other".parse().unwrap());
        h.append("x.api.key", "k".parse().unwrap());
        assert_eq!(header(&h, &name), found("k"));
        let underscored = HeaderName::from_static("x_api_key");
        assert_eq!(header(&h, &underscored), found("k"));
    }
}
