//! `Reply`: the callee's end of a remote call. Whatever happens to the call
//! after it arrived (it ran, it failed, its panic was caught, or the core or
//! the object it was sent to went away and dropped it), the caller hears
//! back exactly once: a `Reply` dropped unsent sends its fallback error.

use crate::codec::encode_into;
use crate::error::CallError;
use crate::header::{Header, Kind};
use crate::shared::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub(crate) struct Reply {
    shared: Arc<Shared>,
    to: usize,
    seq: u64,
    one_way: bool,
    sent: bool,
    /// Counted in `handlers` by this reply (else by whoever adopted it).
    counted: bool,
    fallback: CallError,
}

impl Reply {
    /// The reply to the call `seq` from rank `to`. Counts as work in
    /// progress on this rank until it is sent.
    pub(crate) fn new(shared: &Arc<Shared>, to: usize, h: &Header, fallback: CallError) -> Self {
        shared.handlers.fetch_add(1, Ordering::AcqRel);
        Reply {
            shared: shared.clone(),
            to,
            seq: h.seq,
            one_way: h.has(Header::ONE_WAY),
            sent: false,
            counted: true,
            fallback,
        }
    }

    /// The same for a call already counted in progress by a whole run of
    /// calls handed to a core at once (`dispatch::deliver_batch`), which
    /// also stops counting it; or for a call to the engine place, whose
    /// reply is sent before the poll that runs it lets go of the progress
    /// lock (`dispatch::call_here`), so no count could see it owed.
    pub(crate) fn adopt(shared: &Arc<Shared>, to: usize, h: &Header, fallback: CallError) -> Self {
        Reply {
            shared: shared.clone(),
            to,
            seq: h.seq,
            one_way: h.has(Header::ONE_WAY),
            sent: false,
            counted: false,
            fallback,
        }
    }

    /// A reply frame's header, for the handler to append its result to
    /// (nothing for a one-way call: its result is dropped).
    pub(crate) fn buffer(&self) -> Vec<u8> {
        if self.one_way {
            return Vec::new();
        }
        let mut h = Header::new(Kind::Reply);
        h.seq = self.seq;
        h.frame(64)
    }

    /// Sends the result: `Ok(frame)` from [`buffer`](Self::buffer) with the
    /// encoded value appended, or the error.
    pub(crate) fn send(mut self, r: Result<Vec<u8>, CallError>) {
        self.sent = true;
        self.deliver(r);
    }

    fn deliver(&mut self, r: Result<Vec<u8>, CallError>) {
        if !self.one_way {
            let frame = match r {
                Ok(frame) => frame,
                Err(e) => {
                    let mut h = Header::new(Kind::Reply);
                    h.seq = self.seq;
                    error_frame(h, &e)
                }
            };
            self.shared.send(self.to, frame, None);
        }
        if self.counted {
            self.shared.handlers.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.sent {
            self.sent = true;
            let e = self.fallback.clone();
            self.deliver(Err(e));
        }
    }
}

/// A frame with header `h` (marked [`Header::FAILED`]) that carries `e`.
pub(crate) fn error_frame(mut h: Header, e: &CallError) -> Vec<u8> {
    h.flags |= Header::FAILED;
    let mut f = h.frame(32);
    if encode_into(&mut f, e).is_err() {
        f.truncate(Header::LEN);
    }
    f
}
