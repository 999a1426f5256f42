//! Remote objects: `Remote<T>` is a global object pointer (the RMI of the
//! cross-core invocation paper, section III.B): a core plus a
//! generation-checked slot in that core's object table. The object lives on,
//! is invoked on, and is freed on its own core; only the pointer travels.
//!
//! While an invocation runs on an object (and perhaps waits inside, serving
//! other messages), further invocations of the same object wait in the slot's
//! queue and run, in order, when it is free again: an object is never borrowed
//! twice, and never reported stale because it was busy.

use crate::core::{Completer, Core};
use crate::error::{panic_message, InvokeError};
use crate::invocation::Invocation;
use crate::raw::{Completion, Message};
use crate::scheduler::{with_local, CoreLocal};
use std::any::Any;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

enum State {
    Vacant,
    Present(Box<dyn Any>),
    /// Being invoked; these messages wait for it.
    InUse(VecDeque<Message>),
}

struct Slot {
    gen: u32,
    state: State,
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
                    state: State::Vacant,
                });
                (slots.len() - 1) as u32
            }
        };
        let s = &mut slots[i as usize];
        s.state = State::Present(obj);
        (i, s.gen)
    }

    /// Number of live objects.
    pub(crate) fn len(&self) -> usize {
        self.slots
            .borrow()
            .iter()
            .filter(|s| !matches!(s.state, State::Vacant))
            .count()
    }

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
        let c = Arc::new(Completion::new());
        let completer = Completer(Some(c.clone()));
        let _ = self.with_object(move |obj| {
            let r = match obj {
                Ok(o) => catch_unwind(AssertUnwindSafe(|| f(o)))
                    .map_err(|p| InvokeError::Panicked(panic_message(&*p))),
                Err(e) => Err(e),
            };
            completer.complete(r);
        });
        Invocation::new(c, self.core.shared.idle.spin_budget())
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
                    discard_object(l, slot, gen);
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
            .spawn(move || with_local(|l| run_on_object(l, slot, gen, f)))
    }
}

fn discard_object(l: &CoreLocal, slot: u32, gen: u32) {
    let dropped = {
        let mut slots = l.objects.slots.borrow_mut();
        let Some(s) = slots.get_mut(slot as usize).filter(|s| s.gen == gen) else {
            return;
        };
        match std::mem::replace(&mut s.state, State::Vacant) {
            State::Present(b) => {
                s.gen = s.gen.wrapping_add(1);
                Some(b)
            }
            State::InUse(mut q) => {
                // In use: free it once the current invocation is done.
                q.push_back(Message::new(move || {
                    with_local(|l| l.into_iter().for_each(|l| discard_object(l, slot, gen)))
                }));
                s.state = State::InUse(q);
                return;
            }
            State::Vacant => None,
        }
    };
    if dropped.is_some() {
        l.objects.free.borrow_mut().push(slot);
    }
    // The object is dropped here, on its own core, outside the table borrow.
    drop(dropped);
}

fn take_object<T: 'static>(l: &CoreLocal, slot: u32, gen: u32) -> Result<T, InvokeError> {
    let mut slots = l.objects.slots.borrow_mut();
    let s = slots
        .get_mut(slot as usize)
        .filter(|s| s.gen == gen)
        .ok_or(InvokeError::StaleObject)?;
    match std::mem::replace(&mut s.state, State::Vacant) {
        State::Present(b) => match b.downcast::<T>() {
            Ok(t) => {
                s.gen = s.gen.wrapping_add(1);
                drop(slots);
                l.objects.free.borrow_mut().push(slot);
                Ok(*t)
            }
            Err(b) => {
                s.state = State::Present(b);
                Err(InvokeError::StaleObject)
            }
        },
        State::InUse(q) => {
            // Removing an object while it is being invoked: wait our turn.
            s.state = State::InUse(q);
            Err(InvokeError::Busy)
        }
        State::Vacant => Err(InvokeError::StaleObject),
    }
}

fn run_on_object<T: 'static, F>(l: Option<&CoreLocal>, slot: u32, gen: u32, f: F)
where
    F: FnOnce(Result<&mut T, InvokeError>) + Send + 'static,
{
    let Some(l) = l else {
        return f(Err(InvokeError::Shutdown));
    };
    let taken = {
        let mut slots = l.objects.slots.borrow_mut();
        match slots.get_mut(slot as usize).filter(|s| s.gen == gen) {
            None => Err(()),
            Some(s) => match &mut s.state {
                State::Vacant => Err(()),
                State::InUse(q) => {
                    // Busy: queue ourselves; we run when the object is back.
                    q.push_back(Message::new(move || {
                        with_local(|l| run_on_object(l, slot, gen, f))
                    }));
                    return;
                }
                State::Present(_) => {
                    match std::mem::replace(&mut s.state, State::InUse(VecDeque::new())) {
                        State::Present(b) => Ok(b),
                        _ => Err(()),
                    }
                }
            },
        }
    };
    let mut b: Box<dyn Any> = match taken {
        Ok(b) => b,
        Err(_) => return f(Err(InvokeError::StaleObject)),
    };
    let r = match b.downcast_mut::<T>() {
        Some(obj) => catch_unwind(AssertUnwindSafe(|| f(Ok(obj)))),
        None => catch_unwind(AssertUnwindSafe(|| f(Err(InvokeError::StaleObject)))),
    };
    // Put the object back and release whoever waited for it, in order.
    let waiting = {
        let mut slots = l.objects.slots.borrow_mut();
        let s = &mut slots[slot as usize];
        match std::mem::replace(&mut s.state, State::Present(b)) {
            State::InUse(q) => q,
            _ => VecDeque::new(),
        }
    };
    for m in waiting {
        l.send(l.index, m);
    }
    if let Err(p) = r {
        std::panic::resume_unwind(p);
    }
}

impl Core {
    /// `call` for a closure that itself returns `Result<_, InvokeError>`.
    pub(crate) fn call_result<T, F>(&self, f: F) -> Invocation<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T, InvokeError> + Send + 'static,
    {
        let c = Arc::new(Completion::new());
        let completer = Completer(Some(c.clone()));
        let _ = self.send(Message::new(move || {
            let r = match catch_unwind(AssertUnwindSafe(f)) {
                Ok(r) => r,
                Err(p) => Err(InvokeError::Panicked(panic_message(&*p))),
            };
            completer.complete(r);
        }));
        Invocation::new(c, self.shared.idle.spin_budget())
    }
}
