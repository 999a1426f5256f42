//! Loom models of one ring direction (the fragment ring of `ring.rs` with
//! the doorbell protocol of `README.md`): no lost wakeup, no torn or stale
//! fragment, chunk changes at empty moments.
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p manycore-sock --lib loom_tests
//! ```
//!
//! The ring's memory is a vector of atomic words (fewer operations for
//! loom to interleave than bytes; only the writer stores data, so a partial
//! word is a plain load-modify-store): loom explores relaxed reorderings, so
//! a missing Release/Acquire pair shows up as stale bytes, a lost wakeup as
//! a deadlock. Sizes are tiny and preemptions bounded so that each model
//! runs in seconds.

use crate::layout::{ConnSlot, ConsumerLine, Layout, ProducerLine};
use crate::ring::{self, RingMem, RingRef, RxState, TxState};
use manycore_sync::atomic::{AtomicU32, AtomicU64, Ordering};
use manycore_sync::{Arc, SharedEventCount};

/// The memory of one ring: a slot and a tiny data area.
#[derive(Debug)]
struct Model {
    layout: Layout,
    slot: ConnSlot,
    data: Vec<AtomicU64>,
}

impl RingMem for Model {
    fn layout(&self) -> &Layout {
        &self.layout
    }
    fn slot(&self, idx: u32) -> Option<&ConnSlot> {
        (idx == 0).then_some(&self.slot)
    }
    fn store_hdr(&self, off: usize, v: u64) -> bool {
        self.write_bytes(off, &v.to_le_bytes())
    }
    fn load_hdr(&self, off: usize) -> Option<u64> {
        let mut b = [0u8; 8];
        self.read_bytes(off, &mut b).then(|| u64::from_le_bytes(b))
    }
    fn write_bytes(&self, off: usize, src: &[u8]) -> bool {
        let Some(o) = off.checked_sub(self.layout.data_off) else {
            return false;
        };
        if o + src.len() > self.data.len() * 8 {
            return false;
        }
        let mut i = 0;
        while i < src.len() {
            let (w, b) = ((o + i) / 8, (o + i) % 8);
            let n = (8 - b).min(src.len() - i);
            let mut bytes = if n == 8 {
                [0u8; 8]
            } else {
                self.data[w].load(Ordering::Relaxed).to_le_bytes()
            };
            bytes[b..b + n].copy_from_slice(&src[i..i + n]);
            self.data[w].store(u64::from_le_bytes(bytes), Ordering::Relaxed);
            i += n;
        }
        true
    }
    fn read_bytes(&self, off: usize, dst: &mut [u8]) -> bool {
        let Some(o) = off.checked_sub(self.layout.data_off) else {
            return false;
        };
        if o + dst.len() > self.data.len() * 8 {
            return false;
        }
        let mut i = 0;
        while i < dst.len() {
            let (w, b) = ((o + i) / 8, (o + i) % 8);
            let n = (8 - b).min(dst.len() - i);
            let bytes = self.data[w].load(Ordering::Relaxed).to_le_bytes();
            dst[i..i + n].copy_from_slice(&bytes[b..b + n]);
            i += n;
        }
        true
    }
}

/// The sending end.
#[derive(Debug)]
struct Writer {
    m: Arc<Model>,
    st: TxState,
    desired: u32,
}

/// The receiving end.
#[derive(Debug)]
struct Reader {
    m: Arc<Model>,
    st: RxState,
}

