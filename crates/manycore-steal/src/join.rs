//! The two forms of the fork: [`join`] (depth in a thread-local) and
//! [`Ctx::join`] (depth carried by value), and what they share.

use crate::raw::{self, Local};
use std::marker::PhantomData;

/// Runs `a` and `b`, potentially in parallel, and returns both results.
///
/// Rayon's semantics: both closures always run; if either panics, the panic
/// propagates after both have finished (`a`'s wins if both panic). On a
/// worker (a core of an attached manycore runtime, or a thread of a
/// [`ThreadPool`](crate::ThreadPool)) `b` is latent work that an idle worker
/// may steal. From any other thread the join runs on a worker of the global
/// pool (started on first use) while the calling thread blocks, as in
/// rayon-core.
// Out of line for closures of up to two words: the caller's recursive
// function is then inlined into the closures here, so that its base case (a
// leaf of the tree) is tested before the call rather than after it, and a
// join tree costs one call per inner node, not one per node. Inlined for
// bigger closures, which an out-of-line join would copy (see `Ctx::join`).
#[inline(always)]
pub fn join<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if passed_in_memory::<A, B>() {
        let unrecorded = raw::with_local_flat(|local| count_unrecorded(local, local.depth.get()));
        if unrecorded {
            return raw::join_unrecorded((), |()| a(), |()| b());
        }
        raw::with_local_flat(|local| join_recorded_plain(local, local.depth.get(), a, b))
    } else {
        join_out_of_line(a, b)
    }
}

#[inline(never)]
fn join_out_of_line<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    raw::with_local_flat(|local| {
        // The depth saturates at LATENT_WINDOW: below the window a join only
        // reads it (no store for the joins under it to wait for).
        let depth = local.depth.get();
        if count_unrecorded(local, depth) {
            return raw::join_unrecorded((), |()| a(), |()| b());
        }
        join_recorded_plain(local, depth, a, b)
    })
}

/// True if either closure of a join is bigger than two words: the Rust ABI
/// then passes it in memory, and the join is inlined rather than called
/// (see `Ctx::join`).
#[inline(always)]
const fn passed_in_memory<A, B>() -> bool {
    const WORDS2: usize = 2 * std::mem::size_of::<usize>();
    std::mem::size_of::<A>() > WORDS2 || std::mem::size_of::<B>() > WORDS2
}

/// A join at `depth` that runs unrecorded (below the window, not on a
/// tick): counts it and returns true. Otherwise false: record it.
#[inline(always)]
pub(crate) fn count_unrecorded(local: &Local, depth: u32) -> bool {
    let n = local.beat.get();
    let counted = depth >= LATENT_WINDOW && n != 0;
    if counted {
        local.beat.set(n - 1);
    }
    counted
}

/// The recorded join of the plain form (out of line, as for `Ctx::join`).
#[inline(never)]
fn join_recorded_plain<A, B, RA, RB>(local: &Local, depth: u32, a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    if local.pool.get().is_null() {
        return join_outside(a, b);
    }
    let _depth = (depth < LATENT_WINDOW).then(|| raw::DepthGuard::enter(local, depth));
    raw::join(local, a, move |_| b())
}

/// The pool that work from a thread that is no worker goes to: binds the
/// thread first if it is a core of an attached runtime (then `None`: it is a
/// worker now), else the global pool (none under loom: the join runs here).
#[cold]
pub(crate) fn outside_pool() -> Option<manycore_sync::Arc<crate::pool::Pool>> {
    crate::attach_current_thread();
    if crate::pool::current().is_some() {
        return None;
    }
    crate::thread_pool::current_or_global()
}

/// A join on a thread that is no worker: on the global pool, or, for a core
/// of an attached runtime seen here first, on the core itself.
#[cold]
#[inline(never)]
fn join_outside<A, B, RA, RB>(a: A, b: B) -> (RA, RB)
where
    A: FnOnce() -> RA + Send,
    B: FnOnce() -> RB + Send,
    RA: Send,
    RB: Send,
{
    match outside_pool() {
        Some(p) => crate::thread_pool::run_on(&p, move || join(a, b)),
        None if crate::pool::current().is_some() => join(a, b),
        None => raw::join_unrecorded((), |()| a(), |()| b()),
    }
}

/// How many levels of a join tree are recorded as latent work, counted from
/// the tree's root (the [`with_ctx`] call, or for [`join`] the outermost join
/// of the thread) or from the root of a stolen piece. Deeper joins run as
/// plain calls, except that a join falling on a tick (every so many joins,
/// see [`HEARTBEAT_PERIOD`](crate::HEARTBEAT_PERIOD)) is recorded too, so
/// that deep recursions always have some latent work. Promotion takes the
/// oldest frame, the biggest piece of work; the top levels hold the big
/// pieces, and a thief records the top levels of what it stole.
///
/// A tuning constant of the implementation, public only with the
/// `internals` feature.
pub const LATENT_WINDOW: u32 = 4;

