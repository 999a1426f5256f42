//! What a core sends: for each destination it has sent to, the producer
//! end of their ring (made on the first message: `bind`) and the spill
//! queue for what found the ring full; and the policy that keeps every
//! spill queue under the runtime's limit without a deadlock. The send path
//! is the hottest code of the runtime; what it loads and stores, and the
//! spill policy, are explained in the crate's `README.md`.

use super::CoreLocal;
use crate::raw::Message;
use crate::sparse::Sparse;
use crate::spill::SpillQueue;
use manycore_ring::packed::Producer;
use manycore_sync::atomic::Ordering;
use manycore_sync::{AdaptiveSpin, Backoff};
use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

/// A core publishes a batch of deferred messages to one destination once
/// it holds this many cells (64 small messages: sixteen cache lines).
const PUBLISH_CELLS: usize = 64;
/// A sender retries its spill queue for a destination every this many spills.
const SPILL_RETRY: usize = 32;
/// First and last pause of a core that waits for room and has nothing to
/// run: the receiver does not ring the sender when it frees a slot, so the
/// sender looks again after a pause that doubles up to the last.
const ROOM_PAUSE_MIN: Duration = Duration::from_micros(20);
const ROOM_PAUSE_MAX: Duration = Duration::from_millis(1);
/// How long a send made while its core already waits for room waits for
/// room itself, without serving, before it queues past the limit.
const NESTED_ROOM_WAIT: Duration = Duration::from_millis(1);

/// What a core keeps for one destination it sends to.
pub(super) struct Link {
    /// The producer end of ring (this core, destination).
    pub(super) producer: Producer<Message>,
    /// Messages that found the ring full, oldest first.
    pub(super) spill: SpillQueue<Message>,
    /// Messages written into the ring and not published yet.
    pub(super) unpublished: usize,
    /// This destination is in the outbox's `deferred` list.
    listed: bool,
}

/// A core's outgoing side.
pub(super) struct Outbox {
    /// By destination: the rings this core has bound (never this core
    /// itself, which uses its local queue).
    pub(super) links: RefCell<Sparse<Link>>,
    /// Messages in all spill queues (read on every send without borrowing).
    pub(super) spilled: Cell<usize>,
    /// Messages this core has published into rings (published to the
    /// runtime when the core goes idle, for the quiescence check of
    /// shutdown).
    pub(super) sent: Cell<u64>,
    /// Destinations that had a message deferred since the core last
    /// published its batch (each once: `Link::listed`).
    deferred: RefCell<Vec<usize>>,
    /// True if `deferred` is not empty (read without borrowing).
    any_deferred: Cell<bool>,
    /// How many [`batch_spawns`](crate::batch_spawns) scopes are open on
    /// this core: spawns are deferred only while one is.
    pub(super) batching: Cell<u32>,
    /// The core is waiting for room in a full spill queue and serves its
    /// rings meanwhile: a send from code it runs then does not serve again.
    room_wait: Cell<bool>,
    /// A nested wait for room ran out during the current outer wait: until
    /// that ends, nested sends queue past the limit at once.
    room_gave_up: Cell<bool>,
}

impl Outbox {
    pub(super) fn new() -> Self {
        Self {
            links: RefCell::new(Sparse::default()),
            spilled: Cell::new(0),
            sent: Cell::new(0),
            deferred: RefCell::new(Vec::with_capacity(8)),
            any_deferred: Cell::new(false),
            batching: Cell::new(0),
            room_wait: Cell::new(false),
            room_gave_up: Cell::new(false),
        }
    }
}

/// Ends a core's wait for room, also when unwinding out of it.
struct RoomWait<'a>(&'a Outbox);

impl Drop for RoomWait<'_> {
    fn drop(&mut self) {
        self.0.room_wait.set(false);
        self.0.room_gave_up.set(false);
    }
}

