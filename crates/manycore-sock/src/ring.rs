//! The byte ring of one direction of a connection: fragments of at most the
//! sender's current chunk, each with a header carrying its length and that
//! chunk size (rckSock section 3.5's piggy-back), committed by a Release store
//! of the producer index after the bytes and the header are in place.
//!
//! The ring lives in the *sender's* region (rckSock: "sending buffers are
//! always the local ones"), so the sender alone decides its chunk size, and a
//! chunk change needs no message: the next fragment header says it. A chunk
//! change (a split or a merge of the sender's buddy) is applied only when the
//! ring is empty, together with a restart at offset 0 (`reset`).

use crate::layout::{ConnSlot, Layout, FLAG_CLOSED, FRAG_HDR, POLL_ARMED};
use manycore_sync::atomic::{fence, Ordering};
use std::io;

pub(crate) fn invalid(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("manycore-sock: peer wrote an invalid {what}"),
    )
}

/// Fragments (header included) of a chunk above 16 KiB: a 32nd of the
/// chunk, at least `MIN_FRAG` and at most `MAX_FRAG`.
///
/// Small fragments keep a small chunk's pipeline full when a wake-up or a
/// descheduled peer costs more than draining half of it: the reader
/// releases space in small steps and both copies overlap. Large chunks do
/// better with fewer commits and index-line transfers, hence the upper
/// bound. The measurements behind these bounds are in the repository's
/// `docs/notes/2026-11-25-sock-fragment-size.md`.
pub(crate) const MIN_FRAG: usize = 8 << 10;
/// See [`MIN_FRAG`].
pub(crate) const MAX_FRAG: usize = 64 << 10;

#[inline]
fn pad8(n: usize) -> usize {
    (n + 7) & !7
}

#[inline]
fn hdr_word(len: usize, chunk: u32) -> u64 {
    len as u64 | (chunk as u64) << 32
}

/// Sender-private state of a ring (the bookkeeping is never read back from
/// shared memory).
#[derive(Debug)]
pub(crate) struct TxState {
    /// Bytes written (committed or not) - our `head`.
    pub head: u64,
    /// Last `tail` we saw (validated: monotonic, never past `head`).
    pub tail: u64,
    /// Offset of the next fragment inside the chunk.
    pub woff: usize,
    /// Current chunk size (the ring's capacity).
    pub chunk: u32,
    /// The new block may still overlap data of a buddy that is shrinking.
    pub ready: bool,
    /// The ring is poisoned by an invalid peer value.
    pub broken: bool,
    /// `head` when we last looked for a sleeping reader (see `commit`).
    pub told: u64,
    /// A look found a waiting reader (cleared by the caller, which then
    /// rings a polling reader's socket: `reader_polls`).
    pub rang: bool,
}

impl TxState {
    pub fn new(chunk: u32) -> Self {
        TxState {
            head: 0,
            tail: 0,
            woff: 0,
            chunk,
            ready: false,
            broken: false,
            told: 0,
            rang: false,
        }
    }
}

/// Receiver-private state of a ring.
#[derive(Debug, Default, Clone)]
pub(crate) struct RxState {
    pub tail: u64,
    pub head: u64,
    pub roff: usize,
    /// Chunk size of the last fragment seen (the sender's current chunk).
    pub chunk: u32,
    /// Current fragment: (payload offset in chunk, length, bytes consumed, frame size).
    pub cur: Option<(usize, usize, usize, usize)>,
    pub broken: bool,
    pub eof: bool,
    /// `tail` when we last woke the writer (see `release`).
    pub told: u64,
    /// A look woke a waiting writer (cleared by the caller, which then
    /// rings a polling writer's socket: `writer_polls`).
    pub rang: bool,
}

