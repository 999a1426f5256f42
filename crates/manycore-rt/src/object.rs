//! Remote objects: `Remote<T>` is a global object pointer (the RMI of the
//! "Cross-core invocations on the SCC" paper, section III.B): a core plus a
//! generation-checked slot in that core's object table. The object lives on,
//! is invoked on, and is freed on its own core; only the pointer travels.
//!
//! While an invocation runs on an object (and perhaps waits inside, serving
//! other messages), further invocations of the same object wait in the slot's
//! queue and run, in order, when it is free again: an object is never borrowed
//! twice, and never reported stale because it was busy.

use crate::core::{Completer, Core};
use crate::core_loop::{with_local, CoreLocal};
use crate::error::{panicked, InvokeError};
use crate::invocation::Invocation;
use crate::raw::Message;
use std::any::Any;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// One entry of a core's object table. The object stays in place (boxed, so
/// its address is stable while the table's `Vec` grows) for its whole life;
/// `busy` marks it borrowed by a running invocation, and `waiting` holds the
/// invocations that arrived meanwhile (an empty `VecDeque` owns no memory).
struct Slot {
    gen: u32,
    obj: Option<Box<dyn Any>>,
    busy: bool,
    /// While an invocation has the object borrowed: the stack it runs on
    /// (`raw::current_context`); `NO_OWNER` between two queued invocations.
    owner: usize,
    waiting: VecDeque<Message>,
}

/// No invocation has the object borrowed right now.
const NO_OWNER: usize = usize::MAX;

/// An invocation that someone may wait for, queued behind a busy object.
struct Deferred {
    /// Its completion record (`Rx::id`).
    id: usize,
    slot: u32,
    gen: u32,
}

/// A core's object table.
#[derive(Default)]
pub(crate) struct ObjectTable {
    slots: RefCell<Vec<Slot>>,
    free: RefCell<Vec<u32>>,
    /// Invocations with a waiter that are queued behind a busy object (so
    /// that a wait on one of them from the stack that holds the object can
    /// be seen to deadlock), and their number (read without borrowing).
    deferred: RefCell<Vec<Deferred>>,
    deferred_len: std::cell::Cell<usize>,
}

impl ObjectTable {
    fn insert(&self, obj: Box<dyn Any>) -> (u32, u32) {
        let mut slots = self.slots.borrow_mut();
        let i = match self.free.borrow_mut().pop() {
            Some(i) => i,
            None => {
                slots.push(Slot {
                    gen: 0,
                    obj: None,
                    busy: false,
                    owner: NO_OWNER,
                    waiting: VecDeque::new(),
                });
                (slots.len() - 1) as u32
            }
        };
        let s = &mut slots[i as usize];
        s.obj = Some(obj);
        (i, s.gen)
    }

    /// Number of live objects (for `debug_counts`).
    #[cfg(feature = "internals")]
    pub(crate) fn len(&self) -> usize {
        self.slots
            .borrow()
            .iter()
            .filter(|s| s.obj.is_some())
            .count()
    }

    /// Drops every object (at core exit, when no invocation is running).
    pub(crate) fn clear(&self) {
        let all = std::mem::take(&mut *self.slots.borrow_mut());
        self.free.borrow_mut().clear();
        self.deferred.borrow_mut().clear();
        self.deferred_len.set(0);
        drop(all);
    }

    /// True if the invocation whose record is `id` is queued behind an
    /// object that the calling stack has borrowed: it can run only after
    /// the calling code returns, so waiting for it here would never end.
    #[inline]
    pub(crate) fn would_deadlock(&self, id: usize) -> bool {
        self.deferred_len.get() > 0 && self.blocks_this_stack(id)
    }

    #[cold]
    fn blocks_this_stack(&self, id: usize) -> bool {
        let here = crate::raw::current_context();
        let slots = self.slots.borrow();
        self.deferred.borrow().iter().any(|d| {
            d.id == id
                && slots
                    .get(d.slot as usize)
                    .is_some_and(|s| s.gen == d.gen && s.busy && s.owner == here)
        })
    }

