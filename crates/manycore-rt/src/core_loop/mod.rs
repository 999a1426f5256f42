//! The scheduler loop of one core: poll the rings of active senders, the
//! local queue and the async tasks; when there is nothing, spin and/or sleep
//! on the doorbell as the idle policy says (see `README.md` beside this file).

use crate::executor::Executor;
use crate::mailbox::Mailbox;
use crate::raw::{self, Message, Rx};
use crate::runtime::Shared;
use manycore_ring::{Consumer, Producer};
use manycore_sync::atomic::Ordering;
use manycore_sync::SpinBudget;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

/// Messages taken from one ring before moving on to the next.
const BATCH: usize = 32;
/// Looks at a waited-for completion per poll while waiting on a core.
const WAIT_LOOKS: u32 = 8;
/// A sender retries its spill queue for a destination every this many spills.
const SPILL_RETRY: usize = 32;
/// Empty polls (in `Poll` mode) between clearing stale active bits.
const CLEAR_EVERY: u32 = 4096;

thread_local! {
    static LANE: Cell<usize> = const { Cell::new(usize::MAX) };
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

/// On a core: (live remote objects, collectives waiting for children) on
/// this core. For tests that check nothing leaks; (0, 0) elsewhere.
#[doc(hidden)]
pub fn debug_counts() -> (usize, usize) {
    with_local(|l| l.map_or((0, 0), |l| (l.objects.len(), l.pending.len())))
}

/// A cheap scheduling point for long computations on a core: if urgent
/// invocations wait in this core's front lane, runs them now and returns
/// true. Costs a thread-local access and one load otherwise; off the cores
/// it does nothing.
///
/// ```
/// let rt = manycore_rt::Runtime::builder().cores(1).build().unwrap();
/// let r = rt.core(0).call(|| {
///     let mut acc = 0u64;
///     for i in 0..1_000_000u64 {
///         acc = acc.wrapping_add(i);
///         if i % 4096 == 0 { manycore_rt::preempt_point(); }
///     }
///     acc
/// }).wait();
/// assert!(r.is_ok());
/// ```
pub fn preempt_point() -> bool {
    with_local(|l| l.is_some_and(|l| l.run_urgent() > 0))
}

/// On a core: sleeps on this core's doorbell until a message, a notify, a
/// timer or `timeout` (whichever first), following the idle protocol (no
/// wakeup is lost). Returns at once if work is already waiting; then call
/// [`poll_once`]. Off the cores: sleeps the thread for `timeout`.
pub fn park_current(timeout: std::time::Duration) {
    let on_core = with_local(|l| {
        l.map(|l| {
            if !l.has_work() {
                l.sleep(&|| false, Some(Instant::now() + timeout));
            }
        })
    });
    if on_core.is_none() {
        std::thread::sleep(timeout);
    }
}

/// Counts a panic caught in code this core ran (for `Runtime::stats`).
pub(crate) fn note_panic() {
    with_local(|l| {
        if let Some(l) = l {
            l.note_panic();
        }
    })
}

/// Counts a result that arrived after its waiter gave up (dropped here).
pub(crate) fn note_late_result() {
    with_local(|l| {
        if let Some(l) = l {
            let st = &l.shared.states[l.index];
            st.late_results.store(
                st.late_results.load(Ordering::Relaxed) + 1,
                Ordering::Relaxed,
            );
        }
    })
}

/// The lane this (outside) thread always uses, so its messages stay in order.
pub(crate) fn lane_of_this_thread(lanes: usize) -> usize {
    LANE.with(|c| {
        if c.get() == usize::MAX {
            c.set(manycore_sync::unique_id() as usize);
        }
        c.get() % lanes
    })
}

/// Polls the current core once: runs pending messages and ready tasks (a
/// bounded batch from each source) and returns how many ran. On a thread
/// that is not a core it does nothing and returns 0. Long computations on a
/// core call this to keep cross-core invocations flowing.
pub fn poll_once() -> usize {
    with_local(|l| l.map_or(0, |l| l.poll()))
}

/// Everything a core owns. Lives on the core's thread, on the frame of
/// `run_core`, which `with_local` hands out references to while user code
/// runs.
pub(crate) struct CoreLocal {
    pub(crate) index: usize,
    pub(crate) shared: Arc<Shared>,
    consumers: RefCell<Vec<Option<Consumer<Message>>>>,
    producers: RefCell<Vec<Option<Producer<Message>>>>,
    spill: RefCell<Vec<VecDeque<Message>>>,
    spilled: Cell<usize>,
    local: RefCell<VecDeque<Message>>,
    /// Messages in `local` (read on every poll without borrowing).
    local_len: Cell<usize>,
    pub(crate) exec: Executor,
    pub(crate) timers: crate::timer::TimerQueue,
    pub(crate) objects: crate::object::ObjectTable,
    pub(crate) pending: crate::group::PendingSinks,
    pub(crate) tasks: crate::task_queue::TaskQueue,
    urgent_seen: Cell<u64>,
    /// The source whose ring last had a message (the idle loop watches it
    /// between polls).
    last_src: Cell<usize>,
    sent: Cell<u64>,
    received: Cell<u64>,
    epoch: Cell<u64>,
    idle: Cell<bool>,
    waker: Waker,
}

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
    pub(crate) fn new(
        index: usize,
        shared: Arc<Shared>,
        producers: Vec<Option<Producer<Message>>>,
        consumers: Vec<Option<Consumer<Message>>>,
        sched: crate::task_queue::Scheduler,
    ) -> Self {
        let n = shared.n;
        let waker = Waker::from(Arc::new(DoorbellWaker {
            shared: Arc::downgrade(&shared),
            index,
        }));
        Self {
            index,
            consumers: RefCell::new(consumers),
            producers: RefCell::new(producers),
            spill: RefCell::new((0..n).map(|_| VecDeque::new()).collect()),
            spilled: Cell::new(0),
            local: RefCell::new(VecDeque::new()),
            local_len: Cell::new(0),
            exec: Executor::new(),
            timers: Default::default(),
            objects: Default::default(),
            pending: Default::default(),
            tasks: crate::task_queue::TaskQueue::new(sched),
            urgent_seen: Cell::new(0),
            last_src: Cell::new(0),
            sent: Cell::new(0),
            received: Cell::new(0),
            epoch: Cell::new(0),
            idle: Cell::new(false),
            waker,
            shared,
        }
    }

    fn mailbox(&self) -> &Mailbox {
        &self.shared.mailboxes[self.index]
    }

    /// Sends `m` to core `dst` of our own runtime. Never blocks.
    pub(crate) fn send(&self, dst: usize, m: Message) {
        if dst == self.index {
            self.local.borrow_mut().push_back(m);
            self.local_len.set(self.local_len.get() + 1);
            return;
        }
        {
            let mut spill = self.spill.borrow_mut();
            if !spill[dst].is_empty() {
                spill[dst].push_back(m);
                self.spilled.set(self.spilled.get() + 1);
                // A sender inside a long invocation reaches no poll: move its
                // spill into the ring now and then, so that the receiver is
                // not starved while the spill grows.
                if spill[dst].len() % SPILL_RETRY == 0 {
                    drop(spill);
                    self.flush_spill(dst);
                }
                return;
            }
        }
        let r = match self.producers.borrow_mut()[dst].as_mut() {
            Some(p) => p.try_push(m),
            None => Err(m),
        };
        self.after_push(dst, r);
    }

    /// [`send`](Self::send) of a closure that fits a message inline: built
    /// in place in the ring slot when it goes straight into the ring.
    #[inline]
    pub(crate) fn send_with<F: FnOnce() + Send + 'static>(&self, dst: usize, f: F) {
        if dst == self.index || self.spilled.get() > 0 {
            return self.send(dst, Message::new(f));
        }
        let r = match self.producers.borrow_mut()[dst].as_mut() {
            Some(p) => p
                .try_push_with(move || Message::new(f))
                .map_err(|make| make()),
            None => Err(Message::new(f)),
        };
        self.after_push(dst, r);
    }

    /// The end of a send: count and announce a message that went into the
    /// ring, or spill one that did not fit.
    #[inline]
    fn after_push(&self, dst: usize, r: Result<(), Message>) {
        match r {
            Ok(()) => {
                self.sent.set(self.sent.get() + 1);
                if self.shared.mailboxes[dst].announce(self.index) {
                    self.shared.drain_parked(dst, self.index);
                }
            }
            Err(m) => {
                self.spill.borrow_mut()[dst].push_back(m);
                self.spilled.set(self.spilled.get() + 1);
            }
        }
    }

    /// Moves spilled messages into their rings, in order, as space allows.
    fn flush_spills(&self) {
        let n = self.spill.borrow().len();
        for dst in 0..n {
            if !self.spill.borrow()[dst].is_empty() {
                self.flush_spill(dst);
            }
        }
    }

    /// Moves the messages spilled for `dst` into its ring, in order, as
    /// space allows, and announces them.
    fn flush_spill(&self, dst: usize) {
        let moved = {
            let mut spill = self.spill.borrow_mut();
            let q = &mut spill[dst];
            let mut producers = self.producers.borrow_mut();
            let Some(p) = producers[dst].as_mut() else {
                return;
            };
            let mut moved = 0;
            while let Some(m) = q.pop_front() {
                if let Err(m) = p.try_push(m) {
                    q.push_front(m);
                    break;
                }
                moved += 1;
            }
            moved
        };
        if moved > 0 {
            self.spilled.set(self.spilled.get() - moved);
            self.sent.set(self.sent.get() + moved as u64);
            if self.shared.mailboxes[dst].announce(self.index) {
                self.shared.drain_parked(dst, self.index);
            }
        }
    }

    fn run(&self, m: Message) {
        if catch_unwind(AssertUnwindSafe(|| m.run())).is_err() {
            self.note_panic();
        }
    }

    fn note_panic(&self) {
        let st = &self.shared.states[self.index];
        st.panics
            .store(st.panics.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Pops and runs up to `max` messages from source `src`.
    fn drain_ring(&self, src: usize, max: usize) -> usize {
        let mut n = 0;
        let mut urgent = 0;
        while n < max {
            let m = match self.consumers.borrow_mut()[src].as_mut() {
                Some(c) => c.try_pop(),
                None => None,
            };
            match m {
                Some(m) => {
                    n += 1;
                    self.run(m);
                    // Every finished activity is a scheduling point.
                    urgent += self.run_urgent();
                }
                None => break,
            }
        }
        if n > 0 {
            self.received.set(self.received.get() + n as u64);
            self.last_src.set(src);
        }
        n + urgent
    }

    /// Watches the ring that last had a message for up to `looks` loads of
    /// its next slot (one load of a line this core holds until the sender
    /// writes it), and if a message arrives, runs that ring at once (what
    /// the next poll would have done, minus walking the bitmap). For an idle
    /// core between two polls: a message from the usual sender is seen
    /// within a few ns instead of half a poll (about 15 ns) later on
    /// average. Returns how many messages ran.
    #[inline]
    fn watch_last_ring(&self, looks: u32) -> usize {
        let src = self.last_src.get();
        let arrived = {
            let consumers = self.consumers.borrow();
            match consumers.get(src) {
                Some(Some(c)) => (0..looks).any(|_| !c.is_empty()),
                _ => false,
            }
        };
        if arrived {
            let n = self.drain_ring(src, BATCH);
            self.set_busy();
            n
        } else {
            0
        }
    }

    fn run_local(&self, max: usize) -> usize {
        let mut n = 0;
        while n < max && self.local_len.get() > 0 {
            let m = self.local.borrow_mut().pop_front();
            match m {
                Some(m) => {
                    self.local_len.set(self.local_len.get() - 1);
                    n += 1;
                    self.run(m);
                }
                None => break,
            }
        }
        n
    }

    /// Runs everything in the front lane (urgent invocations).
    pub(crate) fn run_urgent(&self) -> usize {
        let pushed = self.mailbox().urgent_pushed();
        if pushed == self.urgent_seen.get() {
            return 0;
        }
        let batch: Vec<Message> = self.shared.urgent[self.index]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        let n = batch.len();
        self.urgent_seen.set(self.urgent_seen.get() + n as u64);
        for m in batch {
            self.run(m);
        }
        n
    }

    /// One scheduling round. Returns how much work ran.
    pub(crate) fn poll(&self) -> usize {
        let mut n = self.run_urgent();
        if self.spilled.get() > 0 {
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
        n
    }

    /// Scans every ring (not only active ones) and runs what it finds.
    fn poll_all(&self) -> usize {
        let sources = self.consumers.borrow().len();
        let mut n = 0;
        for src in 0..sources {
            n += self.drain_ring(src, BATCH);
        }
        if n > 0 {
            self.set_busy();
        }
        n + self.poll()
    }

    /// True if any ring, queue or task has work, without running it.
    fn has_work(&self) -> bool {
        self.spilled.get() > 0
            || self.mailbox().urgent_pushed() != self.urgent_seen.get()
            || !self.tasks.is_empty()
            || self.local_len.get() > 0
            || self.exec.has_ready()
            || self
                .consumers
                .borrow()
                .iter()
                .flatten()
                .any(|c| !c.is_empty())
    }

    fn set_busy(&self) {
        if self.idle.get() {
            self.idle.set(false);
            self.epoch.set(self.epoch.get() + 1);
            let st = &self.shared.states[self.index];
            st.epoch_idle
                .store(self.epoch.get() << 1, Ordering::Release);
        }
    }

    /// Publishes counters and marks the core idle; call only after a full
    /// scan found nothing.
    fn set_idle(&self) {
        if !self.idle.get() {
            let st = &self.shared.states[self.index];
            // Release; pairs with the Acquire loads of the quiescence check.
            st.sent.store(self.sent.get(), Ordering::Release);
            st.received.store(self.received.get(), Ordering::Release);
            st.urgent_received
                .store(self.urgent_seen.get(), Ordering::Release);
            st.epoch_idle
                .store((self.epoch.get() << 1) | 1, Ordering::Release);
            self.idle.set(true);
        }
    }

    /// Clears stale active bits, fences, and re-scans every ring.
    fn refresh_bits(&self) -> usize {
        self.mailbox().clear_and_fence();
        self.poll_all()
    }

    /// The sleep protocol (README.md): announce, re-check everything, wait.
    /// `done` is an extra condition (a waited-for invocation). Returns after a
    /// wakeup, a timeout, or if work was found while announcing.
    fn sleep(&self, done: &dyn Fn() -> bool, deadline: Option<Instant>) {
        let mb = self.mailbox();
        mb.clear_and_fence();
        let key = mb.doorbell().prepare_wait();
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
            Some(t0 + Duration::from_millis(1))
        } else {
            None
        };
        let until = [deadline, cap, self.timers.next()]
            .into_iter()
            .flatten()
            .min();
        match until {
            Some(u) => {
                mb.doorbell()
                    .wait_timeout(key, u.saturating_duration_since(t0));
            }
            None => mb.doorbell().wait(key),
        }
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
    fn refresh_idle_hook(
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

    /// One step of `block_on` on a core outside any coroutine: poll the
    /// future; if pending, serve the core once, and sleep (by the idle
    /// policy) if there was nothing to do and the future has not been woken.
    pub(crate) fn block_on_step<F: std::future::Future>(
        &self,
        fut: &mut std::pin::Pin<&mut F>,
    ) -> Option<F::Output> {
        struct Flag {
            woken: manycore_sync::atomic::AtomicBool,
            inner: Waker,
        }
        impl Wake for Flag {
            fn wake(self: Arc<Self>) {
                self.wake_by_ref()
            }
            fn wake_by_ref(self: &Arc<Self>) {
                self.woken.store(true, Ordering::SeqCst);
                self.inner.wake_by_ref();
            }
        }
        let flag = Arc::new(Flag {
            woken: manycore_sync::atomic::AtomicBool::new(false),
            inner: self.waker.clone(),
        });
        let waker = Waker::from(flag.clone());
        let mut cx = std::task::Context::from_waker(&waker);
        let mut budget = SpinBudget::new(self.shared.idle.spin_budget());
        loop {
            flag.woken.store(false, Ordering::SeqCst);
            if let std::task::Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
                return Some(v);
            }
            loop {
                if flag.woken.load(Ordering::SeqCst) {
                    break;
                }
                if self.poll() > 0 {
                    budget.reset();
                    continue;
                }
                if budget.spin() {
                    continue;
                }
                self.sleep(&|| flag.woken.load(Ordering::SeqCst), None);
                budget.reset();
            }
        }
    }

    /// Waits (on this core) until `c` completes, serving this core's own
    /// messages meanwhile. Returns false if `deadline` passed first.
    pub(crate) fn wait_for<T>(&self, c: &Rx<T>, deadline: Option<Instant>) -> bool {
        let mut budget = SpinBudget::new(self.shared.idle.spin_budget());
        let mut empty = 0u32;
        loop {
            // Look at the completion several times per poll: each look is one
            // load of a line this core holds until the completer writes it,
            // while a poll costs tens of ns. A result is seen within a few ns
            // of its arrival instead of half a poll later on average.
            for _ in 0..WAIT_LOOKS {
                if c.is_done() {
                    return true;
                }
            }
            if self.poll() > 0 {
                budget.reset();
                continue;
            }
            if c.is_done() {
                return true;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            empty = empty.wrapping_add(1);
            if empty % CLEAR_EVERY == 0 {
                self.refresh_bits();
            }
            if budget.spin() {
                continue;
            }
            if c.register(&self.waker) {
                return true;
            }
            self.sleep(&|| c.is_done(), deadline);
            budget.reset();
        }
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
    let policy_spin = l.shared.idle.spin_budget();
    let mut budget = SpinBudget::new(policy_spin);
    let mut empty = 0u32;
    let (mut hook_gen, mut hook) = (0, None);
    loop {
        if l.poll() > 0 {
            budget.reset();
            continue;
        }
        if l.shared.closing.load(Ordering::Acquire) {
            break;
        }
        l.refresh_idle_hook(&mut hook_gen, &mut hook);
        if let Some(h) = &hook {
            if h.on_idle(l.index) {
                budget.reset();
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
            budget.reset();
            continue;
        }
        if budget.spin() {
            continue;
        }
        // The hook's pending work counts as work in the sleep re-check (see
        // `Core::wake`).
        l.sleep(&|| hook.as_ref().is_some_and(|h| h.pending(l.index)), None);
        budget.reset();
    }
    // Leave the thread-local first: whatever dropping leftovers sends now goes
    // the outside way, which refuses (the runtime is stopping).
    drop(core);
    exit_core(l);
    drop(local);
}

/// Closes the mailbox, parks the consumers for late senders, and drops what
/// is left (each dropped call resolves to `Shutdown`).
fn exit_core(l: &CoreLocal) {
    l.mailbox().close();
    let consumers = std::mem::take(&mut *l.consumers.borrow_mut());
    let mut leftovers = Vec::new();
    {
        let mut g = l.shared.parked[l.index]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut cs = consumers;
        for c in cs.iter_mut().flatten() {
            while let Some(m) = c.try_pop() {
                leftovers.push(m);
            }
        }
        *g = Some(cs);
    }
    drop(leftovers);
    let local: Vec<Message> = l.local.borrow_mut().drain(..).collect();
    l.local_len.set(0);
    drop(local);
    let spill: Vec<VecDeque<Message>> = std::mem::take(&mut *l.spill.borrow_mut());
    drop(spill);
    l.exec.clear();
    l.timers.clear();
    l.tasks.clear();
    l.shared.drain_urgent(l.index);
    l.pending.clear();
    // Objects are freed on their own core, here, at its exit.
    l.objects.clear();
    // Our producers: drop them now so that their rings' leftovers can go.
    l.producers.borrow_mut().clear();
}
