//! Asymmetric memory barriers: a Dekker-style handshake (publish, then look
//! at the other side's flag) normally needs a full fence on both sides. When
//! one side is hot (a sender, on every message) and the other cold (a
//! receiver about to sleep), the hot side can use a compiler-only
//! [`light`] barrier and the cold side a [`heavy`] one: `membarrier(2)` with
//! `MEMBARRIER_CMD_PRIVATE_EXPEDITED`, which runs a full barrier on every CPU
//! currently running a thread of this process (and a thread that is not
//! running has passed a context switch, itself a full barrier). This is the
//! technique of Linux's RCU and Folly's `asymmetricHeavyBarrier`.
//!
//! Pairing rule: a `light()` on one side is sound only against a `heavy()` on
//! the other, and only if [`available`] returned true; otherwise both sides
//! must use a full `fence(SeqCst)`. Under loom both barriers are
//! `fence(SeqCst)`, so the models check the protocol in its symmetric form.
//!
//! ```
//! use manycore_sync::barrier;
//! if barrier::available() {
//!     barrier::light(); // hot side: costs nothing at run time
//!     barrier::heavy(); // cold side: microseconds (IPIs)
//! }
//! ```

use std::sync::OnceLock;

static AVAILABLE: OnceLock<bool> = OnceLock::new();

/// True if heavy barriers work in this process (the first call registers
/// it; later calls are a load). `MANYCORE_NO_MEMBARRIER=1` forces false.
pub fn available() -> bool {
    *AVAILABLE.get_or_init(|| {
        if !cfg!(loom) && std::env::var_os("MANYCORE_NO_MEMBARRIER").is_some_and(|v| v != "0") {
            return false;
        }
        // Under loom both barriers are full fences: always "available".
        cfg!(loom) || crate::raw::membarrier_register()
    })
}

/// The hot side's barrier: stops the compiler (not the CPU) from moving
/// memory accesses across it. Pairs with [`heavy`] on the other side.
#[inline(always)]
pub fn light() {
    #[cfg(loom)]
    crate::atomic::fence(crate::atomic::Ordering::SeqCst);
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
}

/// The cold side's barrier: a full fence here and on every CPU that runs a
/// thread of this process. Falls back to a plain full fence if heavy
/// barriers are not [`available`] (callers must then not use [`light`]).
pub fn heavy() {
    crate::atomic::fence(crate::atomic::Ordering::SeqCst);
    #[cfg(not(loom))]
    if available() {
        let ok = crate::raw::membarrier();
        debug_assert!(ok, "membarrier failed after registration");
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn heavy_and_light_run() {
        // Either works or cleanly reports unavailable; both calls are safe.
        let _ = super::available();
        super::light();
        super::heavy();
    }
}
