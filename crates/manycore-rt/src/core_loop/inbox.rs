//! What a core receives: the consumer ends of the rings its senders have
//! bound (taken from the runtime's table of new rings when the core first
//! looks at a source: `adopt`), its local queue (messages it sent itself),
//! and its position in the front lane of urgent invocations.

use super::{CoreLocal, BATCH};
use crate::raw::{Inbound, Message};
use crate::sparse::Sparse;
use manycore_ring::packed::Consumer;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

/// A core's incoming side.
pub(super) struct Inbox {
    /// The consumer end of ring (s, this core), by source s: cores `0..n`,
    /// then the lanes of outside threads; only the rings taken so far.
    pub(super) consumers: RefCell<Sparse<Consumer<Message>>>,
    /// Messages this core sent to itself, oldest first.
    pub(super) local: RefCell<VecDeque<Message>>,
    /// Messages in `local` (read on every poll without borrowing).
    pub(super) local_len: Cell<usize>,
    /// Urgent messages taken from the front lane so far (compared with the
    /// mailbox's count of those pushed).
    pub(super) urgent_seen: Cell<u64>,
    /// The source whose ring last had a message (the idle loop watches it
    /// between polls).
    pub(super) last_src: Cell<usize>,
    /// Messages this core has taken from rings (published when the core
    /// goes idle, for the quiescence check of shutdown).
    pub(super) received: Cell<u64>,
}

impl Inbox {
    pub(super) fn new() -> Self {
        Self {
            consumers: RefCell::new(Sparse::default()),
            local: RefCell::new(VecDeque::new()),
            local_len: Cell::new(0),
            urgent_seen: Cell::new(0),
            last_src: Cell::new(0),
            received: Cell::new(0),
        }
    }
}

impl CoreLocal {
    /// Pops and runs up to `max` messages from source `src`.
    pub(super) fn drain_ring(&self, src: usize, max: usize) -> usize {
        let mut n = 0;
        let mut urgent = 0;
        // Each message is popped into this place and run from there (see
        // `Inbound`); the ring is borrowed only while it pops, since the
        // message may poll this core again.
        let mut place = Inbound::new();
        while n < max {
            let popped = self
                .inbox
                .consumers
                .borrow_mut()
                .get_mut(src)
                .map(|c| place.pop(c));
            match popped {
                Some(true) => {
                    if n == 0 {
                        // Busy while it runs (the shutdown names busy cores).
                        self.set_busy();
                    }
                    n += 1;
                    self.run_in(&mut place);
                    // Every finished activity is a scheduling point.
                    urgent += self.run_urgent();
                }
                // No ring from `src` yet: take it if its sender bound one.
                None if n == 0 && self.adopt(src) => continue,
                _ => break,
            }
        }
        if n > 0 {
            self.inbox
                .received
                .set(self.inbox.received.get() + n as u64);
            self.inbox.last_src.set(src);
        }
        n + urgent
    }

    /// Watches the ring that last had a message for up to `looks` loads of
    /// its next slot (one load of a line this core holds until the sender
    /// writes it), and if a message arrives, runs that ring at once (what
    /// the next poll would have done, minus walking the bitmap). For an idle
    /// core between two polls: a message from the usual sender is seen
    /// within a few loads instead of half a poll later on average. Returns
    /// how many messages ran.
    #[inline]
    pub(super) fn watch_last_ring(&self, looks: u32) -> usize {
        let src = self.inbox.last_src.get();
        let arrived = {
            let consumers = self.inbox.consumers.borrow();
            match consumers.get(src) {
                Some(c) => (0..looks).any(|_| !c.is_empty()),
                None => false,
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

    /// Takes the ring that source `src` bound to this core, if it did and
    /// the ring was not taken yet (a bit set for a source whose ring this
    /// core does not have). Cold: once per ring.
    #[cold]
    #[inline(never)]
    pub(super) fn adopt(&self, src: usize) -> bool {
        match self.shared.new_rings[self.index].take(src) {
            Some(c) => {
                self.inbox.consumers.borrow_mut().insert(src, *c);
                true
            }
            None => false,
        }
    }

    /// True if a sender has bound a ring this core has not taken yet (one
    /// load when none is pending).
    #[inline]
    pub(super) fn rings_to_adopt(&self) -> bool {
        self.shared.new_rings[self.index].has_offer()
    }

    /// Takes every ring bound to this core and not taken yet (one load when
    /// none is pending).
    pub(super) fn adopt_all(&self) {
        let mut consumers = self.inbox.consumers.borrow_mut();
        self.shared.new_rings[self.index].take_each(|src, c| {
            consumers.insert(src, *c);
        });
    }

    /// Runs up to `max` messages from the local queue.
    pub(super) fn run_local(&self, max: usize) -> usize {
        if self.inbox.local_len.get() == 0 {
            return 0;
        }
        self.set_busy();
        let mut n = 0;
        while n < max && self.inbox.local_len.get() > 0 {
            let m = self.inbox.local.borrow_mut().pop_front();
            match m {
                Some(m) => {
                    self.inbox.local_len.set(self.inbox.local_len.get() - 1);
                    n += 1;
                    self.run(m);
                }
                None => break,
            }
        }
        n
    }

    /// Runs everything in the front lane (urgent invocations).
    #[inline]
    pub(crate) fn run_urgent(&self) -> usize {
        let pushed = self.mailbox().urgent_pushed();
        if pushed == self.inbox.urgent_seen.get() {
            return 0;
        }
        self.run_urgent_slow()
    }

    #[inline(never)]
    fn run_urgent_slow(&self) -> usize {
        self.set_busy();
        let batch: Vec<Message> = self.shared.urgent[self.index]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
            .collect();
        let n = batch.len();
        self.inbox
            .urgent_seen
            .set(self.inbox.urgent_seen.get() + n as u64);
        for m in batch {
            self.run(m);
        }
        n
    }
}
