//! Task scheduling on a core (the "Cross-core invocations on the SCC" paper,
//! section IV.B): FIFO (the default), static priority, and earliest deadline
//! first.
//!
//! Plain invocations (`spawn`, `call`) are short activities and run in
//! arrival order as the core polls its rings. Work spawned with attributes
//! (`spawn_with(Priority(p), ..)`, `spawn_with(Deadline(t), ..)`) enters the
//! core's scheduler queue and runs one task per scheduling round, so that a
//! more important task arriving meanwhile overtakes the queue. Urgent
//! invocations (`call_urgent`) take the front lane: they run at the next
//! scheduling point, including inside a long task that calls
//! [`preempt_point`](crate::preempt_point).

use crate::raw::Message;
use std::cell::{Cell, RefCell};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// How a core orders the tasks in its scheduler queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scheduler {
    /// First come, first served.
    #[default]
    Fifo,
    /// Static priority: higher [`Priority`] first, FIFO among equals.
    Priority,
    /// Earliest [`Deadline`] first; tasks without a deadline go last.
    Edf,
}

/// A static priority: higher runs first under [`Scheduler::Priority`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Priority(pub u32);

/// An absolute deadline: earlier runs first under [`Scheduler::Edf`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deadline(pub Instant);

/// Scheduling attributes of a task (build them from [`Priority`] or [`Deadline`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TaskAttrs {
    /// The task's priority (default 0).
    pub priority: Priority,
    /// The task's deadline, if any.
    pub deadline: Option<Deadline>,
}

impl From<Priority> for TaskAttrs {
    fn from(p: Priority) -> Self {
        TaskAttrs {
            priority: p,
            deadline: None,
        }
    }
}

impl From<Deadline> for TaskAttrs {
    fn from(d: Deadline) -> Self {
        TaskAttrs {
            priority: Priority::default(),
            deadline: Some(d),
        }
    }
}

impl From<(Priority, Deadline)> for TaskAttrs {
    fn from((p, d): (Priority, Deadline)) -> Self {
        TaskAttrs {
            priority: p,
            deadline: Some(d),
        }
    }
}

type Entry = crate::keyed::Keyed<u64, Message>;

/// A core's scheduler queue: a min-heap on (key, oldest first), where a
/// smaller key means more urgent.
pub(crate) struct TaskQueue {
    policy: Scheduler,
    heap: RefCell<BinaryHeap<Reverse<Entry>>>,
    seq: Cell<u64>,
    base: Instant,
}

impl TaskQueue {
    pub(crate) fn new(policy: Scheduler) -> Self {
        Self {
            policy,
            heap: RefCell::new(BinaryHeap::new()),
            seq: Cell::new(0),
            base: Instant::now(),
        }
    }

    /// The heap key: smaller runs first.
    fn key(&self, a: TaskAttrs) -> u64 {
        match self.policy {
            Scheduler::Fifo => 0,
            // Higher priority, smaller key.
            Scheduler::Priority => u64::MAX - a.priority.0 as u64,
            Scheduler::Edf => match a.deadline {
                // Earlier deadline, smaller key; no deadline goes last.
                Some(Deadline(t)) => {
                    let ns = t.saturating_duration_since(self.base).as_nanos();
                    u64::try_from(ns).unwrap_or(u64::MAX).min(u64::MAX - 1)
                }
                None => u64::MAX,
            },
        }
    }

    pub(crate) fn push(&self, a: TaskAttrs, msg: Message) {
        let seq = self.seq.get();
        self.seq.set(seq + 1);
        let key = self.key(a);
        self.heap
            .borrow_mut()
            .push(Reverse(Entry { key, seq, val: msg }));
    }

    pub(crate) fn pop(&self) -> Option<Message> {
        self.heap.borrow_mut().pop().map(|e| e.0.val)
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.borrow().is_empty()
    }

    pub(crate) fn clear(&self) {
        let all = std::mem::take(&mut *self.heap.borrow_mut());
        drop(all);
    }
}
