//! MuSE's promise for `join`'s fast path: when nobody steals, a join
//! allocates nothing (its frames live on the stack). Counted with an
//! allocator that counts the calls made on the calling thread.
use manycore_steal::{join, ThreadPoolBuilder};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;
thread_local! { static ALLOCS: Cell<u64> = const { Cell::new(0) }; }
// SAFETY: forwards to the system allocator; only counts calls on this thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(p, l) }
    }
}
#[global_allocator]
static A: Counting = Counting;

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = join(|| fib(n - 1), || fib(n - 2));
    a + b
}

#[test]
fn join_allocates_nothing_when_nobody_steals() {
    // One worker: nobody can steal; every join runs its frames on the stack.
    let pool = ThreadPoolBuilder::new().num_threads(1).build();
    let (allocs, v) = pool.install(|| {
        // Warm up (first-use thread-locals), then count.
        fib(10);
        let before = ALLOCS.with(|a| a.get());
        let v = fib(22);
        (ALLOCS.with(|a| a.get()) - before, v)
    });
    assert_eq!(v, 17711);
    assert_eq!(allocs, 0, "joins that nobody stole allocated");
}
