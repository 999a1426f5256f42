//! Endpoint regions and namespaces: where the shared memory of rckSock's
//! per-core message-passing buffer lives on Linux. A namespace is either a
//! directory of files (default `/dev/shm/manycore-<uid>/`, files created with
//! O_EXCL and mode 0600, stale files of dead processes removed) or a private,
//! memfd-backed namespace for one process.

use crate::layout::*;
use crate::raw::{self, Mapping};
use manycore_sync::atomic::{AtomicU64, Ordering};
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Where endpoints find each other: a directory of shared-memory files, or a
/// private in-process namespace.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// A directory of shared-memory files (usable between processes).
    Dir(PathBuf),
    /// A private memfd-backed namespace, visible only inside this process.
    Private(u64),
}

impl fmt::Debug for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Namespace::Dir(p) => write!(f, "Dir({})", p.display()),
            Namespace::Private(i) => write!(f, "Private({i})"),
        }
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Namespace::Dir(p) => write!(f, "{}", p.display()),
            Namespace::Private(i) => write!(f, "private#{i}"),
        }
    }
}

impl Default for Namespace {
    fn default() -> Self {
        Namespace::user()
    }
}

impl Namespace {
    /// The per-user default: `/dev/shm/manycore-<uid>/`.
    pub fn user() -> Namespace {
        Namespace::Dir(PathBuf::from(format!("/dev/shm/manycore-{}", raw::uid())))
    }

    /// A directory namespace (created with mode 0700 if missing).
    pub fn dir(path: impl Into<PathBuf>) -> Namespace {
        Namespace::Dir(path.into())
    }

    /// A fresh private namespace: memfd regions, reachable only from this process.
    pub fn private() -> Namespace {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Namespace::Private(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    /// The address of `port` in this namespace.
    pub fn addr(&self, port: u32) -> SockAddr {
        SockAddr {
            ns: self.clone(),
            port,
        }
    }

    /// Checks (creating if needed) the directory: owned by us, not a symlink,
    /// no group/other access. Cleans stale files once per process.
    pub(crate) fn prepare(&self) -> io::Result<()> {
        let Namespace::Dir(dir) = self else {
            return Ok(());
        };
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        static CHECKED: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
        let checked = CHECKED.get_or_init(Default::default);
        if checked.lock().map(|s| s.contains(dir)).unwrap_or(false) {
            return Ok(());
        }
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let md = std::fs::symlink_metadata(dir)?;
        if !md.is_dir() || md.uid() != raw::uid() || md.mode() & 0o077 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "manycore-sock: {} is not a private directory of this user",
                    dir.display()
                ),
            ));
        }
        clean_stale(dir);
        if let Ok(mut s) = checked.lock() {
            s.insert(dir.clone());
        }
        Ok(())
    }
}

/// Removes files of processes that no longer exist.
fn clean_stale(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(pid) = client_name_pid(name) {
            if !raw::pid_alive(pid) {
                let _ = std::fs::remove_file(e.path());
            }
        } else if name.starts_with('p') {
            if let Ok(Some(pid)) = file_owner_pid(&e.path()) {
                if !raw::pid_alive(pid) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

fn client_name_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('c')?;
    let (pid, seq) = rest.split_once('-')?;
    seq.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// The creator pid recorded in a region file's header (None if not a valid region).
fn file_owner_pid(path: &Path) -> io::Result<Option<u32>> {
    let fd = raw::open_rw(path)?;
    let (uid, size, _, reg) = raw::fstat(&fd)?;
    if uid != raw::uid() || !reg || (size as usize) < PAGE {
        return Ok(None);
    }
    let map = Mapping::map(&fd, PAGE)?;
    let Some(h) = map.get::<RegionHeader>(0) else {
        return Ok(None);
    };
    // Acquire; pairs with the Release store of `magic` by the creator.
    if h.magic.load(Ordering::Acquire) != MAGIC {
        return Ok(None);
    }
    Ok(Some(h.pid.load(Ordering::Relaxed)))
}

/// An address: a namespace and a port.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct SockAddr {
    ns: Namespace,
    port: u32,
}

impl SockAddr {
    /// `port` in namespace `ns`.
    pub fn new(ns: Namespace, port: u32) -> Self {
        SockAddr { ns, port }
    }
    /// The namespace.
    pub fn namespace(&self) -> &Namespace {
        &self.ns
    }
    /// The port.
    pub fn port(&self) -> u32 {
        self.port
    }
}

impl From<u32> for SockAddr {
    /// `port` in the per-user default namespace.
    fn from(port: u32) -> Self {
        SockAddr::new(Namespace::user(), port)
    }
}

impl fmt::Display for SockAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.ns, self.port)
    }
}

