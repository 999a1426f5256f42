//! The crate's unsafe building blocks, one module per thing made safe:
//!
//! * `message`: a closure type-erased into one ring slot;
//! * `completion`: the record a result travels through, shared by its
//!   completer and its waiter without a reference count;
//! * `blocks`: the per-thread cache of line-sized blocks those records
//!   live in;
//! * `current`: the thread-local pointer to the thread's core state;
//! * `handoff`: the table through which a sender hands the consumer end of
//!   a ring it made to the ring's receiver;
//! * `coroutine`: the running coroutine's context and its suspension;
//! * `overflow`: the signal handler that reports a coroutine stack
//!   overflow.
//!
//! Nothing here knows the core loop: what a core's state is, the current
//! core's thread-local is handed in by its user.

#[cfg(not(loom))]
mod blocks;
pub(crate) mod completion;
pub(crate) mod coroutine;
pub(crate) mod current;
pub(crate) mod handoff;
pub(crate) mod message;
pub(crate) mod overflow;

#[cfg(all(loom, test))]
pub(crate) use completion::completion_with_probe;
pub(crate) use completion::{completion, Rx, Tx};
pub(crate) use coroutine::{
    coroutine_waker, current_context, enter_coroutine, leave_coroutine, suspend_coroutine, CoCtx,
    YielderSlot,
};
pub(crate) use current::{enter, with_current, CurrentCore};
pub(crate) use handoff::HandoffTable;
pub(crate) use message::{Inbound, Message, INLINE_BYTES};
