//! Shared-memory layout of an endpoint region (rckSock, Clauss: one buffer
//! region per endpoint, a small control area for the connect/accept handshake
//! and synchronisation flags, the rest divided among connections by a buddy
//! system). See `README.md` beside this file for the picture.
//!
//! Every struct here consists of atomics only, so a shared reference to one
//! that another process scribbles on is sound; every value read from one is
//! copied out, validated against local bookkeeping, and only then used.

use manycore_sync::atomic::{AtomicU32, AtomicU64};
use manycore_sync::SharedEventCount;

/// "mcsock01" as a little-endian u64.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"mcsock01");
/// Layout version.
pub(crate) const VERSION: u32 = 1;
/// Region kinds.
pub(crate) const KIND_LISTENER: u32 = 1;
/// A process's client endpoint (holds the rings of its outgoing connections).
pub(crate) const KIND_CLIENT: u32 = 2;
/// Header flag: a listener is accepting connections.
pub(crate) const HDR_LISTENING: u32 = 1;

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
    /// The creating process.
    pub pid: AtomicU32,
    pub nslots: AtomicU32,
    pub backlog: AtomicU32,
    pub flags: AtomicU32,
    pub data_off: AtomicU64,
    pub data_size: AtomicU64,
    pub min_chunk: AtomicU32,
    pub seq: AtomicU32,
    /// Listener doorbell: a connector rings it after posting a request.
    pub accept_ec: SharedEventCount,
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

/// Backlog slot states.
pub(crate) const BL_FREE: u32 = 0;
pub(crate) const BL_CLAIMED: u32 = 1;
pub(crate) const BL_REQUEST: u32 = 2;
pub(crate) const BL_ACCEPTING: u32 = 3;
pub(crate) const BL_REPLIED: u32 = 4;
pub(crate) const BL_REFUSED: u32 = 5;
/// Refused because the request failed validation (connector: `InvalidData`).
pub(crate) const BL_INVALID: u32 = 6;

/// One entry of a listener's control ring (Figure 4's request and reply).
#[repr(C, align(128))]
#[derive(Debug)]
pub(crate) struct BacklogSlot {
    /// `BL_*`; transitions documented in `README.md`.
    pub state: AtomicU32,
    pub client_pid: AtomicU32,
    /// The connector sleeps here waiting for the reply.
    pub ec: SharedEventCount,
    pub client_seq: AtomicU32,
    pub client_slot: AtomicU32,
    pub client_off: AtomicU32,
    pub client_size: AtomicU32,
    pub nonce: AtomicU64,
    pub server_slot: AtomicU32,
    pub server_off: AtomicU32,
    pub server_size: AtomicU32,
    pub _pad: AtomicU32,
}
#[cfg(not(loom))]
const _: () = assert!(std::mem::size_of::<BacklogSlot>() == 128);

/// Offsets of the parts of a region, computed from its parameters (never
/// read from shared memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub nslots: u32,
    pub backlog: u32,
    pub slots_off: usize,
    pub backlog_off: usize,
    pub data_off: usize,
    pub data_size: usize,
    pub min_chunk: u32,
    pub total: usize,
}

/// Largest supported data area (fits the u32 offsets of the handshake).
pub(crate) const MAX_DATA: usize = 1 << 30;
/// Most connection slots per region.
pub(crate) const MAX_SLOTS: u32 = 1 << 16;
/// Most backlog slots.
pub(crate) const MAX_BACKLOG: u32 = 1024;

impl Layout {
    /// The layout for these parameters, or None if they are out of range.
    pub fn new(nslots: u32, backlog: u32, data_size: usize, min_chunk: u32) -> Option<Layout> {
        if nslots == 0
            || nslots > MAX_SLOTS
            || backlog > MAX_BACKLOG
            || !data_size.is_power_of_two()
            || data_size > MAX_DATA
            || !min_chunk.is_power_of_two()
            || (min_chunk as usize) < 2 * FRAG_HDR
            || min_chunk as usize > data_size
        {
            return None;
        }
        let slots_off = std::mem::size_of::<RegionHeader>();
        let backlog_off = slots_off + nslots as usize * std::mem::size_of::<ConnSlot>();
        let end = backlog_off + backlog as usize * std::mem::size_of::<BacklogSlot>();
        let data_off = end.div_ceil(PAGE) * PAGE;
        let total = data_off + data_size;
        Some(Layout {
            nslots,
            backlog,
            slots_off,
            backlog_off,
            data_off,
            data_size,
            min_chunk,
            total,
        })
    }

    pub fn slot_off(&self, i: u32) -> Option<usize> {
        (i < self.nslots).then(|| self.slots_off + i as usize * std::mem::size_of::<ConnSlot>())
    }

    pub fn backlog_slot_off(&self, i: u32) -> Option<usize> {
        (i < self.backlog)
            .then(|| self.backlog_off + i as usize * std::mem::size_of::<BacklogSlot>())
    }

    /// True if `(off, size)` names a block a buddy allocator over this data
    /// area could hand out.
    pub fn valid_block(&self, off: u32, size: u32) -> bool {
        size.is_power_of_two()
            && size as usize >= 2 * FRAG_HDR
            && off % size == 0
            && (off as u64 + size as u64) <= self.data_size as u64
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
