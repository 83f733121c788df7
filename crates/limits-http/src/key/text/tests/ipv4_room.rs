//! An IPv4 address is written straight into the inline text when it has
//! room for the longest one, and through a text of its own otherwise: both
//! ways write what `Display` writes after what was there, inline or spilled.

use super::super::{INLINE, KeyText};
use std::net::Ipv4Addr;

#[test]
fn an_address_after_any_length_of_text_is_its_display_text() {
    let ips = ["0.0.0.0", "9.10.99.100", "255.255.255.255", "192.0.2.1"];
    // Every length up to beyond the inline room, so both ways and the spill
    // in between are taken.
    for before in 0..=INLINE + 2 {
        for ip in ips {
            let ip: Ipv4Addr = ip.parse().unwrap();
            let head = "x".repeat(before);
            let mut text = KeyText::from(head.as_str());
            text.push_ipv4(ip);
            assert_eq!(text.as_str(), format!("{head}{ip}"), "after {before}");
            let expected_spill = before + ip.to_string().len() > INLINE;
            assert_eq!(text.spilled(), expected_spill, "after {before}: {ip}");
        }
    }
}
