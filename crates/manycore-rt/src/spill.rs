//! `SpillQueue<T>`: the messages a core sends toward one destination while
//! their ring is full, oldest first, and whether they have reached a limit.
//! What a core does then (serve its own rings until the ring has taken some)
//! is the core loop's business (`core_loop/outbox.rs`); the queue keeps the
//! order and the count, and gives its memory back once it is empty.

use std::collections::VecDeque;

/// An empty queue whose buffer holds more than this many messages gives
/// the buffer back, so that a burst does not pin its memory for good.
const KEEP_CAPACITY: usize = 64;

/// See the module docs.
pub(crate) struct SpillQueue<T> {
    q: VecDeque<T>,
}

impl<T> Default for SpillQueue<T> {
    fn default() -> Self {
        Self { q: VecDeque::new() }
    }
}

impl<T> SpillQueue<T> {
    /// Messages queued.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.q.len()
    }

    /// True if nothing is queued.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// Appends `v`; returns true if the queue now holds `limit` messages
    /// or more (its sender must then wait for room: the message is already
    /// in, so that nothing sent meanwhile overtakes it).
    pub(crate) fn push(&mut self, v: T, limit: usize) -> bool {
        self.q.push_back(v);
        self.q.len() >= limit
    }

    /// Hands the messages, oldest first, to `f` until it refuses one (which
    /// it returns, and which goes back to the front). Returns how many it
    /// took.
    pub(crate) fn drain_into(&mut self, mut f: impl FnMut(T) -> Result<(), T>) -> usize {
        let mut moved = 0;
        while let Some(v) = self.q.pop_front() {
            if let Err(v) = f(v) {
                self.q.push_front(v);
                return moved;
            }
            moved += 1;
        }
        if self.q.capacity() > KEEP_CAPACITY {
            self.q = VecDeque::new();
        }
        moved
    }
}
