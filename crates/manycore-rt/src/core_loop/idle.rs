//! How a core idles: the sleep protocol on its doorbell, the stale-bit
//! refresh, and the busy/idle state it publishes for the quiescence check
//! of shutdown (see the crate's `README.md`).

use super::CoreLocal;
use crate::runtime::Shared;
use manycore_sync::atomic::Ordering;
use manycore_sync::{Awake, GapPredictor};
use std::cell::Cell;
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

/// How long a core with messages spilled behind full rings sleeps at most
/// before it tries them again.
const SPILL_RECHECK: Duration = Duration::from_micros(100);

/// The longest single timed sleep on the doorbell (the core then looks
/// again and sleeps on).
const LONGEST_SLEEP: Duration = Duration::from_secs(3600);

/// A core's idle bookkeeping.
pub(super) struct IdleState {
    /// Times this core went from idle to busy (published, with `idle`, in
    /// `CoreState::epoch_idle`).
    pub(super) epoch: Cell<u64>,
    /// The core found nothing in a full scan and has published its counters
    /// since; cleared by the next work it runs.
    pub(super) idle: Cell<bool>,
    /// Rings this core's doorbell: registered as the waker of what the core
    /// waits for while it sleeps.
    pub(super) waker: Waker,
    /// This core's prediction of its next idle gap, which sets how long it
    /// spins before it sleeps (`AdaptiveSpin`).
    pub(super) gaps: GapPredictor,
}

impl IdleState {
    pub(super) fn new(shared: &Arc<Shared>, index: usize) -> Self {
        Self {
            gaps: GapPredictor::new(shared.idle.spin_budget()),
            epoch: Cell::new(0),
            idle: Cell::new(false),
            waker: Waker::from(Arc::new(DoorbellWaker {
                shared: Arc::downgrade(shared),
                index,
            })),
        }
    }
}

/// A waker that rings a core's doorbell (a core sleeping in `wait_for`
/// registers it as the invocation's waker).
struct DoorbellWaker {
    shared: std::sync::Weak<Shared>,
    index: usize,
}

impl Wake for DoorbellWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(sh) = self.shared.upgrade() {
            sh.mailboxes[self.index].doorbell().notify_all();
        }
    }
}

impl CoreLocal {
    pub(super) fn set_busy(&self) {
        if self.idle.idle.get() {
            self.idle.idle.set(false);
            self.idle.epoch.set(self.idle.epoch.get() + 1);
            let st = &self.shared.states[self.index];
            st.epoch_idle
                .store(self.idle.epoch.get() << 1, Ordering::Release);
        }
    }

    /// Publishes counters and marks the core idle; call only after a full
    /// scan found nothing. A core with spilled messages is not idle: they
    /// are not in a ring yet, and the quiescence check of shutdown would
    /// not see them.
    pub(super) fn set_idle(&self) {
        if !self.idle.idle.get() && self.out.spilled.get() == 0 {
            let st = &self.shared.states[self.index];
            // Release; pairs with the Acquire loads of the quiescence check.
            st.sent.store(self.out.sent.get(), Ordering::Release);
            st.received
                .store(self.inbox.received.get(), Ordering::Release);
            st.urgent_received
                .store(self.inbox.urgent_seen.get(), Ordering::Release);
            st.epoch_idle
                .store((self.idle.epoch.get() << 1) | 1, Ordering::Release);
            self.idle.idle.set(true);
        }
    }

    /// Clears stale active bits, fences, and re-scans every ring.
    pub(super) fn refresh_bits(&self) -> usize {
        self.mailbox().clear_and_fence();
        self.poll_all()
    }

    /// The sleep protocol (README.md): announce, re-check everything, wait.
    /// `done` is an extra condition (a waited-for invocation). Returns after a
    /// wakeup, a timeout, or if work was found while announcing.
    pub(crate) fn sleep(&self, done: &dyn Fn() -> bool, deadline: Option<Instant>) {
        self.publish_deferred();
        let mb = self.mailbox();
        mb.clear_and_fence();
        let key = mb.prepare_sleep();
        if self.has_work()
            || done()
            || mb.take_notified()
            || self.shared.closing.load(Ordering::Acquire)
        {
            mb.doorbell().cancel_wait();
            // The bits were just cleared: a ring with work may have no bit set,
            // so scan every ring rather than leave it to `poll`.
            self.poll_all();
            return;
        }
        self.set_idle();
        let t0 = Instant::now();
        // While stopping, wake now and then so that the shutdown can progress.
        let cap = if self.shared.stopping.load(Ordering::Acquire) {
            Some(t0 + self.shared.stopping_wake)
        } else {
            None
        };
        // With messages spilled behind full rings, look again a little later:
        // a receiver does not ring its senders when it frees a slot.
        let retry = (self.out.spilled.get() > 0).then(|| t0 + SPILL_RECHECK);
        let until = [deadline, cap, retry, self.timers.next()]
            .into_iter()
            .flatten()
            .min();
        // Not awake while blocked: spinners elsewhere may pause in place.
        let asleep = Awake::leave();
        match until {
            Some(u) => {
                // A far deadline (any `Instant` a caller gave) sleeps in
                // steps: the doorbell's timed wait adds its timeout to the
                // clock, which must not overflow.
                let d = u.saturating_duration_since(t0).min(LONGEST_SLEEP);
                mb.doorbell().wait_timeout(key, d);
            }
            None => mb.doorbell().wait(key),
        }
        drop(asleep);
        let st = &self.shared.states[self.index];
        st.sleeps
            .store(st.sleeps.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        st.asleep_ns.store(
            st.asleep_ns.load(Ordering::Relaxed) + t0.elapsed().as_nanos() as u64,
            Ordering::Relaxed,
        );
        // Bits were cleared: look at every ring once.
        self.poll_all();
    }

    /// Refreshes `cache` (the core loop's copy of the idle hook, taken at
    /// generation `seen`) if the runtime's hook changed since. The loop keeps
    /// its own `Arc`: cloning one per idle round would bounce its count's
    /// cache line between all idle cores (one shared hook) on every round.
    pub(super) fn refresh_idle_hook(
        &self,
        seen: &mut u64,
        cache: &mut Option<Arc<dyn crate::runtime::IdleHook>>,
    ) {
        let gen = self.shared.hook_gen.load(Ordering::Acquire);
        if gen != *seen {
            *seen = gen;
            *cache = self
                .shared
                .idle_hook
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
        }
    }
}
