//! An IPv4 address written into a key is its `Display` text, byte for byte:
//! every octet value in every position (each digit count, and the digits
//! around them), and the key the layer builds from a client address.

use super::super::KeyText;
use crate::KeySpec;
use std::net::{IpAddr, Ipv4Addr};

fn written(ip: Ipv4Addr) -> String {
    let mut text = KeyText::new();
    text.push_ipv4(ip);
    text.as_str().to_owned()
}

#[test]
fn every_octet_in_every_position_is_written_as_display_writes_it() {
    for octet in 0..=255u8 {
        for others in [0u8, 7, 10, 99, 100, 255] {
            for position in 0..4 {
                let mut octets = [others; 4];
                octets[position] = octet;
                let ip = Ipv4Addr::from(octets);
                assert_eq!(written(ip), ip.to_string(), "{octets:?}");
            }
        }
    }
}

#[test]
fn a_client_address_key_is_its_display_text() {
    let parts = http::Request::get("/").body(()).unwrap().into_parts().0;
    for ip in [
        "192.0.2.1",
        "10.0.0.255",
        "0.0.0.0",
        "255.255.255.255",
        "2001:db8::1",
    ] {
        let client: IpAddr = ip.parse().unwrap();
        let key = KeySpec::ip().extract(&parts, Some(client), None).unwrap();
        assert_eq!(key, format!("ip={ip}"));
    }
}
