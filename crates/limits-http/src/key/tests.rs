//! Keys of whole requests: tags, escapes, the `missing` policies, repeated
//! fields, normalization, and (property) that no client value forges a key.

use super::*;
use proptest::prelude::*;

fn parts(uri: &str, headers: &[(&str, &str)]) -> Parts {
    let mut b = http::Request::builder().uri(uri);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(()).unwrap().into_parts().0
}

const IP: Option<IpAddr> = Some(IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1)));

fn spec(s: &str) -> KeySpec {
    s.parse().unwrap()
}

#[test]
fn every_part_kind_extracts_under_its_tag() {
    let p = parts(
        "/login?api_key=k1",
        &[("x-api-key", "abc"), ("cookie", "a=1; session=s9; b=2")],
    );
    let key = |s: &str, body: Option<&[u8]>| spec(s).extract(&p, IP, body).unwrap();
    assert_eq!(key("ip", None), "ip=192.0.2.1");
    assert_eq!(key("header:X-Api-Key", None), "header:x-api-key=abc");
    assert_eq!(key("cookie:session", None), "cookie:session=s9");
    assert_eq!(key("query:api_key", None), "query:api_key=k1");
    assert_eq!(
        key("form:username", Some(b"username=alice&password=x")),
        "form:username=alice"
    );
    assert_eq!(
        key("json:user.name", Some(br#"{"user":{"name":"bob"}}"#)),
        "json:user.name=bob"
    );
    assert_eq!(
        key("ip+form:username", Some(b"username=a%7Cb%5C")),
        "ip=192.0.2.1|form:username=a\\|b\\\\"
    );
    assert_eq!(key("query:a=b", None), "missing:ip=192.0.2.1");
}

#[test]
fn a_header_value_cannot_spend_a_keyless_clients_limit() {
    // Regression: `X-Api-Key: ip:127.0.0.41` was keyed `ip:127.0.0.41`, the
    // key of 127.0.0.41's requests without the header.
    let keyless = spec("header:X-Api-Key")
        .extract(&parts("/", &[]), "127.0.0.41".parse().ok(), None)
        .unwrap();
    for forged in [
        "ip:127.0.0.41",
        "missing:ip=127.0.0.41",
        "x|missing:ip=127.0.0.41",
    ] {
        let p = parts("/", &[("x-api-key", forged)]);
        let key = spec("header:X-Api-Key").extract(&p, IP, None).unwrap();
        assert_ne!(key, keyless, "{forged}");
        assert!(key.starts_with("header:x-api-key="), "{key}");
    }
}

#[test]
fn missing_parts_follow_the_rules_policy() {
    let p = parts("/", &[]);
    // Defaults: ip for headers, cookies and queries; reject for body fields.
    assert_eq!(
        spec("header:X-Api-Key").extract(&p, IP, None),
        Ok("missing:ip=192.0.2.1".to_string())
    );
    let err = spec("form:username").extract(&p, IP, Some(b"password=x"));
    assert_eq!(
        err,
        Err(KeyError {
            field: "form:username".into(),
            reason: KeyErrorReason::Missing
        })
    );
    assert!(err.unwrap_err().to_string().contains("form:username"));
    // An empty value is missing too.
    let shared = spec("ip+query:k").with_missing(Missing::Shared);
    assert_eq!(
        shared.extract(&parts("/?k=", &[]), IP, None),
        Ok("missing:shared".to_string())
    );
    let ip = spec("json:user").with_missing(Missing::Ip);
    assert_eq!(
        ip.extract(&p, IP, Some(b"{}")),
        Ok("missing:ip=192.0.2.1".to_string())
    );
    let reject = spec("cookie:s").with_missing(Missing::Reject);
    assert!(reject.extract(&p, IP, None).is_err());
}

#[test]
fn an_unreadable_body_is_refused_by_default() {
    let json_on_form = parts("/", &[("content-type", "application/json")]);
    let err = spec("form:username")
        .extract(&json_on_form, IP, Some(br#"{"username":"alice"}"#))
        .unwrap_err();
    assert!(matches!(err.reason, KeyErrorReason::Unreadable(_)), "{err}");
    assert!(err.to_string().contains("application/json"), "{err}");
    let err = spec("json:username")
        .extract(&parts("/", &[]), IP, Some(b"{\"username\":"))
        .unwrap_err();
    assert!(matches!(err.reason, KeyErrorReason::Unreadable(_)), "{err}");
}

#[test]
fn a_repeated_field_is_an_error_whatever_the_missing_policy() {
    let p = parts("/?api_key=r1&api_key=real", &[]);
    let err = spec("header:x-other+query:api_key")
        .with_missing(Missing::Shared)
        .extract(&p, IP, None)
        .unwrap_err();
    assert_eq!(err.field, "query:api_key");
    assert_eq!(err.reason, KeyErrorReason::Repeated);
    let twice = parts("/?api_key=same&api_key=same", &[]);
    assert_eq!(
        spec("query:api_key").extract(&twice, IP, None),
        Ok("query:api_key=same".to_string())
    );
}

#[test]
fn body_fields_are_normalized_by_default_and_others_are_not() {
    let p = parts("/?k=AbC", &[("content-type", "application/json")]);
    let body: &[u8] = r#"{"username":" ＡＬＩＣＥ "}"#.as_bytes();
    assert_eq!(
        spec("json:username").extract(&p, IP, Some(body)),
        Ok("json:username=alice".to_string())
    );
    assert_eq!(
        spec("query:k").extract(&p, IP, None),
        Ok("query:k=AbC".to_string())
    );
    let off = spec("json:username").with_normalize(Normalize::NONE);
    let inner: &[u8] = r#"{"username":"Ａ ＬＩＣＥ"}"#.as_bytes();
    assert_eq!(
        off.extract(&p, IP, Some(inner)),
        Ok("json:username=Ａ ＬＩＣＥ".to_string())
    );
    // Without trim, white space at an end is read two ways upstream.
    let err = off.extract(&p, IP, Some(body)).unwrap_err();
    assert!(matches!(err.reason, KeyErrorReason::Ambiguous(_)), "{err}");
    let lower = spec("query:k").with_normalize(Normalize::from_steps([NormalizeStep::Lowercase]));
    assert_eq!(lower.extract(&p, IP, None), Ok("query:k=abc".to_string()));
    // A value that normalizes to nothing is missing.
    let blank = parts("/?k=%20", &[]);
    let trimmed = spec("query:k").with_normalize(Normalize::ACCOUNT);
    assert_eq!(
        trimmed.extract(&blank, IP, None),
        Ok("missing:ip=192.0.2.1".to_string())
    );
}

#[test]
fn long_keys_are_hashed_and_a_value_cannot_forge_a_hash() {
    let long = "k".repeat(10_000);
    let p = parts("/", &[("x-api-key", long.as_str())]);
    let key = spec("header:x-api-key").extract(&p, IP, None).unwrap();
    assert!(key.starts_with("sha256:") && key.len() == 7 + 32, "{key}");
    let other = parts("/", &[("x-api-key", &("k".repeat(9_999) + "j"))]);
    let key2 = spec("header:x-api-key").extract(&other, IP, None).unwrap();
    assert_ne!(key, key2);
    let forged = parts("/", &[("x-api-key", key.as_str())]);
    let key3 = spec("header:x-api-key").extract(&forged, IP, None).unwrap();
    assert_eq!(key3, format!("header:x-api-key={key}"));
}

/// What a key must tell apart: the (tag, value) list, or "missing" and the address.
fn meaning(spec: &KeySpec, ip: Option<IpAddr>, values: &[(&str, Option<String>)]) -> String {
    let ip_text = ip.map_or("unknown".to_string(), |ip| ip.to_string());
    let mut out = Vec::new();
    for part in spec.parts() {
        let value = match part {
            KeyPart::Ip => Some(ip_text.clone()),
            KeyPart::Query(name) => values
                .iter()
                .find(|(n, _)| n == name)
                .and_then(|(_, v)| v.clone()),
            _ => unreachable!("the property uses ip and query parts"),
        };
        match value {
            Some(v) if !v.is_empty() => out.push(format!("{part:?}={v:?}")),
            _ => return format!("missing {ip_text}"),
        }
    }
    out.join(", ")
}

const SPECS: [&str; 7] = [
    "query:a",
    "query:b",
    "query:a+query:b",
    "ip+query:a",
    "query:a+ip",
    "query:a=b",
    "query:a=b+query:a",
];

const TOKENS: [&str; 16] = [
    "a",
    "|",
    "\\",
    "=",
    "ip",
    ":",
    "+",
    "192.0.2.1",
    "query:a",
    "query:b",
    "missing",
    "shared",
    "sha256:",
    "é",
    " ",
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
];

fn value() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(
        proptest::collection::vec(proptest::sample::select(TOKENS.to_vec()), 0..6)
            .prop_map(|t| t.concat()),
    )
}

fn input() -> impl Strategy<Value = (usize, Option<IpAddr>, Vec<Option<String>>)> {
    let ips = [
        None,
        "192.0.2.1".parse().ok(),
        "192.0.2.2".parse().ok(),
        "2001:db8::1".parse().ok(),
    ];
    (
        0..SPECS.len(),
        proptest::sample::select(ips.to_vec()),
        proptest::collection::vec(value(), 3),
    )
}

proptest! {
    #[test]
    fn no_client_value_makes_another_inputs_key(inputs in proptest::collection::vec(input(), 1..40)) {
        let mut seen: std::collections::HashMap<String, String> = Default::default();
        for (i, ip, vals) in inputs {
            let spec = spec(SPECS[i]);
            let named: Vec<(&str, Option<String>)> =
                ["a", "b", "a=b"].into_iter().zip(vals).collect();
            let mut query = form_urlencoded::Serializer::new(String::new());
            for (name, v) in &named {
                if let Some(v) = v {
                    query.append_pair(name, v);
                }
            }
            let p = parts(&format!("/?{}", query.finish()), &[]);
            let key = match spec.extract(&p, ip, None) {
                Ok(key) => key,
                Err(e) => {
                    // Refused only for white space at an end, which
                    // upstreams that trim read as another value.
                    let spaced = |v: &Option<String>| {
                        v.as_deref().is_some_and(|v| v.starts_with(' ') || v.ends_with(' '))
                    };
                    prop_assert!(matches!(e.reason, KeyErrorReason::Ambiguous(_)), "{}", e);
                    prop_assert!(named.iter().any(|(_, v)| spaced(v)), "{}", e);
                    continue;
                }
            };
            let meant = meaning(&spec, ip, &named);
            if let Some(before) = seen.insert(key.clone(), meant.clone()) {
                prop_assert_eq!(before, meant, "{} for both", key);
            }
        }
    }
}
