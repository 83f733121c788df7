//! The layer reads a key field the way every common upstream does, or
//! refuses the request (issue 22, points 1 to 4 and 8): no spelling of a
//! field or of its value gets a client a key of its own while the upstream
//! reads another.

use crate::common;

use axum::Router;
use axum::body::Body;
use axum::routing::{get, post};
use common::*;
use http::{Request, StatusCode};
use limits::{Algorithm, ManualClock, Store};
use limits_http::{KeySpec, Normalize, PeerAddr, Policy, RateLimitLayer};
use std::collections::BTreeSet;

/// A login route (and `/`) behind one rule keyed by `key`, 3 a minute.
fn limited(key: &str) -> Router {
    let clock = ManualClock::new(0);
    let policy = Policy::new(vec![rule(
        "login",
        "/",
        key,
        store(Algorithm::SlidingLog, "3/m", &clock),
    )]);
    login_app(policy)
}

fn login_app<S: Store>(policy: Policy<S>) -> Router {
    Router::new()
        .route("/", get(|| async { "hello" }))
        .route("/login", post(|body: bytes::Bytes| async move { body }))
        .layer(RateLimitLayer::new(policy))
}

fn post_login(content_type: &str, body: impl Into<Body>, peer: &str) -> Request<Body> {
    let mut r = Request::post("/login")
        .header("content-type", content_type)
        .body(body.into())
        .unwrap();
    r.extensions_mut().insert(PeerAddr(peer.parse().unwrap()));
    r
}

