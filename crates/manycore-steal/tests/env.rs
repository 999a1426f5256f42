//! The global pool's size from the environment: `MANYCORE_NUM_THREADS`,
//! else `RAYON_NUM_THREADS` (a positive number), else the process's
//! original CPU set, at most `max_num_threads()`. The environment is read
//! once, when the global pool starts, so each case runs in a child process
//! of this test binary (`child`, which does nothing unless the parent set
//! `MANYCORE_ENV_TEST_WANT`).

use std::process::Command;

const WANT: &str = "MANYCORE_ENV_TEST_WANT";

/// Runs in a child: the global pool has the number of workers the parent
/// expects, and a `broadcast` reaches each of them.
#[test]
fn child() {
    let Ok(want) = std::env::var(WANT) else {
        return;
    };
    let want: usize = want.parse().unwrap();
    assert_eq!(manycore_steal::default_num_threads(), want);
    assert_eq!(manycore_steal::current_num_threads(), want);
    let mut seen = manycore_steal::broadcast(|ctx| ctx.index());
    seen.sort_unstable();
    assert_eq!(seen, (0..want).collect::<Vec<_>>());
}

fn run(vars: &[(&str, &str)], want: usize) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["child", "--exact", "--test-threads=1"])
        .env_remove("MANYCORE_NUM_THREADS")
        .env_remove("RAYON_NUM_THREADS")
        .env(WANT, want.to_string());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{vars:?} should give {want} workers:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn cpus() -> usize {
    manycore_sync::cpu::original()
        .len()
        .clamp(1, manycore_steal::max_num_threads())
}

#[test]
fn rayon_num_threads_sets_the_global_pool() {
    run(&[("RAYON_NUM_THREADS", "3")], 3);
}

#[test]
fn manycore_num_threads_comes_before_rayon_num_threads() {
    run(
        &[("MANYCORE_NUM_THREADS", "5"), ("RAYON_NUM_THREADS", "3")],
        5,
    );
}

#[test]
fn zero_or_garbage_falls_back_to_the_cpu_set() {
    run(&[("RAYON_NUM_THREADS", "0")], cpus());
    run(
        &[("MANYCORE_NUM_THREADS", "many"), ("RAYON_NUM_THREADS", "")],
        cpus(),
    );
    // An unusable manycore variable gives way to a usable rayon one.
    run(
        &[("MANYCORE_NUM_THREADS", "0"), ("RAYON_NUM_THREADS", "2")],
        2,
    );
}

#[test]
fn more_than_the_maximum_is_clamped() {
    let max = manycore_steal::max_num_threads();
    run(&[("MANYCORE_NUM_THREADS", "100000")], max);
}
