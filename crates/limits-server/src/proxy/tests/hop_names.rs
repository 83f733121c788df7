//! The hop-by-hop stripping's quicker reading (a static set let go by
//! length, `Connection`'s tokens read as bytes) gives the headers, in their
//! order, of a plain reading (`strip_plain`: `to_str`, `split`,
//! `trim`), and removes what the first reference removes
//! (`rewrites::strip_reference`, which removes in another order, and so
//! leaves another order: `HeaderMap::remove` moves the last entry into the
//! hole), over tokens the byte reading could get wrong: tabs, blanks, empty
//! values, obs-text, names that are not names, and names as long as a
//! hop-by-hop one.

use super::forwarding::strip_hop_by_hop;
use super::rewrites::{listed, map, strip_reference, HOP_BY_HOP};
use http::header::{self, HeaderMap, HeaderName};

/// The plain stripping the byte reading must agree with: `to_str`, `split`,
/// `trim`, one removal per name.
fn strip_plain(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .filter(|token| !token.eq_ignore_ascii_case("keep-alive"))
        .filter_map(|token| HeaderName::from_bytes(token.as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in HOP_BY_HOP {
        headers.remove(name);
    }
}

fn assert_same(pairs: &[(&str, &[u8])]) {
    let mut ours = map(pairs);
    let mut plain = map(pairs);
    let mut reference = map(pairs);
    strip_hop_by_hop(&mut ours);
    strip_plain(&mut plain);
    strip_reference(&mut reference);
    let ours = listed(&ours);
    assert_eq!(ours, listed(&plain), "{pairs:?}");
    let (mut ours, mut reference) = (ours, listed(&reference));
    ours.sort();
    reference.sort();
    assert_eq!(ours, reference, "{pairs:?}");
}

/// Headers a `Connection` value might name, and some it might not.
const PRESENT: [(&str, &[u8]); 8] = [
    ("x-a", b"1"),
    ("x-b", b"2"),
    ("close", b"3"),
    ("keep-alive", b"timeout=5"),
    ("te", b"trailers"),
    ("server", b"nginx"),
    ("content-length", b"9"),
    ("x-kept", b"4"),
];

#[test]
fn connection_values_as_the_reference_reads_them() {
    let values: &[&[u8]] = &[
        b"",
        b",",
        b" , ,\t,",
        b"keep-alive",
        b"KEEP-ALIVE",
        b"\tkeep-alive\t",
        b"keep-alive,x-a",
        b"x-a\t,\tx-b",
        b"  x-a  ",
        b"x-a,,x-b,",
        b"keep-alive-x, x-a",
        b"close",
        b"Close, X-B",
        b"x a, x-b",
        b"x-a, caf\xc3\xa9",
        b"\xff",
        b"x-b\x80",
        b"te, server, content-length",
        b"x-kept, keep-alive, x-a, close, te",
    ];
    for value in values {
        let mut pairs = vec![("connection", *value)];
        pairs.extend(PRESENT);
        assert_same(&pairs);
        // Two `Connection` lines: each read on its own.
        for other in values {
            let mut pairs = vec![("connection", *value), ("connection", *other)];
            pairs.extend(PRESENT);
            assert_same(&pairs);
        }
    }
}

#[test]
fn names_as_long_as_a_hop_by_hop_one_stay() {
    // One name of each hop-by-hop name's length (2, 7, 10, 16, 17, 18, 19)
    // that is not one, beside the ones that are.
    let pairs: &[(&str, &[u8])] = &[
        ("tf", b"1"),
        ("te", b"1"),
        ("trailex", b"2"),
        ("upgrade", b"2"),
        ("connectiox", b"3"),
        ("keep-alivf", b"3"),
        ("proxy-connectiox", b"4"),
        ("transfer-encodinh", b"5"),
        ("proxy-authenticatf", b"6"),
        ("proxy-authorizatioo", b"7"),
        ("proxy-authorization", b"7"),
        ("x-a-name-longer-than-thirty-two-bytes", b"8"),
    ];
    assert_same(pairs);
    let mut ours = map(pairs);
    strip_hop_by_hop(&mut ours);
    let mut kept: Vec<String> = listed(&ours).into_iter().map(|(n, _)| n).collect();
    kept.sort();
    assert_eq!(
        kept,
        [
            "connectiox",
            "keep-alivf",
            "proxy-authenticatf",
            "proxy-authorizatioo",
            "proxy-connectiox",
            "tf",
            "trailex",
            "transfer-encodinh",
            "x-a-name-longer-than-thirty-two-bytes",
        ]
    );
}