/// The context-passing form of [`join`] (as in `chili`): a handle on the
/// calling worker, passed down the recursion by value, that carries the
/// join's depth in the tree, so that a join below the recorded top levels
/// (see [`Ctx::join`]) touches no thread-local state but the tick counter. Not `Send`: it
/// belongs to one thread.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// Depth of the join in the tree (0: the root, or the root of a stolen
    /// piece), saturated at `LATENT_WINDOW`.
    depth: u32,
    _worker: PhantomData<&'a Local>,
}

impl Ctx<'_> {
    #[inline(always)]
    fn at(depth: u32) -> Self {
        Self {
            depth,
            _worker: PhantomData,
        }
    }

    /// [`join`], passing each closure the context of the worker that runs it.
    /// Records `b` as latent work in the top four levels of the tree
    /// (counted from [`with_ctx`], or from the root of a stolen piece) and at
    /// ticks; elsewhere runs `a` then `b` as plain calls.
    //
    // Closures of up to two words travel in registers, and the join is out
    // of line: a recursive function that joins is then inlined into the
    // closures here (the join is the recursion's one out-of-line step), so
    // its base case is tested before a call instead of after one. For fib
    // that halves the calls: one per inner node of the tree instead of one
    // per node, as in the sequential code (where the compiler turns the
    // second call into a loop).
    //
    // Bigger closures are passed in memory, and an out-of-line join would
    // copy them (to keep `b` where the unwinding path finds it) with wide
    // loads of what the caller had just stored field by field: a load the
    // store buffer cannot forward, which waits for the stores to retire
    // (figures: docs/notes/2026-11-25-steal-join-codegen.md). Inlined, the
    // closures are built where they are used.
    #[inline(always)]
    pub fn join<A, B, RA, RB>(self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(Ctx<'_>) -> RA + Send,
        B: FnOnce(Ctx<'_>) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        if passed_in_memory::<A, B>() {
            self.join_here(a, b)
        } else {
            self.join_out_of_line(a, b)
        }
    }

    #[inline(never)]
    fn join_out_of_line<A, B, RA, RB>(self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(Ctx<'_>) -> RA + Send,
        B: FnOnce(Ctx<'_>) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        let depth = self.depth;
        raw::with_local_flat(|local| {
            if count_unrecorded(local, depth) {
                // The depth saturates at LATENT_WINDOW.
                return raw::join_unrecorded(self, a, b);
            }
            join_recorded(local, depth, a, b)
        })
    }

    #[inline(always)]
    fn join_here<A, B, RA, RB>(self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(Ctx<'_>) -> RA + Send,
        B: FnOnce(Ctx<'_>) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        let depth = self.depth;
        // The closures stay out of the thread-local accessor's closure: moved
        // into it, they would be copied on every join.
        let unrecorded = raw::with_local_flat(|local| count_unrecorded(local, depth));
        if unrecorded {
            // The depth saturates at LATENT_WINDOW.
            return raw::join_unrecorded(self, a, b);
        }
        raw::with_local_flat(|local| join_recorded(local, depth, a, b))
    }
}

/// The recorded join of the context form, kept out of line: the caller's own
/// frame then holds no escaping stack slot on the common (unrecorded) path,
/// so the optimiser can treat that path like plain recursion.
#[inline(never)]
fn join_recorded<A, B, RA, RB>(local: &Local, depth: u32, a: A, b: B) -> (RA, RB)
where
    A: FnOnce(Ctx<'_>) -> RA + Send,
    B: FnOnce(Ctx<'_>) -> RB + Send,
    RA: Send,
    RB: Send,
{
    if local.pool.get().is_null() {
        return match outside_pool() {
            Some(p) => crate::thread_pool::run_on(&p, move || with_ctx(|s| s.join(a, b))),
            None if crate::pool::current().is_some() => Ctx::at(depth).join(a, b),
            None => raw::join_unrecorded(Ctx::at(depth), a, b),
        };
    }
    let next = depth.saturating_add(1).min(LATENT_WINDOW);
    raw::join(
        local,
        move || a(Ctx::at(next)),
        // A thief records the top levels of the piece it stole.
        move |stolen| b(Ctx::at(if stolen { 0 } else { next })),
    )
}

/// Runs `f` with the calling thread's [`Ctx`] (at the root of a join tree).
#[inline]
pub fn with_ctx<R>(f: impl FnOnce(Ctx<'_>) -> R) -> R {
    f(Ctx::at(0))
}
