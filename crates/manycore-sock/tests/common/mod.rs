//! Helpers for tests that re-execute the test binary itself as the peer.
#![allow(dead_code)]

use manycore_sock::Namespace;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU32, Ordering};

pub const ROLE: &str = "MANYCORE_SOCK_ROLE";
pub const DIR: &str = "MANYCORE_SOCK_TEST_DIR";

/// A fresh private directory namespace, removed on drop.
pub struct TestNs {
    pub dir: PathBuf,
    pub ns: Namespace,
}

impl TestNs {
    pub fn new() -> TestNs {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = PathBuf::from(format!(
            "/dev/shm/manycore-sock-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        TestNs {
            ns: Namespace::dir(&dir),
            dir,
        }
    }
}

impl Drop for TestNs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Spawns this test binary running only `entry` with `ROLE=role`.
pub fn spawn(entry: &str, role: &str, ns: &TestNs, extra: &[(&str, String)]) -> Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([entry, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env(DIR, &ns.dir);
    for (k, v) in extra {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

/// In a child: the role and namespace, if this process is one.
pub fn child_role() -> Option<(String, Namespace)> {
    let role = std::env::var(ROLE).ok()?;
    let dir = std::env::var(DIR).ok()?;
    Some((role, Namespace::dir(dir)))
}

pub fn checksum(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf29ce484222325u64, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100000001b3)
    })
}

/// Deterministic test data.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub fn kill9(c: &mut Child) {
    // SAFETY-free: std's kill sends SIGKILL on Unix.
    let _ = c.kill();
    let _ = c.wait();
}

/// Kills (SIGKILL) and reaps the child when dropped, also when a test fails.
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        kill9(&mut self.0);
    }
}