/// A ring over `data_size` bytes (a power of two >= 16) starting with chunk `chunk`.
fn pair(data_size: usize, chunk: u32) -> (Writer, Reader) {
    let layout = Layout::new(1, data_size, 16).expect("model layout");
    let slot = ConnSlot {
        prod: ProducerLine {
            head: AtomicU64::new(0),
            reset: AtomicU64::new(0),
            flags: AtomicU32::new(0),
            cpu: AtomicU32::new(0),
            data_ec: SharedEventCount::new_shared(),
            want_tail: AtomicU64::new(0),
            poll: AtomicU32::new(0),
            _pad: AtomicU32::new(0),
        },
        cons: ConsumerLine {
            tail: AtomicU64::new(0),
            flags: AtomicU32::new(0),
            poll: AtomicU32::new(0),
            space_ec: SharedEventCount::new_shared(),
        },
    };
    let data = (0..data_size / 8).map(|_| AtomicU64::new(0)).collect();
    let m = Arc::new(Model { layout, slot, data });
    let mut st = TxState::new(chunk);
    st.ready = true;
    (
        Writer {
            m: m.clone(),
            st,
            desired: chunk,
        },
        Reader {
            m,
            st: RxState {
                chunk,
                ..RxState::default()
            },
        },
    )
}

impl Writer {
    /// Changes the chunk (applied at the ring's next empty moment).
    fn set_chunk(&mut self, c: u32) {
        self.desired = c;
    }

    /// Writes everything, sleeping on the space doorbell when full.
    fn write_all(&mut self, mut buf: &[u8]) {
        let r = RingRef::new(&*self.m, 0, 0).unwrap();
        while !buf.is_empty() {
            let n = ring::try_write(&r, &mut self.st, self.desired, buf).expect("write");
            buf = &buf[n..];
            if n == 0 {
                ring::writer_wants_half(&r, &self.st);
                let ec = &r.slot.cons.space_ec;
                let key = ec.prepare_wait();
                if ring::writer_can_progress(&r, &mut self.st, self.desired).expect("tail") {
                    ec.cancel_wait();
                } else {
                    ec.wait(key);
                }
            }
        }
    }
}

