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
/// Region kinds.
pub(crate) const KIND_LISTENER: u32 = 1;
/// A process's client endpoint (holds the rings of its outgoing connections).
pub(crate) const KIND_CLIENT: u32 = 2;

/// Alignment (and size) of the header: one page keeps the data page-aligned.
pub(crate) const PAGE: usize = 4096;
/// A fragment header: low 32 bits payload length, high 32 bits the sender's
/// chunk size (the piggy-back of rckSock section 3.5).
pub(crate) const FRAG_HDR: usize = 8;

/// The region header (first 128 bytes of the region).
#[repr(C, align(128))]
#[derive(Debug)]
pub(crate) struct RegionHeader {
    /// [`MAGIC`], stored last with Release by the creator.
    pub magic: AtomicU64,
    pub version: AtomicU32,
    pub kind: AtomicU32,
    /// The creating process (informational).
    pub pid: AtomicU32,
    pub nslots: AtomicU32,
    pub data_off: AtomicU64,
    pub data_size: AtomicU64,
    pub min_chunk: AtomicU32,
    pub _pad: AtomicU32,
}
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<RegionHeader>() == 128);

/// Written by the sender (owner of the ring), read by the receiver.
#[repr(C, align(128))]
#[derive(Debug)]
pub(crate) struct ProducerLine {
    /// Bytes committed (headers, payloads, padding). Release by the sender
    /// after the fragment is written; pairs with the Acquire in the reader.
    pub head: AtomicU64,
    /// Stream position whose fragment starts at chunk offset 0 (set when the
    /// ring was empty, before the `head` Release that publishes it).
    pub reset: AtomicU64,
    /// `FLAG_CLOSED` once the sender will write no more (EOF after draining).
    pub flags: AtomicU32,
    /// The CPU the ring's owner last ran a read or write on (a hint for the
    /// other side's spin decision; any value is harmless).
    pub cpu: AtomicU32,
    /// The reader sleeps here when the ring is empty.
    pub data_ec: SharedEventCount,
    /// A writer about to sleep on a full ring wants to be woken once `tail`
    /// reaches this (at most `head`, so a drained ring always wakes it).
    pub want_tail: AtomicU64,
}
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<ProducerLine>() == 128);

/// Written by the receiver, read by the sender.
#[repr(C, align(128))]
#[derive(Debug)]
pub(crate) struct ConsumerLine {
    /// Bytes consumed. Release by the reader after copying out; pairs with
    /// the Acquire in the writer (so the space can be reused).
    pub tail: AtomicU64,
    /// `FLAG_CLOSED` once the receiver reads no more (writer: BrokenPipe).
    pub flags: AtomicU32,
    pub _pad: AtomicU32,
    /// The writer sleeps here when the ring is full.
    pub space_ec: SharedEventCount,
}
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<ConsumerLine>() == 128);

/// The only valid non-zero value of a line's `flags`.
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