fn get_with(uri: &str, headers: &[(&str, &str)], peer: &str) -> Request<Body> {
    let mut r = request(uri, peer);
    for (k, v) in headers {
        r.headers_mut().append(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    r
}

fn utf16le(text: &str) -> Vec<u8> {
    text.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

const FORM: &str = "application/x-www-form-urlencoded";

#[tokio::test]
async fn a_login_hidden_in_a_utf16_form_is_415_not_a_fresh_key_each_time() {
    // Regression: `username=alice&x` followed by UTF-16 of
    // `&username=rnd<N>` was transcoded and keyed by the throw-away name,
    // while the upstream read the raw bytes and logged in alice: 10 of 10
    // passed a 3 per minute limit.
    let app = limited("form:username");
    let mut passed = 0;
    for n in 0..10 {
        let mut body = b"username=alice&x".to_vec();
        body.extend(utf16le(&format!("&username=rnd{n}")));
        for ct in [
            format!("{FORM}; charset=utf-16le"),
            format!("{FORM}; charset=UTF-16"),
            format!("{FORM}; charset=iso-8859-1"),
        ] {
            let r = send(&app, post_login(&ct, body.clone(), "192.0.2.1:1")).await;
            assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE, "{ct}");
            let problem = json(r).await;
            assert_eq!(problem["field"], "form:username");
            assert!(
                problem["detail"].as_str().unwrap().contains("charset"),
                "{problem}"
            );
        }
        for bom in [&[0xFF, 0xFE][..], &[0xFE, 0xFF], &[0xFF, 0xFE, 0, 0]] {
            let with_bom = [bom, &body].concat();
            let r = send(&app, post_login(FORM, with_bom, "192.0.2.1:1")).await;
            assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE, "{bom:?}");
        }
        // Without a charset or a BOM the bytes are read as they are, as
        // the upstream reads them: alice.
        let r = send(&app, post_login(FORM, body, &format!("198.51.100.{n}:1"))).await;
        passed += usize::from(r.status() == StatusCode::OK);
    }
    assert_eq!(passed, 3, "alice's attempts are counted as alice's");
    // Whatever the rule's missing policy: the ip fallback does not apply.
    let clock = ManualClock::new(0);
    let key = "form:username"
        .parse::<KeySpec>()
        .unwrap()
        .with_missing(limits_http::Missing::Ip);
    let app = login_app(Policy::new(vec![limits_http::HttpRule {
        key,
        ..rule(
            "login",
            "/",
            "ip",
            store(Algorithm::SlidingLog, "3/m", &clock),
        )
    }]));
    let ct = format!("{FORM}; charset=utf-16le");
    let r = send(&app, post_login(&ct, utf16le("username=a"), "192.0.2.1:1")).await;
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // A UTF-8 BOM before JSON stays accepted.
    let app = limited("json:username");
    let body = [&b"\xEF\xBB\xBF"[..], br#"{"username":"alice"}"#].concat();
    let r = send(&app, post_login("application/json", body, "192.0.2.1:1")).await;
    assert_eq!(r.status(), StatusCode::OK);
}

/// What each runtime's trim removes from the ends of a string, written out
/// from its documentation.
fn trimmed_by_each_runtime() -> Vec<(&'static str, Vec<char>)> {
    let unicode_spaces = || {
        let mut v = vec!['\u{1680}'];
        v.extend('\u{2000}'..='\u{200A}');
        v.extend(['\u{2028}', '\u{2029}', '\u{202F}', '\u{205F}', '\u{3000}']);
        v
    };
    // Python's str.strip(): str.isspace(), bidirectional class WS, B or S,
    // or category Zs.
    let mut python: Vec<char> = ('\u{9}'..='\u{D}').collect();
    python.extend('\u{1C}'..='\u{1F}');
    python.extend([' ', '\u{85}', '\u{A0}']);
    python.extend(unicode_spaces());
    // Java's String.trim(): every character up to U+0020.
    let java: Vec<char> = ('\u{0}'..=' ').collect();
    // JavaScript's trim(): WhiteSpace and LineTerminator.
    let mut javascript: Vec<char> = vec!['\u{9}', '\u{A}', '\u{B}', '\u{C}', '\u{D}', ' '];
    javascript.extend(['\u{A0}', '\u{FEFF}']);
    javascript.extend(unicode_spaces());
    // Go's strings.TrimSpace: unicode.IsSpace.
    let mut go: Vec<char> = vec!['\t', '\n', '\u{B}', '\u{C}', '\r', ' ', '\u{85}', '\u{A0}'];
    go.extend(unicode_spaces());
    // .NET's String.Trim(): Char.IsWhiteSpace (Zs, Zl, Zp, U+0009-U+000D,
    // U+0085).
    let mut dotnet: Vec<char> = ('\u{9}'..='\u{D}').collect();
    dotnet.extend([' ', '\u{85}', '\u{A0}']);
    dotnet.extend(unicode_spaces());
    vec![
        ("python", python),
        ("java", java),
        ("javascript", javascript),
        ("go", go),
        (".net", dotnet),
    ]
}

#[tokio::test]
async fn trim_removes_what_any_runtime_trims_and_invisible_characters_are_refused() {
    let spec = |s: &str| {
        s.parse::<KeySpec>()
            .unwrap()
            .with_normalize(Normalize::from_steps([limits_http::NormalizeStep::Trim]))
    };
    let key_of = |value: &str| {
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("u", value)
            .finish();
        let parts = Request::get(format!("/?{query}"))
            .body(())
            .unwrap()
            .into_parts()
            .0;
        spec("query:u").extract(&parts, None, None)
    };
    let alice = key_of("alice").unwrap();
    let mut every = BTreeSet::new();
    for (runtime, chars) in trimmed_by_each_runtime() {
        for c in chars {
            every.insert(c);
            for spelling in [
                format!("alice{c}"),
                format!("{c}alice"),
                format!("{c}{c}alice{c}"),
            ] {
                assert_eq!(
                    key_of(&spelling).as_ref(),
                    Ok(&alice),
                    "{runtime} trims U+{:04X}",
                    c as u32
                );
            }
        }
    }
    assert!(every.len() > 40, "the union of the lists: {}", every.len());
    // Left inside a value, controls and default-ignorable code points are
    // refused, not keyed.
    for inside in [
        "\u{0}",
        "\u{1F}",
        "\u{7F}",
        "\u{85}",
        "\u{9F}",
        "\u{AD}",
        "\u{200B}",
        "\u{200C}",
        "\u{200D}",
        "\u{2060}",
        "\u{FEFF}",
        "\u{180E}",
        "\u{FE0F}",
        "\u{E0041}",
    ] {
        let err = key_of(&format!("ali{inside}ce")).unwrap_err();
        assert!(
            matches!(err.reason, limits_http::KeyErrorReason::Ambiguous(_)),
            "U+{:04X}: {err}",
            inside.chars().next().unwrap() as u32
        );
        // Invisible characters the trim does not remove are refused at
        // the ends too.
        if !inside.chars().all(|c| every.contains(&c)) {
            assert!(key_of(&format!("alice{inside}")).is_err(), "{inside:?}");
        }
    }
    // Through the layer: `alice%1F` (Python strips U+001F) is alice.
    let app = login_app(Policy::new(vec![rule(
        "login",
        "/login",
        "form:username",
        store(Algorithm::SlidingLog, "3/m", &ManualClock::new(0)),
    )]));
    let mut statuses = Vec::new();
    for n in 0..10 {
        let body = format!("username=alice%1F&password=guess{n}");
        let r = send(&app, post_login(FORM, body, &format!("192.0.2.{n}:1"))).await;
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429, 429, 429, 429, 429, 429]);
    // Without trim (an API key's default), white space at an end would be
    // a fresh key to the limiter and the same key to an upstream that trims.
    let api = limited("query:api_key");
    for uri in [
        "/?api_key=KEY%20",
        "/?api_key=%09KEY",
        "/?api_key=KEY%C2%A0",
    ] {
        let r = send(&api, request(uri, "192.0.2.1:1")).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{uri}");
    }
    let r = send(
        &app,
        post_login(FORM, "username=al%E2%80%8Bice", "192.0.2.1:1"),
    )
    .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let problem = json(r).await;
    assert!(
        problem["detail"].as_str().unwrap().contains("U+200B"),
        "{problem}"
    );
}

#[tokio::test]
async fn every_spelling_of_a_cookie_is_one_key_and_an_octal_escape_is_400() {
    // Regression: cookie values were keyed as sent, so each spelling PHP,
    // Express and Rails decode to one value was a new key (10 of 10 passed).
    let app = limited("cookie:user");
    let mut statuses = Vec::new();
    for (n, spelling) in [
        "alice",
        "al%69ce",
        "%61lice",
        "\"alice\"",
        "%61%6C%69%63%65",
        "\"al%69ce\"",
        "ali%63e",
    ]
    .into_iter()
    .enumerate()
    {
        let cookie = format!("user={spelling}");
        let r = send(
            &app,
            get_with("/", &[("cookie", &cookie)], &format!("192.0.2.{n}:1")),
        )
        .await;
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429, 429, 429]);
    // Read differently by two upstreams: refused.
    for cookie in [
        r#"user="\141lice""#,
        r#"user="al\"ice""#,
        "user=al%zzice",
        "user=al%FFice",
    ] {
        let r = send(&app, get_with("/", &[("cookie", cookie)], "203.0.113.1:1")).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{cookie}");
        assert_eq!(json(r).await["field"], "cookie:user");
    }
}

