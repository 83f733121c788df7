//! Looking up one named field in headers, cookies, a query string or a form
//! body, every occurrence of it: a field sent twice with different values is
//! [`Lookup::Repeated`], since the limiter cannot know which one the
//! upstream reads (many take the last, where we used to take the first).

use http::header::{HeaderMap, HeaderName, COOKIE};

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
}

impl Lookup {
    /// Folds one more occurrence in: same value stays, another is `Repeated`.
    pub(super) fn and(self, next: Lookup) -> Lookup {
        match (self, next) {
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
}

/// Every line of header `name`.
pub(super) fn header(headers: &HeaderMap, name: &HeaderName) -> Lookup {
    Lookup::all(headers.get_all(name).iter().map(|v| match v.to_str() {
        Ok(v) => Lookup::Found(v.to_string()),
        Err(_) => Lookup::Unreadable(format!("header {name} is not visible ASCII")),
    }))
}

/// Every `name=value` pair of every Cookie header; the value without
/// surrounding white space or double quotes.
pub(super) fn cookie(headers: &HeaderMap, name: &str) -> Lookup {
    Lookup::all(headers.get_all(COOKIE).iter().map(|line| {
        let Ok(line) = line.to_str() else {
            return Lookup::Unreadable("a Cookie header is not visible ASCII".to_string());
        };
        Lookup::all(
            line.split(';')
                .filter_map(|pair| pair.split_once('='))
                .filter(|(k, _)| k.trim() == name)
                .map(|(_, v)| Lookup::Found(v.trim().trim_matches('"').to_string())),
        )
    }))
}

/// Every `name=value` pair of a query string or form body.
pub(super) fn pairs(input: &[u8], name: &str) -> Lookup {
    Lookup::all(
        form_urlencoded::parse(input)
            .filter(|(k, _)| k == name)
            .map(|(_, v)| Lookup::Found(v.into_owned())),
    )
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
            pairs(b"api_key=r1&api_key=real", "api_key"),
            Lookup::Repeated
        );
        assert_eq!(pairs(b"api_key=r1&x=2&api_key=r1", "api_key"), found("r1"));
        assert_eq!(pairs(b"a=1", "api_key"), Lookup::Absent);
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
}
