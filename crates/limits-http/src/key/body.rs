//! A request body as text, read as the upstream reads it: its raw bytes.
//! Go, PHP, Flask/Werkzeug, Django and Node read a form or JSON body's bytes
//! as they are, whatever charset its Content-Type names; a limiter that
//! transcoded a UTF-16 body would key a name hidden in it while the
//! upstream logs in the one written in plain bytes. So the limiter never
//! transcodes: a body in any charset but UTF-8 (or US-ASCII), or with a
//! UTF-16 or UTF-32 byte order mark, or a JSON body in UTF-16 or UTF-32
//! without one (RFC 4627's detection, which Python's `json` does), is
//! refused ([`KeyErrorReason::Charset`], 415). A UTF-8 byte order mark
//! before JSON is skipped (RFC 8259 lets parsers ignore it); before a form
//! it is refused, since upstreams read it as part of the first name.

use super::KeyErrorReason;
use http::HeaderValue;
use http::header::{CONTENT_TYPE, HeaderMap};

/// The request's one Content-Type: two fields, or one naming two media
/// types (as a proxy joins two fields), are ambiguous, since upstreams
/// differ on which one they read.
pub(crate) fn content_type(headers: &HeaderMap) -> Result<Option<&HeaderValue>, KeyErrorReason> {
    let mut all = headers.get_all(CONTENT_TYPE).iter();
    let first = all.next();
    if all.next().is_some() {
        return Err(KeyErrorReason::Ambiguous(
            "the request has more than one Content-Type".into(),
        ));
    }
    if let Some(v) = first {
        if split_unquoted(v.as_bytes(), b',').count() > 1 {
            return Err(KeyErrorReason::Ambiguous(
                "the Content-Type names more than one media type".into(),
            ));
        }
    }
    Ok(first)
}

/// The text of `body`, for a form field (`json == false`) or a JSON field.
/// A form field is read only from a form body: another Content-Type
/// (JSON, multipart) is unreadable, since the upstream may find the field
/// in it. Errors are `Unreadable` (the rule's `missing` policy answers),
/// `Charset` or `Ambiguous` (refused).
pub(super) fn text<'a>(
    content_type: Option<&HeaderValue>,
    body: &'a [u8],
    json: bool,
) -> Result<&'a str, KeyErrorReason> {
    let unreadable = |why: String| KeyErrorReason::Unreadable(why);
    let charset = |why: String| KeyErrorReason::Charset(why);
    let (essence, charsets) = match content_type {
        None => (String::new(), Vec::new()),
        Some(v) => media_type(
            v.to_str()
                .map_err(|_| unreadable("the Content-Type is not ASCII".into()))?,
        ),
    };
    if !json && !essence.is_empty() && essence != "application/x-www-form-urlencoded" {
        return Err(unreadable(format!(
            "the body is {essence}, not application/x-www-form-urlencoded"
        )));
    }
    match body {
        [0xFF, 0xFE, 0, 0, ..] | [0, 0, 0xFE, 0xFF, ..] => {
            return Err(charset(
                "the body starts with a UTF-32 byte order mark".into(),
            ));
        }
        [0xFF, 0xFE, ..] | [0xFE, 0xFF, ..] => {
            return Err(charset(
                "the body starts with a UTF-16 byte order mark".into(),
            ));
        }
        _ => {}
    }
    let mut ascii = false;
    for c in &charsets {
        match c.as_str() {
            "utf-8" | "utf8" => {}
            "us-ascii" | "ascii" => ascii = true,
            other => return Err(charset(format!("the Content-Type's charset is {other}"))),
        }
    }
    let body = match body.strip_prefix(b"\xEF\xBB\xBF") {
        Some(rest) if json => rest,
        Some(_) => {
            return Err(KeyErrorReason::Ambiguous(
                "the form starts with a UTF-8 byte order mark, read as part of its first name"
                    .into(),
            ));
        }
        None => body,
    };
    // RFC 4627 section 3: a JSON text starts with two ASCII characters, so
    // a zero byte among the first two means UTF-16 or UTF-32.
    if json && matches!(body, [0, ..] | [_, 0, ..]) {
        return Err(charset("the JSON body is UTF-16 or UTF-32".into()));
    }
    if ascii && !body.is_ascii() {
        return Err(charset("the body is declared US-ASCII but is not".into()));
    }
    std::str::from_utf8(body).map_err(|e| {
        charset(format!(
            "the body is not UTF-8 (byte {} is not)",
            e.valid_up_to()
        ))
    })
}

