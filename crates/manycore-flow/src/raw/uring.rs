//! An io_uring that owns the buffers of its operations in flight: a buffer
//! handed to the kernel stays here until the operation's completion has
//! been reaped, and is given back with it. That is the whole safety
//! contract of submitting reads and writes (the kernel writes into, or
//! reads from, the buffer until it posts the completion), so the functions
//! below are safe.
//!
//! A file descriptor, unlike a buffer, is resolved by the kernel when the
//! operation is submitted: one closed before that makes the operation fail
//! (or, if its number was reused, address another file), never touch freed
//! memory. The reactor keeps a device's fd open until its operations are
//! reaped.

use io_uring::{opcode, types, IoUring};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

/// `user_data` of cancellations, whose completions are not reported.
const CANCEL: u64 = u64::MAX;

/// An operation in flight: its caller's tag, and its buffer.
struct InFlight {
    tag: u64,
    buf: Vec<u8>,
    read: bool,
}

/// Names an operation in flight (to cancel it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpId(u64);

/// A reaped completion.
pub(crate) struct Done {
    /// The tag the operation was submitted with.
    pub(crate) tag: u64,
    /// The kernel's result: a count or poll mask (>= 0), or `-errno`.
    pub(crate) result: i32,
    /// A read's buffer, extended by the bytes read; a write's data.
    pub(crate) buf: Vec<u8>,
}

/// An io_uring and its operations in flight.
pub(crate) struct Ring {
    ring: IoUring,
    /// Indexed by `user_data`.
    ops: Vec<Option<InFlight>>,
    free: Vec<usize>,
    in_flight: usize,
    /// Completions reaped while making room to submit.
    backlog: Vec<Done>,
}

impl Ring {
    /// A ring of `entries` submission slots, made on (and only usable from)
    /// the calling thread. Asks for a single-issuer ring whose completion
    /// work runs when this thread waits (fewer task-work interruptions), and
    /// falls back to a plain ring if the kernel refuses. Fails if io_uring
    /// is disabled (`EPERM`), absent (`ENOSYS`), or lacks an operation the
    /// reactor uses.
    pub(crate) fn new(entries: u32) -> io::Result<Self> {
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(entries)
            .or_else(|_| IoUring::new(entries))?;
        // The operations the reactor uses (reads and writes at the file
        // position: 5.6; older kernels answer the probe without them).
        let mut probe = io_uring::Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        let codes = [
            opcode::Read::CODE,
            opcode::Write::CODE,
            opcode::PollAdd::CODE,
            opcode::AsyncCancel::CODE,
        ];
        if !codes.iter().all(|&c| probe.is_supported(c)) {
            return Err(io::Error::from_raw_os_error(libc::ENOSYS));
        }
        Ok(Self {
            ring,
            ops: Vec::new(),
            free: Vec::new(),
            in_flight: 0,
            backlog: Vec::new(),
        })
    }

    fn slot(&mut self, op: InFlight) -> usize {
        self.in_flight += 1;
        match self.free.pop() {
            Some(i) => {
                self.ops[i] = Some(op);
                i
            }
            None => {
                self.ops.push(Some(op));
                self.ops.len() - 1
            }
        }
    }

