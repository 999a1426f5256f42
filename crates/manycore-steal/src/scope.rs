//! `scope`: Rayon's scoped spawns on top of lazy `join`. Spawned bodies are
//! collected while the scope's body runs and then executed as a balanced
//! tree of `join`s, so every one of them is latent work that an idle worker
//! can steal (MuSE: spawn only on demand); bodies spawned by bodies are
//! collected and run in the next round. The scope returns when all are done.

use manycore_sync::Mutex;
use std::any::Any;
use std::fmt;
use std::panic::{self, AssertUnwindSafe};

type Body<'scope> = Box<dyn FnOnce(&Scope<'scope>) + Send + 'scope>;

/// A scope in which closures borrowing from outside can be spawned; see [`scope`].
pub struct Scope<'scope> {
    pending: Mutex<Vec<Body<'scope>>>,
    panic: Mutex<Option<Box<dyn Any + Send + 'static>>>,
}

impl fmt::Debug for Scope<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope").finish_non_exhaustive()
    }
}

impl<'scope> Scope<'scope> {
    /// Spawns `body` into the scope: it runs (possibly on another core) before
    /// [`scope`] returns. Unlike Rayon, it does not start before the scope's
    /// body (or the spawning body) returns, so do not block waiting for it.
    pub fn spawn<F>(&self, body: F)
    where
        F: FnOnce(&Scope<'scope>) + Send + 'scope,
    {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::new(body));
    }

    fn record(&self, p: Box<dyn Any + Send + 'static>) {
        let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(p);
        }
    }

    fn run_all(&self, mut v: Vec<Body<'scope>>) {
        if v.len() <= 1 {
            if let Some(body) = v.pop() {
                if let Err(p) = panic::catch_unwind(AssertUnwindSafe(|| body(self))) {
                    self.record(p);
                }
            }
            return;
        }
        let right = v.split_off(v.len() / 2);
        crate::join(|| self.run_all(v), || self.run_all(right));
    }
}

/// Creates a scope, runs `op` in it, then runs everything spawned into it
/// (as stealable latent work) and returns `op`'s result. A panic in `op` or in
/// any spawned body propagates after all of them have finished (the first
/// one recorded wins), as in Rayon.
pub fn scope<'scope, OP, R>(op: OP) -> R
where
    OP: FnOnce(&Scope<'scope>) -> R + Send,
    R: Send,
{
    let s = Scope {
        pending: Mutex::new(Vec::new()),
        panic: Mutex::new(None),
    };
    let r = panic::catch_unwind(AssertUnwindSafe(|| op(&s)));
    loop {
        let batch = std::mem::take(&mut *s.pending.lock().unwrap_or_else(|e| e.into_inner()));
        if batch.is_empty() {
            break;
        }
        s.run_all(batch);
    }
    let r = match r {
        Ok(r) => r,
        Err(p) => panic::resume_unwind(p),
    };
    if let Some(p) = s.panic.lock().unwrap_or_else(|e| e.into_inner()).take() {
        panic::resume_unwind(p);
    }
    r
}