    /// Called where invocation `id` is made, on its object's own core:
    /// notes it as waiting behind `slot` if this very stack has the object
    /// borrowed (it will queue there when it runs), so that a wait that
    /// suspends this stack (`block_on` in a coroutine) is seen at once.
    fn defer_if_held_here(&self, id: usize, slot: u32, gen: u32) {
        let held =
            self.slots.borrow().get(slot as usize).is_some_and(|s| {
                s.gen == gen && s.busy && s.owner == crate::raw::current_context()
            });
        if held {
            self.defer(id, slot, gen);
        }
    }

    /// Notes that invocation `id` waits behind busy `slot`.
    fn defer(&self, id: usize, slot: u32, gen: u32) {
        self.deferred.borrow_mut().push(Deferred { id, slot, gen });
        self.deferred_len.set(self.deferred_len.get() + 1);
    }

    /// Invocation `id` no longer waits behind the object in `slot` (it
    /// runs now).
    fn undefer(&self, id: usize, slot: u32) {
        let mut d = self.deferred.borrow_mut();
        if let Some(i) = d.iter().position(|d| d.id == id && d.slot == slot) {
            d.swap_remove(i);
            self.deferred_len.set(d.len());
        }
    }
}

/// A global pointer to an object of type `T` living on one core.
/// `Clone + Send + Sync` whatever `T` is: only the pointer travels.
pub struct Remote<T> {
    core: Core,
    slot: u32,
    gen: u32,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Remote<T> {
    fn clone(&self) -> Self {
        Self {
            core: self.core.clone(),
            slot: self.slot,
            gen: self.gen,
            _t: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Remote<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("core", &self.core.index())
            .field("slot", &self.slot)
            .field("gen", &self.gen)
            .finish()
    }
}

impl<T> PartialEq for Remote<T> {
    fn eq(&self, o: &Self) -> bool {
        self.core == o.core && self.slot == o.slot && self.gen == o.gen
    }
}

impl Core {
    /// Moves `obj` to this core's object table and returns a global pointer
    /// to it. Waits for the insertion (so the pointer is valid everywhere the
    /// moment it exists); on a core, keeps serving messages while waiting.
    ///
    /// ```
    /// let rt = manycore_rt::Runtime::builder().cores(2).build().unwrap();
    /// let counter = rt.core(1).place(0u64).unwrap();
    /// counter.spawn(|c| *c += 5).unwrap();
    /// assert_eq!(counter.invoke(|c| { *c += 1; *c }).wait(), Ok(6));
    /// assert_eq!(counter.remove().wait(), Ok(6));
    /// assert_eq!(counter.invoke(|c| *c).wait(), Err(manycore_rt::InvokeError::StaleObject));
    /// ```
    pub fn place<T: Send + 'static>(&self, obj: T) -> Result<Remote<T>, InvokeError> {
        self.place_with(move || obj)
    }

    /// Builds an object on this core with `make` (so `T` need not be `Send`)
    /// and returns a global pointer to it.
    pub fn place_with<T: 'static, F: FnOnce() -> T + Send + 'static>(
        &self,
        make: F,
    ) -> Result<Remote<T>, InvokeError> {
        let (slot, gen) = self
            .call(move || {
                with_local(|l| l.map(|l| l.objects.insert(Box::new(make()) as Box<dyn Any>)))
            })
            .wait()?
            .ok_or(InvokeError::Shutdown)?;
        Ok(Remote {
            core: self.clone(),
            slot,
            gen,
            _t: PhantomData,
        })
    }
}

impl<T: 'static> Remote<T> {
    /// The core the object lives on.
    pub fn core(&self) -> &Core {
        &self.core
    }

