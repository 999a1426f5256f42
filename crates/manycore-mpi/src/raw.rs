//! The crate's only `unsafe`: handing an owned buffer to a non-blocking MPI
//! send or receive and taking it back once MPI is done with it, so that a
//! frame or a bulk vector is sent straight from the vector its producer
//! filled (no copy), the progress engine never blocks in a send (two ranks
//! sending each other large messages at once would otherwise wait for each
//! other), and frames arrive into receives posted in advance.

use mpi::datatype::Equivalence;
use mpi::point_to_point::{Destination, Source};
use mpi::request::{Request, StaticScope};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::Tag;

/// A non-blocking send that owns its buffer until MPI has finished with it.
pub(crate) struct OwnedSend {
    req: Option<Request<'static, [u8]>>,
    ptr: *mut u8,
    len: usize,
    cap: usize,
}

// SAFETY: an `OwnedSend` owns its buffer outright (nothing else refers to
// it), and its request is a process-wide MPI handle, not tied to the thread
// that posted it: MPI initialized with `Threading::Serialized` lets any
// thread test or wait on it, one MPI call at a time (with a library that
// offers only `Funneled`, only the engine thread ever takes the lock). Every
// `OwnedSend` lives in the rank's `Progress`, behind `Shared::mpi`, and is
// only touched by the thread that holds that lock, so moving it between
// threads never lets two threads use it at once.
unsafe impl Send for OwnedSend {}

impl std::fmt::Debug for OwnedSend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedSend")
            .field("len", &self.len)
            .field("done", &self.req.is_none())
            .finish()
    }
}

impl OwnedSend {
    /// Starts sending `buf` to `to` with `tag`.
    pub(crate) fn post<D: Destination>(to: &D, buf: Vec<u8>, tag: Tag) -> Self {
        let cap = buf.capacity();
        // `Vec::leak` neither reallocates nor shrinks: the slice is the
        // vector's own allocation, of capacity `cap`.
        let leaked: &'static mut [u8] = buf.leak();
        let (ptr, len) = (leaked.as_mut_ptr(), leaked.len());
        let shared: &'static [u8] = leaked;
        let req = to.immediate_send_with_tag(StaticScope, shared, tag);
        OwnedSend {
            req: Some(req),
            ptr,
            len,
            cap,
        }
    }

    /// Whether MPI has finished with the buffer (it is freed then).
    pub(crate) fn test(&mut self) -> bool {
        let Some(req) = self.req.take() else {
            return true;
        };
        match req.test() {
            Ok(_) => {
                self.reclaim();
                true
            }
            Err(req) => {
                self.req = Some(req);
                false
            }
        }
    }

    /// Waits until MPI has finished with the buffer, and frees it.
    pub(crate) fn wait(mut self) {
        if let Some(req) = self.req.take() {
            req.wait();
            self.reclaim();
        }
    }

    fn reclaim(&mut self) {
        let (ptr, len, cap) = (self.ptr, self.len, self.cap);
        self.len = 0;
        self.cap = 0;
        if cap == 0 {
            return;
        }
        // SAFETY: `ptr`, `len` and `cap` are those of the vector leaked in
        // `post` (`Vec::leak` keeps the allocation as it was); the request
        // that borrowed it has completed (`test` returned Ok or `wait`
        // returned), so MPI no longer reads it and nothing else refers to
        // it; `cap` is zeroed above, so it is rebuilt exactly once.
        let buf = unsafe { Vec::from_raw_parts(ptr, len, cap) };
        // Back to this thread's pool of frame buffers, for its next frame.
        crate::header::recycle(buf);
    }
}

impl Drop for OwnedSend {
    fn drop(&mut self) {
        // A request must complete before its buffer goes (and rsmpi panics
        // on a dropped active request): wait for it.
        if let Some(req) = self.req.take() {
            req.wait();
            self.reclaim();
        }
    }
}

/// A receive posted in advance (from any rank, with one tag) into a buffer
/// it owns until MPI has filled it: a message that arrives finds it posted
/// and is copied straight into it, without the detour through MPI's queue
/// of unexpected messages that a probe-then-receive takes.
pub(crate) struct OwnedRecv {
    req: Option<Request<'static, [u8]>>,
    ptr: *mut u8,
    len: usize,
    cap: usize,
}

// SAFETY: as for `OwnedSend`: the buffer is owned outright, the request is
// a process-wide handle, and an `OwnedRecv` is only touched by the thread
// holding the rank's progress lock.
unsafe impl Send for OwnedRecv {}

impl std::fmt::Debug for OwnedRecv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedRecv")
            .field("len", &self.len)
            .field("done", &self.req.is_none())
            .finish()
    }
}

impl OwnedRecv {
    /// Posts a receive of up to `buf.len()` bytes with `tag` from any rank
    /// of `comm`.
    pub(crate) fn post(comm: &SimpleCommunicator, buf: Vec<u8>, tag: Tag) -> Self {
        let cap = buf.capacity();
        let leaked: &'static mut [u8] = buf.leak();
        let (ptr, len) = (leaked.as_mut_ptr(), leaked.len());
        let req = comm
            .any_process()
            .immediate_receive_into_with_tag(StaticScope, leaked, tag);
        OwnedRecv {
            req: Some(req),
            ptr,
            len,
            cap,
        }
    }

    /// If a message has arrived: its sender, its length, and the buffer
    /// (whole; the message is its first `length` bytes).
    pub(crate) fn test(&mut self) -> Option<(usize, usize, Vec<u8>)> {
        let req = self.req.take()?;
        match req.test() {
            Ok(status) => {
                let n = status.count(u8::equivalent_datatype()).max(0) as usize;
                Some((status.source_rank() as usize, n, self.reclaim()))
            }
            Err(req) => {
                self.req = Some(req);
                None
            }
        }
    }

    /// Withdraws the receive (at shutdown, when nothing is in flight) and
    /// frees the buffer.
    pub(crate) fn cancel(mut self) {
        if let Some(req) = self.req.take() {
            req.cancel();
            req.wait_without_status();
            drop(self.reclaim());
        }
    }

    fn reclaim(&mut self) -> Vec<u8> {
        let (ptr, len, cap) = (self.ptr, self.len, self.cap);
        self.len = 0;
        self.cap = 0;
        if cap == 0 {
            return Vec::new();
        }
        // SAFETY: `ptr`, `len` and `cap` are those of the vector leaked in
        // `post`; its request has completed (tested, or cancelled and
        // waited for), so MPI no longer writes it and nothing else refers
        // to it; `cap` is zeroed above, so it is rebuilt exactly once.
        unsafe { Vec::from_raw_parts(ptr, len, cap) }
    }
}

impl Drop for OwnedRecv {
    fn drop(&mut self) {
        // Never let MPI write into a freed buffer: withdraw the receive
        // first (rsmpi panics on a dropped active request).
        if let Some(req) = self.req.take() {
            req.cancel();
            req.wait_without_status();
            drop(self.reclaim());
        }
    }
}
