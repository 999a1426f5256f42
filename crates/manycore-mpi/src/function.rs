//! Typed handles of remote functions: what [`remote_fn!`](crate::remote_fn)
//! declares. Each handle is a `static` holding the function's body as a
//! plain `fn` pointer (so it can also be called directly) and, once looked
//! up, its id in the registry.
//!
//! Four kinds, after the typed message stubs of Barrelfish on the SCC (one
//! stub per message type, generated from its declaration):
//!
//! | handle                 | declared as                              | sent with                          |
//! |------------------------|------------------------------------------|------------------------------------|
//! | [`RemoteFn<A, R>`]     | `fn f(a: A) -> R`                        | `Place::call`, `Place::spawn`      |
//! | [`BulkFn<A, R>`]       | `fn f(a: A, bulk: Bulk) -> R`            | `Place::call_bulk`                 |
//! | [`MethodFn<T, A, R>`]  | `fn f(obj: &mut T, a: A) -> R`           | `Remote::call`, `Remote::spawn`    |
//! | [`TaskFn<A, R>`]       | `fn f(cx: Ctx, a: A) -> R`               | `Ctx::join`, `World::run_join`     |

use crate::codec::Bulk;
use crate::error::CallError;
use crate::join::Ctx;
use crate::registry::Registry;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU32, Ordering};

const UNKNOWN: u32 = u32::MAX;

/// The name and cached id every handle carries.
#[derive(Debug)]
pub(crate) struct Name {
    name: &'static str,
    id: AtomicU32,
}

impl Name {
    const fn new(name: &'static str) -> Self {
        Name {
            name,
            id: AtomicU32::new(UNKNOWN),
        }
    }

    /// The function's id in this process's registry.
    pub(crate) fn id(&self) -> Result<u32, CallError> {
        // Relaxed: the id is a pure function of the name and the (immutable)
        // registry; racing threads store the same value.
        let id = self.id.load(Ordering::Relaxed);
        if id != UNKNOWN {
            return Ok(id);
        }
        let id = Registry::global()
            .ok()
            .and_then(|r| r.id_of(self.name))
            .ok_or_else(|| CallError::Unregistered(self.name.to_string()))?;
        self.id.store(id, Ordering::Relaxed);
        Ok(id)
    }
}

macro_rules! handle_common {
    () => {
        /// The name the function is registered under.
        pub fn name(&self) -> &'static str {
            self.name.name
        }

        /// The function's id: its index in the sorted registry (the same on
        /// every rank of a world, which `World::init` checks).
        pub fn id(&self) -> Result<u32, CallError> {
            self.name.id()
        }
    };
}

/// A remote function `fn(A) -> R`; see [`remote_fn!`](crate::remote_fn).
pub struct RemoteFn<A, R> {
    name: Name,
    f: fn(A) -> R,
}

impl<A, R> RemoteFn<A, R> {
    #[doc(hidden)]
    pub const fn __new(name: &'static str, f: fn(A) -> R) -> Self {
        RemoteFn {
            name: Name::new(name),
            f,
        }
    }

    handle_common!();

    /// Runs the function here, on the calling thread.
    pub fn run(&self, a: A) -> R {
        (self.f)(a)
    }

    pub(crate) fn body(&self) -> fn(A) -> R {
        self.f
    }
}

/// A remote function with bulk bytes `fn(A, Bulk) -> R`; see
/// [`remote_fn!`](crate::remote_fn) and [`Bulk`].
pub struct BulkFn<A, R> {
    name: Name,
    f: fn(A, Bulk) -> R,
}

impl<A, R> BulkFn<A, R> {
    #[doc(hidden)]
    pub const fn __new(name: &'static str, f: fn(A, Bulk) -> R) -> Self {
        BulkFn {
            name: Name::new(name),
            f,
        }
    }

    handle_common!();

    /// Runs the function here, on the calling thread.
    pub fn run(&self, a: A, bulk: Bulk) -> R {
        (self.f)(a, bulk)
    }

    pub(crate) fn body(&self) -> fn(A, Bulk) -> R {
        self.f
    }
}

/// A method `fn(&mut T, A) -> R` of objects of type `T`; see
/// [`remote_fn!`](crate::remote_fn).
pub struct MethodFn<T, A, R> {
    name: Name,
    f: fn(&mut T, A) -> R,
    _t: PhantomData<fn(T)>,
}

impl<T, A, R> MethodFn<T, A, R> {
    #[doc(hidden)]
    pub const fn __new(name: &'static str, f: fn(&mut T, A) -> R) -> Self {
        MethodFn {
            name: Name::new(name),
            f,
            _t: PhantomData,
        }
    }

    handle_common!();

    /// Runs the method here, on `obj`.
    pub fn run(&self, obj: &mut T, a: A) -> R {
        (self.f)(obj, a)
    }

    pub(crate) fn body(&self) -> fn(&mut T, A) -> R {
        self.f
    }
}

/// A task of a distributed join `fn(Ctx, A) -> R`; see
/// [`remote_fn!`](crate::remote_fn) and [`Ctx::join`].
pub struct TaskFn<A, R> {
    name: Name,
    f: for<'a> fn(Ctx<'a>, A) -> R,
}

impl<A, R> TaskFn<A, R> {
    #[doc(hidden)]
    pub const fn __new(name: &'static str, f: for<'a> fn(Ctx<'a>, A) -> R) -> Self {
        TaskFn {
            name: Name::new(name),
            f,
        }
    }

    handle_common!();

    /// Runs the task here, on the stack, in the context `cx`.
    pub fn run(&self, cx: Ctx<'_>, a: A) -> R {
        (self.f)(cx, a)
    }

    pub(crate) fn body(&self) -> for<'a> fn(Ctx<'a>, A) -> R {
        self.f
    }
}

macro_rules! debug_handle {
    ($t:ident < $($p:ident),* >) => {
        impl<$($p),*> std::fmt::Debug for $t<$($p),*> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($t)).field("name", &self.name.name).finish()
            }
        }
    };
}

debug_handle!(RemoteFn<A, R>);
debug_handle!(BulkFn<A, R>);
debug_handle!(MethodFn<T, A, R>);
debug_handle!(TaskFn<A, R>);
