//! Error types: [`Error`] for building and managing a runtime, [`InvokeError`]
//! for what can happen to an invocation.

use std::fmt;

/// What can go wrong with an invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvokeError {
    /// The invoked code panicked; the message is the panic's payload (if it was
    /// a string). The core that ran it is still running.
    Panicked(String),
    /// The runtime was shut down before the invocation could run.
    Shutdown,
    /// The caller's timeout expired first; the late result will be dropped on
    /// the core that produces it.
    Timeout,
    /// The result was already taken (a future polled after completion).
    Consumed,
    /// The remote object was removed (its slot's generation moved on).
    StaleObject,
    /// The remote object is being invoked right now (only `remove` reports this).
    Busy,
    /// A resource (memory for a coroutine stack, ...) could not be had.
    Resource(String),
    /// Waiting for this result would wait for ever: the invocation can only
    /// run after the code that waits for it has returned. Reported at once
    /// when code running on an object (on the object's own core) waits for
    /// an invocation of that same object. Waiting on a call to one's own
    /// core is not an error: the core runs the call while it waits.
    ///
    /// ```
    /// use manycore_rt::{current, InvokeError, Runtime};
    ///
    /// let rt = Runtime::builder().cores(2).build().unwrap();
    /// let counter = rt.core(1).place(0u32).unwrap();
    /// let me = counter.clone();
    /// // A method that waits for another invocation of its own object: that
    /// // one could run only after this method returns.
    /// let r = counter.invoke(move |n| {
    ///     *n += 1;
    ///     me.invoke(|n| *n).wait()
    /// });
    /// assert_eq!(r.wait(), Ok(Err(InvokeError::WouldDeadlock)));
    /// // The object still works.
    /// assert_eq!(counter.invoke(|n| *n).wait(), Ok(1));
    /// // A core waiting on a call to itself runs it while it waits.
    /// let r = rt.core(0).call(|| current().unwrap().call(|| 2 + 2).wait());
    /// assert_eq!(r.wait(), Ok(Ok(4)));
    /// ```
    WouldDeadlock,
    /// A reduction over a group with no members.
    EmptyGroup,
    /// A member of a collective failed; the other members completed.
    Member {
        /// The member's index in its group.
        index: usize,
        /// What went wrong there.
        error: Box<InvokeError>,
    },
}

impl fmt::Display for InvokeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvokeError::Panicked(m) => write!(f, "invoked code panicked: {m}"),
            InvokeError::Shutdown => f.write_str("the runtime is shut down"),
            InvokeError::Timeout => f.write_str("the invocation timed out"),
            InvokeError::Consumed => f.write_str("the invocation's result was already taken"),
            InvokeError::StaleObject => f.write_str("the remote object was removed"),
            InvokeError::Resource(m) => write!(f, "out of resources: {m}"),
            InvokeError::EmptyGroup => f.write_str("a reduction needs at least one group member"),
            InvokeError::WouldDeadlock => f.write_str(
                "waiting for this invocation would deadlock: it runs only after the waiting code returns",
            ),
            InvokeError::Busy => f.write_str("the remote object is being invoked"),
            InvokeError::Member { index, error } => {
                write!(f, "group member {index} failed: {error}")
            }
        }
    }
}

impl std::error::Error for InvokeError {}

/// What can go wrong building or managing a runtime.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The configuration cannot work; the message says why.
    InvalidConfig(String),
    /// A core's thread could not be started.
    Spawn(std::io::Error),
    /// The machine or the process ran out of something the runtime needs
    /// (threads, memory for a core's stack); the message says what.
    Resource(String),
    /// An idle hook is already installed on this runtime.
    HookAlreadySet,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidConfig(m) => write!(f, "invalid runtime configuration: {m}"),
            Error::Spawn(e) => write!(f, "could not start a core thread: {e}"),
            Error::Resource(m) => write!(f, "out of resources: {m}"),
            Error::HookAlreadySet => f.write_str("an idle hook is already installed"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Spawn(e) => Some(e),
            _ => None,
        }
    }
}

/// Turns a caught panic into [`InvokeError::Panicked`] (counted in the
/// current core's stats), and disposes of its payload safely.
pub(crate) fn panicked(p: Box<dyn std::any::Any + Send>) -> InvokeError {
    let e = InvokeError::Panicked(panic_message(&*p));
    drop_payload(p);
    e
}

/// Drops a caught panic's payload. A payload whose destructor panics
/// would otherwise unwind out of the code that caught it (turning a
/// reported panic into a lost invocation, or killing a core): that second
/// panic is caught too, and its own payload is leaked rather than dropped,
/// since it might do the same.
pub(crate) fn drop_payload(p: Box<dyn std::any::Any + Send>) {
    if let Err(again) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(p))) {
        std::mem::forget(again);
    }
}

/// Turns a panic payload into the message carried by [`InvokeError::Panicked`],
/// and counts the panic in the current core's stats.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    crate::core_loop::note_panic();
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}
