//! A request body as text, read the way a tolerant upstream reads it: the
//! charset of the Content-Type (UTF-8, UTF-16LE/BE, US-ASCII), a byte order
//! mark stripped (and, with no charset, obeyed), and for JSON without a
//! charset the UTF-16 detection of RFC 4627 (a zero byte among the first
//! two). A body an upstream could read but we could not would otherwise be
//! keyed apart from the account it names; what we cannot read is reported,
//! and the rule's `missing` policy decides.

use http::HeaderValue;
use std::borrow::Cow;

/// The text of `body`, for a form field (`json == false`) or a JSON field.
/// A form field is read only from a form body: another Content-Type
/// (JSON, multipart) is unreadable, since the upstream may find the field in it.
pub(super) fn text<'a>(
    content_type: Option<&HeaderValue>,
    body: &'a [u8],
    json: bool,
) -> Result<Cow<'a, str>, String> {
    let (essence, charset) = match content_type {
        None => (String::new(), None),
        Some(v) => media_type(v.to_str().map_err(|_| "the Content-Type is not ASCII")?),
    };
    if !json && !essence.is_empty() && essence != "application/x-www-form-urlencoded" {
        return Err(format!(
            "the body is {essence}, not application/x-www-form-urlencoded"
        ));
    }
    match charset.as_deref() {
        None => sniff(body, json),
        Some("utf-8" | "utf8") => utf8(body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body)),
        Some("us-ascii" | "ascii") if body.is_ascii() => utf8(body),
        Some("utf-16le") => utf16(body.strip_prefix(b"\xFF\xFE").unwrap_or(body), false),
        Some("utf-16be") => utf16(body.strip_prefix(b"\xFE\xFF").unwrap_or(body), true),
        Some("utf-16") => match body {
            [0xFF, 0xFE, rest @ ..] => utf16(rest, false),
            [0xFE, 0xFF, rest @ ..] => utf16(rest, true),
            _ => utf16(body, true),
        },
        Some(other) => Err(format!("the body is not in charset {other}")),
    }
}

/// No charset: a BOM says which; else JSON's first two bytes (RFC 4627
/// section 3: a JSON text starts with two ASCII characters); else UTF-8.
fn sniff(body: &[u8], json: bool) -> Result<Cow<'_, str>, String> {
    match body {
        [0xEF, 0xBB, 0xBF, rest @ ..] => utf8(rest),
        [0xFF, 0xFE, 0, 0, ..] | [0, 0, 0xFE, 0xFF, ..] => Err("UTF-32 is not supported".into()),
        [0xFF, 0xFE, rest @ ..] => utf16(rest, false),
        [0xFE, 0xFF, rest @ ..] => utf16(rest, true),
        [0, 0, ..] | [_, 0, 0, 0, ..] if json => Err("UTF-32 is not supported".into()),
        [0, b, ..] if json && *b != 0 => utf16(body, true),
        [a, 0, ..] if json && *a != 0 => utf16(body, false),
        _ => utf8(body),
    }
}

fn utf8(body: &[u8]) -> Result<Cow<'_, str>, String> {
    std::str::from_utf8(body)
        .map(Cow::Borrowed)
        .map_err(|_| "the body is not UTF-8".to_string())
}

fn utf16(body: &[u8], big_endian: bool) -> Result<Cow<'_, str>, String> {
    let bad = || "the body is not UTF-16".to_string();
    if body.len() % 2 != 0 {
        return Err(bad());
    }
    let units = body.chunks_exact(2).map(|c| {
        let pair = [c[0], c[1]];
        if big_endian {
            u16::from_be_bytes(pair)
        } else {
            u16::from_le_bytes(pair)
        }
    });
    char::decode_utf16(units)
        .collect::<Result<String, _>>()
        .map(Cow::Owned)
        .map_err(|_| bad())
}

/// `type/subtype` and the charset parameter, both lower case.
fn media_type(value: &str) -> (String, Option<String>) {
    let mut items = value.split(';');
    let essence = items.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = items
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("charset"))
        .map(|(_, v)| v.trim().trim_matches('"').to_ascii_lowercase());
    (essence, charset)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(ct: Option<&str>, body: &[u8], json: bool) -> Result<String, String> {
        let ct = ct.map(|c| HeaderValue::from_str(c).unwrap());
        text(ct.as_ref(), body, json).map(Cow::into_owned)
    }

    fn utf16le(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    fn utf16be(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_be_bytes).collect()
    }

    #[test]
    fn a_bom_is_stripped_and_obeyed() {
        let expected = Ok("{\"a\":1}".to_string());
        assert_eq!(read(None, b"\xEF\xBB\xBF{\"a\":1}", true), expected);
        let ct = Some("application/json; charset=UTF-8");
        assert_eq!(read(ct, b"\xEF\xBB\xBF{\"a\":1}", true), expected);
        let mut le = vec![0xFF, 0xFE];
        le.extend(utf16le("{\"a\":1}"));
        assert_eq!(read(None, &le, true), expected);
        assert_eq!(
            read(Some("application/json; charset=utf-16"), &le, true),
            expected
        );
        let mut be = vec![0xFE, 0xFF];
        be.extend(utf16be("a=1"));
        assert_eq!(read(None, &be, false), Ok("a=1".to_string()));
    }

    #[test]
    fn the_charset_of_the_content_type_is_honoured() {
        let ct = Some("application/x-www-form-urlencoded; charset=\"UTF-16LE\"");
        assert_eq!(read(ct, &utf16le("a=é"), false), Ok("a=é".to_string()));
        let ct = Some("application/json;charset=utf-16be");
        assert_eq!(read(ct, &utf16be("{}"), true), Ok("{}".to_string()));
        let ct = Some("application/json; charset=koi8-r");
        assert!(read(ct, b"{}", true).unwrap_err().contains("koi8-r"));
        assert!(read(Some("text/plain; charset=utf-8"), b"\xff", true).is_err());
    }

    #[test]
    fn json_without_a_charset_is_detected_as_rfc_4627_says() {
        assert_eq!(read(None, &utf16le("{}"), true), Ok("{}".to_string()));
        assert_eq!(read(None, &utf16be("[1]"), true), Ok("[1]".to_string()));
        assert!(read(None, b"{\0\0\0", true).is_err());
    }

    #[test]
    fn a_form_field_is_read_only_from_a_form_body() {
        let err = read(Some("application/json"), b"{}", false).unwrap_err();
        assert!(err.contains("application/json"), "{err}");
        assert!(read(Some("multipart/form-data; boundary=x"), b"", false).is_err());
        assert!(read(Some("Application/X-WWW-Form-Urlencoded"), b"a=1", false).is_ok());
        assert!(read(None, b"a=1", false).is_ok());
    }
}
