//! The receive side every core exposes to its senders: the active-sender
//! bitmap (the notification ring/tree of Barrelfish on the SCC, section 2.8),
//! the doorbell (the inter-processor interrupt, here a futex `EventCount`),
//! the closed flag that tells late senders to drain their own message, the
//! count of urgent invocations pushed, and the sticky notify flag. The
//! protocol is written out in `README.md` beside this file; every field's
//! doc says who writes it, with what ordering, and what that pairs with.

use manycore_sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use manycore_sync::{CachePadded, EventCount, WaitKey};

/// One destination core's mailbox. Senders read it after every publish; it
/// is written only when the receiver goes to sleep (the doorbell's waiter
/// count) or closes, when someone notifies it or pushes an urgent
/// invocation, so in steady traffic it sits shared in every sender's cache.
/// The bitmap's words live in an allocation of their own, written only when
/// a bit changes.
pub(crate) struct Mailbox {
    inner: CachePadded<Inner>,
}

struct Inner {
    /// The active-sender bitmap, one bit per source (cores, then lanes); a
    /// separate allocation, so only its pointer is on the mailbox's line.
    /// A bit is a sticky hint that ring (source, this core) may hold
    /// messages. Set by the source's sender in `announce`, after its
    /// publish and its `fence(SeqCst)`, with a Relaxed `fetch_or` (skipped
    /// while the bit is still set). Cleared only by the receiver, in
    /// `clear_and_fence` (Relaxed stores, then `fence(SeqCst)`), before it
    /// sleeps and every few thousand empty polls, always followed by a scan
    /// of every ring. The two fences pair: a sender whose message that scan
    /// misses sees its bit cleared and sets it again. Read Relaxed by the
    /// receiver's poll; the data is carried by the ring slot's sequence
    /// word (Release/Acquire in `manycore-ring`).
    bits: Box<[AtomicU64]>,
    /// The receiver's doorbell (a futex `EventCount`): the receiver
    /// announces itself with `prepare_wait` (waiters += 1, `fence(SeqCst)`)
    /// before its last look at its work; wakers fence, then look at the
    /// waiter count, and bump the epoch and `futex_wake` only if it is not
    /// zero.
    doorbell: EventCount,
    /// The receiver has exited and parked its consumers. Set once, by the
    /// receiver in `close` (a Relaxed store, then `fence(SeqCst)`), before
    /// it drains its rings for the last time. Read Relaxed by senders after
    /// their fence in `announce` / `announce_urgent`; the fences pair, so a
    /// sender either sees the flag (and drains its own ring under the
    /// parked-consumer lock) or its message is seen by the receiver's drain.
    closed: AtomicBool,
    /// Urgent invocations pushed into the front lane so far. Incremented by
    /// each pusher in `announce_urgent`, with `fetch_add(1, Release)` after
    /// its push (under the lane's mutex); read with Acquire by the receiver
    /// (`urgent_pushed`), which compares it with the count it has taken,
    /// and by the quiescence check of shutdown.
    urgent: AtomicU64,
    /// A notify is pending: the receiver must run its loop (and idle hook)
    /// once more before it sleeps. Set by `Core::notify` (a Relaxed store,
    /// then the doorbell's `notify_all`, which fences with SeqCst before it
    /// looks for sleepers); consumed by the receiver's sleep re-check
    /// (`take_notified`: a Relaxed load, then a Relaxed swap to false),
    /// which runs after the fence of `prepare_wait`. The fences pair: a
    /// notify is never lost, even if it lands just before the receiver
    /// announces its sleep.
    notified: AtomicBool,
    /// A sender has rung the doorbell since the receiver last announced a
    /// sleep: later senders need not ring it again. Set by a sender in
    /// `announce` (a `swap(true, AcqRel)`, only when it saw a waiter after
    /// its fence); the one whose swap returned false bumps the epoch and
    /// wakes. Cleared by the receiver in `prepare_sleep` (a `swap(false,
    /// AcqRel)` after the fence of `prepare_wait` and after it took its
    /// key, before its re-check). Every write is a swap, so a receiver's
    /// clear that reads a sender's `true` synchronises with that sender
    /// (its message is then seen by the re-check), and a sender that reads
    /// the clear (or a later `true` of a sender that read it) knows that a
    /// bump made after the receiver's key wakes it. See "No wakeup is
    /// lost" in `README.md`.
    rung: AtomicBool,
}

impl Mailbox {
    pub(crate) fn new(sources: usize) -> Self {
        let words = sources.div_ceil(64).max(1);
        Self {
            inner: CachePadded::new(Inner {
                bits: (0..words).map(|_| AtomicU64::new(0)).collect(),
                doorbell: EventCount::new(),
                closed: AtomicBool::new(false),
                urgent: AtomicU64::new(0),
                notified: AtomicBool::new(false),
                rung: AtomicBool::new(false),
            }),
        }
    }

