//! Remote objects across ranks: [`Remote<T>`] is a global object pointer
//! that carries its rank (the RMI on global pointers of Rotta et al.,
//! section III.B, with the partitioned global address space spanning
//! processes). The object itself lives in manycore-rt's object table of one
//! core of that rank, so invocations of it run there, one at a time, in
//! arrival order; this rank's [`ObjectTable`] maps the pointer's slot and
//! generation to that local object. Only the pointer travels (it is a serde
//! type), and only registered methods ([`MethodFn`]) can be invoked from
//! another rank, since closures cannot travel.

use crate::codec::encode_into;
use crate::dispatch::spawn_ordered;
use crate::error::CallError;
use crate::function::MethodFn;
use crate::header::{Header, Kind};
use crate::pending::Pending;
use crate::shared::{Shared, Target};
use crate::world::World;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

/// What an arriving method invocation runs with the object (`None`: the
/// object is gone).
pub(crate) type Visit = Box<dyn FnOnce(Option<&mut dyn Any>) + Send>;

struct Live {
    /// The core the object lives on.
    core: usize,
    visit: Arc<dyn Fn(Visit) + Send + Sync>,
    free: Box<dyn FnOnce() + Send>,
    /// The typed `manycore_rt::Remote<T>`, for `World::remove`.
    local: Box<dyn Any + Send>,
}

struct Slot {
    gen: u32,
    live: Option<Live>,
}

/// This rank's table of objects that other ranks may point to.
#[derive(Default)]
pub(crate) struct ObjectTable {
    slots: Mutex<(Vec<Slot>, Vec<u32>)>,
}

fn split(object: u64) -> (usize, u32) {
    ((object >> 32) as usize, object as u32)
}

impl ObjectTable {
    fn insert(&self, live: Live) -> u64 {
        let mut g = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let (slots, free) = &mut *g;
        let i = match free.pop() {
            Some(i) => i as usize,
            None => {
                slots.push(Slot { gen: 0, live: None });
                slots.len() - 1
            }
        };
        slots[i].live = Some(live);
        ((i as u64) << 32) | u64::from(slots[i].gen)
    }

    fn take(&self, object: u64) -> Option<Live> {
        let (i, gen) = split(object);
        let mut g = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        let (slots, free) = &mut *g;
        let s = slots.get_mut(i).filter(|s| s.gen == gen)?;
        let live = s.live.take()?;
        s.gen = s.gen.wrapping_add(1);
        free.push(i as u32);
        Some(live)
    }

    /// Runs `v` with the object on its core, or with `None` if it is gone.
    /// In dispatch order: the object's core takes the visit from its queue
    /// of jobs (`dispatch::spawn_ordered`) and hands it to the object's
    /// queue itself, so visits dispatched by different threads of this rank
    /// (the engine, a thread polling for its reply) reach the object in the
    /// order dispatched, as calls to a core do.
    pub(crate) fn invoke(&self, sh: &Arc<Shared>, object: u64, v: Visit) {
        let (i, gen) = split(object);
        let visit = {
            let g = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            g.0.get(i)
                .filter(|s| s.gen == gen)
                .and_then(|s| s.live.as_ref())
                .map(|l| (l.core, l.visit.clone()))
        };
        match visit {
            Some((core, visit)) => spawn_ordered(sh, core, Box::new(move || visit(v))),
            None => v(None),
        }
    }

    /// Removes the object and frees it on its core (one-sided), after the
    /// visits dispatched before.
    pub(crate) fn free(&self, sh: &Arc<Shared>, object: u64) {
        if let Some(live) = self.take(object) {
            spawn_ordered(sh, live.core, live.free);
        }
    }

    /// Whether the object is live and of type `T` (`None`: not live).
    fn is<T: 'static>(&self, object: u64) -> Option<bool> {
        let (i, gen) = split(object);
        let g = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        g.0.get(i)
            .filter(|s| s.gen == gen)
            .and_then(|s| s.live.as_ref())
            .map(|l| l.local.is::<manycore_rt::Remote<T>>())
    }
}

/// A global pointer to an object of type `T` on one core of one rank.
/// `Copy`, `Send`, and a serde type: send it to any rank, which can then
/// invoke the object's registered methods.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Remote<T> {
    rank: u32,
    core: u32,
    pub(crate) object: u64,
    #[serde(skip)]
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Remote<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Remote<T> {}

