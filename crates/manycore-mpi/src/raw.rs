//! The crate's only `unsafe`: handing an owned buffer to a non-blocking MPI
//! send and taking it back once MPI is done with it, so that a frame or a
//! bulk vector is sent straight from the vector its producer filled (no
//! copy), and the progress engine never blocks in a send (two ranks sending
//! each other large messages at once would otherwise wait for each other).

use mpi::point_to_point::Destination;
use mpi::request::{Request, StaticScope};
use mpi::Tag;

/// A non-blocking send that owns its buffer until MPI has finished with it.
pub(crate) struct OwnedSend {
    req: Option<Request<'static, [u8]>>,
    ptr: *mut u8,
    len: usize,
    cap: usize,
}

// `OwnedSend` lives and dies on the engine thread; the raw pointer keeps it
// `!Send`, which is what it should be.

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
        drop(unsafe { Vec::from_raw_parts(ptr, len, cap) });
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