/// A mapped region with its locally computed layout.
#[derive(Debug)]
pub(crate) struct Shm {
    pub map: Mapping,
    pub layout: Layout,
    /// The creator's pid as recorded when we mapped it (validated non-zero).
    pub pid: u32,
    pub kind: u32,
    pub name: String,
    pub ns: Namespace,
    /// We created it and the name still refers to it: remove the name when
    /// dropped (or earlier, by `unlink_name`).
    linked: std::sync::atomic::AtomicBool,
}

type Registry = Mutex<HashMap<(u64, String), Weak<Shm>>>;
fn registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(Default::default)
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
    pub fn backlog(&self, i: u32) -> Option<&BacklogSlot> {
        self.map
            .get::<BacklogSlot>(self.layout.backlog_slot_off(i)?)
    }
    pub fn atomic_u64(&self, off: usize) -> Option<&AtomicU64> {
        self.map.get::<AtomicU64>(off)
    }

    /// Creates region `name` in `ns` exclusively. A name held by a live
    /// process gives `AddrInUse`; a stale one (dead creator) is replaced.
    pub fn create(ns: &Namespace, name: &str, kind: u32, layout: Layout) -> io::Result<Arc<Shm>> {
        ns.prepare()?;
        let fd = match ns {
            Namespace::Private(id) => {
                let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
                if reg
                    .get(&(*id, name.to_string()))
                    .is_some_and(|w| w.strong_count() > 0)
                {
                    return Err(addr_in_use(name));
                }
                let fd = raw::memfd(name, layout.total)?;
                let shm = Arc::new(Self::init(fd, ns, name, kind, layout)?);
                reg.insert((*id, name.to_string()), Arc::downgrade(&shm));
                return Ok(shm);
            }
            Namespace::Dir(dir) => {
                let path = dir.join(name);
                match raw::create_excl(&path) {
                    Ok(fd) => fd,
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                        let stale = match raw::open_rw(&path) {
                            Ok(fd) => {
                                let (uid, _, _, _) = raw::fstat(&fd)?;
                                if uid != raw::uid() {
                                    return Err(addr_in_use(name));
                                }
                                matches!(file_owner_pid(&path), Ok(Some(p)) if !raw::pid_alive(p))
                            }
                            Err(_) => false,
                        };
                        if !stale {
                            return Err(addr_in_use(name));
                        }
                        let _ = std::fs::remove_file(&path);
                        raw::create_excl(&path).map_err(|e| {
                            if e.raw_os_error() == Some(libc::EEXIST) {
                                addr_in_use(name)
                            } else {
                                e
                            }
                        })?
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        if let Err(e) = raw::set_len(&fd, layout.total) {
            ns.unlink(name);
            return Err(e);
        }
        match Self::init(fd, ns, name, kind, layout) {
            Ok(s) => Ok(Arc::new(s)),
            Err(e) => {
                ns.unlink(name);
                Err(e)
            }
        }
    }

    fn init(
        fd: std::os::fd::OwnedFd,
        ns: &Namespace,
        name: &str,
        kind: u32,
        layout: Layout,
    ) -> io::Result<Shm> {
        let map = Mapping::map(&fd, layout.total)?;
        let shm = Shm {
            map,
            layout,
            pid: raw::getpid(),
            kind,
            name: name.to_string(),
            ns: ns.clone(),
            linked: std::sync::atomic::AtomicBool::new(true),
        };
        let h = shm.header();
        h.version.store(VERSION, Ordering::Relaxed);
        h.kind.store(kind, Ordering::Relaxed);
        h.pid.store(shm.pid, Ordering::Relaxed);
        h.nslots.store(layout.nslots, Ordering::Relaxed);
        h.backlog.store(layout.backlog, Ordering::Relaxed);
        h.flags.store(0, Ordering::Relaxed);
        h.data_off.store(layout.data_off as u64, Ordering::Relaxed);
        h.data_size
            .store(layout.data_size as u64, Ordering::Relaxed);
        h.min_chunk.store(layout.min_chunk, Ordering::Relaxed);
        // Release; pairs with the Acquire load of `magic` in `open`.
        h.magic.store(MAGIC, Ordering::Release);
        Ok(shm)
    }

    /// Opens a peer's region `name`, validating owner, mode, size and header.
    /// `NotFound` if it does not exist.
    pub fn open(ns: &Namespace, name: &str, kind: u32) -> io::Result<Arc<Shm>> {
        let shm = match ns {
            Namespace::Private(id) => {
                let reg = registry().lock().unwrap_or_else(|e| e.into_inner());
                return reg
                    .get(&(*id, name.to_string()))
                    .and_then(Weak::upgrade)
                    .filter(|s| s.kind == kind)
                    .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound));
            }
            Namespace::Dir(dir) => {
                ns.prepare()?;
                let fd = raw::open_rw(&dir.join(name))?;
                let (uid, size, mode, reg) = raw::fstat(&fd)?;
                if uid != raw::uid() || !reg || mode & 0o077 != 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        "manycore-sock: region file not private to this user",
                    ));
                }
                if (size as usize) < PAGE || size as usize > MAX_DATA + (8 << 20) {
                    return Err(bad_region());
                }
                let map = Mapping::map(&fd, size as usize)?;
                let h = map.get::<RegionHeader>(0).ok_or_else(bad_region)?;
                // Acquire; pairs with the Release store of `magic` in `init`.
                if h.magic.load(Ordering::Acquire) != MAGIC
                    || h.version.load(Ordering::Relaxed) != VERSION
                    || h.kind.load(Ordering::Relaxed) != kind
                {
                    return Err(bad_region());
                }
                let layout = Layout::new(
                    h.nslots.load(Ordering::Relaxed),
                    h.backlog.load(Ordering::Relaxed),
                    h.data_size.load(Ordering::Relaxed) as usize,
                    h.min_chunk.load(Ordering::Relaxed),
                )
                .ok_or_else(bad_region)?;
                let pid = h.pid.load(Ordering::Relaxed);
                if layout.total > map.len()
                    || h.data_off.load(Ordering::Relaxed) != layout.data_off as u64
                    || pid == 0
                {
                    return Err(bad_region());
                }
                Shm {
                    map,
                    layout,
                    pid,
                    kind,
                    name: name.to_string(),
                    ns: ns.clone(),
                    linked: std::sync::atomic::AtomicBool::new(false),
                }
            }
        };
        Ok(Arc::new(shm))
    }
}

