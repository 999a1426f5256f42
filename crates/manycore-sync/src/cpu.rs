//! The process's CPU set, read once before `main`, and thread pinning.
//!
//! A thread's affinity mask shrinks when it pins itself, and threads it spawns
//! inherit the smaller mask; a runtime that reads "the CPUs I may use" after
//! anything pinned would see one CPU and put every core on it. So the mask is
//! read by an ELF constructor (`.init_array`) before `main` runs, and
//! [`original`] always returns that first reading.

use std::sync::OnceLock;
use std::time::Duration;

static ORIGINAL: OnceLock<Vec<usize>> = OnceLock::new();

extern "C" fn read_at_start() {
    let _ = original();
}

// Runs before main (and before any test harness thread exists), on Linux.
#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static READ_AT_START: extern "C" fn() = read_at_start;

/// The CPUs this process was allowed to run on when it started, ascending.
/// Never empty: if the mask cannot be read, every online CPU is assumed.
pub fn original() -> &'static [usize] {
    ORIGINAL.get_or_init(|| match crate::raw::thread_affinity() {
        Ok(v) if !v.is_empty() => v,
        _ => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    })
}

/// Pins the calling thread to one CPU.
pub fn pin_current(cpu: usize) -> std::io::Result<()> {
    crate::raw::set_thread_affinity(&[cpu])
}

/// Restricts the calling thread to a set of CPUs.
pub fn set_current_affinity(cpus: &[usize]) -> std::io::Result<()> {
    crate::raw::set_thread_affinity(cpus)
}

/// The calling thread's kernel thread id (for [`set_thread_affinity`]).
pub fn thread_id() -> i32 {
    crate::raw::gettid()
}

/// The CPU the calling thread is running on right now (it may move at any
/// time), if the kernel tells.
pub fn current_cpu() -> Option<usize> {
    crate::raw::current_cpu()
}

/// Restricts thread `tid` (a [`thread_id`] of this process) to a set of CPUs.
///
/// The way to steer a sleeping thread: the CPU the kernel wakes it on is
/// taken from this set. Fails if the thread has exited or the set is empty
/// or out of range.
pub fn set_thread_affinity(tid: i32, cpus: &[usize]) -> std::io::Result<()> {
    crate::raw::set_affinity_of(tid, cpus)
}

/// The calling thread's current affinity (which may be smaller than [`original`]).
pub fn current_affinity() -> std::io::Result<Vec<usize>> {
    crate::raw::thread_affinity()
}

/// CPU time used so far by the whole process (user + system, from getrusage).
pub fn process_cpu_time() -> Duration {
    crate::raw::process_cpu_time()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    #[test]
    fn original_survives_pinning() {
        let orig = original().to_vec();
        assert!(!orig.is_empty());
        let t = std::thread::spawn(move || {
            pin_current(orig[0]).unwrap();
            assert_eq!(current_affinity().unwrap(), vec![orig[0]]);
            // The original set is still what it was.
            assert_eq!(original(), &orig[..]);
            // A thread spawned from a pinned thread inherits the small mask.
            std::thread::spawn(|| current_affinity().unwrap())
                .join()
                .unwrap()
        });
        let inherited = t.join().unwrap();
        assert_eq!(inherited.len(), 1);
    }
    #[test]
    fn another_threads_affinity_can_be_set() {
        let orig = original().to_vec();
        let (tx, rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(thread_id()).unwrap();
            go_rx.recv().unwrap();
            let now = current_cpu();
            (current_affinity().unwrap(), now)
        });
        let tid = rx.recv().unwrap();
        set_thread_affinity(tid, &orig[..1]).unwrap();
        go_tx.send(()).unwrap();
        let (aff, now) = t.join().unwrap();
        assert_eq!(aff, vec![orig[0]]);
        // It runs where it is allowed to.
        assert_eq!(now, Some(orig[0]));
        // An empty set is refused, not applied.
        assert!(set_thread_affinity(thread_id(), &[]).is_err());
    }
    #[test]
    fn bad_cpu_is_an_error() {
        assert!(pin_current(1 << 20).is_err());
    }
    #[test]
    fn cpu_time_grows() {
        let a = process_cpu_time();
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(30) {
            std::hint::spin_loop();
        }
        assert!(process_cpu_time() > a);
    }
}
