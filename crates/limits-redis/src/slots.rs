//! Which node of a Redis Cluster holds which key: the cluster's slot of a
//! key (CRC16 of its hash tag, as Redis computes it) and the slot ranges
//! each primary serves, read with `CLUSTER SLOTS`.
//!
//! A batch of decisions is split by node with this map, so that each node
//! gets one pipeline. The map is only a grouping: each pipeline is still
//! routed by redis-rs's own view of the cluster, and a command that reached
//! the wrong node (the map was stale) is redirected and sent again alone,
//! so a stale map costs a round trip, never a wrong answer.

use redis::Value;
use std::sync::{Arc, Mutex};

/// The number of slots of a Redis Cluster.
const SLOTS: u16 = 16384;

/// The cluster slot of `key`: CRC16 (XMODEM) of the key's hash tag (the
/// text between its first `{` and the first `}` after it, when not empty),
/// else of the whole key, modulo 16384; Redis's `CLUSTER KEYSLOT`.
pub(crate) fn key_slot(key: &[u8]) -> u16 {
    let tagged = key.iter().position(|&b| b == b'{').and_then(|open| {
        let rest = &key[open + 1..];
        let close = rest.iter().position(|&b| b == b'}')?;
        (close > 0).then(|| &rest[..close])
    });
    crc16(tagged.unwrap_or(key)) % SLOTS
}

/// CRC16 as Redis Cluster computes it (polynomial 0x1021, initial 0).
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The primaries' slot ranges: `(first, last, node)`, node an index
/// standing for one primary (its address as `CLUSTER SLOTS` gives it).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SlotMap {
    ranges: Vec<(u16, u16, usize)>,
}

impl SlotMap {
    /// The map in an answer to `CLUSTER SLOTS`; `None` if it is not one.
    pub(crate) fn parse(answer: &Value) -> Option<SlotMap> {
        let Value::Array(entries) = answer else {
            return None;
        };
        let mut nodes: Vec<(Vec<u8>, i64)> = Vec::new();
        let mut ranges = Vec::with_capacity(entries.len());
        for entry in entries {
            let Value::Array(fields) = entry else {
                return None;
            };
            let (Some(Value::Int(first)), Some(Value::Int(last)), Some(Value::Array(primary))) =
                (fields.first(), fields.get(1), fields.get(2))
            else {
                return None;
            };
            let address = match (primary.first(), primary.get(1)) {
                (Some(Value::BulkString(host)), Some(Value::Int(port))) => (host.clone(), *port),
                _ => return None,
            };
            let node = match nodes.iter().position(|n| *n == address) {
                Some(node) => node,
                None => {
                    nodes.push(address);
                    nodes.len() - 1
                }
            };
            let first = u16::try_from(*first).ok().filter(|s| *s < SLOTS)?;
            let last = u16::try_from(*last).ok().filter(|s| *s < SLOTS)?;
            ranges.push((first, last, node));
        }
        ranges.sort_unstable();
        Some(SlotMap { ranges })
    }

    /// The node holding `slot`, if the map covers it.
    pub(crate) fn node_of(&self, slot: u16) -> Option<usize> {
        let after = self.ranges.partition_point(|&(first, _, _)| first <= slot);
        let &(_, last, node) = self.ranges.get(after.checked_sub(1)?)?;
        (slot <= last).then_some(node)
    }
}

/// The slot map of one connection, read when first needed and again after
/// a command was redirected.
#[derive(Debug, Default)]
pub(crate) struct SlotCache {
    map: Mutex<Option<Arc<SlotMap>>>,
}

impl SlotCache {
    /// The map as last read, if it is still trusted.
    pub(crate) fn get(&self) -> Option<Arc<SlotMap>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Keeps `map` until it is found stale.
    pub(crate) fn set(&self, map: SlotMap) -> Arc<SlotMap> {
        let map = Arc::new(map);
        *self.map.lock().unwrap_or_else(|p| p.into_inner()) = Some(map.clone());
        map
    }

    /// Forgets the map: a command was redirected, so the cluster moved
    /// slots; the next batch reads it again.
    pub(crate) fn forget(&self) {
        *self.map.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_slots_are_redis_cluster_keyslots() {
        // Values of `CLUSTER KEYSLOT` (and the CRC16 check value of the
        // cluster specification for "123456789").
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(
            key_slot(b"foo{}{bar}"),
            key_slot(b"bar"),
            "an empty tag: the whole key"
        );
        assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    }

    fn range(first: i64, last: i64, port: i64) -> Value {
        Value::Array(vec![
            Value::Int(first),
            Value::Int(last),
            Value::Array(vec![
                Value::BulkString(b"127.0.0.1".to_vec()),
                Value::Int(port),
            ]),
        ])
    }

    #[test]
    fn a_map_names_the_node_of_each_slot_and_nothing_outside_it() {
        let answer = Value::Array(vec![
            range(10923, 16383, 7002),
            range(0, 99, 7000),
            range(100, 100, 7002),
            range(101, 5460, 7000),
            range(5461, 10922, 7001),
        ]);
        let map = SlotMap::parse(&answer).unwrap();
        let node = |slot| map.node_of(slot);
        assert_eq!(node(0), node(5460));
        assert_ne!(node(5460), node(5461));
        assert_eq!(node(16383), node(10923));
        assert_eq!(
            node(100),
            node(16383),
            "a single slot moved to another node"
        );
        assert_eq!(node(101), node(0));
        let partial = SlotMap::parse(&Value::Array(vec![range(0, 10, 7000)])).unwrap();
        assert_eq!(partial.node_of(11), None);
        assert_eq!(SlotMap::parse(&Value::Int(3)), None);
        assert_eq!(
            SlotMap::parse(&Value::Array(vec![range(0, 16384, 7000)])),
            None
        );
    }
}
