//! Endpoint regions: where the shared memory of rckSock's per-core
//! message-passing buffer lives on Linux. Every region is an anonymous
//! memory file (memfd) sealed against resizing by its creator
//! (`F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL`); the peer receives its
//! descriptor during the handshake and maps it only after checking those
//! seals, the filesystem (tmpfs, not hugetlbfs) and the size. A mapping of a
//! file that can never shrink never faults with SIGBUS, whatever the other
//! process does with its descriptor.

use crate::layout::*;
use crate::raw::{self, Mapping};
use manycore_sync::atomic::{AtomicU64, Ordering};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

/// `statfs.f_type` of tmpfs/shmem, where plain memfds live.
const TMPFS_MAGIC: i64 = 0x0102_1994;

/// A mapped region with its locally computed layout.
#[derive(Debug)]
pub(crate) struct Shm {
    pub map: Mapping,
    pub layout: Layout,
    /// The memfd's name (`p<port>` or `c<pid>-<n>`), for messages only.
    pub name: String,
    /// Our own regions keep their descriptor to pass it to peers.
    fd: Option<OwnedFd>,
}

impl Shm {
    pub fn header(&self) -> &RegionHeader {
        // The header is at offset 0 of a mapping at least PAGE long.
        self.map
            .get::<RegionHeader>(0)
            .expect("region shorter than its header")
    }
    pub fn slot(&self, i: u32) -> Option<&ConnSlot> {
        self.map.get::<ConnSlot>(self.layout.slot_off(i)?)
    }
    pub fn atomic_u64(&self, off: usize) -> Option<&AtomicU64> {
        self.map.get::<AtomicU64>(off)
    }
    /// The descriptor to pass to a peer (our own regions only).
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.fd.as_ref().map(AsFd::as_fd)
    }

    /// Creates a sealed region `name` of `kind` with `layout`.
    pub fn create(name: &str, kind: u32, layout: Layout) -> io::Result<Arc<Shm>> {
        let fd = raw::memfd(name, layout.total)?;
        let map = Mapping::map(&fd, layout.total)?;
        let shm = Shm {
            map,
            layout,
            name: name.to_string(),
            fd: Some(fd),
        };
        let h = shm.header();
        h.version.store(VERSION, Ordering::Relaxed);
        h.kind.store(kind, Ordering::Relaxed);
        h.pid.store(raw::getpid(), Ordering::Relaxed);
        h.nslots.store(layout.nslots, Ordering::Relaxed);
        h.data_off.store(layout.data_off as u64, Ordering::Relaxed);
        h.data_size
            .store(layout.data_size as u64, Ordering::Relaxed);
        h.min_chunk.store(layout.min_chunk, Ordering::Relaxed);
        // Release; pairs with the Acquire load of `magic` in `from_fd`.
        h.magic.store(MAGIC, Ordering::Release);
        Ok(Arc::new(shm))
    }

    /// Maps a peer's region received as `fd`, after checking that it cannot
    /// change size (seals), is plain shared memory, is large enough, and
    /// holds a valid header of `kind`. Anything else is `InvalidData`.
    pub fn from_fd(fd: OwnedFd, kind: u32, name: String) -> io::Result<Arc<Shm>> {
        let seals = raw::seals(fd.as_fd()).map_err(|_| bad_region("not a sealable memfd"))?;
        if seals & raw::REGION_SEALS != raw::REGION_SEALS {
            return Err(bad_region("not sealed against resizing"));
        }
        if raw::fs_type(fd.as_fd())? != TMPFS_MAGIC {
            return Err(bad_region("not plain shared memory"));
        }
        let (_, size, _, reg) = raw::fstat(fd.as_fd())?;
        // The seals make `size` a lower bound for the region's lifetime.
        if !reg || (size as usize) < PAGE || size as usize > MAX_TOTAL {
            return Err(bad_region("size"));
        }
        let map = Mapping::map(&fd, size as usize)
            .map_err(|_| bad_region("cannot be mapped read-write"))?;
        let h = map
            .get::<RegionHeader>(0)
            .ok_or_else(|| bad_region("header"))?;
        // Acquire; pairs with the Release store of `magic` in `create`.
        if h.magic.load(Ordering::Acquire) != MAGIC
            || h.version.load(Ordering::Relaxed) != VERSION
            || h.kind.load(Ordering::Relaxed) != kind
        {
            return Err(bad_region("header"));
        }
        let layout = Layout::new(
            h.nslots.load(Ordering::Relaxed),
            h.data_size.load(Ordering::Relaxed) as usize,
            h.min_chunk.load(Ordering::Relaxed),
        )
        .ok_or_else(|| bad_region("layout"))?;
        if layout.total > map.len() || h.data_off.load(Ordering::Relaxed) != layout.data_off as u64
        {
            return Err(bad_region("layout"));
        }
        Ok(Arc::new(Shm {
            map,
            layout,
            name,
            fd: None,
        }))
    }
}

fn bad_region(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("manycore-sock: not a valid region ({why})"),
    )
}

impl crate::ring::RingMem for Shm {
    fn layout(&self) -> &Layout {
        &self.layout
    }
    fn slot(&self, idx: u32) -> Option<&ConnSlot> {
        Shm::slot(self, idx)
    }
    fn store_hdr(&self, off: usize, v: u64) -> bool {
        // Relaxed: published by the ring's Release store of `head`.
        self.atomic_u64(off)
            .map(|w| w.store(v, Ordering::Relaxed))
            .is_some()
    }
    fn load_hdr(&self, off: usize) -> Option<u64> {
        // Relaxed: ordered by the reader's Acquire load of `head`.
        self.atomic_u64(off).map(|w| w.load(Ordering::Relaxed))
    }
    fn write_bytes(&self, off: usize, src: &[u8]) -> bool {
        self.map.write_bytes(off, src)
    }
    fn read_bytes(&self, off: usize, dst: &mut [u8]) -> bool {
        self.map.read_bytes(off, dst)
    }
}
