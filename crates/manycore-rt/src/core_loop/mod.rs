//! The loop every core runs: poll the rings of active senders, the local
//! queue, the timers, the async tasks and the task queue; when there is
//! nothing, spin and/or sleep on the doorbell as the idle policy says. The
//! protocol is in the crate's `README.md`.
//!
//! A core's state, [`CoreLocal`], is split by role: what it sends
//! (`outbox.rs`), what it receives (`inbox.rs`), how it idles (`idle.rs`),
//! and how code on it waits for one thing while serving the rest
//! (`wait.rs`); `api.rs` is what code on a core may call.

mod api;
mod idle;
mod inbox;
mod outbox;
mod wait;

#[cfg(feature = "internals")]
pub use api::debug_counts;
pub use api::{batch_spawns, park_current, poll_once, preempt_point};
pub(crate) use api::{note_late_result, note_panic};
pub(crate) use wait::Waited;

use crate::executor::Executor;
use crate::mailbox::Mailbox;
use crate::raw::{self, Message};
use crate::runtime::Shared;
use idle::IdleState;
use inbox::Inbox;
use manycore_sync::atomic::Ordering;
use manycore_sync::{AdaptiveSpin, Awake};
use outbox::Outbox;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// Messages taken from one ring before moving on to the next.
const BATCH: usize = 32;
/// Loads of a watched line (the last active ring's next slot, or a
/// waited-for completion) per poll while a core waits or idles.
const WAIT_LOOKS: u32 = 8;
/// Empty polls between clearing stale active bits (while the core spins;
/// it clears them anyway before it sleeps).
const CLEAR_EVERY: u32 = 4096;
/// Busy polls between looks at `closing`: a shutdown that gives up
/// waiting for quiescence stops a core that never runs out of work.
const CLOSE_CHECK_EVERY: u32 = 64;
/// How long an idle core under a spinning policy lingers past its spin
/// budget, spinning (yielding while crowded), while an outside thread has
/// more than one call in flight (at most one lingering core per such
/// thread, `outside::Linger`): its next call would otherwise pay a
/// wake-up.
const OUTSIDE_LINGER: std::time::Duration = std::time::Duration::from_millis(2);

/// A crowded idle turn (one yield) that returned only after this long
/// found the CPU held by a thread that does not yield: a core of a
/// runtime with more cores than CPUs then moves to the next CPU
/// (README.md, "Idle policies").
const STARVED: std::time::Duration = std::time::Duration::from_millis(2);

thread_local! {
    /// This thread's core state while it runs `run_core` (see `raw::current`).
    static CURRENT: raw::CurrentCore<CoreLocal> = const { raw::CurrentCore::new() };
}

/// Runs `f` with this thread's core state, if this thread is a core (a
/// thread-local pointer that `run_core` sets for the core's whole life; see
/// `raw::current`).
#[inline]
pub(crate) fn with_local<R>(f: impl FnOnce(Option<&CoreLocal>) -> R) -> R {
    raw::with_current(&CURRENT, f)
}

/// True if the calling thread is a core of runtime `id`.
pub(crate) fn on_core_of(id: u64) -> bool {
    with_local(|l| l.is_some_and(|l| l.shared.id == id))
}

/// Everything a core owns. Lives on the core's thread, on the frame of
/// `run_core`, which `with_local` hands out references to while user code
/// runs. The roles are plain fields, not pointers: the send path reads
/// `out` through the same reference it always had.
pub(crate) struct CoreLocal {
    pub(crate) index: usize,
    pub(crate) shared: Arc<Shared>,
    /// What this core sends (`outbox.rs`).
    out: Outbox,
    /// What this core receives (`inbox.rs`).
    inbox: Inbox,
    /// The async tasks and coroutines that live on this core.
    pub(crate) exec: Executor,
    pub(crate) timers: crate::timer::TimerQueue,
    pub(crate) objects: crate::object::ObjectTable,
    pub(crate) pending: crate::group::PendingSinks,
    /// Work spawned with attributes, in the order of the core's policy.
    pub(crate) tasks: crate::task_queue::TaskQueue,
    /// Busy/idle bookkeeping and the doorbell waker (`idle.rs`).
    idle: IdleState,
}

