//! Every `Duration` is a valid timeout: `Outcome::wait_timeout` with
//! `Duration::ZERO` looks once and `Duration::MAX` waits as `wait` does,
//! from an outside thread and from a core.

mod common;
use common::runtime;
use manycore_flow::{FlowError, Outcome, Outside, User};
use std::time::Duration;

#[test]
fn outcome_wait_timeout_zero_and_max_from_an_outside_thread() {
    let rt = runtime(1);
    let (slot, out) = Outcome::<u32>::new(rt.core(0)).unwrap();
    assert_eq!(out.wait_timeout(Duration::ZERO), Err(FlowError::Timeout));
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(5));
        Outside::<User>::new().signal(&slot, 7).unwrap();
    });
    assert_eq!(out.wait_timeout(Duration::MAX), Ok(7));
    t.join().unwrap();
}

#[test]
fn outcome_wait_timeout_zero_and_max_on_a_core() {
    let rt = runtime(2);
    let (slot, out) = Outcome::<u32>::new(rt.core(0)).unwrap();
    let waited = rt
        .core(1)
        .call(move || {
            let zero = out.wait_timeout(Duration::ZERO);
            let t = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(5));
                Outside::<User>::new().signal(&slot, 9).unwrap();
            });
            let max = out.wait_timeout(Duration::MAX);
            t.join().unwrap();
            (zero, max)
        })
        .wait()
        .unwrap();
    assert_eq!(waited, (Err(FlowError::Timeout), Ok(9)));
}
