//! `Lease`: the word by which issuers that poll the shared epoll instance
//! keep the reactor thread out of it (the epoll backend).
//!
//! An issuer whose request went through polls the instance for the edges
//! its request made (`Shared::poll`). While issuers do, the reactor thread
//! would only race them for those edges (an edge it wins is answered by a
//! message to the receiver's core instead of a local signal), and, asleep
//! in the instance, be woken by every one. So an issuer marks the lease
//! before a poll made while every parked request is a read that writers
//! feed (`Parked::alone` is 0), and the reactor, finding it marked, clears
//! it and waits on its wake eventfd alone for a period (commands, and a
//! request parked alone, still wake it: `Parked::go_out`) instead of on
//! the instance. A period at whose end the lease is still clear (no
//! issuer polled during it) ends the deferral: the reactor waits on the
//! instance again.
//!
//! | word | meaning |
//! |---|---|
//! | `IDLE` | no issuer has polled since the reactor last looked |
//! | `POLLED` | an issuer has (it stays out of the instance) |
//! | `NAP` | the reactor sleeps in the instance; an issuer that marks the lease wakes it |
//!
//! Why no edge is left untaken: a deferral lasts from one look at the
//! word to the next. An edge raised before some issuer's mark and its
//! poll after it is taken by that poll or an earlier one (a poll takes the
//! oldest ready edges first). If the reactor's next look after the edge
//! finds the word `IDLE`, the reactor waits on the instance from then on
//! and takes it. If it finds `POLLED`, the mark it clears was made after
//! its previous look, and, if every later look finds `POLLED` too, each
//! later mark comes after the look before it and so after the edge: the
//! poll that follows that mark takes the edge, unless an earlier one did.
//! A reactor that goes to sleep in the instance does so only by turning
//! `IDLE` into `NAP`; a mark made after that finds `NAP` and wakes it, so
//! it looks again (and defers) rather than sleeping through the issuers'
//! traffic woken by every edge.

use manycore_sync::atomic::{AtomicU8, Ordering};

const IDLE: u8 = 0;
const POLLED: u8 = 1;
const NAP: u8 = 2;

pub(crate) struct Lease {
    word: AtomicU8,
}

impl Lease {
    pub(crate) fn new() -> Self {
        Self {
            word: AtomicU8::new(IDLE),
        }
    }

    /// An issuer about to poll the instance: marks the lease. True if the
    /// reactor sleeps in the instance: the caller wakes it.
    #[inline]
    pub(crate) fn mark(&self) -> bool {
        // Already marked since the reactor's last look: nothing to write
        // (the line stays shared while the reactor defers).
        self.word.load(Ordering::Relaxed) != POLLED
            && self.word.swap(POLLED, Ordering::SeqCst) == NAP
    }

    /// Whether an issuer has polled since the reactor last looked (a
    /// hint: an issuer that sees it may skip a poll it makes only to keep
    /// the reactor out).
    #[inline]
    pub(crate) fn is_marked(&self) -> bool {
        self.word.load(Ordering::Relaxed) == POLLED
    }

    /// The reactor, at the top of its loop: true if an issuer has polled
    /// since its last look (it clears the mark and stays out of the
    /// instance for a period).
    #[inline]
    pub(crate) fn defer(&self) -> bool {
        self.word.load(Ordering::Relaxed) == POLLED
            && self.word.swap(IDLE, Ordering::SeqCst) == POLLED
    }

    /// The reactor, about to sleep in the instance: true if it may (the
    /// word is now `NAP`); false if an issuer has polled since its last
    /// look (it defers instead).
    pub(crate) fn nap(&self) -> bool {
        self.word
            .compare_exchange(IDLE, NAP, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    }

    /// The reactor, back from its sleep in the instance.
    pub(crate) fn woke(&self) {
        let _ = self
            .word
            .compare_exchange(NAP, IDLE, Ordering::SeqCst, Ordering::Relaxed);
    }
}
