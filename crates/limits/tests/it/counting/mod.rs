//! An allocator that counts what this thread allocates and frees, for the
//! tests that say what a state's transitions cost in memory (a test binary
//! that declares `mod counting;` gets it as its global allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts this thread's allocations and frees (other test threads' are
/// theirs), and the bytes live.
struct Counting;

thread_local! {
    static COUNTS: Cell<(usize, usize, isize)> = const { Cell::new((0, 0, 0)) };
}

fn note(alloc: usize, free: usize, bytes: isize) {
    // `try_with`: nothing to count once the thread's storage is gone.
    let _ = COUNTS.try_with(|c| {
        let (a, f, b) = c.get();
        c.set((a + alloc, f + free, b + bytes));
    });
}

// SAFETY: every call is passed to the system allocator unchanged; the
// counting touches a thread-local `Cell` of plain numbers, which does not
// allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(1, 0, layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(0, 1, -(layout.size() as isize));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// (allocations, frees, bytes allocated less freed) during `f`, on this
/// thread.
pub fn counted<T>(f: impl FnOnce() -> T) -> (T, (usize, usize, isize)) {
    let before = COUNTS.with(Cell::get);
    let out = f();
    let (a, f2, b) = COUNTS.with(Cell::get);
    (out, (a - before.0, f2 - before.1, b - before.2))
}