/// The memory a ring lives in: a shared region normally, a loom model under
/// `cfg(loom)`. Offsets are region offsets; every access is bounds-checked.
pub(crate) trait RingMem {
    fn layout(&self) -> &Layout;
    fn slot(&self, idx: u32) -> Option<&ConnSlot>;
    /// Stores a fragment header word (8-aligned).
    fn store_hdr(&self, off: usize, v: u64) -> bool;
    /// Loads a fragment header word (8-aligned).
    fn load_hdr(&self, off: usize) -> Option<u64>;
    fn write_bytes(&self, off: usize, src: &[u8]) -> bool;
    fn read_bytes(&self, off: usize, dst: &mut [u8]) -> bool;
}

/// One direction's view: a region, a slot index and a block base offset,
/// all validated at handshake time against the region's local layout.
#[derive(Debug)]
pub(crate) struct RingRef<'a, M: RingMem> {
    pub shm: &'a M,
    pub slot: &'a ConnSlot,
    pub base: u32,
}

impl<M: RingMem> Clone for RingRef<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<M: RingMem> Copy for RingRef<'_, M> {}

impl<'a, M: RingMem> RingRef<'a, M> {
    pub fn new(shm: &'a M, idx: u32, base: u32) -> Option<Self> {
        let slot = shm.slot(idx)?;
        Some(RingRef { shm, slot, base })
    }
    fn layout(&self) -> &Layout {
        self.shm.layout()
    }
    fn data_at(&self, off: usize) -> usize {
        self.shm.layout().data_off + self.base as usize + off
    }
}

/// Refreshes the sender's copy of `tail`. Acquire; pairs with the reader's
/// Release store of `tail` after copying out (the space is free to reuse).
fn refresh_tail<M: RingMem>(r: &RingRef<'_, M>, st: &mut TxState) -> io::Result<bool> {
    let t = r.slot.cons.tail.load(Ordering::Acquire);
    if t < st.tail || t > st.head {
        st.broken = true;
        return Err(invalid("ring tail"));
    }
    let changed = t != st.tail;
    st.tail = t;
    Ok(changed)
}

/// Peer (reader) has closed its end: the consumer line says so.
pub(crate) fn reader_closed<M: RingMem>(r: &RingRef<'_, M>) -> io::Result<bool> {
    match r.slot.cons.flags.load(Ordering::Acquire) {
        0 => Ok(false),
        FLAG_CLOSED => Ok(true),
        _ => Err(invalid("flags word")),
    }
}

/// Writes as much of `buf` as fits without waiting; commits and notifies.
/// `desired` is the chunk the sender's block allows now (applied only when
/// the ring is empty). Returns the bytes written.
pub(crate) fn try_write<M: RingMem>(
    r: &RingRef<'_, M>,
    st: &mut TxState,
    desired: u32,
    buf: &[u8],
) -> io::Result<usize> {
    if st.broken {
        return Err(invalid("ring state (earlier)"));
    }
    let start = st.head;
    let res = write_loop(r, st, desired, buf, start);
    // No commit of this call goes untold: the reader may be about to sleep.
    if st.told != st.head {
        fence(Ordering::SeqCst);
        tell_reader(r, st);
    }
    res
}

