//! The key of a rule keyed by the address alone is written in one step, not
//! by the loop over a key's parts: it must be the text that loop writes for
//! the address part (`ip=` and the address as `Display` writes it), over
//! IPv4, IPv6 and no address at all, whatever the spec's other settings.

use http::request::Parts;
use limits_http::{KeyExtractor, KeySpec, Missing, Normalize};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn parts() -> Parts {
    let request = http::Request::get("/?q=v").body(()).unwrap();
    request.into_parts().0
}

/// The key of `ip` alone, by every public way, all of which must agree.
fn ip_alone(client: Option<IpAddr>) -> String {
    let parts = parts();
    let specs = [
        KeySpec::ip(),
        "ip".parse().unwrap(),
        KeySpec::ip().with_missing(Missing::Shared),
        KeySpec::ip().with_normalize(Normalize::ACCOUNT),
    ];
    let keys: Vec<String> = specs
        .iter()
        .map(|s| s.extract(&parts, client, None).unwrap())
        .collect();
    let key = KeySpec::ip().key(&parts, client, None).unwrap();
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
    assert_eq!(key.as_str(), keys[0]);
    keys[0].clone()
}

/// The address part as the loop over several parts writes it: what comes
/// before the `|` of `ip+query:q`.
fn by_the_loop(client: Option<IpAddr>) -> String {
    let spec: KeySpec = "ip+query:q".parse().unwrap();
    let key = spec.extract(&parts(), client, None).unwrap();
    let (ip, rest) = key.split_once('|').unwrap();
    assert_eq!(rest, "query:q=v");
    ip.to_string()
}

fn check(client: Option<IpAddr>) {
    let key = ip_alone(client);
    assert_eq!(key, by_the_loop(client));
    let shown = client.map_or("unknown".to_string(), |ip| ip.to_string());
    assert_eq!(key, format!("ip={shown}"));
}

#[test]
fn every_octet_in_every_place_is_written_as_the_loop_writes_it() {
    for n in 0..=255u8 {
        for at in 0..4 {
            let mut octets = [1, 22, 133, 4];
            octets[at] = n;
            check(Some(IpAddr::V4(Ipv4Addr::from(octets))));
        }
    }
}

#[test]
fn the_longest_and_shortest_addresses_and_none() {
    check(Some("255.255.255.255".parse().unwrap()));
    check(Some("0.0.0.0".parse().unwrap()));
    check(Some(
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff".parse().unwrap(),
    ));
    check(Some("::".parse().unwrap()));
    check(Some("::ffff:192.0.2.1".parse().unwrap()));
    check(None);
}

proptest! {
    #[test]
    fn any_ipv4(bits: u32) {
        check(Some(IpAddr::V4(Ipv4Addr::from(bits))));
    }

    #[test]
    fn any_ipv6(bits: u128) {
        check(Some(IpAddr::V6(Ipv6Addr::from(bits))));
    }
}
