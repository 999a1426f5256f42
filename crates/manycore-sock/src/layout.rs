//! Shared-memory layout of an endpoint region (rckSock, Clauss: one buffer
//! region per endpoint, a small control area of synchronisation flags, the
//! rest divided among connections by a buddy system; the connect/accept
//! handshake travels over a Unix socket, see `handshake.rs`). See `README.md`
//! beside this file for the picture.
//!
//! Every struct here consists of atomics only, so a shared reference to one
//! that another process scribbles on is sound; every value read from one is
//! copied out, validated against local bookkeeping, and only then used.

use manycore_sync::atomic::{AtomicU32, AtomicU64};
use manycore_sync::SharedEventCount;

/// "mcsock02" as a little-endian u64.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"mcsock02");
/// Layout version (2: regions are sealed memfds, the handshake travels over
/// a Unix socket, no backlog area).
pub(crate) const VERSION: u32 = 2;
/// Region kind of a listener's endpoint (holds the rings of its accepted
/// connections).
pub(crate) const KIND_LISTENER: u32 = 1;
/// A process's client endpoint (holds the rings of its outgoing connections).
pub(crate) const KIND_CLIENT: u32 = 2;

/// Alignment (and size) of the header: one page keeps the data page-aligned.
pub(crate) const PAGE: usize = 4096;
/// A fragment header: one 8-aligned u64 word in the data area, low 32 bits
/// payload length, high 32 bits the sender's chunk size (the piggy-back of
/// rckSock section 3.5). Stored Relaxed by the sender after the payload
/// bytes and published with them by the Release store of `head`; loaded
/// Relaxed by the reader after its Acquire of `head`, once, and validated
/// before use.
pub(crate) const FRAG_HDR: usize = 8;

/// The region header (first 128 bytes of the region).
///
/// Written once by the region's creator in `Shm::create`, before the
/// descriptor reaches any peer; never written again. A peer reads it once
/// in `Shm::from_fd`, and only `magic` carries an ordering: every other
/// field is stored Relaxed before it and loaded Relaxed after it. Nothing
/// read here is trusted: the layout is recomputed locally from `nslots`,
/// `data_size` and `min_chunk` and must match `data_off` and fit the
/// region's sealed size.
#[repr(C, align(128))]
#[derive(Debug)]
pub(crate) struct RegionHeader {
    /// [`MAGIC`]. Stored last, Release, by the creator; pairs with the
    /// Acquire load in `Shm::from_fd`, which then sees the other fields.
    pub magic: AtomicU64,
    /// [`VERSION`]; a peer refuses any other.
    pub version: AtomicU32,
    /// [`KIND_LISTENER`] or [`KIND_CLIENT`]; a peer refuses the wrong kind.
    pub kind: AtomicU32,
    /// The creating process (informational: never trusted, never used to
    /// signal or to judge liveness).
    pub pid: AtomicU32,
    /// Number of connection slots.
    pub nslots: AtomicU32,
    /// Offset of the data area (checked against the local layout).
    pub data_off: AtomicU64,
    /// Size of the data area (a power of two).
    pub data_size: AtomicU64,
    /// Smallest buddy block.
    pub min_chunk: AtomicU32,
    pub _pad: AtomicU32,
}
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<RegionHeader>() == 128);

