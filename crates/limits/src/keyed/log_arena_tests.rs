//! The arena's buddy system in units of 1 and of 3 entries, and a log's
//! ring moving between the two arenas as it grows and shrinks through
//! the sizes between the powers of two (3, 6, 12, ...) with its entries
//! wrapped.

use super::super::log_arenas::Arenas;
use super::Arena;
use crate::algorithms::Log;
use crate::keyed::log_view::{shape, Handle, View};
use std::collections::VecDeque;

#[test]
fn blocks_split_merge_and_the_end_is_given_back() {
    let mut arena = Arena::new(1);
    let a = arena.alloc(1);
    let b = arena.alloc(1);
    assert_eq!((a, b), (0, 2));
    let c = arena.alloc(2);
    assert_eq!(c, 4);
    arena.release(a, 1);
    // b's buddy is free: they merge into a block of 4 at 0, which a
    // request of class 2 takes.
    arena.release(b, 1);
    assert_eq!(arena.alloc(2), 0);
    // A class-3 block must start at 8; nothing is free before it.
    assert_eq!(arena.alloc(3), 8);
    assert_eq!(arena.entries.len(), 16);
    arena.release(8, 3);
    assert_eq!(arena.entries.len(), 8);
    arena.release(4, 2);
    arena.release(0, 2);
    assert_eq!(arena.entries.len(), 0);
    // A gap before an aligned block is freed and taken first.
    let one = arena.alloc(1);
    let eight = arena.alloc(3);
    assert_eq!((one, eight), (0, 8));
    assert_eq!(arena.alloc(1), 2);
    assert_eq!(arena.alloc(2), 4);
    assert_eq!(arena.entries.len(), 16);
    // In place: into a free buddy or past the end, not into a used one.
    assert!(!arena.grow_in_place(8, 3, 4), "8 is not aligned to 16");
    assert!(!arena.grow_in_place(0, 1, 2), "2 is in use");
    arena.release(2, 1);
    assert!(arena.grow_in_place(0, 1, 2));
    assert!(!arena.grow_in_place(0, 2, 3), "4 is in use");
    arena.release(4, 2);
    arena.release(8, 3);
    assert_eq!(arena.entries.len(), 4);
    assert!(arena.grow_in_place(0, 2, 4));
    assert_eq!(arena.entries.len(), 16);
    assert_eq!(arena.alloc(1), 16);
}

#[test]
fn blocks_of_threes_split_merge_and_the_end_is_given_back() {
    let mut arena = Arena::new(3);
    // Offsets in entries: units of 3, blocks aligned to their size in
    // units.
    assert_eq!((arena.alloc(0), arena.alloc(0), arena.alloc(1)), (0, 3, 6));
    assert_eq!(arena.entries.len(), 12);
    arena.release(0, 0);
    arena.release(3, 0);
    // Merged into a block of 2 units at 0.
    assert_eq!(arena.alloc(1), 0);
    arena.release(0, 1);
    arena.release(6, 1);
    assert_eq!(arena.entries.len(), 0);
    // The gap before an aligned block: unit 1 (class 0), units 2-3.
    assert_eq!((arena.alloc(0), arena.alloc(2)), (0, 12));
    assert_eq!(arena.entries.len(), 24);
    assert_eq!((arena.alloc(0), arena.alloc(1)), (3, 6));
    // In place: 3 entries at 0 into 6 once unit 1 is free.
    assert!(!arena.grow_in_place(0, 0, 1), "unit 1 is in use");
    arena.release(3, 0);
    assert!(arena.grow_in_place(0, 0, 1));
    arena.release(12, 2);
    arena.release(6, 1);
    // Both free blocks were at the end: cut off.
    assert_eq!(arena.entries.len(), 6);
    assert!(arena.grow_in_place(0, 1, 3), "its buddies past the end");
    assert_eq!(arena.entries.len(), 24);
    arena.release(0, 3);
    assert_eq!(arena.entries.len(), 0);
}

#[test]
fn the_ladder_is_powers_of_two_and_three_times_them() {
    let sizes: Vec<u32> = (2..=49)
        .map(|n| {
            let (class, three) = shape(n);
            Handle::new(0, 0, 0, class, three).size
        })
        .collect();
    for (n, &size) in (2..).zip(&sizes) {
        let ladder = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];
        assert_eq!(size, *ladder.iter().find(|&&s| s >= n).unwrap(), "{n}");
    }
}

/// A log's entries, oldest first, as the view reads them.
fn read(view: &View<'_, false>) -> VecDeque<u64> {
    (0..view.len()).map(|i| view.get(i).unwrap()).collect()
}

#[test]
fn a_ring_wraps_and_moves_between_the_arenas_in_order() {
    let mut arenas = Arenas::default();
    let mut h = Handle::inline(0, 0);
    let mut want = VecDeque::new();
    let mut t = 0;
    // Grow to each size with the head moved on (its entries wrapped), then
    // shrink back down the ladder.
    // Then jumps within a family (in place where the block can grow).
    let sizes = [
        2, 3, 4, 6, 8, 12, 16, 24, 32, 24, 12, 6, 4, 3, 2, 8, 3, 12, 6, 24, 4, 16,
    ];
    for (step, &size) in sizes.iter().enumerate() {
        let mut view = View::<false>::new(&mut arenas, h);
        view.resize(size);
        assert_eq!(view.capacity(), size, "step {step}");
        assert_eq!(read(&view), want, "step {step}: resized to {size}");
        // Fill it, then turn the head round once and a half.
        while view.len() < size {
            t += 1;
            view.push_n(t, 1);
            want.push_back(t);
        }
        for _ in 0..size + size / 2 {
            view.pop_front();
            want.pop_front();
            t += 1;
            view.push_n(t, 1);
            want.push_back(t);
            assert_eq!(view.front(), want.front().copied());
            assert_eq!(view.back(), want.back().copied());
        }
        assert_eq!(read(&view), want, "step {step}: wrapped in {size}");
        // Growing, it stays full and wrapped (in place or copied, the
        // entries that wrapped must follow the others); shrinking, it
        // keeps half of what the next size holds.
        let next = sizes.get(step + 1).copied().unwrap_or(2);
        let keep = if next > size { size } else { next / 2 };
        while view.len() > keep {
            view.pop_front();
            want.pop_front();
        }
        assert_eq!(view.h.three, u32::from(size % 3 == 0), "{size}");
        h = view.h;
    }
    // Released, the arenas are empty again.
    let here = arenas.pick(h.three).0;
    here.release(h.at, h.block());
    assert_eq!(
        (arenas.two.entries.len(), arenas.three.entries.len()),
        (0, 0)
    );
}
