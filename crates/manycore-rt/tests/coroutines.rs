//! Coroutines: stackful tasks that block inside nested calls; the three task
//! types side by side on one core; a clean report of stack overflow.
use manycore_rt::{block_on, Core, IdlePolicy, InvokeError, Runtime};
use std::time::Duration;

fn three_deep(c: &Core, depth: u32, acc: u64) -> u64 {
    if depth == 3 {
        return block_on(c.call(move || acc * 2)).unwrap();
    }
    // Each level also blocks on its own call.
    let here = block_on(c.call(move || depth as u64)).unwrap();
    three_deep(c, depth + 1, acc + here)
}

#[test]
fn coroutine_blocks_three_calls_deep() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Sleep)
        .build()
        .unwrap();
    let c1 = rt.core(1).clone();
    assert_eq!(
        rt.core(0)
            .spawn_coroutine(move || three_deep(&c1, 0, 1))
            .wait(),
        Ok(8)
    );
}

#[test]
fn many_coroutines_interleave_on_one_core() {
    let rt = Runtime::builder()
        .cores(2)
        .idle(IdlePolicy::Sleep)
        .coroutine_stack(64 * 1024)
        .build()
        .unwrap();
    let invs: Vec<_> = (0..50u64)
        .map(|i| {
            let c1 = rt.core(1).clone();
            rt.core(0).spawn_coroutine(move || {
                let mut s = 0;
                for k in 0..10 {
                    s += block_on(c1.call(move || i * k)).unwrap();
                    if k == 5 {
                        block_on(manycore_rt::sleep(Duration::from_millis(1)));
                    }
                }
                s
            })
        })
        .collect();
    // While they block, core 0 still runs activities and async tasks.
    assert_eq!(rt.core(0).call(|| 7).wait(), Ok(7));
    assert_eq!(rt.core(0).spawn_async(async { 8 }).wait(), Ok(8));
    for (i, inv) in invs.into_iter().enumerate() {
        assert_eq!(inv.wait(), Ok(45 * i as u64));
    }
}

#[test]
fn panic_in_coroutine_is_an_error() {
    let rt = Runtime::builder().cores(1).build().unwrap();
    let r = rt
        .core(0)
        .spawn_coroutine(|| -> u8 { panic!("deep {}", 3) })
        .wait();
    assert_eq!(r, Err(InvokeError::Panicked("deep 3".into())));
    assert_eq!(rt.core(0).call(|| 1).wait(), Ok(1));
}

#[test]
fn block_on_outside_coroutines() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    // On a plain thread.
    assert_eq!(block_on(rt.core(1).call(|| 3)), Ok(3));
    // In an activity on a core: the core keeps serving while it waits.
    let c1 = rt.core(1).clone();
    assert_eq!(
        rt.core(0)
            .call(move || block_on(c1.call(|| 4)).unwrap())
            .wait(),
        Ok(4)
    );
}

#[test]
fn huge_stack_request_is_an_error_not_a_crash() {
    let rt = Runtime::builder().cores(1).build().unwrap();
    for size in [1 << 46, usize::MAX, usize::MAX - 4095, isize::MAX as usize] {
        let r = rt.core(0).spawn_coroutine_with_stack(size, || 1).wait();
        assert!(matches!(r, Err(InvokeError::Resource(_))), "{size}: {r:?}");
    }
    // The same through the runtime's default.
    let rt = Runtime::builder()
        .cores(1)
        .coroutine_stack(usize::MAX)
        .build()
        .unwrap();
    let r = rt.core(0).spawn_coroutine(|| 1).wait();
    assert!(matches!(r, Err(InvokeError::Resource(_))), "{r:?}");
    // The core is fine afterwards.
    assert_eq!(
        rt.core(0)
            .spawn_coroutine_with_stack(64 * 1024, || 2)
            .wait(),
        Ok(2)
    );
}

#[inline(never)]
fn recurse(n: u64) -> u64 {
    let buf = std::hint::black_box([n; 64]);
    if n == 0 {
        return buf[0];
    }
    recurse(n - 1) + buf[3]
}

#[test]
fn stack_overflow_is_reported_cleanly() {
    if std::env::var("MANYCORE_CHILD_OVERFLOW").is_ok() {
        let rt = Runtime::builder().cores(1).build().unwrap();
        let _ = rt
            .core(0)
            .spawn_coroutine_with_stack(32 * 1024, || recurse(1_000_000))
            .wait();
        unreachable!("the overflow must abort the process");
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "stack_overflow_is_reported_cleanly",
            "--nocapture",
        ])
        .env("MANYCORE_CHILD_OVERFLOW", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("coroutine stack overflow"), "stderr: {err}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(libc::SIGABRT), "{:?}", out.status);
}
