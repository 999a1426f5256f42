//! Error types: [`CallError`] for what can happen to one remote call (it
//! travels back to the caller inside a reply, so it is serde-encoded), and
//! [`Error`] for starting, running and stopping a world.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What can go wrong with one remote call, method invocation or stolen task.
/// Every variant is survivable: the job and both ranks live on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum CallError {
    /// The remote code panicked; the message is the panic's payload (if it
    /// was a string).
    Panicked(String),
    /// The receiving rank has no function with this id (refused there).
    UnknownFunction(u32),
    /// The function exists but is of another kind (a method called as a
    /// function, a task called as a method, a bulk function without bulk).
    WrongKind(String),
    /// The caller named a function that is not in the registry (refused
    /// before anything was sent).
    Unregistered(String),
    /// The place names a core the rank does not have.
    NoSuchCore {
        /// The core named.
        core: usize,
        /// How many cores the rank has.
        cores: usize,
    },
    /// The place names a rank the world does not have.
    NoSuchRank {
        /// The rank named.
        rank: usize,
        /// How many ranks there are.
        size: usize,
    },
    /// The remote object was removed (or never existed).
    StaleObject,
    /// The method belongs to another type than the object's.
    WrongType(String),
    /// Arguments or result could not be encoded or decoded.
    Codec(String),
    /// The caller's timeout expired first; the late reply is dropped.
    Timeout,
    /// The world or the receiving runtime is shutting down.
    Shutdown,
    /// The result was already taken.
    Consumed,
    /// The operation needs the object's own rank (`World::remove`).
    NotLocal,
    /// A group operation on a group with no members.
    EmptyGroup,
    /// A thread that is progressing MPI (running a function addressed to
    /// the engine place) waited for a message: only it could receive it.
    WouldBlock,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Panicked(m) => write!(f, "remote code panicked: {m}"),
            CallError::UnknownFunction(id) => write!(f, "no function with id {id} on that rank"),
            CallError::WrongKind(n) => write!(f, "function {n} is of another kind"),
            CallError::Unregistered(n) => write!(f, "function {n} is not registered"),
            CallError::NoSuchCore { core, cores } => {
                write!(f, "no core {core} on that rank (it has {cores})")
            }
            CallError::NoSuchRank { rank, size } => {
                write!(f, "no rank {rank} (the world has {size})")
            }
            CallError::StaleObject => f.write_str("the remote object was removed"),
            CallError::WrongType(n) => write!(f, "method {n} belongs to another type"),
            CallError::Codec(m) => write!(f, "codec: {m}"),
            CallError::Timeout => f.write_str("the call timed out"),
            CallError::Shutdown => f.write_str("the world is shutting down"),
            CallError::Consumed => f.write_str("the result was already taken"),
            CallError::NotLocal => f.write_str("the object lives on another rank"),
            CallError::EmptyGroup => f.write_str("the group has no members"),
            CallError::WouldBlock => f.write_str(
                "a function running on the progress engine waited for a message, which only its own thread could receive",
            ),
        }
    }
}

impl std::error::Error for CallError {}

impl From<crate::codec::CodecError> for CallError {
    fn from(e: crate::codec::CodecError) -> Self {
        CallError::Codec(e.0)
    }
}

/// MPI's thread support levels, in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ThreadLevel {
    /// One thread in the process.
    Single,
    /// Threads, but only the thread that initialized MPI calls it.
    Funneled,
    /// Threads, one MPI call at a time.
    Serialized,
    /// Threads, any MPI call from any thread at any time.
    Multiple,
}

/// What can go wrong starting, running or stopping a world.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The MPI library offers less thread support than the engine needs.
    ThreadLevel {
        /// What the engine asked for.
        required: ThreadLevel,
        /// What the library provides.
        provided: ThreadLevel,
    },
    /// MPI is already initialized in this process (one world per process).
    AlreadyInitialized,
    /// The ranks' function registries differ: the ranks run different
    /// programs, or one was built with other functions.
    RegistryMismatch {
        /// A function (name and signature) that one rank has and another
        /// lacks or declares differently.
        function: String,
        /// A rank that has it.
        present_on: usize,
        /// A rank that lacks it.
        absent_on: usize,
    },
    /// Two functions of this program share a name.
    DuplicateFunction(String),
    /// The ranks were started with different numbers of cores.
    CoreMismatch {
        /// Cores on each rank, by rank.
        cores: Vec<usize>,
    },
    /// The local runtime could not be built.
    Runtime(manycore_rt::Error),
    /// A thread could not be started.
    Spawn(std::io::Error),
    /// A collective or a distributed join waited longer than the world's
    /// timeout.
    Timeout(&'static str),
    /// The world is shut down.
    Shutdown,
    /// The root of a distributed join failed (its task, or a stolen one, panicked).
    Task(CallError),
    /// A value could not be encoded or decoded.
    Codec(String),
    /// A thread that is progressing MPI (running a function addressed to
    /// the engine place) entered a collective or `with_mpi`: only it could
    /// make the progress that needs.
    WouldBlock,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ThreadLevel { required, provided } => write!(
                f,
                "the MPI library provides thread level {provided:?}, the engine needs {required:?}"
            ),
            Error::AlreadyInitialized => f.write_str("MPI is already initialized in this process"),
            Error::RegistryMismatch {
                function,
                present_on,
                absent_on,
            } => write!(
                f,
                "the ranks' remote functions differ: `{function}` is on rank {present_on} \
                 but not on rank {absent_on}"
            ),
            Error::DuplicateFunction(n) => write!(f, "two remote functions are named `{n}`"),
            Error::CoreMismatch { cores } => {
                write!(f, "the ranks have different numbers of cores: {cores:?}")
            }
            Error::Runtime(e) => write!(f, "local runtime: {e}"),
            Error::Spawn(e) => write!(f, "could not start a thread: {e}"),
            Error::Timeout(what) => write!(f, "timed out waiting for {what}"),
            Error::Shutdown => f.write_str("the world is shut down"),
            Error::Task(e) => write!(f, "distributed join failed: {e}"),
            Error::Codec(m) => write!(f, "codec: {m}"),
            Error::WouldBlock => f.write_str(
                "a function running on the progress engine entered a collective or with_mpi",
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Runtime(e) => Some(e),
            Error::Spawn(e) => Some(e),
            Error::Task(e) => Some(e),
            _ => None,
        }
    }
}

impl From<crate::codec::CodecError> for Error {
    fn from(e: crate::codec::CodecError) -> Self {
        Error::Codec(e.0)
    }
}