    /// Runs `f` on the object, on its core, and returns its result.
    /// `Err(StaleObject)` if the object was removed.
    pub fn invoke<R, F>(&self, f: F) -> Invocation<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut T) -> R + Send + 'static,
    {
        let (completer, rx) = Completer::new();
        let _ = self.with_object_for(rx.id(), move |obj| {
            let r = match obj {
                Ok(o) => catch_unwind(AssertUnwindSafe(|| f(o))).map_err(panicked),
                Err(e) => Err(e),
            };
            completer.complete(r);
        });
        Invocation::new(rx, self.core.shared.idle.spin_budget())
    }

    /// Runs `f` on the object, one-sided: nobody waits. A stale object or a
    /// panic is counted on the object's core, like any failed spawn.
    pub fn spawn<F>(&self, f: F) -> Result<(), InvokeError>
    where
        F: FnOnce(&mut T) + Send + 'static,
    {
        self.with_object(move |obj| {
            if let Ok(o) = obj {
                f(o)
            }
        })
    }

    /// Removes the object from its core's table and returns it. Later
    /// invocations fail with `StaleObject`.
    pub fn remove(&self) -> Invocation<T>
    where
        T: Send,
    {
        let (slot, gen) = (self.slot, self.gen);
        self.core.call_result(move || {
            with_local(|l| {
                let l = l.ok_or(InvokeError::Shutdown)?;
                take_object::<T>(l, slot, gen)
            })
        })
    }

    /// Frees the object on its own core, one-sided (for objects that are not
    /// `Send` and cannot be returned). Later invocations fail with `StaleObject`.
    pub fn free(&self) -> Result<(), InvokeError> {
        let (slot, gen) = (self.slot, self.gen);
        self.core.spawn(move || {
            with_local(|l| {
                if let Some(l) = l {
                    discard_object(l, slot, gen, false);
                }
            })
        })
    }

    /// Low-level: runs `f` on this object's core with the object (or the
    /// reason it is not there). Waits in the slot's queue while it is in use.
    pub(crate) fn with_object<F>(&self, f: F) -> Result<(), InvokeError>
    where
        F: FnOnce(Result<&mut T, InvokeError>) + Send + 'static,
    {
        self.with_object_for(0, f)
    }

    /// [`with_object`](Self::with_object) for work whose result someone may
    /// wait for through the completion record `wait_id` (0: nobody).
    pub(crate) fn with_object_for<F>(&self, wait_id: usize, f: F) -> Result<(), InvokeError>
    where
        F: FnOnce(Result<&mut T, InvokeError>) + Send + 'static,
    {
        let (slot, gen) = (self.slot, self.gen);
        if wait_id != 0 {
            let (rt, core) = (self.core.runtime_id(), self.core.index());
            with_local(|l| {
                if let Some(l) = l.filter(|l| l.shared.id == rt && l.index == core) {
                    l.objects.defer_if_held_here(wait_id, slot, gen);
                }
            });
        }
        self.core
            .spawn(move || with_local(|l| run_on_object(l, Op { slot, gen, wait_id }, f, false)))
    }
}

/// Which object an operation is for, and the record its waiter waits on
/// (0 if nobody waits).
#[derive(Clone, Copy)]
struct Op {
    slot: u32,
    gen: u32,
    wait_id: usize,
}

/// Looks up a live slot by pointer.
fn live(slots: &mut [Slot], slot: u32, gen: u32) -> Option<&mut Slot> {
    slots
        .get_mut(slot as usize)
        .filter(|s| s.gen == gen && s.obj.is_some())
}

/// Empties a live slot that is not borrowed: bumps its generation (every
/// pointer to it is now stale) and returns the object and whatever waited
/// for it (those now find it stale).
fn vacate(l: &CoreLocal, s: &mut Slot, slot: u32) -> (Option<Box<dyn Any>>, VecDeque<Message>) {
    let b = s.obj.take();
    s.gen = s.gen.wrapping_add(1);
    s.busy = false;
    let waiting = std::mem::take(&mut s.waiting);
    l.objects.free.borrow_mut().push(slot);
    (b, waiting)
}

/// Frees the object, or, if it is in use, queues the freeing behind the use.
/// `resumed`: this runs as the slot's next queued operation (see `release`).
fn discard_object(l: &CoreLocal, slot: u32, gen: u32, resumed: bool) {
    let (dropped, waiting) = {
        let mut slots = l.objects.slots.borrow_mut();
        let Some(s) = live(&mut slots, slot, gen) else {
            return;
        };
        if s.busy && !resumed {
            s.waiting.push_back(Message::new(move || {
                with_local(|l| {
                    l.into_iter()
                        .for_each(|l| discard_object(l, slot, gen, true))
                })
            }));
            return;
        }
        vacate(l, s, slot)
    };
    for m in waiting {
        l.send(l.index, m);
    }
    // The object is dropped here, on its own core, outside the table borrow.
    drop(dropped);
}

