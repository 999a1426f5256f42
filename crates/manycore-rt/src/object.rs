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
use crate::error::{panic_message, InvokeError};
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
    waiting: VecDeque<Message>,
}

/// A core's object table.
#[derive(Default)]
pub(crate) struct ObjectTable {
    slots: RefCell<Vec<Slot>>,
    free: RefCell<Vec<u32>>,
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
        drop(all);
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
        let _ = self.with_object(move |obj| {
            let r = match obj {
                Ok(o) => catch_unwind(AssertUnwindSafe(|| f(o)))
                    .map_err(|p| InvokeError::Panicked(panic_message(&*p))),
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
        let (slot, gen) = (self.slot, self.gen);
        self.core
            .spawn(move || with_local(|l| run_on_object(l, slot, gen, f, false)))
    }
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

/// Runs `f` on the object in `slot`, in place. If the object is in use, `f`
/// waits in the slot's queue (FIFO) and runs when its turn comes: the object
/// stays marked busy from one queued operation to the next, so that nothing
/// arriving later overtakes them. `resumed`: this is that queued operation.
fn run_on_object<T: 'static, F>(l: Option<&CoreLocal>, slot: u32, gen: u32, f: F, resumed: bool)
where
    F: FnOnce(Result<&mut T, InvokeError>) + Send + 'static,
{
    let Some(l) = l else {
        return f(Err(InvokeError::Shutdown));
    };
    let obj: *mut T = {
        let mut slots = l.objects.slots.borrow_mut();
        let Some(s) = live(&mut slots, slot, gen) else {
            drop(slots);
            return f(Err(InvokeError::StaleObject));
        };
        if s.busy && !resumed {
            s.waiting.push_back(Message::new(move || {
                with_local(|l| run_on_object(l, slot, gen, f, true))
            }));
            return;
        }
        match s.obj.as_mut().and_then(|b| b.downcast_mut::<T>()) {
            Some(o) => {
                s.busy = true;
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
                Err(p) => Err(InvokeError::Panicked(panic_message(&*p))),
            };
            completer.complete(r);
        }));
        Invocation::new(rx, self.shared.idle.spin_budget())
    }
}