/// The ring's sender-side words: written by the sender (the region's
/// owner), read by the receiver (the peer), on a line of their own.
#[repr(C, align(128))]
#[derive(Debug)]
pub(crate) struct ProducerLine {
    /// Bytes committed (headers, payloads, padding), a position that only
    /// grows. Stored by the sender with Release in `ring::commit`, after the
    /// fragment's bytes and header, and followed by a SeqCst fence; pairs
    /// with the Acquire load in `ring::refresh_head`, after which the reader
    /// may read everything up to it. Zeroed by the owner (Relaxed) when the
    /// slot is handed out, before the peer learns of it.
    pub head: AtomicU64,
    /// The stream position whose fragment starts at chunk offset 0. Stored
    /// Relaxed by the sender only when its ring is empty (`ring::write_loop`,
    /// `Endpoint::apply_locked`), before the `head` Release that publishes
    /// the next fragment; loaded Relaxed by the reader in
    /// `ring::refresh_head` after its Acquire of `head`, and only when it
    /// had caught up (see "Why the reader finds the restart" in
    /// `README.md`).
    pub reset: AtomicU64,
    /// 0, or [`FLAG_CLOSED`] once the sender will write no more. Stored with
    /// Release in `Endpoint::close_tx` (then both doorbells are rung); pairs
    /// with the Acquire in `ring::writer_closed`, so a reader that sees it
    /// also sees every `head` stored before it: it drains, then reads EOF.
    /// Any other value is `InvalidData`.
    pub flags: AtomicU32,
    /// The CPU the sender last ran a read or write on, stored Relaxed by
    /// `Conn::publish_cpu` when it changes; loaded Relaxed by the peer's
    /// waits to decide whether spinning could only delay the sender. A
    /// hint: any value is harmless.
    pub cpu: AtomicU32,
    /// The reader sleeps here when the ring is empty (announce, re-check
    /// `head`, sleep); the sender rings it after the SeqCst fence that
    /// follows a `head` store (see "Waiting" in `README.md`).
    pub data_ec: SharedEventCount,
    /// Where a sender about to sleep on a full ring wants to be woken: the
    /// `tail` at which half the chunk is free, or its `head`, whichever is
    /// smaller (so a drained ring always reaches it). Stored Relaxed by
    /// `ring::writer_wants_half` before the sender's `prepare_wait` on
    /// `space_ec`, whose SeqCst fence publishes it; loaded Relaxed by the
    /// reader in `ring::tell_writer`, after its own fence and only when a
    /// waiter has announced itself. A hint: a stale or hostile value costs
    /// an early wake-up or a 20 ms slice.
    pub want_tail: AtomicU64,
    /// [`POLL_ARMED`] while the ring's *reader* waits through its readiness
    /// descriptor (an event loop) rather than on `data_ec`; 0 otherwise.
    /// Stored Relaxed by the reader before its `prepare_wait` on `data_ec`
    /// (whose SeqCst fence publishes it) and cleared when it disarms;
    /// loaded Relaxed by the sender only after a look at `data_ec` found a
    /// waiter (so a stream nobody polls costs nothing): then it also rings
    /// the reader's socket (see "Readiness" in `README.md`). A hint: a
    /// stale or hostile value costs a doorbell message or a missed one.
    pub poll: AtomicU32,
    pub _pad: AtomicU32,
}
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<ProducerLine>() == 128);

/// The value of a line's `poll` word while a poller waits.
pub(crate) const POLL_ARMED: u32 = 1;

/// The ring's receiver-side words: written by the receiver (the peer, in
/// the sender's region), read by the sender, on a line of their own.
#[repr(C, align(128))]
#[derive(Debug)]
pub(crate) struct ConsumerLine {
    /// Bytes consumed, a position that only grows and never passes `head`.
    /// Stored by the reader with Release in `ring::release`, after it copied
    /// the fragment out, and followed by a SeqCst fence; pairs with the
    /// Acquire loads in `ring::refresh_tail` and `Endpoint::apply_locked`, so
    /// the space is reused (or handed to a neighbour) only after the copy.
    /// Zeroed by the owner (Relaxed) when the slot is handed out.
    pub tail: AtomicU64,
    /// 0, or [`FLAG_CLOSED`] once the receiver reads no more. Stored with
    /// Release by the receiver in `Conn::shutdown` (then both doorbells are
    /// rung); pairs with the Acquire in `ring::reader_closed` (the writer
    /// gets `BrokenPipe`) and in `Endpoint::reap_locked`, where any non-zero
    /// value lets a retired ring's block be freed. Any other value is
    /// `InvalidData` to the writer.
    pub flags: AtomicU32,
    /// [`POLL_ARMED`] while the ring's *sender* waits for space through its
    /// readiness descriptor; the mirror of `ProducerLine::poll` (stored by
    /// the sender before its `prepare_wait` on `space_ec`, loaded by the
    /// reader only after a look at `space_ec` found a waiter).
    pub poll: AtomicU32,
    /// The sender sleeps here when the ring is full (announce after storing
    /// `want_tail`, re-check `tail`, sleep); the reader rings it after the
    /// SeqCst fence that follows a `tail` store. A new connection's first
    /// write may also sleep here while this ring shrinks out of its block.
    pub space_ec: SharedEventCount,
}
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<ConsumerLine>() == 128);