fn write_loop<M: RingMem>(
    r: &RingRef<'_, M>,
    st: &mut TxState,
    desired: u32,
    buf: &[u8],
    start: u64,
) -> io::Result<usize> {
    let mut n = 0usize;
    while n < buf.len() {
        if st.head == st.tail {
            // Empty (the reader has consumed everything we wrote): restart at
            // offset 0 and apply any chunk change now.
            if st.woff != 0 || st.chunk != desired {
                st.woff = 0;
                st.chunk = desired;
                // Relaxed: published by the Release store of `head` below.
                r.slot.prod.reset.store(st.head, Ordering::Relaxed);
            }
        } else if st.chunk != desired && desired < st.chunk {
            // Shrink pending: in place if the unread data and our write
            // position lie below the new end, else let the ring drain.
            if shrink_in_place(st, desired) {
                continue;
            }
            if !refresh_tail(r, st)? {
                break;
            }
            continue;
        }
        let cap = st.chunk as usize;
        let used = (st.head - st.tail) as usize;
        let free = cap - used;
        let contig = (cap - st.woff).min(free);
        if contig < 2 * FRAG_HDR {
            if contig == FRAG_HDR && st.woff + FRAG_HDR == cap {
                // A zero-length pad fragment takes us to the end of the chunk.
                if !r.shm.store_hdr(r.data_at(st.woff), hdr_word(0, st.chunk)) {
                    return Err(invalid("offset"));
                }
                st.head += FRAG_HDR as u64;
                st.woff = 0;
                commit(r, st, start);
                continue;
            }
            if !refresh_tail(r, st)? {
                break;
            }
            continue;
        }
        // Large chunks carry many fragments so that reader and writer copy
        // in parallel (see `MIN_FRAG`); small chunks (the paper's MPB sizes)
        // carry one fragment of up to the whole chunk.
        let maxfrag = if cap > 2 * MIN_FRAG {
            (cap / 32).clamp(MIN_FRAG, MAX_FRAG)
        } else {
            cap
        };
        let take = (buf.len() - n).min(contig.min(maxfrag) - FRAG_HDR);
        let off = r.data_at(st.woff);
        if !r.shm.write_bytes(off + FRAG_HDR, &buf[n..n + take]) {
            return Err(invalid("offset"));
        }
        // Published with the payload by the Release store of `head`.
        if !r.shm.store_hdr(off, hdr_word(take, st.chunk)) {
            return Err(invalid("offset"));
        }
        let fsz = FRAG_HDR + pad8(take);
        st.woff += fsz;
        if st.woff == cap {
            st.woff = 0;
        }
        st.head += fsz as u64;
        n += take;
        commit(r, st, start);
    }
    Ok(n)
}

/// Shrinks a non-empty ring to `desired` without a restart, if that loses
/// nothing: the unread bytes (`head - tail`, as last seen) lie contiguous
/// just below the write offset (no wrap), and the write offset lies below
/// the new end. The writer goes on at its offset with the smaller chunk,
/// which the next fragment header announces; the reader, which reads only
/// below the write offset, wraps at the new end from that fragment on (see
/// "Chunk changes" in `README.md`). The space above the new end holds
/// only consumed fragments (copied out before the `tail` we acquired), so
/// the caller may publish the new extent.
pub(crate) fn shrink_in_place(st: &mut TxState, desired: u32) -> bool {
    let used = st.head - st.tail;
    if desired < st.chunk && st.woff < desired as usize && used <= st.woff as u64 {
        st.chunk = desired;
        true
    } else {
        false
    }
}

/// Publishes `head`. Wakes a sleeping reader on the first commit of a
/// `try_write` call (it gets going at once), then at most once per quarter
/// chunk, and at the end of the call: a reader that was woken but is not
/// running yet still counts as waiting, and every wake would cost another
/// futex call. Since every call ends with a look, no commit goes untold.
#[inline]
fn commit<M: RingMem>(r: &RingRef<'_, M>, st: &mut TxState, start: u64) {
    // Release: commits the fragment (bytes, then header, then this); pairs
    // with the Acquire load of `head` in `refresh_head`.
    r.slot.prod.head.store(st.head, Ordering::Release);
    // SeqCst fence: makes `head` visible now (a plain store can linger in
    // the store buffer while we copy the next fragment), and pairs with the
    // fence in `EventCount::prepare_wait` for `tell_reader`.
    fence(Ordering::SeqCst);
    if st.told == start || st.head - st.told >= u64::from(st.chunk / 4) {
        tell_reader(r, st);
    }
}

/// Wakes the reader if it announced it is sleeping. Called after a SeqCst
/// fence that follows the last `head` store: pairs with the fence in
/// `EventCount::prepare_wait` (the reader announces, then re-checks
/// `head`): one of us sees the other, no lost wakeup.
#[inline]
fn tell_reader<M: RingMem>(r: &RingRef<'_, M>, st: &mut TxState) {
    st.rang |= r.slot.prod.data_ec.notify_one_after_fence();
    st.told = st.head;
}