    /// Sender side, right after a message from `src` was published into its
    /// ring: fence once, then set our active bit if the receiver cleared it,
    /// ring the doorbell if the receiver announced sleep. Returns true if the
    /// receiver has closed (the sender must then drain its ring itself).
    #[inline]
    pub(crate) fn announce(&self, src: usize) -> bool {
        // SeqCst; pairs with the fence in `EventCount::prepare_wait` and in
        // `clear_and_fence`: either the receiver's re-scan sees our message or
        // we see its cleared bit / announced sleep / closed flag.
        fence(Ordering::SeqCst);
        let w = &self.inner.bits[src >> 6];
        let bit = 1u64 << (src & 63);
        if w.load(Ordering::Relaxed) & bit == 0 {
            w.fetch_or(bit, Ordering::Relaxed);
        }
        // Ring only if no sender has rung since the receiver announced:
        // while a woken receiver has not run yet (its waiter count still
        // up), every further send would otherwise pay a `futex_wake`.
        if self.inner.doorbell.has_waiters() && !self.inner.rung.swap(true, Ordering::AcqRel) {
            self.inner.doorbell.notify_all_after_fence();
        }
        self.inner.closed.load(Ordering::Relaxed)
    }

    /// Receiver: announces a sleep on the doorbell (`prepare_wait`: waiters
    /// += 1, `fence(SeqCst)`, the key) and re-arms the senders' ring
    /// (`rung`). The caller then re-checks its work and finishes the wait
    /// (`wait`, `wait_timeout` or `cancel_wait` on the doorbell).
    #[inline]
    pub(crate) fn prepare_sleep(&self) -> WaitKey {
        let key = self.inner.doorbell.prepare_wait();
        // AcqRel; a sender's `true` read here makes its message visible to
        // the re-check that follows.
        self.inner.rung.swap(false, Ordering::AcqRel);
        key
    }

    /// Number of 64-bit words in the bitmap.
    #[inline]
    pub(crate) fn words(&self) -> usize {
        self.inner.bits.len()
    }

    /// Receiver: the active senders in word `i` (a hint: the ring slot's own
    /// sequence word, read with Acquire, carries the data).
    #[inline]
    pub(crate) fn word(&self, i: usize) -> u64 {
        self.inner.bits[i].load(Ordering::Relaxed)
    }

    /// Receiver: forget every active bit, then fence. The caller must re-scan
    /// every ring afterwards (a sender that saw its bit still set skipped
    /// setting it).
    pub(crate) fn clear_and_fence(&self) {
        for w in self.inner.bits.iter() {
            if w.load(Ordering::Relaxed) != 0 {
                w.store(0, Ordering::Relaxed);
            }
        }
        // SeqCst; pairs with the fence in `announce`.
        fence(Ordering::SeqCst);
    }

    /// The receiver's doorbell.
    #[inline]
    pub(crate) fn doorbell(&self) -> &EventCount {
        &self.inner.doorbell
    }

    /// Sender: one more urgent message was pushed into the front lane.
    /// Returns true if the receiver has closed.
    pub(crate) fn announce_urgent(&self) -> bool {
        // Release; pairs with the Acquire in `urgent_pushed`: the lane push
        // (under its mutex) is visible to a receiver that sees the new count.
        self.inner.urgent.fetch_add(1, Ordering::Release);
        fence(Ordering::SeqCst);
        self.inner.doorbell.notify_one_after_fence();
        self.inner.closed.load(Ordering::Relaxed)
    }

    /// Receiver: how many urgent messages were pushed so far.
    #[inline]
    pub(crate) fn urgent_pushed(&self) -> u64 {
        self.inner.urgent.load(Ordering::Acquire)
    }

    /// Anyone: wakes the receiver if it sleeps (or is about to: its
    /// `prepare_wait` comes before its last look at its work, and this fence
    /// before our look at its waiters). Not sticky: the waker must have
    /// published what it wants the receiver to see where the receiver's
    /// sleep re-check looks (its rings, or its idle hook's `pending`).
    pub(crate) fn wake(&self) {
        self.inner.doorbell.notify_all();
    }

    /// Anyone: asks the receiver to run its scheduler loop (and idle hook)
    /// once more. Sticky: the receiver's sleep re-check consumes it.
    pub(crate) fn notify(&self) {
        self.inner.notified.store(true, Ordering::Relaxed);
        // notify_all fences (SeqCst) before looking for sleepers; pairs with
        // the fence in prepare_wait before the receiver's `take_notified`.
        self.inner.doorbell.notify_all();
    }

    /// Receiver: consumes a pending notify.
    #[inline]
    pub(crate) fn take_notified(&self) -> bool {
        self.inner.notified.load(Ordering::Relaxed)
            && self.inner.notified.swap(false, Ordering::Relaxed)
    }

    /// Receiver: marks the mailbox closed (the core is exiting), then fences.
    pub(crate) fn close(&self) {
        self.inner.closed.store(true, Ordering::Relaxed);
        // SeqCst; pairs with the fence in `announce`: a sender that published
        // after this either sees `closed` or its message is seen by our drain.
        fence(Ordering::SeqCst);
    }
}