impl<T> PartialEq for Remote<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.rank, self.core, self.object) == (o.rank, o.core, o.object)
    }
}

impl<T> Eq for Remote<T> {}

impl<T> std::fmt::Debug for Remote<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("rank", &self.rank)
            .field("core", &self.core)
            .field("slot", &(self.object >> 32))
            .field("gen", &(self.object as u32))
            .finish()
    }
}

impl<T> Remote<T> {
    pub(crate) fn target(&self, func: Result<u32, CallError>) -> Target {
        Target {
            rank: self.rank as usize,
            core: self.core as usize,
            kind: Kind::Method,
            func,
            object: self.object,
        }
    }
}

impl<T: 'static> Remote<T> {
    /// The rank the object lives on.
    pub fn rank(&self) -> usize {
        self.rank as usize
    }

    /// The core (of that rank) the object lives on.
    pub fn core(&self) -> usize {
        self.core as usize
    }

    /// Runs the method `m` on the object, on its core, and returns its
    /// result. `Err(StaleObject)` if the object was removed.
    pub fn call<A: Serialize, R: DeserializeOwned>(
        &self,
        m: &MethodFn<T, A, R>,
        a: A,
    ) -> Pending<R> {
        let Some(sh) = Shared::current() else {
            return Pending::failed(CallError::Shutdown);
        };
        sh.call(self.target(m.id()), |out| encode_into(out, &a), None)
    }

    /// Runs the method `m` on the object, one-sided: nobody waits, and a
    /// failure is dropped on the object's rank.
    pub fn spawn<A: Serialize, R>(&self, m: &MethodFn<T, A, R>, a: A) -> Result<(), CallError> {
        let sh = Shared::current().ok_or(CallError::Shutdown)?;
        sh.invoke(self.target(m.id()), |out| encode_into(out, &a), None, true)
            .map(|_| ())
    }

    /// Removes the object on its rank and drops it there, one-sided. Later
    /// invocations fail with `StaleObject`.
    pub fn free(&self) -> Result<(), CallError> {
        let sh = Shared::current().ok_or(CallError::Shutdown)?;
        let mut h = Header::new(Kind::Free);
        h.object = self.object;
        sh.send(self.rank(), h.frame(0), None);
        Ok(())
    }
}

impl World {
    /// Moves `obj` to core `core` of this rank and returns a global pointer
    /// to it, which any rank may use.
    pub fn put<T: Send + 'static>(&self, core: usize, obj: T) -> Result<Remote<T>, CallError> {
        let sh = &self.shared;
        let c = sh.rt.try_core(core).ok_or(CallError::NoSuchCore {
            core,
            cores: sh.cores,
        })?;
        let local = c.place(obj).map_err(|_| CallError::Shutdown)?;
        let (l1, l2) = (local.clone(), local.clone());
        let object = sh.objects.insert(Live {
            core,
            visit: Arc::new(move |v: Visit| {
                // A stale local object drops `v`, whose reply then answers.
                let _ = l1.spawn(move |o: &mut T| v(Some(o as &mut dyn Any)));
            }),
            free: Box::new(move || {
                let _ = l2.free();
            }),
            local: Box::new(local),
        });
        Ok(Remote {
            rank: sh.rank as u32,
            core: core as u32,
            object,
            _t: PhantomData,
        })
    }

    /// Removes an object of this rank and returns it. Later invocations
    /// fail with `StaleObject`; objects of other ranks give `NotLocal`
    /// (use [`Remote::free`] for them).
    pub fn remove<T: Send + 'static>(&self, r: &Remote<T>) -> Result<T, CallError> {
        let sh = &self.shared;
        if r.rank() != sh.rank {
            return Err(CallError::NotLocal);
        }
        match sh.objects.is::<T>(r.object) {
            None => return Err(CallError::StaleObject),
            Some(false) => {
                return Err(CallError::WrongType(std::any::type_name::<T>().to_string()))
            }
            Some(true) => {}
        }
        let live = sh.objects.take(r.object).ok_or(CallError::StaleObject)?;
        match live.local.downcast::<manycore_rt::Remote<T>>() {
            Ok(local) => local.remove().wait().map_err(|_| CallError::StaleObject),
            // Checked above; the slot's generation moved on, so nobody else
            // took it meanwhile.
            Err(_) => Err(CallError::StaleObject),
        }
    }
}