/// The only valid non-zero value of a line's `flags`: set once, never
/// cleared while the slot is in use.
pub(crate) const FLAG_CLOSED: u32 = 1;

/// One connection's synchronisation words: the control lines of the ring
/// whose data lives in this region at a buddy-allocated offset.
#[repr(C)]
#[derive(Debug)]
pub(crate) struct ConnSlot {
    pub prod: ProducerLine,
    pub cons: ConsumerLine,
}
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<ConnSlot>() == 256);

/// Offsets of the parts of a region, computed from its parameters (never
/// read from shared memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub nslots: u32,
    pub slots_off: usize,
    pub data_off: usize,
    pub data_size: usize,
    pub min_chunk: u32,
    pub total: usize,
}

/// Largest supported data area (fits the u32 offsets of the handshake).
pub(crate) const MAX_DATA: usize = 1 << 30;
/// Most connection slots per region.
pub(crate) const MAX_SLOTS: u32 = 1 << 16;
/// Upper bound of any valid region's size.
pub(crate) const MAX_TOTAL: usize =
    PAGE + MAX_SLOTS as usize * std::mem::size_of::<ConnSlot>() + MAX_DATA;

impl Layout {
    /// The layout for these parameters, or None if they are out of range.
    pub fn new(nslots: u32, data_size: usize, min_chunk: u32) -> Option<Layout> {
        if nslots == 0
            || nslots > MAX_SLOTS
            || !data_size.is_power_of_two()
            || data_size > MAX_DATA
            || !min_chunk.is_power_of_two()
            || (min_chunk as usize) < 2 * FRAG_HDR
            || min_chunk as usize > data_size
        {
            return None;
        }
        let slots_off = std::mem::size_of::<RegionHeader>();
        let end = slots_off + nslots as usize * std::mem::size_of::<ConnSlot>();
        let data_off = end.div_ceil(PAGE) * PAGE;
        let total = data_off + data_size;
        Some(Layout {
            nslots,
            slots_off,
            data_off,
            data_size,
            min_chunk,
            total,
        })
    }

    pub fn slot_off(&self, i: u32) -> Option<usize> {
        (i < self.nslots).then(|| self.slots_off + i as usize * std::mem::size_of::<ConnSlot>())
    }

    /// True if `(off, size)` names a block a buddy allocator over this data
    /// area could hand out.
    pub fn valid_block(&self, off: u32, size: u32) -> bool {
        size.is_power_of_two()
            && size as usize >= 2 * FRAG_HDR
            && off % size == 0
            && (off as u64 + size as u64) <= self.data_size as u64
    }

    /// True if `(slot, off, size)`, as a peer announced it in the handshake,
    /// names a connection slot and a block of this region.
    pub fn valid_ring(&self, slot: u32, off: u32, size: u32) -> bool {
        slot < self.nslots && self.valid_block(off, size)
    }

    /// The largest chunk a ring based at `off` could legally grow to.
    pub fn max_chunk_at(&self, off: u32) -> u32 {
        let mut c = (self.data_size as u64).min(u32::MAX as u64 / 2 + 1) as u32;
        while c > 1 && (off % c != 0 || off as u64 + c as u64 > self.data_size as u64) {
            c /= 2;
        }
        c
    }
}