fn take_object<T: 'static>(l: &CoreLocal, slot: u32, gen: u32) -> Result<T, InvokeError> {
    let (b, waiting) = {
        let mut slots = l.objects.slots.borrow_mut();
        let s = live(&mut slots, slot, gen).ok_or(InvokeError::StaleObject)?;
        if s.busy {
            // Removing an object while it is being invoked.
            return Err(InvokeError::Busy);
        }
        if !s.obj.as_ref().is_some_and(|b| b.is::<T>()) {
            return Err(InvokeError::StaleObject);
        }
        vacate(l, s, slot)
    };
    for m in waiting {
        l.send(l.index, m);
    }
    match b.map(|b| b.downcast::<T>()) {
        Some(Ok(t)) => Ok(*t),
        _ => Err(InvokeError::StaleObject),
    }
}

/// Runs `f` on the object in `op.slot`, in place. If the object is in
/// use, `f` waits in the slot's queue (FIFO) and runs when its turn comes:
/// the object stays marked busy from one queued operation to the next, so
/// that nothing arriving later overtakes them. `resumed`: this is that
/// queued operation.
fn run_on_object<T: 'static, F>(l: Option<&CoreLocal>, op: Op, f: F, resumed: bool)
where
    F: FnOnce(Result<&mut T, InvokeError>) + Send + 'static,
{
    let Some(l) = l else {
        return f(Err(InvokeError::Shutdown));
    };
    let Op { slot, gen, wait_id } = op;
    if wait_id != 0 && l.objects.deferred_len.get() > 0 {
        // It runs now, or queues (and is noted again) below.
        l.objects.undefer(wait_id, slot);
    }
    let obj: *mut T = {
        let mut slots = l.objects.slots.borrow_mut();
        let Some(s) = live(&mut slots, slot, gen) else {
            drop(slots);
            return f(Err(InvokeError::StaleObject));
        };
        if s.busy && !resumed {
            if wait_id != 0 {
                l.objects.defer(wait_id, slot, gen);
            }
            s.waiting.push_back(Message::new(move || {
                with_local(|l| run_on_object(l, op, f, true))
            }));
            return;
        }
        match s.obj.as_mut().and_then(|b| b.downcast_mut::<T>()) {
            Some(o) => {
                s.busy = true;
                s.owner = crate::raw::current_context();
                o as *mut T
            }
            None => {
                drop(slots);
                if resumed {
                    release(l, slot);
                }
                return f(Err(InvokeError::StaleObject));
            }
        }
    };
    // SAFETY: `obj` points into the slot's Box, whose heap address does not
    // change while the table's Vec grows. The slot stays busy until `release`
    // below, and while it is busy nothing else touches the object: other
    // invocations queue, `remove` answers Busy, `free` queues, and the table
    // is cleared only at core exit, when no invocation runs. So this is the
    // only reference to the object for the duration of `f`.
    let r = catch_unwind(AssertUnwindSafe(|| f(Ok(unsafe { &mut *obj }))));
    release(l, slot);
    if let Err(p) = r {
        std::panic::resume_unwind(p);
    }
}

/// Ends a use of the object in `slot`: frees it, or, if operations queued
/// meanwhile, keeps it busy and schedules the first of them (on this core's
/// local queue, so the stack does not grow with the queue).
fn release(l: &CoreLocal, slot: u32) {
    {
        let mut slots = l.objects.slots.borrow_mut();
        let s = &mut slots[slot as usize];
        s.owner = NO_OWNER;
        if s.waiting.is_empty() {
            s.busy = false;
            return;
        }
    }
    l.send(
        l.index,
        Message::new(move || {
            with_local(|l| {
                let Some(l) = l else { return };
                let next = l
                    .objects
                    .slots
                    .borrow_mut()
                    .get_mut(slot as usize)
                    .and_then(|s| s.waiting.pop_front());
                if let Some(m) = next {
                    m.run();
                }
            })
        }),
    );
}

impl Core {
    /// `call` for a closure that itself returns `Result<_, InvokeError>`.
    pub(crate) fn call_result<T, F>(&self, f: F) -> Invocation<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, InvokeError> + Send + 'static,
    {
        let (completer, rx) = Completer::new();
        let _ = self.send(Message::new(move || {
            let r = match catch_unwind(AssertUnwindSafe(f)) {
                Ok(r) => r,
                Err(p) => Err(panicked(p)),
            };
            completer.complete(r);
        }));
        Invocation::new(rx, self.shared.idle.spin_budget())
    }
}