impl Reader {
    /// Reads exactly `buf.len()` bytes, sleeping on the data doorbell when empty.
    fn read_exact(&mut self, buf: &mut [u8]) {
        let r = RingRef::new(&*self.m, 0, 0).unwrap();
        let mut got = 0;
        while got < buf.len() {
            let n = ring::try_read(&r, &mut self.st, &mut buf[got..]).expect("read");
            got += n;
            if n == 0 {
                let ec = &r.slot.prod.data_ec;
                let key = ec.prepare_wait();
                if ring::reader_has_data(&r, &mut self.st).expect("head") {
                    ec.cancel_wait();
                } else {
                    ec.wait(key);
                }
            }
        }
    }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

#[test]
fn full_ring_sleeps_and_wakes() {
    model(|| {
        // 16-byte chunk: one fragment at a time, so the writer must wait for
        // space (and the reader, usually, for data).
        let (mut w, mut r) = pair(16, 16);
        let t = loom::thread::spawn(move || {
            w.write_all(&[7]);
            w.write_all(&[9]);
        });
        let mut buf = [0u8; 2];
        r.read_exact(&mut buf);
        assert_eq!(buf, [7, 9]);
        t.join().unwrap();
    });
}

#[test]
fn chunk_shrinks_mid_stream() {
    model(|| {
        let (mut w, mut r) = pair(32, 32);
        let t = loom::thread::spawn(move || {
            w.write_all(&[1]);
            w.set_chunk(16);
            w.write_all(&[2]);
        });
        let mut buf = [0u8; 2];
        r.read_exact(&mut buf);
        assert_eq!(buf, [1, 2]);
        t.join().unwrap();
    });
}

#[test]
fn deferred_doorbell_at_the_end_of_a_write() {
    model(|| {
        // 128-byte chunk: the second write wraps, so one try_write commits
        // two fragments; the second is below a quarter chunk and is told
        // only by the look at the end of the call.
        let (mut w, mut r) = pair(128, 128);
        let first: Vec<u8> = (0..104).collect();
        let t = loom::thread::spawn(move || {
            w.write_all(&first);
            w.write_all(&[200; 12]);
        });
        let mut buf = [0u8; 116];
        r.read_exact(&mut buf);
        assert!(buf[..104].iter().enumerate().all(|(i, &b)| b == i as u8));
        assert_eq!(buf[104..], [200; 12]);
        t.join().unwrap();
    });
}

/// The readiness protocol: a reader that waits through its descriptor
/// (armed: `poll` set, announced on `data_ec`, re-checked) either sees the
/// data in its re-check or is rung by the writer's look (`rang`, then
/// `reader_polls`). The doorbell, a message on the connection's socket, is
/// modelled as a flag.
#[test]
fn polling_reader_is_rung() {
    model(|| {
        let (mut w, mut r) = pair(16, 16);
        let bell = Arc::new(AtomicU32::new(0));
        let b2 = bell.clone();
        let t = loom::thread::spawn(move || {
            let rr = RingRef::new(&*w.m, 0, 0).unwrap();
            let n = ring::try_write(&rr, &mut w.st, w.desired, &[5]).expect("write");
            assert_eq!(n, 1);
            if std::mem::take(&mut w.st.rang) && ring::reader_polls(&rr) {
                b2.store(1, Ordering::SeqCst);
            }
        });
        let rr = RingRef::new(&*r.m, 0, 0).unwrap();
        let mut armed = false;
        let ready = ring::arm_reader(&rr, &mut r.st, &mut armed).expect("arm");
        t.join().unwrap();
        assert!(ready || bell.load(Ordering::SeqCst) == 1, "lost doorbell");
        ring::disarm_reader(&rr, &mut armed);
        let mut buf = [0u8; 1];
        assert_eq!(ring::try_read(&rr, &mut r.st, &mut buf).expect("read"), 1);
        assert_eq!(buf, [5]);
    });
}

/// The mirror for a writer that waits for space through its descriptor:
/// the reader's release rings it, or its re-check finds the space.
#[test]
fn polling_writer_is_rung() {
    model(|| {
        // One 1-byte fragment fills the 16-byte chunk.
        let (mut w, mut r) = pair(16, 16);
        let wr = RingRef::new(&*w.m, 0, 0).unwrap();
        assert_eq!(ring::try_write(&wr, &mut w.st, 16, &[1]).expect("write"), 1);
        assert_eq!(ring::try_write(&wr, &mut w.st, 16, &[2]).expect("write"), 0);
        let bell = Arc::new(AtomicU32::new(0));
        let b2 = bell.clone();
        let t = loom::thread::spawn(move || {
            let rr = RingRef::new(&*r.m, 0, 0).unwrap();
            let mut buf = [0u8; 1];
            assert_eq!(ring::try_read(&rr, &mut r.st, &mut buf).expect("read"), 1);
            if std::mem::take(&mut r.st.rang) && ring::writer_polls(&rr) {
                b2.store(1, Ordering::SeqCst);
            }
        });
        let mut armed = false;
        let ready = ring::arm_writer(&wr, &mut w.st, 16, &mut armed).expect("arm");
        t.join().unwrap();
        assert!(ready || bell.load(Ordering::SeqCst) == 1, "lost doorbell");
        ring::disarm_writer(&wr, &mut armed);
        assert_eq!(ring::try_write(&wr, &mut w.st, 16, &[2]).expect("write"), 1);
    });
}

/// A shrink in place: the writer has one unread fragment low in its chunk
/// when the chunk halves, and goes on without waiting for the ring to
/// drain. Once the shrink is applied it scribbles over the upper half (as
/// the neighbour that now owns it may): the reader must never read there.
#[test]
fn chunk_shrinks_in_place() {
    model(|| {
        let (mut w, mut r) = pair(64, 64);
        let t = loom::thread::spawn(move || {
            w.write_all(&[1]);
            w.set_chunk(32);
            w.write_all(&[2]);
            assert_eq!(w.st.chunk, 32, "not shrunk in place");
            // The upper half belongs to a neighbour now.
            for word in &w.m.data[4..8] {
                word.store(u64::MAX, Ordering::Relaxed);
            }
            w.write_all(&[3]);
        });
        let mut buf = [0u8; 3];
        r.read_exact(&mut buf);
        assert_eq!(buf, [1, 2, 3]);
        t.join().unwrap();
    });
}
