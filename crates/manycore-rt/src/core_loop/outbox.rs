//! What a core sends: the producer ends of its rings to the other cores,
//! and the spill queues that hold what did not fit (a core never blocks on
//! a full ring). The send path is the hottest code of the runtime; what it
//! loads and stores is explained in the crate's `README.md`.

use super::CoreLocal;
use crate::raw::Message;
use manycore_ring::Producer;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

/// A sender retries its spill queue for a destination every this many spills.
const SPILL_RETRY: usize = 32;

/// A core's outgoing side.
pub(super) struct Outbox {
    /// The producer end of ring (this core, d), by destination d (None for
    /// this core itself, which uses its local queue).
    pub(super) producers: RefCell<Vec<Option<Producer<Message>>>>,
    /// Messages that found their ring full, by destination, oldest first.
    pub(super) spill: RefCell<Vec<VecDeque<Message>>>,
    /// Messages in all spill queues (read on every send without borrowing).
    pub(super) spilled: Cell<usize>,
    /// Messages this core has put into rings (published to the runtime when
    /// the core goes idle, for the quiescence check of shutdown).
    pub(super) sent: Cell<u64>,
}

impl Outbox {
    pub(super) fn new(n: usize, producers: Vec<Option<Producer<Message>>>) -> Self {
        Self {
            producers: RefCell::new(producers),
            spill: RefCell::new((0..n).map(|_| VecDeque::new()).collect()),
            spilled: Cell::new(0),
            sent: Cell::new(0),
        }
    }
}

impl CoreLocal {
    /// Sends `m` to core `dst` of our own runtime. Never blocks.
    pub(crate) fn send(&self, dst: usize, m: Message) {
        if dst == self.index {
            self.inbox.local.borrow_mut().push_back(m);
            self.inbox.local_len.set(self.inbox.local_len.get() + 1);
            return;
        }
        {
            let mut spill = self.out.spill.borrow_mut();
            if !spill[dst].is_empty() {
                spill[dst].push_back(m);
                self.out.spilled.set(self.out.spilled.get() + 1);
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
        let r = match self.out.producers.borrow_mut()[dst].as_mut() {
            Some(p) => p.try_push(m),
            None => Err(m),
        };
        self.after_push(dst, r);
    }

    /// [`send`](Self::send) of a closure that fits a message inline: built
    /// in place in the ring slot when it goes straight into the ring.
    #[inline]
    pub(crate) fn send_with<F: FnOnce() + Send + 'static>(&self, dst: usize, f: F) {
        if dst == self.index || self.out.spilled.get() > 0 {
            return self.send(dst, Message::new(f));
        }
        let r = match self.out.producers.borrow_mut()[dst].as_mut() {
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
                self.out.sent.set(self.out.sent.get() + 1);
                if self.shared.mailboxes[dst].announce(self.index) {
                    self.shared.drain_parked(dst, self.index);
                }
            }
            Err(m) => {
                self.out.spill.borrow_mut()[dst].push_back(m);
                self.out.spilled.set(self.out.spilled.get() + 1);
            }
        }
    }

    /// Moves spilled messages into their rings, in order, as space allows.
    pub(super) fn flush_spills(&self) {
        let n = self.out.spill.borrow().len();
        for dst in 0..n {
            if !self.out.spill.borrow()[dst].is_empty() {
                self.flush_spill(dst);
            }
        }
    }

    /// Moves the messages spilled for `dst` into its ring, in order, as
    /// space allows, and announces them.
    fn flush_spill(&self, dst: usize) {
        let moved = {
            let mut spill = self.out.spill.borrow_mut();
            let q = &mut spill[dst];
            let mut producers = self.out.producers.borrow_mut();
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
            self.out.spilled.set(self.out.spilled.get() - moved);
            self.out.sent.set(self.out.sent.get() + moved as u64);
            if self.shared.mailboxes[dst].announce(self.index) {
                self.shared.drain_parked(dst, self.index);
            }
        }
    }
}
