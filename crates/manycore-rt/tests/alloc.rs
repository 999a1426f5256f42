//! Closures that fit a slot travel inline: a spawn between cores allocates nothing.
use manycore_rt::{IdlePolicy, Runtime};
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

#[test]
fn inline_spawn_allocates_nothing() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Sleep)
        .ring_capacity(1024)
        .build()
        .unwrap();
    let c1 = rt.core(1).clone();
    let allocs = rt
        .core(0)
        .call(move || {
            // Warm up (first-use thread-locals), then count.
            c1.spawn(|| ()).unwrap();
            let before = ALLOCS.with(|a| a.get());
            for i in 0..500u64 {
                let payload = [i; 5]; // 40 bytes captured: fits inline
                c1.spawn(move || {
                    std::hint::black_box(payload);
                })
                .unwrap();
            }
            ALLOCS.with(|a| a.get()) - before
        })
        .wait()
        .unwrap();
    assert_eq!(allocs, 0, "sending inline closures allocated");
    const { assert!(manycore_rt::INLINE_CLOSURE_BYTES >= 40) };
}
