//! [`Ring`]: which server holds a key, by consistent hashing as the common
//! memcached clients spread keys (ketama: libketama, spymemcached's
//! `KETAMA_HASH`, libmemcached's ketama on a port other than 11211), so
//! that a key of ours lives where those clients would put it, and removing
//! one of N servers moves only the keys it held (about 1/N).
//!
//! Each server is 160 points on a circle of `u32`s: 40 MD5 digests of
//! `HOST:PORT-i` (`i` from 0 to 39), four little-endian words from each.
//! A key belongs to the first point at or after its own hash (the first
//! four bytes of its MD5, little-endian), past the last point to the first.
//! Two servers on one point: the later in the URL keeps it, as in
//! spymemcached and the Couchbase SDKs.

use md5::{Digest, Md5};

/// Digests per server.
const HASHES_PER_SERVER: u32 = 40;

/// The circle's points, each with the index of its server.
#[derive(Clone, Debug)]
pub(crate) struct Ring {
    /// Sorted by point, one server per point.
    points: Vec<(u32, usize)>,
}

impl Ring {
    /// The ring of `servers` (`HOST:PORT` each), in the URL's order.
    pub(crate) fn new<S: AsRef<str>>(servers: &[S]) -> Ring {
        let mut points = Vec::with_capacity(servers.len() * 4 * HASHES_PER_SERVER as usize);
        for (index, server) in servers.iter().enumerate() {
            for i in 0..HASHES_PER_SERVER {
                let digest = Md5::digest(format!("{}-{i}", server.as_ref()).as_bytes());
                for word in digest.chunks_exact(4) {
                    let point = u32::from_le_bytes(word.try_into().expect("chunks of 4"));
                    points.push((point, index));
                }
            }
        }
        // Stable: on a shared point the later server stays last, and wins.
        points.sort_by_key(|&(point, _)| point);
        let mut kept: Vec<(u32, usize)> = Vec::with_capacity(points.len());
        for (point, index) in points {
            match kept.last_mut() {
                Some(last) if last.0 == point => last.1 = index,
                _ => kept.push((point, index)),
            }
        }
        Ring { points: kept }
    }

    /// The index of the server holding `key`.
    pub(crate) fn server_of(&self, key: &[u8]) -> usize {
        let digest = Md5::digest(key);
        let hash = u32::from_le_bytes(digest[..4].try_into().expect("16 bytes"));
        self.server_at(hash)
    }

    /// The server of the first point at or after `hash`, wrapping around.
    fn server_at(&self, hash: u32) -> usize {
        let at = self.points.partition_point(|&(point, _)| point < hash);
        self.points
            .get(at)
            .or_else(|| self.points.first())
            .map_or(0, |&(_, index)| index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The four servers of the Couchbase SDKs' ketama verification set
    /// (SDK RFC 26, whose expected ring its Java client checks).
    const RFC26: [&str; 4] = [
        "192.168.1.101:11210",
        "192.168.1.102:11210",
        "192.168.1.103:11210",
        "192.168.1.104:11210",
    ];

    #[test]
    fn the_ring_is_the_published_ketama_ring() {
        let ring = Ring::new(&RFC26);
        // The first points of the published ring, in order, and their servers.
        let first = [
            (19_069_626, 3),
            (28_439_255, 0),
            (36_078_660, 3),
            (46_162_273, 3),
            (54_096_687, 3),
            (73_548_791, 1),
            (78_634_244, 1),
            (80_168_850, 3),
            (89_070_946, 0),
            (106_146_674, 0),
            (107_634_595, 2),
            (109_207_346, 3),
        ];
        assert_eq!(ring.points[..first.len()], first);
        assert_eq!(ring.points.len(), 4 * 160);
        // Past the last point, the first one's server (192.168.1.104).
        assert_eq!(ring.server_at(u32::MAX), 3);
        // A hash between two points goes to the later one.
        assert_eq!(ring.server_at(28_439_256), 3);
        assert_eq!(ring.server_at(28_439_255), 0);
    }

    #[test]
    fn two_servers_on_one_point_leave_it_to_the_later() {
        // The collision the Couchbase SDKs' tests name: both at 1723476360.
        let servers = ["example.com:11210", "example137723.com:11210"];
        let ring = Ring::new(&servers);
        assert_eq!(ring.points.len(), 2 * 160 - 1);
        assert_eq!(ring.server_at(1_723_476_360), 1);
        let reversed = Ring::new(&[servers[1], servers[0]]);
        assert_eq!(reversed.server_at(1_723_476_360), 1);
    }

    fn servers(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("10.0.0.{}:11211", i + 1)).collect()
    }

    #[test]
    fn keys_spread_evenly_over_the_servers() {
        for n in [2, 3, 5, 8] {
            let ring = Ring::new(&servers(n));
            let keys = 40_000;
            let mut held = vec![0usize; n];
            for k in 0..keys {
                held[ring.server_of(format!("limits:api:key{k}").as_bytes())] += 1;
            }
            let fair = keys / n;
            for (server, &count) in held.iter().enumerate() {
                // 160 points per server keep each within about a fifth of its share.
                assert!(
                    count * 10 > fair * 7 && count * 10 < fair * 13,
                    "{n} servers: server {server} holds {count} of {keys} keys: {held:?}"
                );
            }
        }
    }

    #[test]
    fn removing_one_of_n_servers_moves_only_its_keys() {
        for n in [3, 4, 6] {
            let all = servers(n);
            let before = Ring::new(&all);
            let gone = 1;
            let left: Vec<String> = all
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != gone)
                .map(|(_, s)| s.clone())
                .collect();
            let after = Ring::new(&left);
            let keys = 30_000;
            let mut moved = 0;
            for k in 0..keys {
                let key = format!("k{k}");
                let was = &all[before.server_of(key.as_bytes())];
                let is = &left[after.server_of(key.as_bytes())];
                if was != is {
                    // Only the removed server's keys move.
                    assert_eq!(was, &all[gone], "{key} moved off a server still there");
                    moved += 1;
                }
            }
            let share = keys / n;
            assert!(
                moved * 10 > share * 7 && moved * 10 < share * 13,
                "{n} servers: {moved} of {keys} keys moved, about {share} expected"
            );
        }
    }

    #[test]
    fn one_server_holds_every_key() {
        let ring = Ring::new(&["127.0.0.1:11211"]);
        assert!((0..100).all(|k| ring.server_of(format!("{k}").as_bytes()) == 0));
    }
}
