use super::*;
use limits_http::{ClientIpHeader, TrustedProxies};

fn peer(s: &str) -> SocketAddr {
    SocketAddr::new(s.parse().unwrap(), 40000)
}

#[test]
fn the_total_cap_refuses_the_next_connection_until_one_closes() {
    let caps = ConnectionCaps::uncounted(3, 3, ClientIp::default());
    let held: Vec<Permit> = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
        .iter()
        .map(|p| caps.admit(peer(p)).ok().unwrap())
        .collect();
    assert_eq!(caps.admit(peer("10.0.0.4")).err(), Some(Refused::Total));
    assert_eq!(caps.refused(), (1, 0));
    drop(held.into_iter().next());
    assert!(
        caps.admit(peer("10.0.0.4")).is_ok(),
        "a closed connection frees its place"
    );
}

#[test]
fn one_address_gets_its_share_and_others_still_connect() {
    let caps = ConnectionCaps::uncounted(10, 2, ClientIp::default());
    let a = [caps.admit(peer("10.0.0.1")), caps.admit(peer("10.0.0.1"))];
    assert!(a.iter().all(Result::is_ok));
    assert_eq!(caps.admit(peer("10.0.0.1")).err(), Some(Refused::PerClient));
    assert!(caps.admit(peer("10.0.0.2")).is_ok());
    assert_eq!(caps.refused(), (0, 1));
}

#[test]
fn released_groups_leave_the_table() {
    let caps = ConnectionCaps::uncounted(10, 2, ClientIp::default());
    let permits: Vec<_> = (1..=5)
        .map(|i| caps.admit(peer(&format!("10.0.0.{i}"))).ok().unwrap())
        .collect();
    assert_eq!(caps.open(), (5, 5));
    drop(permits);
    assert_eq!(
        caps.open(),
        (0, 0),
        "no group is kept once its last connection closes"
    );
}

#[test]
fn an_ipv6_peer_is_capped_by_its_prefix_and_ipv4_mapped_as_ipv4() {
    let caps = ConnectionCaps::uncounted(10, 2, ClientIp::default());
    let _a = caps.admit(peer("2001:db8:1:2::1")).ok().unwrap();
    let _b = caps.admit(peer("2001:db8:1:2:ffff::9")).ok().unwrap();
    assert_eq!(
        caps.admit(peer("2001:db8:1:2:abcd::1")).err(),
        Some(Refused::PerClient),
        "one /64 is one client"
    );
    assert!(caps.admit(peer("2001:db8:1:3::1")).is_ok());
    let _c = caps.admit(peer("::ffff:192.0.2.1")).ok().unwrap();
    let _d = caps.admit(peer("192.0.2.1")).ok().unwrap();
    assert_eq!(
        caps.admit(peer("192.0.2.1")).err(),
        Some(Refused::PerClient)
    );
}

#[test]
fn a_trusted_proxy_is_capped_by_the_total_only() {
    let trusted = TrustedProxies::parse(&["10.0.0.0/8"]).unwrap();
    let client_ip = ClientIp::new(trusted, ClientIpHeader::XForwardedFor, 64).unwrap();
    let caps = ConnectionCaps::uncounted(4, 1, client_ip);
    let held: Vec<_> = (0..4)
        .map(|_| caps.admit(peer("10.1.2.3")).ok().unwrap())
        .collect();
    assert_eq!(caps.admit(peer("10.1.2.3")).err(), Some(Refused::Total));
    assert_eq!(caps.open(), (4, 0));
    drop(held);
}

#[test]
fn caps_of_zero_still_admit_one() {
    let caps = ConnectionCaps::uncounted(0, 0, ClientIp::default());
    let _one = caps.admit(peer("10.0.0.1")).ok().unwrap();
    assert_eq!(caps.admit(peer("10.0.0.2")).err(), Some(Refused::Total));
}

#[test]
fn the_file_limit_leaves_room_for_the_reserve_and_the_admin_listener() {
    assert_eq!(
        connections_within_file_limit(1_048_576, 2),
        (1_048_576 - 80) / 2
    );
    assert_eq!(connections_within_file_limit(1024, 1), 1024 - 80);
    assert_eq!(connections_within_file_limit(0, 2), 1);
    // A per-connection count of 0 is taken as 1, not a division by zero.
    assert_eq!(
        connections_within_file_limit(u64::MAX, 0),
        usize::try_from(u64::MAX - 80).unwrap_or(usize::MAX)
    );
}