    /// Queues `entry`, submitting what is queued if the submission queue is
    /// full.
    fn push(&mut self, entry: io_uring::squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: every buffer an entry points into belongs to an
            // `InFlight` in `self.ops`, which is dropped only after its
            // completion is reaped (`reap`), or leaked if the kernel may still
            // use it (`Drop`). Entries without buffers (poll, cancel) have
            // nothing to keep alive.
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                return Ok(());
            }
            match self.ring.submit() {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => self.drain_into_backlog(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn drain_into_backlog(&mut self) {
        let mut v = std::mem::take(&mut self.backlog);
        self.reap_cq(&mut v);
        self.backlog = v;
    }

    /// Reads up to `len` bytes from `fd` (at its file position, or the
    /// stream); the completion gives back a buffer holding what was read.
    pub(crate) fn read(&mut self, fd: BorrowedFd<'_>, len: usize, tag: u64) -> io::Result<OpId> {
        let mut buf = Vec::with_capacity(len);
        let ptr = buf.as_mut_ptr();
        let cap = buf.capacity().min(u32::MAX as usize) as u32;
        let i = self.slot(InFlight {
            tag,
            buf,
            read: true,
        });
        let e = opcode::Read::new(types::Fd(fd.as_raw_fd()), ptr, cap)
            .offset(u64::MAX)
            .build()
            .user_data(i as u64);
        self.push_or_unslot(e, i)
    }

    /// Writes `data` to `fd` (at its file position, or the stream).
    pub(crate) fn write(
        &mut self,
        fd: BorrowedFd<'_>,
        data: Vec<u8>,
        tag: u64,
    ) -> io::Result<OpId> {
        let (ptr, len) = (data.as_ptr(), data.len().min(u32::MAX as usize) as u32);
        let i = self.slot(InFlight {
            tag,
            buf: data,
            read: false,
        });
        let e = opcode::Write::new(types::Fd(fd.as_raw_fd()), ptr, len)
            .offset(u64::MAX)
            .build()
            .user_data(i as u64);
        self.push_or_unslot(e, i)
    }

    /// Waits (one shot) until `fd` is readable, or writable if `writable`;
    /// the result is the ready mask.
    pub(crate) fn poll(
        &mut self,
        fd: BorrowedFd<'_>,
        writable: bool,
        tag: u64,
    ) -> io::Result<OpId> {
        let mask = if writable {
            libc::POLLOUT
        } else {
            libc::POLLIN
        } as u32;
        let i = self.slot(InFlight {
            tag,
            buf: Vec::new(),
            read: false,
        });
        let e = opcode::PollAdd::new(types::Fd(fd.as_raw_fd()), mask)
            .build()
            .user_data(i as u64);
        self.push_or_unslot(e, i)
    }

    fn push_or_unslot(&mut self, e: io_uring::squeue::Entry, i: usize) -> io::Result<OpId> {
        match self.push(e) {
            Ok(()) => Ok(OpId(i as u64)),
            Err(err) => {
                // Never queued: the kernel never saw the buffer.
                self.ops[i] = None;
                self.free.push(i);
                self.in_flight -= 1;
                Err(err)
            }
        }
    }

    /// Asks the kernel to cancel `op`; its completion still comes (usually
    /// with `-ECANCELED`), and only then is its buffer free.
    pub(crate) fn cancel(&mut self, op: OpId) -> io::Result<()> {
        self.push(opcode::AsyncCancel::new(op.0).build().user_data(CANCEL))
    }

    /// Submits what is queued and waits until at least `want` completions
    /// are ready, or `timeout` passes. An interrupted or timed-out wait is
    /// not an error.
    pub(crate) fn submit_and_wait(
        &mut self,
        want: usize,
        timeout: Option<Duration>,
    ) -> io::Result<()> {
        let want = if self.backlog.is_empty() { want } else { 0 };
        let r = match timeout {
            None => self.ring.submit_and_wait(want),
            Some(t) => {
                let ts = types::Timespec::from(t);
                let args = types::SubmitArgs::new().timespec(&ts);
                self.ring.submitter().submit_with_args(want, &args)
            }
        };
        match r {
            Ok(_) => Ok(()),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EINTR | libc::ETIME | libc::EBUSY | libc::EAGAIN)
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// Appends every ready completion to `out`, with its buffer.
    pub(crate) fn reap(&mut self, out: &mut Vec<Done>) {
        out.append(&mut self.backlog);
        self.reap_cq(out);
    }

    fn reap_cq(&mut self, out: &mut Vec<Done>) {
        let ready: Vec<(u64, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (ud, result) in ready {
            if ud == CANCEL {
                continue;
            }
            let i = ud as usize;
            let Some(InFlight { tag, mut buf, read }) = self.ops.get_mut(i).and_then(Option::take)
            else {
                continue;
            };
            self.free.push(i);
            self.in_flight -= 1;
            if read && result > 0 {
                let n = (result as usize).min(buf.capacity() - buf.len());
                // SAFETY: the kernel wrote `result` bytes at the start of the
                // spare capacity it was given (`read`), and has posted the
                // completion, so it is done with the buffer.
                unsafe { buf.set_len(buf.len() + n) };
            }
            out.push(Done { tag, result, buf });
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        if self.in_flight == 0 {
            return;
        }
        // Cancel everything and wait (bounded) for the kernel to let go of
        // the buffers.
        let ids: Vec<OpId> = (0..self.ops.len())
            .filter(|&i| self.ops[i].is_some())
            .map(|i| OpId(i as u64))
            .collect();
        for id in ids {
            let _ = self.cancel(id);
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut done = Vec::new();
        while self.in_flight > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            if self.submit_and_wait(1, Some(left)).is_err() {
                break;
            }
            self.reap(&mut done);
            done.clear();
        }
        if self.in_flight > 0 {
            // The kernel may still write into these buffers: leak them
            // rather than free memory it can reach.
            std::mem::forget(std::mem::take(&mut self.ops));
        }
    }
}
