//! Core threads' stacks: as deep as the main thread's by default, settable,
//! and a stack that cannot be had is a typed error.
use manycore_rt::{Error, Runtime, DEFAULT_CORE_STACK};

/// Recurses `levels` deep with a 16 KiB buffer per level; returns how many
/// bytes of stack it used below `top` (an address in the caller's frame).
#[inline(never)]
fn deep(levels: usize, top: usize) -> usize {
    let buf = std::hint::black_box([levels as u8; 16 * 1024]);
    if levels == 0 {
        return top.saturating_sub(std::hint::black_box(&buf) as *const _ as usize);
    }
    deep(levels - 1, top).max(usize::from(buf[1]))
}

/// Recurses until about `bytes` of stack are in use; returns the bytes used.
fn use_stack(bytes: usize) -> usize {
    let here = 0u8;
    let top = std::hint::black_box(&here) as *const u8 as usize;
    // Measure a level's size with a shallow run, then go as deep as asked.
    let per_level = deep(8, top) / 8;
    deep(bytes / per_level.max(1), top)
}

#[test]
fn a_core_recurses_as_deep_as_the_main_thread() {
    // 5 MiB: more than Rust gives a spawned thread by default (2 MiB),
    // less than the main thread's usual 8 MiB.
    assert_eq!(DEFAULT_CORE_STACK, 8 << 20);
    let rt = Runtime::builder().cores(1).build().unwrap();
    let used = rt.core(0).call(|| use_stack(5 << 20)).wait().unwrap();
    assert!(used > 3 << 20, "{used}");
}

#[test]
fn stack_size_sets_the_core_threads_stack() {
    // 12 MiB, on 16 MiB stacks.
    let rt = Runtime::builder()
        .cores(1)
        .stack_size(16 << 20)
        .build()
        .unwrap();
    let used = rt.core(0).call(|| use_stack(12 << 20)).wait().unwrap();
    assert!(used > 9 << 20, "{used}");
}

#[test]
fn a_stack_that_cannot_be_had_is_a_resource_error() {
    for bytes in [usize::MAX, usize::MAX / 2, 1 << 60] {
        match Runtime::builder().cores(2).stack_size(bytes).build() {
            Err(Error::Resource(_)) => {}
            Err(e) => panic!("{bytes}: {e}"),
            Ok(_) => panic!("{bytes}: a stack that large was mapped"),
        }
    }
}
