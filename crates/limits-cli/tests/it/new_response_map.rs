//! The demo's static answer forgets the header map a new response is made
//! with (`serve/demo.rs`, `answer`), to skip its drop glue on every request.
//! That is only right while such a map holds no allocation: this counts the
//! allocations of making one, filling it never, and dropping it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting each thread's allocations (tests run on
/// several threads at once).
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn a_new_responses_header_map_allocates_nothing() {
    let before = allocations();
    let mut response = http::Response::new(());
    let map = std::mem::take(response.headers_mut());
    let made = allocations() - before;
    assert_eq!(made, 0, "a new response's header map allocated");
    assert_eq!(map.capacity(), 0);
    assert!(map.is_empty());
}

#[test]
fn the_counter_sees_a_map_that_allocates() {
    // The check above could pass by counting nothing: a map with room
    // allocates, and is counted.
    let before = allocations();
    let map = http::HeaderMap::<http::HeaderValue>::with_capacity(4);
    assert!(allocations() > before);
    assert!(map.capacity() >= 4);
}
