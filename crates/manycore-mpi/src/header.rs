//! The frame header: the fixed 32 bytes in front of every frame a rank sends
//! another (Barrelfish's typed message stubs carry a message type in front of
//! their payload fragments; here the type is [`Kind`] and the payload is one
//! serde-encoded value). Little-endian, no padding:
//!
//! | bytes | field   | meaning                                                   |
//! |-------|---------|-----------------------------------------------------------|
//! | 0     | kind    | [`Kind`]                                                  |
//! | 1     | flags   | [`Header::BULK`], [`Header::ONE_WAY`], [`Header::FAILED`] |
//! | 2-3   | core    | destination core on the receiving rank (`u16::MAX`: its progress engine) |
//! | 4-7   | func    | function id (its index in the sorted registry)            |
//! | 8-15  | seq     | the caller's sequence number, a ticket, or an epoch       |
//! | 16-23 | object  | remote object (slot << 32 \| generation), an epoch, or the id of a group's combining function |
//! | 24-31 | clock   | reserved for a Lamport clock (tracing); zero today        |

use std::cell::RefCell;

/// What a frame is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// Run a registered function on a core; reply unless one-way.
    Call = 1,
    /// Run a registered method on a remote object; reply unless one-way.
    Method = 2,
    /// The result of a `Call` or `Method` (or the reason it failed).
    Reply = 3,
    /// Remove a remote object (one-way).
    Free = 4,
    /// A thief asks for work (distributed join).
    StealRequest = 5,
    /// A victim ships a promoted task.
    StealTask = 6,
    /// A victim has nothing to give.
    StealNone = 7,
    /// The result of a stolen task, back to its owner.
    TaskResult = 8,
    /// The root of a distributed join finished: its result, to every rank.
    JoinDone = 9,
    /// A partial result going up a collective's tree.
    CollectiveUp = 10,
    /// A collective's result going down its tree.
    CollectiveDown = 11,
    /// This rank is shutting down (to every rank).
    Shutdown = 12,
    /// Run a method on several objects of the receiving rank and reply
    /// with their results combined (`RemoteGroup::reduce`).
    GroupMethod = 13,
    /// Several frames for the same rank in one message: `seq` counts them,
    /// and each follows as its length (u32, little-endian) and its bytes.
    Batch = 14,
    /// A frame too long for the receives posted in advance follows as the
    /// next bulk-tagged message from the same rank; `seq` is its length.
    Large = 15,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        use Kind::*;
        Some(match b {
            1 => Call,
            2 => Method,
            3 => Reply,
            4 => Free,
            5 => StealRequest,
            6 => StealTask,
            7 => StealNone,
            8 => TaskResult,
            9 => JoinDone,
            10 => CollectiveUp,
            11 => CollectiveDown,
            12 => Shutdown,
            13 => GroupMethod,
            14 => Batch,
            15 => Large,
            _ => return None,
        })
    }
}

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// What the frame is.
    pub kind: Kind,
    /// [`Header::BULK`] | [`Header::ONE_WAY`] | [`Header::FAILED`].
    pub flags: u8,
    /// Destination core.
    pub core: u16,
    /// Function id.
    pub func: u32,
    /// Sequence number, ticket or epoch.
    pub seq: u64,
    /// Object reference or epoch.
    pub object: u64,
    /// Reserved for tracing.
    pub clock: u64,
}

/// Frame buffers a thread keeps for its next frames, at most.
const POOL_MAX: usize = 16;
/// Capacities of the buffers the pool keeps: smaller ones are not worth
/// keeping, larger ones (bulks, long frames) would pin memory.
const POOL_MIN_CAP: usize = 128;
const POOL_MAX_CAP: usize = 4096;

thread_local! {
    /// Frame buffers that this thread finished with (a send MPI completed,
    /// a reply decoded), for its next frames: a thread that makes or
    /// serves calls one after another allocates no buffer per frame.
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with room for `cap` bytes: one from this thread's pool
/// if it has one, else a new one.
pub(crate) fn buffer(cap: usize) -> Vec<u8> {
    let pooled = POOL.try_with(|p| p.borrow_mut().pop()).ok().flatten();
    match pooled {
        Some(mut v) => {
            v.clear();
            v.reserve(cap);
            v
        }
        None => Vec::with_capacity(cap.max(POOL_MIN_CAP)),
    }
}

/// A copy of `bytes` in a buffer of this thread's pool ([`buffer`]).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn copied(bytes: &[u8]) -> Vec<u8> {
    let mut v = buffer(bytes.len());
    v.extend_from_slice(bytes);
    v
}

/// Gives a buffer that nothing refers to any more back to this thread's
/// pool (or frees it, if the pool is full or the buffer is of a size the
/// pool does not keep).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn recycle(v: Vec<u8>) {
    if !(POOL_MIN_CAP..=POOL_MAX_CAP).contains(&v.capacity()) {
        return;
    }
    let _ = POOL.try_with(move |p| {
        let mut p = p.borrow_mut();
        if p.len() < POOL_MAX {
            p.push(v);
        }
    });
}

impl Header {
    /// Bytes of header in front of every frame's payload.
    pub const LEN: usize = 32;
    /// A bulk message follows this frame from the same rank.
    pub const BULK: u8 = 1;
    /// Nobody waits for a reply.
    pub const ONE_WAY: u8 = 2;
    /// A reply or task result that carries an error, not a value.
    pub const FAILED: u8 = 4;

    /// A header of `kind` with every other field zero.
    pub fn new(kind: Kind) -> Self {
        Header {
            kind,
            flags: 0,
            core: 0,
            func: 0,
            seq: 0,
            object: 0,
            clock: 0,
        }
    }

    /// A frame buffer holding this header, with room for `payload` more bytes.
    /// The buffer comes from this thread's pool of frame buffers when it
    /// has one.
    pub fn frame(&self, payload: usize) -> Vec<u8> {
        let mut v = buffer(Self::LEN + payload);
        v.push(self.kind as u8);
        v.push(self.flags);
        v.extend_from_slice(&self.core.to_le_bytes());
        v.extend_from_slice(&self.func.to_le_bytes());
        v.extend_from_slice(&self.seq.to_le_bytes());
        v.extend_from_slice(&self.object.to_le_bytes());
        v.extend_from_slice(&self.clock.to_le_bytes());
        v
    }

    /// Reads the header at the front of `frame`; `None` if it is too short
    /// or names no kind (a frame from a foreign program: dropped).
    pub fn parse(frame: &[u8]) -> Option<Header> {
        let b = frame.get(..Self::LEN)?;
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap_or([0; 4]));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        Some(Header {
            kind: Kind::from_u8(b[0])?,
            flags: b[1],
            core: u16_at(2),
            func: u32_at(4),
            seq: u64_at(8),
            object: u64_at(16),
            clock: u64_at(24),
        })
    }

    /// Sets the function id of an already written frame.
    pub fn set_func(frame: &mut [u8], func: u32) {
        if let Some(b) = frame.get_mut(4..8) {
            b.copy_from_slice(&func.to_le_bytes());
        }
    }

    /// Whether `flag` is set.
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

#[cfg(test)]
mod tests;
