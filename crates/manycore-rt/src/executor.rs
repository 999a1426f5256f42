//! A minimal executor per core for `async` tasks (the protothreads of the
//! "Cross-core invocations on the SCC" paper: stackless state machines). A
//! waker on the task's own core pushes onto the ready queue; a waker anywhere
//! else sends the core a message that does.

use crate::core_loop::{with_local, CoreLocal};
use crate::error::{drop_payload, panicked, InvokeError};
use crate::runtime::Shared;
use manycore_sync::atomic::{AtomicBool, Ordering};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Wake, Waker};

type Task = Pin<Box<dyn Future<Output = ()>>>;

struct Slot {
    gen: u32,
    fut: Option<Task>,
    header: Option<Arc<TaskHeader>>,
}

struct TaskHeader {
    runtime: u64,
    core: usize,
    id: usize,
    gen: u32,
    /// The task is in (or on its way to) its core's ready queue. Set by a
    /// waker with `swap(true, AcqRel)`, which queues the task only if the
    /// bit was clear; cleared by the executor with a Release store just
    /// before each poll, so that a wake during the poll queues the task
    /// again. Starts set (a new task is queued at once).
    queued: AtomicBool,
    shared: Weak<Shared>,
}

impl Wake for TaskHeader {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        // AcqRel; pairs with the Release store of `false` before each poll: a
        // wake that comes during a poll queues the task again.
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let (id, gen) = (self.id, self.gen);
        let here = with_local(|l| match l {
            Some(l) if l.shared.id == self.runtime && l.index == self.core => {
                l.exec.make_ready(id, gen);
                true
            }
            _ => false,
        });
        if !here {
            if let Some(sh) = self.shared.upgrade() {
                let core = crate::core::Core::new(sh, self.core);
                let _ = core.spawn(move || {
                    with_local(|l| {
                        if let Some(l) = l {
                            l.exec.make_ready(id, gen);
                        }
                    })
                });
            }
        }
    }
}

pub(crate) struct Executor {
    tasks: RefCell<Vec<Slot>>,
    free: RefCell<Vec<usize>>,
    ready: RefCell<VecDeque<(usize, u32)>>,
    ready_len: std::cell::Cell<usize>,
}

impl Executor {
    pub(crate) fn new() -> Self {
        Self {
            tasks: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
            ready: RefCell::new(VecDeque::new()),
            ready_len: std::cell::Cell::new(0),
        }
    }

    pub(crate) fn spawn(&self, l: &CoreLocal, fut: Task) {
        let id = self.free.borrow_mut().pop().unwrap_or_else(|| {
            let mut t = self.tasks.borrow_mut();
            t.push(Slot {
                gen: 0,
                fut: None,
                header: None,
            });
            t.len() - 1
        });
        let mut tasks = self.tasks.borrow_mut();
        let slot = &mut tasks[id];
        let header = Arc::new(TaskHeader {
            runtime: l.shared.id,
            core: l.index,
            id,
            gen: slot.gen,
            queued: AtomicBool::new(true),
            shared: Arc::downgrade(&l.shared),
        });
        slot.fut = Some(fut);
        slot.header = Some(header);
        let gen = slot.gen;
        drop(tasks);
        self.push_ready(id, gen);
    }

    fn make_ready(&self, id: usize, gen: u32) {
        let live = self
            .tasks
            .borrow()
            .get(id)
            .is_some_and(|s| s.gen == gen && s.fut.is_some());
        if live {
            self.push_ready(id, gen);
        }
    }

    #[inline]
    pub(crate) fn has_ready(&self) -> bool {
        self.ready_len.get() > 0
    }

    fn push_ready(&self, id: usize, gen: u32) {
        self.ready.borrow_mut().push_back((id, gen));
        self.ready_len.set(self.ready_len.get() + 1);
    }

    /// Polls up to `max` ready tasks.
    pub(crate) fn run_ready(&self, l: &CoreLocal, max: usize) -> usize {
        let mut n = 0;
        while n < max {
            let Some((id, gen)) = self.ready.borrow_mut().pop_front() else {
                break;
            };
            self.ready_len.set(self.ready_len.get() - 1);
            let taken = {
                let mut tasks = self.tasks.borrow_mut();
                match tasks.get_mut(id) {
                    Some(s) if s.gen == gen => s.fut.take().zip(s.header.clone()),
                    _ => None,
                }
            };
            let Some((mut fut, header)) = taken else {
                continue;
            };
            n += 1;
            // Release; pairs with the AcqRel swap in `wake_by_ref`.
            header.queued.store(false, Ordering::Release);
            let waker = Waker::from(header);
            let mut cx = Context::from_waker(&waker);
            // The task wrapper catches panics of user code itself; this catch
            // only guards the core against a panicking waker or destructor.
            let done =
                match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(&mut cx).is_ready())) {
                    Ok(done) => done,
                    Err(p) => {
                        drop_payload(p);
                        true
                    }
                };
            let mut tasks = self.tasks.borrow_mut();
            let s = &mut tasks[id];
            if done {
                s.gen = s.gen.wrapping_add(1);
                s.header = None;
                drop(tasks);
                drop(fut);
                self.free.borrow_mut().push(id);
            } else {
                s.fut = Some(fut);
            }
        }
        if n > 0 {
            let st = &l.shared.states[l.index];
            st.tasks_run.store(
                st.tasks_run.load(Ordering::Relaxed) + n as u64,
                Ordering::Relaxed,
            );
        }
        n
    }

    /// Drops every task (at core exit).
    pub(crate) fn clear(&self) {
        let tasks: Vec<Slot> = std::mem::take(&mut *self.tasks.borrow_mut());
        self.ready.borrow_mut().clear();
        self.ready_len.set(0);
        self.free.borrow_mut().clear();
        drop(tasks);
    }
}

/// Runs a future, turning a panic in any of its polls into `Panicked`.
pub(crate) async fn catch_unwind_future<F: Future>(fut: F) -> Result<F::Output, InvokeError> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(
        move |cx| match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(p) => Poll::Ready(Err(panicked(p))),
        },
    )
    .await
}
