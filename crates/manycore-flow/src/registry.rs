//! `Registry`: a core's table of its pending instances (the owner's halves:
//! slots, count, body), a thread-local on the core's thread, touched only by
//! that thread: a local signal fills a slot with plain loads and stores.
//!
//! It is also how shutdown reaches pending instances: when a core's thread
//! exits, its registry is dropped with everything in it, so whatever waited
//! on those instances (an [`Outcome`](crate::Outcome)) learns at once that
//! they will never fire.

use crate::frame::{Frame, UNREGISTERED};
use crate::pending::AnyPending;
use std::cell::RefCell;

struct Entry {
    /// The frame's address: a check that an index still names this frame.
    frame: *const Frame,
    pending: Box<dyn AnyPending>,
}

/// Pending instances of one core.
#[derive(Default)]
pub(crate) struct Registry {
    entries: Vec<Option<Entry>>,
    free: Vec<u32>,
}

thread_local! {
    static REGISTRY: RefCell<Registry> = RefCell::new(Registry::default());
}

/// Runs `f` with this thread's registry; None if the thread is exiting (its
/// registry is gone) or the registry is in use further up the stack (never,
/// by construction: no user code runs while it is borrowed).
pub(crate) fn with<R>(f: impl FnOnce(&mut Registry) -> R) -> Option<R> {
    REGISTRY
        .try_with(|r| r.try_borrow_mut().ok().map(|mut r| f(&mut r)))
        .ok()
        .flatten()
}

impl Registry {
    /// Adds `frame`'s owner half and records the entry in the frame.
    pub(crate) fn insert(&mut self, frame: &Frame, pending: Box<dyn AnyPending>) {
        let e = Some(Entry {
            frame: frame as *const Frame,
            pending,
        });
        let i = match self.free.pop() {
            Some(i) => {
                self.entries[i as usize] = e;
                i
            }
            None => {
                self.entries.push(e);
                (self.entries.len() - 1) as u32
            }
        };
        frame.set_index(i);
    }

    /// The owner half of `frame`, first collecting it from the frame's inbox
    /// if it was created elsewhere and has not been collected yet.
    pub(crate) fn get(&mut self, frame: &Frame) -> Option<&mut dyn AnyPending> {
        let mut i = frame.index();
        if i == UNREGISTERED {
            let p = frame.collect()?;
            self.insert(frame, p);
            i = frame.index();
        }
        match self.entries.get_mut(i as usize) {
            Some(Some(e)) if std::ptr::eq(e.frame, frame) => Some(&mut *e.pending),
            _ => None,
        }
    }

    /// Removes and returns the owner half of `frame` (collecting it from the
    /// inbox if need be). The caller drops or runs it after the registry is
    /// released.
    pub(crate) fn take(&mut self, frame: &Frame) -> Option<Box<dyn AnyPending>> {
        let i = frame.index();
        if i == UNREGISTERED {
            return frame.collect();
        }
        let slot = self.entries.get_mut(i as usize)?;
        if !slot.as_ref().is_some_and(|e| std::ptr::eq(e.frame, frame)) {
            return None;
        }
        let e = slot.take()?;
        self.free.push(i);
        frame.set_index(UNREGISTERED);
        Some(e.pending)
    }

    /// Instances pending here.
    pub(crate) fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        // The core's thread is exiting (its runtime shut down): drop every
        // instance still pending here, bodies and values with them. A drop
        // that signals again finds the registry gone (`with` returns None).
        let entries = std::mem::take(&mut self.entries);
        drop(entries);
    }
}

/// Instances pending on the calling core (0 off the cores).
pub(crate) fn pending_here() -> usize {
    with(|r| r.len()).unwrap_or(0)
}
