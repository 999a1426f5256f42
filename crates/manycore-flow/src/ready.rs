//! `Ready`: a core's stack of instances that a body running on it made
//! ready (a local signal filled their last slot, or they were created with
//! all their inputs), run last-in first-out after that body returns, in
//! the same runtime message, up to a budget per message.
//!
//! Last-in first-out runs a freshly enabled instance next, while what it
//! needs is in cache, and expands a recursive program depth-first (the
//! LIFO slot of tokio's and rayon's workers): a tree keeps a path's worth
//! of instances waiting, not a level's worth. The budget bounds how long
//! the core's other messages wait: after [`BUDGET`] firings the rest of
//! the stack is left for a message the core sends itself, at the back of
//! its queue. A chain of local firings never grows the call stack: a body
//! only pushes, and the loop here pops.
//!
//! Firings from anywhere else (a remote delivery, a gate's handoff, a
//! creation from another thread, a self-continuation) are runtime
//! messages, each of which drains the stack after its own body.

use crate::node::NodeRef;
use crate::percore::{self, PerCore};
use manycore_rt::{Core, InvokeError};

/// Firings per runtime message before the rest of the stack waits for the
/// next one.
pub(crate) const BUDGET: usize = 256;

pub(crate) struct Ready {
    stack: Vec<NodeRef>,
    /// A message runs a body (and then drains) on this thread right now.
    draining: bool,
    /// A message to drain the rest is on its way to this core.
    resume_sent: bool,
    /// The running body is an exclusive template's (it holds a gate).
    under_gate: bool,
}

impl Ready {
    /// An empty stack, no drain running.
    pub(crate) const fn new() -> Self {
        Self {
            stack: Vec::new(),
            draining: false,
            resume_sent: false,
            under_gate: false,
        }
    }
}

impl Drop for Ready {
    fn drop(&mut self) {
        // The core's thread is exiting: what was ready goes down with it,
        // like the pending instances of its registry.
        for n in std::mem::take(&mut self.stack) {
            // Off the stack before anything else: emptying it drops its
            // body, which may hold handles of it or of others still here.
            n.frame().set_stacked(false);
            n.clear(false);
        }
    }
}

/// Makes `node` (whose owner is this thread's core) ready: on the stack if
/// a body of this core is running (it runs after that body), otherwise as a
/// message to the core. Exclusive templates keep FUCE's thread queue: an
/// instance of one, or one made ready by the body of one, is always a
/// message at the back of the core's queue.
pub(crate) fn push(node: NodeRef) {
    let mut node = Some(node);
    // The thread exiting (its context gone): not stacked, sent.
    percore::with(|pc| node = node.take().and_then(|n| push_in(pc, n)));
    if let Some(node) = node {
        send_home(node);
    }
}

/// Sends `node` to its owner core to fire there.
pub(crate) fn send_home(node: NodeRef) {
    let owner = node.frame().owner().clone();
    let _ = send(&owner, node);
}

/// `push` on the context `pc` the caller holds (this thread's): stacks
/// `node` if a body of this core is running and it may go on the stack,
/// else gives it back (for the caller to send).
#[inline]
pub(crate) fn push_in(pc: &PerCore, node: NodeRef) -> Option<NodeRef> {
    if node.frame().exclusive {
        return Some(node);
    }
    let mut r = pc.ready.borrow_mut();
    if !r.draining || r.under_gate {
        return Some(node);
    }
    // Marked while the stack holds it: a handle dropped on this thread
    // meanwhile may skip its count's read-modify-write (`raw/shared.rs`).
    node.frame().set_stacked(true);
    r.stack.push(node);
    None
}

/// Marks the running body as an exclusive template's while it lives.
pub(crate) struct UnderGate(bool);

impl UnderGate {
    pub(crate) fn enter() -> Self {
        let was =
            percore::with(|pc| std::mem::replace(&mut pc.ready.borrow_mut().under_gate, true))
                .unwrap_or(false);
        Self(was)
    }
}

impl Drop for UnderGate {
    fn drop(&mut self) {
        percore::with(|pc| pc.ready.borrow_mut().under_gate = self.0);
    }
}

/// Sends `node` to core `on` to fire there (at the back of its queue). If
/// the message is dropped unrun (the runtime closed), the node is emptied.
pub(crate) fn send(on: &Core, node: NodeRef) -> Result<(), InvokeError> {
    let mut m = Unrun(Some(node));
    on.spawn(move || {
        if let Some(n) = m.0.take() {
            run(move || n.start(&n));
        }
    })
}

/// Runs `f` (a firing, in a runtime message on this core), then what it
/// made ready, up to the budget. Called inside a running body, only runs
/// `f`: the outer call drains.
pub(crate) fn run(f: impl FnOnce()) {
    let mut f = Some(f);
    percore::with(|pc| run_in(pc, || (f.take().unwrap_or_else(|| unreachable!()))()));
    // The thread is exiting (its context gone): no stack to drain.
    if let Some(f) = f {
        f();
    }
}

/// `run`, on the context `pc` the caller holds (this thread's).
pub(crate) fn run_in(pc: &PerCore, f: impl FnOnce()) {
    let outer = !std::mem::replace(&mut pc.ready.borrow_mut().draining, true);
    if !outer {
        return f();
    }
    // Ends the drain however it ends (a body may unwind into the runtime).
    let _end = End(pc);
    f();
    for _ in 0..BUDGET {
        let next = pc.ready.borrow_mut().stack.pop();
        match next {
            Some(n) => {
                n.frame().set_stacked(false);
                n.start(&n)
            }
            None => return,
        }
    }
}

/// Ends a drain: clears the flag, and if instances are left on the stack,
/// sends the core a message to go on with them.
struct End<'a>(&'a PerCore);

impl Drop for End<'_> {
    fn drop(&mut self) {
        let owner = {
            let mut r = self.0.ready.borrow_mut();
            r.draining = false;
            if r.resume_sent {
                return;
            }
            let owner = r.stack.last().map(|n| n.frame().owner().clone());
            r.resume_sent = owner.is_some();
            owner
        };
        if let Some(owner) = owner {
            let _ = owner.spawn(|| {
                percore::with(|pc| {
                    pc.ready.borrow_mut().resume_sent = false;
                    run_in(pc, || {});
                });
            });
        }
    }
}

/// A firing message's node: emptied if the message is dropped unrun.
struct Unrun(Option<NodeRef>);

impl Drop for Unrun {
    fn drop(&mut self) {
        if let Some(n) = self.0.take() {
            n.clear(false);
        }
    }
}