#[tokio::test]
async fn every_name_an_upstream_reads_as_the_key_field_is_that_field() {
    // Regression: `?api_key=rnd&api.key=REAL` was keyed by rnd while PHP
    // read api_key=REAL: 10 of 10 passed.
    let app = limited("query:api_key");
    for other in [
        "api.key",
        "api%2Ekey",
        "api key",
        "api+key",
        "api[key",
        " api_key",
        "API_KEY",
        "api_key[]",
    ] {
        for n in 0..10 {
            let uri = format!("/?api_key=rnd{n}&{}=REAL", other.replace(' ', "%20"));
            let r = send(&app, request(&uri, "192.0.2.1:1")).await;
            assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{uri}");
            assert_eq!(json(r).await["field"], "query:api_key");
        }
    }
    // Split at ';' as some upstreams do: the same field twice.
    let r = send(&app, request("/?api_key=rnd;api_key=REAL", "192.0.2.1:1")).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    // A value a ';' would cut is read two ways.
    let r = send(&app, request("/?api_key=REAL;x=1", "192.0.2.1:1")).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    // PHP's api.key alone is api_key: keyed as REAL.
    let alternating = statuses(
        &app,
        (0..4).map(|n| request(["/?api.key=REAL", "/?api_key=REAL"][n % 2], "192.0.2.1:1")),
    )
    .await;
    assert_eq!(alternating, [200, 200, 200, 429]);

    // CGI-style upstreams read X_Api_Key as X-Api-Key.
    let app = limited("header:X-Api-Key");
    for other in ["x_api_key", "X.Api.Key", "x_api-key"] {
        let both = [("x-api-key", "rnd"), (other, "REAL")];
        let r = send(&app, get_with("/", &both, "192.0.2.1:1")).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{other}");
        assert_eq!(json(r).await["field"], "header:x-api-key");
    }
    let alternating = statuses(
        &app,
        (0..4).map(|n| {
            get_with(
                "/",
                &[(["x_api_key", "X-Api-Key"][n % 2], "K")],
                "192.0.2.1:1",
            )
        }),
    )
    .await;
    assert_eq!(alternating, [200, 200, 200, 429]);

    // ASP.NET Core binds a JSON member without regard to case.
    let app = limited("json:username");
    let body = r#"{"username":"rnd","Username":"alice"}"#;
    let r = send(&app, post_login("application/json", body, "192.0.2.1:1")).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn two_content_types_on_a_rule_that_reads_the_body_are_400() {
    let app = limited("form:username");
    let two = |first: &str, second: Option<&str>| {
        let mut r = post_login(first, "username=alice", "192.0.2.1:1");
        if let Some(second) = second {
            r.headers_mut()
                .append("content-type", second.parse().unwrap());
        }
        r
    };
    for (first, second) in [
        (FORM, Some("application/json")),
        (FORM, Some(FORM)),
        ("application/json", Some(FORM)),
        ("application/x-www-form-urlencoded, application/json", None),
    ] {
        let r = send(&app, two(first, second)).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{first} {second:?}");
        let problem = json(r).await;
        assert_eq!(problem["field"], "header:content-type");
        assert_eq!(problem["rule"], "login");
    }
    assert_eq!(send(&app, two(FORM, None)).await.status(), StatusCode::OK);
    // A rule that does not read the body does not mind.
    let app = limited("ip");
    let r = send(&app, two(FORM, Some("application/json"))).await;
    assert_eq!(r.status(), StatusCode::OK);
}