impl CoreLocal {
    pub(crate) fn new(
        index: usize,
        shared: Arc<Shared>,
        sched: crate::task_queue::Scheduler,
    ) -> Self {
        Self {
            index,
            out: Outbox::new(),
            inbox: Inbox::new(),
            exec: Executor::new(),
            timers: Default::default(),
            objects: Default::default(),
            pending: Default::default(),
            tasks: crate::task_queue::TaskQueue::new(sched),
            idle: IdleState::new(&shared, index),
            shared,
        }
    }

    pub(super) fn mailbox(&self) -> &Mailbox {
        &self.shared.mailboxes[self.index]
    }

    /// Runs a message, then publishes what it sent deferred.
    pub(super) fn run(&self, m: Message) {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| m.run())) {
            self.note_panic();
            crate::error::drop_payload(p);
        }
        self.publish_deferred();
    }

    /// [`run`](Self::run) of the message in `place`, where it lies.
    #[inline]
    pub(super) fn run_in(&self, place: &mut crate::raw::Inbound) {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| place.run())) {
            self.note_panic();
            crate::error::drop_payload(p);
        }
        self.publish_deferred();
    }

    pub(super) fn note_panic(&self) {
        let st = &self.shared.states[self.index];
        st.panics
            .store(st.panics.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// One scheduling round. Returns how much work ran.
    pub(crate) fn poll(&self) -> usize {
        // Whatever the code that polls sent deferred goes out first: it may
        // be about to wait for its effect.
        self.publish_deferred();
        let mut n = self.run_urgent();
        if self.out.spilled.get() > 0 {
            self.flush_spills();
        }
        let mb = self.mailbox();
        for w in 0..mb.words() {
            let mut bits = mb.word(w);
            while bits != 0 {
                let src = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                n += self.drain_ring(src, BATCH);
            }
        }
        n += self.timers.fire();
        n += self.run_local(BATCH);
        if self.exec.has_ready() {
            self.set_busy();
            n += self.exec.run_ready(self, BATCH);
        }
        // One task from the scheduler queue per round, so that work arriving
        // meanwhile (urgent, or more important) gets in before the next.
        n += self.run_urgent();
        if let Some(m) = if self.tasks.is_empty() {
            None
        } else {
            self.tasks.pop()
        } {
            n += 1;
            self.set_busy();
            self.run(m);
        }
        if n > 0 {
            self.set_busy();
        }
        // Async tasks and timers sent from this round.
        self.publish_deferred();
        n
    }

    /// Takes the rings bound to this core since it last looked, then scans
    /// every ring (not only active ones) and runs what it finds.
    pub(super) fn poll_all(&self) -> usize {
        self.adopt_all();
        let mut n = 0;
        let mut from = 0;
        loop {
            let next = self.inbox.consumers.borrow().next_key(from);
            let Some(src) = next else { break };
            n += self.drain_ring(src, BATCH);
            from = src + 1;
        }
        if n > 0 {
            self.set_busy();
        }
        n + self.poll()
    }

    /// True if any ring, queue or task has work, without running it. A
    /// spilled message counts only if its ring has room: otherwise only its
    /// receiver can make progress, and this core may sleep (a while: see
    /// `sleep`).
    pub(super) fn has_work(&self) -> bool {
        self.spill_can_move()
            || self.mailbox().urgent_pushed() != self.inbox.urgent_seen.get()
            || !self.tasks.is_empty()
            || self.inbox.local_len.get() > 0
            || self.exec.has_ready()
            || self.rings_to_adopt()
            || self
                .inbox
                .consumers
                .borrow()
                .iter()
                .any(|(_, c)| !c.is_empty())
    }
}

/// The body of a core's thread.
pub(crate) fn run_core(local: CoreLocal) {
    let l = &local;
    // SAFETY: nothing borrows `local` mutably; the guard stays on this frame
    // and is dropped before `local` (below, or when unwinding: it was
    // declared after it); `exit_core` drops every task, coroutines
    // included, before `local` is dropped.
    let core = unsafe { raw::enter(&CURRENT, l) };
    // Counted as awake for its whole life but while it sleeps (`sleep`).
    let awake = Awake::enter();
    let mut budget = AdaptiveSpin::new(l.shared.idle.spin_budget(), &l.idle.gaps);
    let may_linger = !l.shared.idle.spin_budget().is_zero();
    // This idle stretch's lingering place, if any (`OUTSIDE_LINGER`).
    let mut linger = crate::outside::Linger::default();
    let mut empty = 0u32;
    let mut busy = 0u32;
    let (mut hook_gen, mut hook) = (0, None);
    // The CPU of the original set this core is pinned to, if it roams.
    let cpus = manycore_sync::cpu::original();
    let mut slot = l.index % cpus.len();
    loop {
        if l.poll() > 0 {
            budget.found();
            linger.end();
            busy = busy.wrapping_add(1);
            if busy % CLOSE_CHECK_EVERY == 0 && l.shared.closing.load(Ordering::Acquire) {
                break;
            }
            continue;
        }
        if l.shared.closing.load(Ordering::Acquire) {
            break;
        }
        l.refresh_idle_hook(&mut hook_gen, &mut hook);
        if let Some(h) = &hook {
            if h.on_idle(l.index) {
                budget.found();
                continue;
            }
        }
        empty = empty.wrapping_add(1);
        if empty % CLEAR_EVERY == 0 {
            if l.refresh_bits() > 0 {
                continue;
            }
            if !l.has_work() {
                l.set_idle();
            }
        }
        if l.watch_last_ring(WAIT_LOOKS) > 0 {
            budget.found();
            continue;
        }
        // A roaming core times its crowded turns (`STARVED`).
        let turn = (l.shared.roam && Awake::crowded()).then(std::time::Instant::now);
        let spun = budget.spin();
        if turn.is_some_and(|t| t.elapsed() >= STARVED) {
            slot = (slot + 1) % cpus.len();
            let _ = manycore_sync::cpu::pin_current(cpus[slot]);
        }
        if spun {
            continue;
        }
        if may_linger && linger.go_on(OUTSIDE_LINGER) {
            if Awake::crowded() {
                manycore_sync::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        // The hook's pending work counts as work in the sleep re-check (see
        // `Core::wake`).
        l.sleep(&|| hook.as_ref().is_some_and(|h| h.pending(l.index)), None);
        budget.slept();
        linger.end();
    }
    drop(linger);
    // Leave the thread-local first: whatever dropping leftovers sends now goes
    // the outside way, which refuses (the runtime is stopping).
    drop(budget);
    drop(awake);
    drop(core);
    exit_core(l);
    drop(local);
}

/// Closes the mailbox, parks the consumers for late senders, and drops what
/// is left (each dropped call resolves to `Shutdown`).
fn exit_core(l: &CoreLocal) {
    l.publish_deferred();
    l.mailbox().close();
    let mut consumers = std::mem::take(&mut *l.inbox.consumers.borrow_mut());
    let mut leftovers = Vec::new();
    {
        let mut g = l.shared.parked[l.index]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // Rings bound but not taken yet are drained too; a ring bound after
        // this is drained by its own sender (`Shared::drain_parked`).
        l.shared.new_rings[l.index].take_each(|src, c| {
            consumers.insert(src, *c);
        });
        for (_, c) in consumers.iter_mut() {
            while let Some(m) = c.try_pop() {
                leftovers.push(m);
            }
        }
        *g = Some(consumers);
    }
    drop(leftovers);
    let local: Vec<Message> = l.inbox.local.borrow_mut().drain(..).collect();
    l.inbox.local_len.set(0);
    drop(local);
    l.exec.clear();
    l.timers.clear();
    l.tasks.clear();
    l.shared.drain_urgent(l.index);
    l.pending.clear();
    // Objects are freed on their own core, here, at its exit.
    l.objects.clear();
    // Our rings and what is spilled behind them: dropped now, so that the
    // rings' leftovers can go.
    let links = std::mem::take(&mut *l.out.links.borrow_mut());
    drop(links);
}
