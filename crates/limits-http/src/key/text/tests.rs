//! A key's text is held inline up to 64 bytes and on the heap beyond, with
//! the same text, equality, hash and formatting either way.

mod ipv4;
mod ipv4_room;

use super::{INLINE, KeyText};
use crate::{Key, KeySpec};
use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;

fn parts(header: &str) -> http::request::Parts {
    let request = http::Request::get("/").header("x-api-key", header);
    request.body(()).unwrap().into_parts().0
}

#[test]
fn the_longest_address_key_is_held_inline() {
    let ip: IpAddr = "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff".parse().unwrap();
    let text = KeySpec::ip().build(&parts("k"), Some(ip), None).unwrap();
    assert_eq!(text.as_str(), format!("ip={ip}"));
    assert!(text.len() <= INLINE);
    assert!(!text.spilled());
}

#[test]
fn a_key_longer_than_the_inline_bytes_spills_with_the_same_text() {
    let spec: KeySpec = "header:x-api-key".parse().unwrap();
    let value = "v".repeat(80);
    let text = spec.build(&parts(&value), None, None).unwrap();
    assert!(text.spilled());
    assert_eq!(text.as_str(), format!("header:x-api-key={value}"));
    assert_eq!(String::from(text), format!("header:x-api-key={value}"));
}

#[test]
fn text_and_chars_are_appended_in_order() {
    let mut text = KeyText::from("a");
    text.push('é');
    text.push_str(&"b".repeat(INLINE));
    assert_eq!(text.as_str(), format!("aé{}", "b".repeat(INLINE)));
    assert!(text.spilled());
    assert!(KeyText::new().is_empty());
}

#[test]
fn a_key_compares_hashes_and_prints_as_its_text() {
    let short = Key::custom("tenant", "acme");
    let long = Key::custom("tenant", &"x".repeat(100));
    let hasher = RandomState::new();
    for (key, text) in [
        (&short, "custom:tenant=acme".to_string()),
        (&long, format!("custom:tenant={}", "x".repeat(100))),
    ] {
        assert_eq!(key.as_str(), text);
        assert_eq!(hasher.hash_one(key), hasher.hash_one(&text));
        assert_eq!(format!("{key:?}"), format!("Key({text:?})"));
        assert_eq!(key.to_string(), text);
        assert_eq!(String::from(key.clone()), text);
    }
    assert_eq!(short, Key::custom("tenant", "acme"));
    assert_ne!(short, long);
}
