//! Deadlocks that can be seen are errors: a core that waits for a call to
//! itself runs the call while it waits; code running on an object that
//! waits for an invocation of that same object gets `WouldDeadlock` at
//! once, and the object keeps working.
use manycore_rt::{block_on, current, Group, InvokeError, Remote, Runtime};
use std::time::Duration;

#[test]
fn a_core_waiting_on_a_call_to_itself_runs_it() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    let r = rt
        .core(0)
        .call(|| {
            let me = current().unwrap();
            let a = me.call(|| 1).wait()?;
            let b = me.call_with(manycore_rt::Priority(1), || 2).wait()?;
            let c = me.call_urgent(|| 3).wait()?;
            let d = me.spawn_async(async { 4 }).wait()?;
            let e = me.spawn_coroutine(|| 5).wait()?;
            // Nested: a call to itself that calls itself.
            let m2 = me.clone();
            let f = me.call(move || m2.call(|| 6).wait()).wait()??;
            // Placing an object on its own core waits for the insertion.
            let o = me.place(7u32)?;
            let g = o.invoke(|x| *x).wait()?;
            Ok::<_, InvokeError>([a, b, c, d, e, f, g])
        })
        .wait();
    assert_eq!(r, Ok(Ok([1, 2, 3, 4, 5, 6, 7])));
}

#[test]
fn an_object_waiting_on_itself_gets_would_deadlock() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    let o = rt.core(1).place(10u32).unwrap();
    let me = o.clone();
    let r = o.invoke(move |x| {
        *x += 1;
        me.invoke(|x| *x).wait()
    });
    assert_eq!(r.wait(), Ok(Err(InvokeError::WouldDeadlock)));
    // The object still works; the abandoned invocation ran after the outer
    // one and its result was dropped.
    assert_eq!(o.invoke(|x| *x).wait(), Ok(11));
    // With a timeout too: the wait would only end by timing out.
    let me = o.clone();
    let r = o.invoke(move |_| me.invoke(|x| *x).wait_timeout(Duration::from_secs(3600)));
    assert_eq!(r.wait(), Ok(Err(InvokeError::WouldDeadlock)));
}

#[test]
fn nested_waits_on_a_busy_object_get_would_deadlock() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    let c0 = rt.core(0).clone();
    let a = c0.place(1u32).unwrap();
    let b = c0.place(2u32).unwrap();
    // a's method waits for b, whose method waits for a: a is busy on the
    // stack that waits.
    let (a2, b2) = (a.clone(), b.clone());
    let r = a.invoke(move |_| b2.invoke(move |_| a2.invoke(|x| *x).wait()).wait());
    assert_eq!(r.wait(), Ok(Ok(Err(InvokeError::WouldDeadlock))));
    // Through a call to the object's own core.
    let a3 = a.clone();
    let r = a.invoke(move |_| {
        let a4 = a3.clone();
        current()
            .unwrap()
            .call(move || a4.invoke(|x| *x).wait())
            .wait()
    });
    assert_eq!(r.wait(), Ok(Ok(Err(InvokeError::WouldDeadlock))));
    // Through a collective that has the busy object as a member.
    let g = Group::new(vec![a.clone(), b.clone()]);
    let r = a.invoke(move |_| g.reduce(|x| *x, |p, q| p + q).wait());
    assert_eq!(r.wait(), Ok(Err(InvokeError::WouldDeadlock)));
    // Both objects still work.
    assert_eq!(a.invoke(|x| *x).wait(), Ok(1));
    assert_eq!(b.invoke(|x| *x).wait(), Ok(2));
}

#[test]
fn waiting_on_another_object_or_core_is_not_a_deadlock() {
    let rt = Runtime::builder().cores(2).build().unwrap();
    let a = rt.core(0).place(1u32).unwrap();
    let b = rt.core(0).place(2u32).unwrap();
    let c = rt.core(1).place(3u32).unwrap();
    let (b2, c2) = (b.clone(), c.clone());
    let r = a.invoke(move |x| {
        let from_b = b2.invoke(|y| *y).wait()?;
        let from_c = c2.invoke(|z| *z).wait()?;
        Ok::<_, InvokeError>(*x + from_b + from_c)
    });
    assert_eq!(r.wait(), Ok(Ok(6)));
}

#[test]
fn a_coroutine_blocking_on_its_own_object_gets_would_deadlock() {
    let rt = Runtime::builder().cores(1).build().unwrap();
    let o: Remote<u32> = rt.core(0).place(5).unwrap();
    let me = o.clone();
    let r = rt.core(0).spawn_coroutine(move || {
        let inner = me.clone();
        // The coroutine's wait runs the invocation on its own stack; inside
        // it, block_on on the same object could never return.
        me.invoke(move |_| block_on(inner.invoke(|x| *x))).wait()
    });
    assert_eq!(r.wait(), Ok(Ok(Err(InvokeError::WouldDeadlock))));
}

#[test]
fn waiting_on_an_object_held_by_a_suspended_coroutine_is_not_a_deadlock() {
    // A coroutine holds the object across a suspension; code on the same
    // core's own stack that waits for the object waits until the coroutine
    // is done with it, instead of failing.
    let rt = Runtime::builder().cores(1).build().unwrap();
    let o: Remote<u32> = rt.core(0).place(5).unwrap();
    let holder = o.clone();
    let held = rt.core(0).spawn_coroutine(move || {
        holder
            .invoke(|x| {
                block_on(manycore_rt::sleep(Duration::from_millis(20)));
                *x += 1;
            })
            .wait()
    });
    let waiter = o.clone();
    let r = rt.core(0).call(move || waiter.invoke(|x| *x).wait());
    assert_eq!(held.wait(), Ok(Ok(())));
    let v = r.wait().unwrap().unwrap();
    assert!(v == 5 || v == 6, "{v}");
}
