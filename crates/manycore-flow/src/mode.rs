//! Thread modes, as the FUCE processor sets them per thread (Kusakabe,
//! Taniguchi, Amamiya, *A Study of a Continuation-based Fine-grain
//! Multithreaded Operating System CEFOS*, section 2.1.1 and Figure 2): a
//! thread runs in user, kernel-interface or kernel mode, and a user thread
//! may not continue directly to a kernel thread; it continues to a
//! kernel-interface thread (the gate of a system call) instead.
//!
//! The rule is a trait bound where the modes are types ([`ContinuesTo`]) and
//! a runtime check ([`ModeKind::may_continue_to`]) where they are values
//! (graphs built at run time, continuations passed around as data).

use std::fmt;

mod sealed {
    pub trait Sealed {}
}

/// A thread mode as a type: [`User`], [`KernelInterface`] or [`Kernel`].
/// Sealed: these three are all there is.
pub trait Mode: sealed::Sealed + Send + Sync + 'static {
    /// The same mode as a value.
    const KIND: ModeKind;
}

/// User mode: application threads.
#[derive(Debug)]
pub enum User {}

/// Kernel-interface mode: the entry points from user space into the kernel
/// (the `gate_thread` of the paper's Figure 4).
#[derive(Debug)]
pub enum KernelInterface {}

/// Kernel mode: system-call bodies, semaphores, device drivers and handlers.
#[derive(Debug)]
pub enum Kernel {}

impl sealed::Sealed for User {}
impl sealed::Sealed for KernelInterface {}
impl sealed::Sealed for Kernel {}

impl Mode for User {
    const KIND: ModeKind = ModeKind::User;
}
impl Mode for KernelInterface {
    const KIND: ModeKind = ModeKind::KernelInterface;
}
impl Mode for Kernel {
    const KIND: ModeKind = ModeKind::Kernel;
}

/// "A thread of mode `Self` may continue to a thread of mode `N`": the
/// continuations of the paper's Figure 2, as a bound the compiler checks.
///
/// User threads continue to user and kernel-interface threads; kernel-interface
/// and kernel threads continue to any thread (a handler continues to the user
/// thread that receives the I/O data).
#[diagnostic::on_unimplemented(
    message = "a `{Self}` thread cannot continue to a `{N}` thread",
    note = "a user thread reaches kernel threads only through a kernel-interface thread (a gate)"
)]
pub trait ContinuesTo<N: Mode>: Mode {}

impl ContinuesTo<User> for User {}
impl ContinuesTo<KernelInterface> for User {}
impl<N: Mode> ContinuesTo<N> for KernelInterface {}
impl<N: Mode> ContinuesTo<N> for Kernel {}

/// A thread mode as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ModeKind {
    /// See [`User`].
    User,
    /// See [`KernelInterface`].
    KernelInterface,
    /// See [`Kernel`].
    Kernel,
}

impl ModeKind {
    /// Whether a thread of this mode may continue to a thread of mode `to`
    /// (the same rule as [`ContinuesTo`]).
    ///
    /// ```
    /// use manycore_flow::ModeKind::*;
    /// assert!(User.may_continue_to(KernelInterface));
    /// assert!(!User.may_continue_to(Kernel));
    /// assert!(Kernel.may_continue_to(User));
    /// ```
    pub const fn may_continue_to(self, to: ModeKind) -> bool {
        !matches!((self, to), (ModeKind::User, ModeKind::Kernel))
    }
}

impl fmt::Display for ModeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ModeKind::User => "user",
            ModeKind::KernelInterface => "kernel-interface",
            ModeKind::Kernel => "kernel",
        })
    }
}