impl Shm {
    /// Removes our name from the namespace (once): new connections to it are
    /// refused, existing ones keep their mappings.
    pub fn unlink_name(&self) {
        if !self
            .linked
            .swap(false, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        match &self.ns {
            Namespace::Dir(d) => {
                let _ = std::fs::remove_file(d.join(&self.name));
            }
            Namespace::Private(id) => {
                let mut reg = registry().lock().unwrap_or_else(|e| e.into_inner());
                let key = (*id, self.name.clone());
                if reg
                    .get(&key)
                    .is_some_and(|w| std::ptr::eq(w.as_ptr(), self) || w.strong_count() == 0)
                {
                    reg.remove(&key);
                }
            }
        }
    }
}

impl Drop for Shm {
    fn drop(&mut self) {
        self.unlink_name();
    }
}

impl Namespace {
    fn unlink(&self, name: &str) {
        if let Namespace::Dir(d) = self {
            let _ = std::fs::remove_file(d.join(name));
        }
    }
}

fn addr_in_use(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::AddrInUse,
        format!("manycore-sock: {name} is taken"),
    )
}

fn bad_region() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "manycore-sock: not a valid region",
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

impl Shm {
    /// The namespace this region lives in.
    pub fn ns_ref(&self) -> &Namespace {
        &self.ns
    }
}