/// `type/subtype` and every charset parameter (`charset` or `charset*`),
/// lower case.
fn media_type(value: &str) -> (String, Vec<String>) {
    let mut items = split_unquoted(value.as_bytes(), b';');
    let essence = items
        .next()
        .map_or(String::new(), |e| lossy(e).trim().to_ascii_lowercase());
    let charsets = items
        .filter_map(|p| {
            let p = lossy(p);
            let (k, v) = p.split_once('=')?;
            // `charset*` is RFC 2231's spelling, which Django decodes.
            let k = k.trim();
            (k.eq_ignore_ascii_case("charset") || k.eq_ignore_ascii_case("charset*"))
                .then(|| v.trim().trim_matches('"').to_ascii_lowercase())
        })
        .collect();
    (essence, charsets)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `value` split at every `sep` outside a quoted string (RFC 9110 section
/// 5.6.4: `"` opens and closes one, `\` escapes the next byte in it).
fn split_unquoted(value: &[u8], sep: u8) -> impl Iterator<Item = &[u8]> {
    let mut quoted = false;
    let mut escaped = false;
    value.split(move |&b| {
        if escaped {
            escaped = false;
            return false;
        }
        match b {
            b'\\' if quoted => escaped = true,
            b'"' => quoted = !quoted,
            _ => return b == sep && !quoted,
        }
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(ct: Option<&str>, body: &[u8], json: bool) -> Result<String, KeyErrorReason> {
        let ct = ct.map(|c| HeaderValue::from_str(c).unwrap());
        text(ct.as_ref(), body, json).map(str::to_string)
    }

    fn utf16le(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    fn is_charset(r: Result<String, KeyErrorReason>) -> bool {
        matches!(r, Err(KeyErrorReason::Charset(_)))
    }

    #[test]
    fn a_utf8_bom_before_json_is_skipped() {
        let expected = Ok("{\"a\":1}".to_string());
        assert_eq!(read(None, b"\xEF\xBB\xBF{\"a\":1}", true), expected);
        let ct = Some("application/json; charset=UTF-8");
        assert_eq!(read(ct, b"\xEF\xBB\xBF{\"a\":1}", true), expected);
        let form = read(None, b"\xEF\xBB\xBFa=1", false);
        assert!(
            matches!(form, Err(KeyErrorReason::Ambiguous(_))),
            "{form:?}"
        );
    }

    #[test]
    fn utf16_and_utf32_bodies_are_refused_not_transcoded() {
        // Regression: a UTF-16 body was transcoded, and keyed by a name the
        // upstream, reading raw bytes, never saw.
        let mut le = vec![0xFF, 0xFE];
        le.extend(utf16le("a=1"));
        assert!(is_charset(read(None, &le, false)));
        assert!(is_charset(read(Some("application/json"), &le, true)));
        assert!(is_charset(read(None, b"\xFE\xFF\0a", false)));
        assert!(is_charset(read(None, b"\xFF\xFE\0\0{\0\0\0", true)));
        assert!(is_charset(read(None, b"\0\0\xFE\xFF", true)));
        // Without a BOM, JSON's first two bytes say UTF-16.
        assert!(is_charset(read(None, &utf16le("{}"), true)));
        let ct = Some("application/x-www-form-urlencoded; charset=\"UTF-16LE\"");
        assert!(is_charset(read(ct, b"a=1", false)));
        let err = read(Some("application/json; charset=koi8-r"), b"{}", true);
        assert!(matches!(&err, Err(KeyErrorReason::Charset(w)) if w.contains("koi8-r")));
        assert!(is_charset(read(
            Some("text/plain; charset=utf-8"),
            b"\xff",
            true
        )));
        assert!(is_charset(read(
            Some("text/plain; charset=us-ascii"),
            "é".as_bytes(),
            true
        )));
        // A second charset parameter is read too, and RFC 2231's spelling.
        let ct = Some("application/x-www-form-urlencoded; charset=utf-8; charset=latin1");
        assert!(is_charset(read(ct, b"a=1", false)));
        let ct = Some("application/x-www-form-urlencoded; charset*=utf-8''utf-16le");
        assert!(is_charset(read(ct, b"a=1", false)));
    }

    #[test]
    fn utf8_and_ascii_bodies_are_read_as_they_are() {
        let ct = Some("application/x-www-form-urlencoded; charset=utf-8");
        assert_eq!(read(ct, "a=é".as_bytes(), false), Ok("a=é".into()));
        let ct = Some("application/json; Charset=\"US-ASCII\"");
        assert_eq!(read(ct, b"{}", true), Ok("{}".into()));
    }

    #[test]
    fn a_form_field_is_read_only_from_a_form_body() {
        let err = read(Some("application/json"), b"{}", false);
        assert!(
            matches!(&err, Err(KeyErrorReason::Unreadable(w)) if w.contains("application/json"))
        );
        assert!(read(Some("multipart/form-data; boundary=x"), b"", false).is_err());
        assert!(read(Some("Application/X-WWW-Form-Urlencoded"), b"a=1", false).is_ok());
        assert!(read(None, b"a=1", false).is_ok());
    }

    #[test]
    fn two_content_types_are_ambiguous() {
        let mut h = HeaderMap::new();
        h.append(
            CONTENT_TYPE,
            "application/x-www-form-urlencoded".parse().unwrap(),
        );
        assert!(content_type(&h).is_ok());
        h.append(CONTENT_TYPE, "application/json".parse().unwrap());
        assert!(matches!(
            content_type(&h),
            Err(KeyErrorReason::Ambiguous(_))
        ));
        let mut h = HeaderMap::new();
        let joined = "application/x-www-form-urlencoded, application/json";
        h.insert(CONTENT_TYPE, joined.parse().unwrap());
        assert!(matches!(
            content_type(&h),
            Err(KeyErrorReason::Ambiguous(_))
        ));
        // A comma inside a quoted parameter is not a second type.
        h.insert(
            CONTENT_TYPE,
            "multipart/form-data; boundary=\"a,b\"".parse().unwrap(),
        );
        assert!(content_type(&h).is_ok());
    }
}