impl CoreLocal {
    /// Sends `m` to core `dst` of our own runtime. Blocks only when the
    /// spill queue toward `dst` is full (see `spill`).
    pub(crate) fn send(&self, dst: usize, m: Message) {
        if dst == self.index {
            self.inbox.local.borrow_mut().push_back(m);
            self.inbox.local_len.set(self.inbox.local_len.get() + 1);
            return;
        }
        let r = match self.out.links.borrow_mut().get_mut(dst) {
            Some(link) if link.spill.is_empty() => push_published(link, move || m),
            _ => Err(m),
        };
        self.after_push(dst, r);
    }

    /// [`send`](Self::send) of a closure that fits a message inline: built
    /// in place in the ring when it goes straight into the ring.
    ///
    /// With `DEFER` (a spawn) inside a [`batch_spawns`](crate::batch_spawns)
    /// scope, the message is written and left unpublished (with the
    /// messages written before it to any destination) until the core
    /// publishes its deferred batch: when `PUBLISH_CELLS` cells are waiting
    /// for `dst`, when the core sends a message that is not deferred to the
    /// same destination, and at `publish_deferred`, which the core runs
    /// after every message or task it runs, at every poll, and before it
    /// waits, spins or sleeps, and when the last scope ends (README.md,
    /// "Deferred publication"). Outside a scope every message is published
    /// at once.
    #[inline]
    pub(crate) fn send_with<const DEFER: bool, F: FnOnce() + Send + 'static>(
        &self,
        dst: usize,
        f: F,
    ) {
        if dst == self.index || self.out.spilled.get() > 0 {
            return self.send(dst, Message::new(f));
        }
        let mut note = false;
        let r = match self.out.links.borrow_mut().get_mut(dst) {
            Some(link) if DEFER && self.out.batching.get() > 0 => {
                match link.producer.try_push_with(move || Message::new(f)) {
                    Ok(()) => {
                        link.unpublished += 1;
                        if link.producer.unpublished() < PUBLISH_CELLS {
                            note = !std::mem::replace(&mut link.listed, true);
                            Ok(0)
                        } else {
                            Ok(publish(link))
                        }
                    }
                    Err(make) => Err(make()),
                }
            }
            // Published by its own header, with whatever was deferred to
            // `dst` before it.
            Some(link) => push_published(link, move || Message::new(f)),
            None => Err(Message::new(f)),
        };
        if note {
            self.out.deferred.borrow_mut().push(dst);
            self.out.any_deferred.set(true);
        }
        self.after_push(dst, r);
    }

    /// Publishes every deferred message of this core and announces it to
    /// its destination. One load when there is none.
    #[inline]
    pub(crate) fn publish_deferred(&self) {
        if self.out.any_deferred.get() {
            self.publish_deferred_slow();
        }
    }

    #[inline(never)]
    fn publish_deferred_slow(&self) {
        self.out.any_deferred.set(false);
        let dsts = std::mem::take(&mut *self.out.deferred.borrow_mut());
        for &dst in &dsts {
            let k = match self.out.links.borrow_mut().get_mut(dst) {
                Some(link) => {
                    link.listed = false;
                    publish(link)
                }
                None => 0,
            };
            if k > 0 {
                self.pushed(dst, k);
            }
        }
        // Keep the vector's allocation (nothing was deferred meanwhile:
        // `pushed` runs no user code).
        let mut v = self.out.deferred.borrow_mut();
        if v.is_empty() {
            *v = dsts;
            v.clear();
        }
    }

    /// The end of a send: count and announce the `k` messages published
    /// (none if the message was deferred); bind the ring or spill a message
    /// that did not go in.
    #[inline]
    fn after_push(&self, dst: usize, r: Result<usize, Message>) {
        match r {
            Ok(0) => {}
            Ok(k) => self.pushed(dst, k),
            Err(m) => self.push_slow(dst, m),
        }
    }

    /// Counts and announces `k` messages put into ring (this core, `dst`).
    #[inline]
    fn pushed(&self, dst: usize, k: usize) {
        self.out.sent.set(self.out.sent.get() + k as u64);
        if self.shared.mailboxes[dst].announce(self.index) {
            self.shared.drain_parked(dst, self.index);
        }
    }

    /// A message that did not go straight into its ring: the ring does not
    /// exist yet (bind it and push), or it is full or has a spill (spill).
    #[cold]
    #[inline(never)]
    fn push_slow(&self, dst: usize, m: Message) {
        // What is deferred goes out first: the receiver must see the ring
        // full to make room, and nothing waits unpublished.
        let k = self.out.links.borrow_mut().get_mut(dst).map(publish);
        if let Some(k) = k {
            if k > 0 {
                self.pushed(dst, k);
            }
            return self.spill(dst, m);
        }
        if !self.bind(dst) {
            // Not a destination of this runtime: dropping the message
            // resolves its invocation, if any, to `Shutdown`.
            return drop(m);
        }
        let r = match self.out.links.borrow_mut().get_mut(dst) {
            Some(link) => push_published(link, move || m),
            None => Err(m),
        };
        match r {
            Ok(k) => self.pushed(dst, k),
            Err(m) => self.spill(dst, m),
        }
    }

    /// Makes ring (this core, `dst`) and hands its consumer end to `dst`
    /// (README.md, "Binding a ring"). False if `dst` is not a core.
    fn bind(&self, dst: usize) -> bool {
        let Some(table) = self.shared.new_rings.get(dst) else {
            return false;
        };
        let Some((producer, consumer)) = self.shared.new_ring() else {
            return false;
        };
        if table.offer(self.index, Box::new(consumer)).is_err() {
            return false;
        }
        self.out.links.borrow_mut().insert(
            dst,
            Link {
                producer,
                spill: SpillQueue::default(),
                unpublished: 0,
                listed: false,
            },
        );
        true
    }

    /// Queues `m` behind the ring toward `dst` (README.md, "Bounded
    /// spill"). The message goes in first, so that nothing sent while this
    /// send waits overtakes it. If the queue has reached the runtime's
    /// limit, the core then serves its own rings until the ring has taken
    /// some (`wait_for_room`). A send made while the core serves that way
    /// does not serve again: if it finds the queue at the limit, it waits
    /// for room without running anything, for a moment, and then queues
    /// past the limit.
    fn spill(&self, dst: usize, m: Message) {
        let limit = self.shared.spill_limit;
        let nested = self.out.room_wait.get();
        if nested
            && !self.out.room_gave_up.get()
            && self.spill_len(dst) >= limit
            && !self.wait_for_room_nested(dst)
        {
            self.out.room_gave_up.set(true);
        }
        let (full, len) = match self.out.links.borrow_mut().get_mut(dst) {
            Some(link) => (link.spill.push(m, limit), link.spill.len()),
            None => return drop(m),
        };
        self.out.spilled.set(self.out.spilled.get() + 1);
        self.note_spill(len, len > limit);
        if full && !nested {
            self.wait_for_room(dst);
        } else if len % SPILL_RETRY == 0 {
            // A sender inside a long invocation reaches no poll: move its
            // spill into the ring now and then, so that the receiver is not
            // starved while the spill grows.
            self.flush_spill(dst);
        }
    }

    /// Publishes the spill counters (`spill_peak`, `spill_over`) after a
    /// message was queued, `len` now queued for its destination.
    fn note_spill(&self, len: usize, over: bool) {
        let st = &self.shared.states[self.index];
        if len as u64 > st.spill_peak.load(Ordering::Relaxed) {
            st.spill_peak.store(len as u64, Ordering::Relaxed);
        }
        if over {
            st.spill_over
                .store(st.spill_over.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }

    /// Messages queued for `dst`.
    fn spill_len(&self, dst: usize) -> usize {
        self.out
            .links
            .borrow()
            .get(dst)
            .map_or(0, |link| link.spill.len())
    }

    /// Serves this core (runs what arrives) until the spill toward `dst` is
    /// under the limit; sleeps on the doorbell between looks when there is
    /// nothing to run.
    fn wait_for_room(&self, dst: usize) {
        self.out.room_wait.set(true);
        let _end = RoomWait(&self.out);
        let limit = self.shared.spill_limit;
        let mut budget = AdaptiveSpin::new(self.shared.idle.spin_budget(), &self.idle.gaps);
        let mut pause = ROOM_PAUSE_MIN;
        loop {
            self.flush_spill(dst);
            if self.spill_len(dst) < limit {
                return;
            }
            if self.poll() > 0 {
                budget.found();
                continue;
            }
            if budget.spin() {
                continue;
            }
            let until = crate::timer::deadline_in(pause);
            self.sleep(&|| self.ring_has_room(dst), Some(until));
            pause = (pause * 2).min(ROOM_PAUSE_MAX);
            budget.slept();
        }
    }

    /// Waits, without running anything, for room toward `dst`, for at most
    /// `NESTED_ROOM_WAIT`. True if there is room.
    fn wait_for_room_nested(&self, dst: usize) -> bool {
        self.publish_deferred();
        let limit = self.shared.spill_limit;
        let give_up = Instant::now() + NESTED_ROOM_WAIT;
        let mut backoff = Backoff::new();
        loop {
            self.flush_spill(dst);
            if self.spill_len(dst) < limit {
                return true;
            }
            if Instant::now() >= give_up {
                return false;
            }
            if backoff.is_completed() {
                std::thread::sleep(ROOM_PAUSE_MIN);
            } else {
                backoff.snooze();
            }
        }
    }

    /// True if ring (this core, `dst`) has a free slot (a hint: the
    /// consumer may free one at any moment).
    fn ring_has_room(&self, dst: usize) -> bool {
        self.out
            .links
            .borrow()
            .get(dst)
            .is_some_and(|link| !link.producer.is_full())
    }

    /// True if some spilled message could move into its ring now.
    pub(super) fn spill_can_move(&self) -> bool {
        self.out.spilled.get() > 0
            && self
                .out
                .links
                .borrow()
                .iter()
                .any(|(_, link)| !link.spill.is_empty() && !link.producer.is_full())
    }

    /// Moves spilled messages into their rings, in order, as space allows.
    pub(super) fn flush_spills(&self) {
        let mut from = 0;
        loop {
            let next = self.out.links.borrow().next_key(from);
            let Some(dst) = next else { return };
            self.flush_spill(dst);
            from = dst + 1;
        }
    }

    /// Moves the messages spilled for `dst` into its ring, in order, as
    /// space allows, and announces them.
    fn flush_spill(&self, dst: usize) {
        let (moved, k) = match self.out.links.borrow_mut().get_mut(dst) {
            Some(link) if !link.spill.is_empty() => {
                let moved = link.spill.drain_into(|m| link.producer.try_push(m));
                link.unpublished += moved;
                (moved, publish(link))
            }
            _ => (0, 0),
        };
        if moved > 0 {
            self.out.spilled.set(self.out.spilled.get() - moved);
        }
        if k > 0 {
            self.pushed(dst, k);
        }
    }
}

/// Writes the message `make` returns into `link`'s ring and publishes it
/// at once, with whatever was deferred to the link before it; returns how
/// many messages that published, or the message if the ring is full.
#[inline(always)]
fn push_published(link: &mut Link, make: impl FnOnce() -> Message) -> Result<usize, Message> {
    match link.producer.try_push_published_with(make) {
        Ok(()) => Ok(std::mem::take(&mut link.unpublished) + 1),
        Err(make) => Err(make()),
    }
}

/// Publishes what `link`'s ring holds unpublished; returns how many
/// messages that is (the caller counts and announces them).
#[inline]
fn publish(link: &mut Link) -> usize {
    link.producer.publish();
    std::mem::take(&mut link.unpublished)
}