/// Publishes `tail`. Wakes a sleeping writer when `tail` first reaches the
/// point the writer asked to be woken at (half the chunk free), not at
/// every fragment after it: a writer woken but not running yet would cost
/// a futex call per fragment. `try_read` ends with a look too.
#[inline]
fn release<M: RingMem>(r: &RingRef<'_, M>, st: &mut RxState) {
    // Release: our copies out happen-before the writer reuses the space;
    // pairs with the Acquire in `refresh_tail`.
    r.slot.cons.tail.store(st.tail, Ordering::Release);
    // SeqCst: makes `tail` visible now, and pairs with the fence in the
    // writer's prepare_wait.
    fence(Ordering::SeqCst);
    // `want_tail` lives on the writer's line: read it only when a writer
    // waits (a load per fragment would pull that line over every time).
    if r.slot.cons.space_ec.has_waiters() {
        tell_writer(r, st);
    }
}

/// Wakes the writer if it announced it is sleeping, enough space is free
/// (hysteresis) and it was not woken for this wait yet. Called after a
/// SeqCst fence that follows the last `tail` store.
#[inline]
fn tell_writer<M: RingMem>(r: &RingRef<'_, M>, st: &mut RxState) {
    if !r.slot.cons.space_ec.has_waiters() {
        return;
    }
    // Relaxed: a hint; a stale or garbage value costs an early wake or a
    // 20 ms slice.
    let want = r.slot.prod.want_tail.load(Ordering::Relaxed);
    if st.tail >= want && st.told < want {
        r.slot.cons.space_ec.notify_one_after_fence();
        st.told = st.tail;
        st.rang = true;
    }
}

/// Before sleeping on a full ring: ask to be woken when half the chunk is
/// free (or the ring is drained, whichever comes first).
pub(crate) fn writer_wants_half<M: RingMem>(r: &RingRef<'_, M>, st: &TxState) {
    let want = st.head.min(st.tail + st.chunk as u64 / 2);
    r.slot.prod.want_tail.store(want, Ordering::Relaxed);
}

/// True if the ring has free space or the writer should re-try (the reader
/// moved). Used by the space wait's re-check.
pub(crate) fn writer_can_progress<M: RingMem>(
    r: &RingRef<'_, M>,
    st: &mut TxState,
    desired: u32,
) -> io::Result<bool> {
    refresh_tail(r, st)?;
    if st.head == st.tail {
        return Ok(true);
    }
    if desired < st.chunk {
        return Ok(false);
    }
    let cap = st.chunk as usize;
    let free = cap - (st.head - st.tail) as usize;
    Ok(free >= 2 * FRAG_HDR || (st.woff + FRAG_HDR == cap && free >= FRAG_HDR))
}

/// The reader's load of `head`. Acquire; pairs with the Release store in
/// `commit`.
fn refresh_head<M: RingMem>(r: &RingRef<'_, M>, st: &mut RxState) -> io::Result<bool> {
    let h = r.slot.prod.head.load(Ordering::Acquire);
    let max = r.layout().max_chunk_at(r.base) as u64;
    if h < st.tail || h - st.tail > max || h < st.head {
        st.broken = true;
        return Err(invalid("ring head"));
    }
    let changed = h != st.head;
    if changed && st.head == st.tail {
        // The writer restarts at offset 0 only from an empty ring, so a
        // restart can sit at `tail` only when we had caught up with `head`
        // (no fragment in progress): `reset`, on the writer's line, is read
        // here and not before every fragment. Relaxed: written before the
        // `head` Release we acquired above.
        if r.slot.prod.reset.load(Ordering::Relaxed) == st.tail {
            st.roff = 0;
        }
    }
    st.head = h;
    Ok(changed)
}

