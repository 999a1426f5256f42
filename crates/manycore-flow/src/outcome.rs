//! `Outcome`: how code outside the dataflow graph gets a value out of it: a
//! user-mode sink instance with one slot, and the waiting end. If the
//! runtime shuts down before the sink fires, the sink is dropped with its
//! core's pending instances and the wait ends with
//! [`FlowError::Shutdown`]: never a hang.

use crate::error::FlowError;
use crate::here;
use crate::instance::{Instance, Slot};
use crate::mode::User;
use manycore_rt::Core;
use std::fmt;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::{Duration, Instant};

/// The waiting end of a sink; see [`Outcome::new`].
pub struct Outcome<T> {
    rx: Receiver<Result<T, FlowError>>,
}

impl<T> fmt::Debug for Outcome<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outcome").finish_non_exhaustive()
    }
}

impl<T: Send + 'static> Outcome<T> {
    /// A sink instance on core `on` (user mode, one slot: every mode may
    /// continue to it) and the outcome that receives its value.
    pub fn new(on: &Core) -> Result<(Slot<T, User>, Outcome<T>), FlowError> {
        let (tx, out) = Self::channel();
        let sink = Instance::<T, User>::new(on, 1, move |_ctx, xs| {
            if let Some(v) = xs.into_iter().next() {
                let _ = tx.send(Ok(v));
            }
        })?;
        Ok((sink.slot(0), out))
    }
}

impl<T> Outcome<T> {
    /// An outcome and the sender its producers complete it through.
    pub(crate) fn channel() -> (Sender<Result<T, FlowError>>, Self) {
        let (tx, rx) = mpsc::channel();
        (tx, Self { rx })
    }

    /// Waits for the value. `Err(Shutdown)` if the runtime shut down first;
    /// `Err(Panicked)` if a graph node panicked.
    pub fn wait(self) -> Result<T, FlowError> {
        self.wait_until(None)
    }

    /// Waits at most `timeout` (`Err(Timeout)` then; the outcome can be
    /// waited for again). Every `Duration` is accepted: one whose deadline
    /// an `Instant` cannot hold (`Duration::MAX`) waits as
    /// [`wait`](Self::wait) does.
    pub fn wait_timeout(&self, timeout: Duration) -> Result<T, FlowError> {
        self.wait_until(Instant::now().checked_add(timeout))
    }

    /// The value, if it is there.
    pub fn try_get(&self) -> Option<Result<T, FlowError>> {
        match self.rx.try_recv() {
            Ok(r) => Some(r),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(Err(FlowError::Shutdown)),
        }
    }

    fn wait_until(&self, deadline: Option<Instant>) -> Result<T, FlowError> {
        if !here::on_a_core() {
            return match deadline {
                None => self.rx.recv().unwrap_or(Err(FlowError::Shutdown)),
                Some(d) => match self
                    .rx
                    .recv_timeout(d.saturating_duration_since(Instant::now()))
                {
                    Ok(r) => r,
                    Err(RecvTimeoutError::Timeout) => Err(FlowError::Timeout),
                    Err(RecvTimeoutError::Disconnected) => Err(FlowError::Shutdown),
                },
            };
        }
        // On a core: keep serving the core's messages while waiting (the
        // sink may be on this very core), and sleep on its doorbell between
        // looks (a short nap: the sink's send does not ring it).
        loop {
            if let Some(r) = self.try_get() {
                return r;
            }
            let nap = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left.min(Duration::from_micros(200)),
                    _ => return Err(FlowError::Timeout),
                },
                None => Duration::from_micros(200),
            };
            if manycore_rt::poll_once() == 0 {
                manycore_rt::park_current(nap);
            }
        }
    }
}
