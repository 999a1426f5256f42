//! Refusals of remote signals. A signal to an instance on another core is
//! `Ok` once sent: its slot is claimed on the owner core, when the message
//! arrives, and a signal that finds its slot filled (`AlreadyFilled`) or
//! its instance fired (`Fired`) is refused there. The owner records the
//! refusal, with the value, in its runtime's log, where any thread can
//! read it ([`take_refusals`], [`Ctx::refusals`](crate::Ctx::refusals))
//! and count it ([`refused_signals`]).
//!
//! The log is runtime-wide (one per runtime id, made at the runtime's
//! first refusal) and keeps at most [`KEPT`] refusals with their values
//! until they are taken; later ones are counted and their values dropped.

use crate::error::SignalErrorKind;
use manycore_rt::Core;
use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::sync::Mutex;

/// The most refusals a runtime's log keeps, with their values, until they
/// are taken; past that they are only counted.
pub const KEPT: usize = 1024;

/// A remote signal refused on its owner core (see the crate's README,
/// "Routes").
pub struct Refusal {
    kind: SignalErrorKind,
    slot: usize,
    core: usize,
    value: Option<Box<dyn Any + Send>>,
}

impl Refusal {
    /// Why the signal was refused: `AlreadyFilled` or `Fired`.
    pub fn kind(&self) -> SignalErrorKind {
        self.kind
    }

    /// The slot the signal was for.
    pub fn slot(&self) -> usize {
        self.slot
    }

    /// The index of the core the instance lives on (the owner that refused).
    pub fn core(&self) -> usize {
        self.core
    }

    /// The value the signal carried, if it is a `T`.
    pub fn into_value<T: 'static>(self) -> Option<T> {
        self.value?.downcast::<T>().ok().map(|b| *b)
    }
}

impl fmt::Debug for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Refusal")
            .field("kind", &self.kind)
            .field("slot", &self.slot)
            .field("core", &self.core)
            .finish()
    }
}

#[derive(Default)]
struct Log {
    count: u64,
    kept: VecDeque<Refusal>,
}

/// Every runtime's log, by runtime id (touched on refusals and reads only).
static LOGS: Mutex<Vec<(u64, Log)>> = Mutex::new(Vec::new());

fn with_log<R>(runtime: u64, f: impl FnOnce(&mut Log) -> R) -> R {
    let mut logs = LOGS.lock().unwrap_or_else(|e| e.into_inner());
    let i = match logs.iter().position(|(id, _)| *id == runtime) {
        Some(i) => i,
        None => {
            logs.push((runtime, Log::default()));
            logs.len() - 1
        }
    };
    f(&mut logs[i].1)
}

/// On an owner core: records a refusal of a signal for slot `slot` of an
/// instance on this core. Out of line: refusals are rare.
#[inline(never)]
#[cold]
pub(crate) fn record<T: Send + 'static>(kind: SignalErrorKind, slot: usize, value: Option<T>) {
    let Some(me) = manycore_rt::current() else {
        return;
    };
    let refusal = Refusal {
        kind,
        slot,
        core: me.index(),
        value: value.map(|v| Box::new(v) as Box<dyn Any + Send>),
    };
    // The value (user code in its drop) goes outside the lock.
    let dropped = with_log(me.runtime_id(), |log| {
        log.count += 1;
        if log.kept.len() < KEPT {
            log.kept.push_back(refusal);
            None
        } else {
            Some(refusal)
        }
    });
    drop(dropped);
}

/// Takes the refusals kept in the log of `core`'s runtime, oldest first.
pub fn take_refusals(core: &Core) -> Vec<Refusal> {
    with_log(core.runtime_id(), |log| log.kept.drain(..).collect())
}

/// How many remote signals `core`'s runtime has refused (taken or not).
pub fn refused_signals(core: &Core) -> u64 {
    with_log(core.runtime_id(), |log| log.count)
}