/// True if the writer has closed its end.
pub(crate) fn writer_closed<M: RingMem>(r: &RingRef<'_, M>) -> io::Result<bool> {
    match r.slot.prod.flags.load(Ordering::Acquire) {
        0 => Ok(false),
        FLAG_CLOSED => Ok(true),
        _ => Err(invalid("flags word")),
    }
}

/// True if data is available (re-loads `head`).
pub(crate) fn reader_has_data<M: RingMem>(
    r: &RingRef<'_, M>,
    st: &mut RxState,
) -> io::Result<bool> {
    if st.cur.is_some() || st.head != st.tail {
        return Ok(true);
    }
    refresh_head(r, st)?;
    Ok(st.head != st.tail)
}

/// Copies available bytes into `buf` without waiting; releases consumed
/// fragments and wakes a writer waiting for space.
pub(crate) fn try_read<M: RingMem>(
    r: &RingRef<'_, M>,
    st: &mut RxState,
    buf: &mut [u8],
) -> io::Result<usize> {
    if st.broken {
        return Err(invalid("ring state (earlier)"));
    }
    let mut n = 0usize;
    let start = st.tail;
    let res = read_loop(r, st, buf, &mut n, true);
    // No release of this call goes untold: the writer may be about to sleep.
    if st.tail != start {
        fence(Ordering::SeqCst);
        tell_writer(r, st);
    }
    match res {
        Ok(()) => Ok(n),
        Err(e) if n > 0 => {
            st.broken = true;
            let _ = e;
            Ok(n)
        }
        Err(e) => Err(e),
    }
}

/// Copies available bytes into `buf` without consuming them (`peek`): the
/// walk runs on a copy of the reader's state and releases nothing, so the
/// writer sees no `tail` move. A fragment found invalid poisons the ring as
/// a read would.
pub(crate) fn try_peek<M: RingMem>(
    r: &RingRef<'_, M>,
    st: &mut RxState,
    buf: &mut [u8],
) -> io::Result<usize> {
    if st.broken {
        return Err(invalid("ring state (earlier)"));
    }
    let mut ahead = st.clone();
    let mut n = 0usize;
    match read_loop(r, &mut ahead, buf, &mut n, false) {
        Ok(()) => Ok(n),
        // What precedes the bad fragment is good; the next read stops there.
        Err(_) if n > 0 => Ok(n),
        Err(e) => {
            st.broken = true;
            Err(e)
        }
    }
}

/// Copies fragments out into `buf`. With `consume`, each finished fragment
/// is released (`tail` published); without it (`try_peek`) the walk only
/// advances the private copy `st`.
fn read_loop<M: RingMem>(
    r: &RingRef<'_, M>,
    st: &mut RxState,
    buf: &mut [u8],
    n: &mut usize,
    consume: bool,
) -> io::Result<()> {
    let lay = r.layout();
    let max = lay.max_chunk_at(r.base) as usize;
    while *n < buf.len() {
        if let Some((poff, len, done, fsz)) = st.cur {
            let take = (len - done).min(buf.len() - *n);
            if !r
                .shm
                .read_bytes(r.data_at(poff + done), &mut buf[*n..*n + take])
            {
                st.broken = true;
                return Err(invalid("offset"));
            }
            *n += take;
            if done + take == len {
                st.cur = None;
                st.tail += fsz as u64;
                st.roff += fsz;
                if st.roff == st.chunk as usize {
                    st.roff = 0;
                }
                if consume {
                    release(r, st);
                }
            } else {
                st.cur = Some((poff, len, done + take, fsz));
            }
            continue;
        }
        if st.head == st.tail && !refresh_head(r, st)? {
            return Ok(());
        }
        if st.roff + FRAG_HDR > max {
            st.broken = true;
            return Err(invalid("ring offset"));
        }
        // Written before the `head` Release we acquired above.
        let h = r
            .shm
            .load_hdr(r.data_at(st.roff))
            .ok_or_else(|| invalid("offset"))?;
        let len = (h & 0xffff_ffff) as usize;
        let chunk = (h >> 32) as u32;
        let fsz = FRAG_HDR.saturating_add(pad8(len));
        if !lay.valid_block(r.base, chunk)
            || len > chunk as usize
            || st.roff + fsz > chunk as usize
            || fsz as u64 > st.head - st.tail
        {
            st.broken = true;
            return Err(invalid("fragment header"));
        }
        st.chunk = chunk;
        if len == 0 {
            st.tail += fsz as u64;
            st.roff += fsz;
            if st.roff == chunk as usize {
                st.roff = 0;
            }
            if consume {
                release(r, st);
            }
            continue;
        }
        st.cur = Some((st.roff + FRAG_HDR, len, 0, fsz));
    }
    Ok(())
}

