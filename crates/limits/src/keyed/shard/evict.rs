//! How a full shard picks the key to give up for a new one.
//!
//! # Choosing a victim: forget the least
//!
//! Evicting a key forgets what it has used, and the key comes back with a
//! fresh limit: an eviction is an amnesty worth the key's used quota. Plain
//! CLOCK (evict the first key not used since the hand last passed) weighs
//! every key alike, so a client at its limit could be pushed out by a flood of
//! one-off keys and come back forgiven, again and again. So a full shard
//! weighs [`CANDIDATES`] keys under the hand and evicts the one whose
//! forgetting costs least ([`forgetting_cost`]):
//!
//! 1. a key that no longer matters (idle) is taken at once, losslessly;
//! 2. a *limited* key (some rate has nothing left, or it was denied since its
//!    state was last back to full) is never taken while any candidate is not
//!    limited: when all of them are, the hand looks further, up to
//!    [`MAX_SCAN`] keys, before it gives in (and that eviction is counted
//!    apart, as a limited eviction);
//! 3. otherwise the least used share of its limit
//!    ([`Rule::used_permille`]) goes first, so that a client that keeps
//!    coming outweighs keys that came once or twice; among equals, one not
//!    used since the hand last passed (the CLOCK second chance).
//!
//! The new key takes the victim's slot, which the hand has just passed: it is
//! weighed again only after a full turn, time to show whether it returns. The
//! hand moves only when a key is added to a full shard (the sweep has its own
//! cursor), so that turn lasts about `slots / CANDIDATES` insertions. The
//! cost per insertion stays bounded (at most [`MAX_SCAN`] states looked at,
//! usually [`CANDIDATES`]), and the memory per key does not grow: the
//! flags live in the state's padding (see the slot module).

use super::{Shard, next};
use crate::Rule;
use crate::keyed::kind::Kind;
use crate::keyed::slot::{Held, Slot};
use std::hash::Hash;

/// Keys a full shard weighs before it evicts one.
pub(crate) const CANDIDATES: usize = 4;

/// The most keys a full shard looks at for one that is not limited.
pub(crate) const MAX_SCAN: usize = 64;

/// Costs at or above this are those of limited keys.
const LIMITED: u32 = 1 << 16;

/// The slot a full shard gives up for a new key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Room {
    /// Its key no longer mattered: dropped losslessly.
    Idle(usize),
    /// Its key was evicted, forgetting its state; `limited` if that key was
    /// at its limit (or had been denied).
    Evicted { at: usize, limited: bool },
}

impl<K: Hash, H: Held> Shard<K, H> {
    /// Picks the slot to give up for a new key (see the module docs): the
    /// first idle key under the hand, or else the candidate whose forgetting
    /// costs least. The hand moves past every key it looked at, clearing
    /// their second chance. `None` only for an empty shard.
    pub fn make_room(&mut self, kind: &impl Kind<Held = H>, rule: &Rule, now: u64) -> Option<Room> {
        let len = self.slots.len();
        let mut best: Option<(u32, usize)> = None;
        for looked in 0..MAX_SCAN.min(len) {
            if looked >= CANDIDATES && best.is_some_and(|(cost, _)| cost < LIMITED) {
                break;
            }
            let at = self.hand;
            self.hand = next(at, len);
            let slot = &mut self.slots[at];
            if kind.is_idle(&mut slot.state, now) {
                return Some(Room::Idle(at));
            }
            let cost = forgetting_cost(kind, rule, slot, now);
            slot.marks().set_referenced(false);
            if best.is_none_or(|(least, _)| cost < least) {
                best = Some((cost, at));
            }
        }
        best.map(|(cost, at)| Room::Evicted {
            at,
            limited: cost >= LIMITED,
        })
    }
}

/// What evicting `slot` would forgive, as a number to minimize: limited keys
/// above all others ([`LIMITED`]), then the share of the limit used, then a
/// key that was denied, then one used since the hand last passed.
fn forgetting_cost<K, H: Held>(
    kind: &impl Kind<Held = H>,
    rule: &Rule,
    slot: &mut Slot<K, H>,
    now: u64,
) -> u32 {
    let used = u32::from(kind.used_permille(rule, &mut slot.state, now));
    let marks = *slot.marks();
    let limited = marks.denied() || used >= 1000;
    (if limited { LIMITED } else { 0 })
        | (used << 2)
        | (u32::from(marks.denied()) << 1)
        | u32::from(marks.referenced())
}