/// True if the reader waits through its readiness descriptor: after a look
/// that found a waiter (`TxState::rang`), the sender then rings the
/// reader's socket too. Relaxed: the look followed a SeqCst fence, and the
/// reader stored the word before the fence of its `prepare_wait`, so if its
/// announcement was seen, so is this.
pub(crate) fn reader_polls<M: RingMem>(r: &RingRef<'_, M>) -> bool {
    r.slot.prod.poll.load(Ordering::Relaxed) == POLL_ARMED
}

/// The mirror of `reader_polls` for a sender waiting for space.
pub(crate) fn writer_polls<M: RingMem>(r: &RingRef<'_, M>) -> bool {
    r.slot.cons.poll.load(Ordering::Relaxed) == POLL_ARMED
}

/// A reader about to wait through its readiness descriptor: announces it
/// as a waiter on `data_ec` (once: `armed` tracks it) with the `poll` word
/// set, then re-checks. Returns true if data (or the close) is there after
/// all; the caller then disarms and reads. The same argument as for a
/// sleeping reader ("Waiting" in `README.md`) shows that either the
/// re-check sees the data or the sender's look sees the announcement.
pub(crate) fn arm_reader<M: RingMem>(
    r: &RingRef<'_, M>,
    st: &mut RxState,
    armed: &mut bool,
) -> io::Result<bool> {
    if !*armed {
        r.slot.prod.poll.store(POLL_ARMED, Ordering::Relaxed);
        // Stays announced until `disarm_reader`; the key is not needed (no
        // futex wait follows).
        let _ = r.slot.prod.data_ec.prepare_wait();
        *armed = true;
    }
    Ok(reader_has_data(r, st)? || writer_closed(r)?)
}

/// Withdraws `arm_reader`'s announcement.
pub(crate) fn disarm_reader<M: RingMem>(r: &RingRef<'_, M>, armed: &mut bool) {
    if *armed {
        r.slot.prod.poll.store(0, Ordering::Relaxed);
        r.slot.prod.data_ec.cancel_wait();
        *armed = false;
    }
}

/// A sender about to wait for space through its readiness descriptor:
/// asks to be woken at half the chunk free (as a sleeping sender does),
/// announces itself on `space_ec` with the `poll` word set, and re-checks.
pub(crate) fn arm_writer<M: RingMem>(
    r: &RingRef<'_, M>,
    st: &mut TxState,
    desired: u32,
    armed: &mut bool,
) -> io::Result<bool> {
    writer_wants_half(r, st);
    if !*armed {
        r.slot.cons.poll.store(POLL_ARMED, Ordering::Relaxed);
        let _ = r.slot.cons.space_ec.prepare_wait();
        *armed = true;
    } else {
        // A new wake point: the fence orders it before the re-check, as
        // `prepare_wait`'s does.
        fence(Ordering::SeqCst);
    }
    Ok(reader_closed(r)? || writer_can_progress(r, st, desired)?)
}

/// Withdraws `arm_writer`'s announcement.
pub(crate) fn disarm_writer<M: RingMem>(r: &RingRef<'_, M>, armed: &mut bool) {
    if *armed {
        r.slot.cons.poll.store(0, Ordering::Relaxed);
        r.slot.cons.space_ec.cancel_wait();
        *armed = false;
    }
}
