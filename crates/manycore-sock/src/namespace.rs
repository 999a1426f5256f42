//! Namespaces and addresses: where endpoints find each other. rckSock's
//! connect/accept handshake (Clauss, section 3.2) needs a rendezvous; on
//! Linux a process can map another's memory only through a descriptor, and
//! descriptors travel over Unix sockets, so the rendezvous of a port is a
//! listening `SOCK_SEQPACKET` Unix socket: a file `p<port>` (mode 0600) in a
//! private directory, or an abstract name for a private in-process namespace.
//! Region memory never has a name (sealed memfds, `region.rs`).

use crate::raw::{self, UnixAddr};
use manycore_sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::collections::HashSet;
use std::fmt;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// Where endpoints find each other: a directory of rendezvous sockets, or a
/// private in-process namespace.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Namespace {
    /// A directory of rendezvous sockets (usable between processes).
    Dir(PathBuf),
    /// A private namespace, reachable only from this process.
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

fn refused(why: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionRefused,
        format!("manycore-sock: {why}"),
    )
}

fn addr_in_use(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::AddrInUse,
        format!("manycore-sock: {name} is taken"),
    )
}

fn not_ours() -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        "manycore-sock: the rendezvous belongs to another user or process",
    )
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

    /// A fresh private namespace, reachable only from this process.
    pub fn private() -> Namespace {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Namespace::Private(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The address of `port` in this namespace.
    pub fn addr(&self, port: u32) -> SockAddr {
        SockAddr {
            ns: self.clone(),
            port,
        }
    }

    /// Checks (creating if needed) the directory: owned by us, not a symlink,
    /// no group/other access. Removes leftovers of dead processes once.
    fn prepare(&self) -> io::Result<()> {
        let Namespace::Dir(dir) = self else {
            return Ok(());
        };
        use std::os::unix::fs::DirBuilderExt;
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

    /// True if a peer with these kernel-reported credentials may use this
    /// namespace: our uid, and for a private namespace our own process.
    pub(crate) fn admits(&self, pid: u32, uid: u32) -> bool {
        uid == raw::uid() && (matches!(self, Namespace::Dir(_)) || pid == raw::getpid())
    }

    /// Binds the rendezvous of `port`, with room for `pending` unaccepted
    /// connections. `AddrInUse` if a live listener holds it; a dead
    /// listener's socket file is replaced.
    pub(crate) fn listen(&self, port: u32, pending: u32) -> io::Result<Rendezvous> {
        let fd = raw::seqpacket()?;
        match self {
            Namespace::Private(_) => {
                raw::bind(&fd, &UnixAddr::abstract_name(&private_name(self, port))?).map_err(
                    |e| match e.raw_os_error() {
                        Some(libc::EADDRINUSE) => addr_in_use(&format!("p{port}")),
                        _ => e,
                    },
                )?;
                raw::listen(&fd, pending)?;
                Ok(Rendezvous { fd, path: None })
            }
            Namespace::Dir(dir) => {
                UnixAddr::path(&dir.join(format!("p{port}")))?;
                self.prepare()?;
                // Bind and listen under a temporary name, then link it into
                // place: a visible rendezvous is always listening, so one
                // that refuses connections belongs to a dead listener.
                static N: AtomicU32 = AtomicU32::new(0);
                let n = N.fetch_add(1, Ordering::Relaxed);
                let tmp = dir.join(format!(".p{port}.{}.{n}", raw::getpid()));
                let _ = std::fs::remove_file(&tmp);
                raw::bind(&fd, &UnixAddr::path(&tmp)?)?;
                let res = (|| {
                    // The umask may have narrowed the mode: make it 0600.
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
                    raw::listen(&fd, pending)?;
                    publish(&tmp, &dir.join(format!("p{port}")))
                })();
                let _ = std::fs::remove_file(&tmp);
                res?;
                Ok(Rendezvous {
                    fd,
                    path: Some(dir.join(format!("p{port}"))),
                })
            }
        }
    }

    /// Connects to the rendezvous of `port`. Returns the connected socket and
    /// the listener's pid. `ConnectionRefused` if nobody listens or its queue
    /// is full; `PermissionDenied` if it is not ours.
    pub(crate) fn connect(&self, port: u32) -> io::Result<(OwnedFd, u32)> {
        let fd = raw::seqpacket()?;
        let addr = match self {
            Namespace::Private(_) => UnixAddr::abstract_name(&private_name(self, port))?,
            Namespace::Dir(dir) => {
                let path = dir.join(format!("p{port}"));
                // An address that cannot be a socket name is the caller's
                // error (`InvalidInput`), as in `bind` and std.
                let ua = UnixAddr::path(&path)?;
                self.prepare()?;
                let md = match std::fs::symlink_metadata(&path) {
                    Ok(m) => m,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        return Err(refused("nobody listens"))
                    }
                    Err(e) => return Err(e),
                };
                if md.uid() != raw::uid() {
                    return Err(not_ours());
                }
                if !md.file_type().is_socket() {
                    return Err(refused("not a listener"));
                }
                ua
            }
        };
        if let Err(e) = raw::connect(&fd, &addr) {
            return Err(match e.raw_os_error() {
                Some(libc::EAGAIN) => refused("backlog full"),
                Some(libc::ECONNREFUSED) | Some(libc::ENOENT) => refused("nobody listens"),
                _ => e,
            });
        }
        let (pid, uid) = raw::peer_cred(&fd)?;
        if !self.admits(pid, uid) {
            return Err(not_ours());
        }
        Ok((fd, pid))
    }
}

/// The abstract socket name of a private namespace's port: unguessable (a
/// per-process random part), and checked anyway (peers must be this process).
fn private_name(ns: &Namespace, port: u32) -> String {
    static NONCE: OnceLock<u64> = OnceLock::new();
    let nonce = *NONCE.get_or_init(raw::random_u64);
    let id = match ns {
        Namespace::Private(i) => *i,
        Namespace::Dir(_) => 0,
    };
    format!("manycore-sock/{}.{nonce:016x}/{id}/p{port}", raw::getpid())
}

/// Links the listening socket `tmp` at `target`, replacing a dead
/// listener's socket there (atomically: the stale one is swapped out and
/// checked to be the one found dead).
fn publish(tmp: &Path, target: &Path) -> io::Result<()> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for _ in 0..8 {
        match std::fs::hard_link(tmp, target) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let Some(dead) = stale(target) else {
            return Err(addr_in_use(&name));
        };
        match raw::exchange(tmp, target) {
            Ok(()) => {
                // `tmp` now names what was at `target`.
                let swapped = std::fs::symlink_metadata(tmp).map(|m| (m.dev(), m.ino()));
                if swapped.ok() == Some(dead) {
                    return Ok(());
                }
                // Someone else replaced it meanwhile: give theirs back.
                let _ = raw::exchange(tmp, target);
                return Err(addr_in_use(&name));
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                // No RENAME_EXCHANGE on this filesystem: remove and retry.
                let _ = std::fs::remove_file(target);
            }
            Err(e) => return Err(e),
        }
    }
    Err(addr_in_use(&name))
}

/// Some((dev, inode)) if `path` is a socket of ours that nobody listens on.
fn stale(path: &Path) -> Option<(u64, u64)> {
    let md = std::fs::symlink_metadata(path).ok()?;
    if !md.file_type().is_socket() || md.uid() != raw::uid() {
        return None;
    }
    let fd = raw::seqpacket().ok()?;
    match raw::connect(&fd, &UnixAddr::path(path).ok()?) {
        Err(e) if e.raw_os_error() == Some(libc::ECONNREFUSED) => Some((md.dev(), md.ino())),
        _ => None,
    }
}

/// Removes temporary names left by processes that died while binding.
fn clean_stale(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let pid = name
            .strip_prefix(".p")
            .and_then(|r| r.split('.').nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(|p| !raw::pid_alive(p)) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// A bound, listening rendezvous. Dropping it removes the name first, then
/// closes the socket (pending connectors see the listener gone).
#[derive(Debug)]
pub(crate) struct Rendezvous {
    pub fd: OwnedFd,
    path: Option<PathBuf>,
}

impl Drop for Rendezvous {
    fn drop(&mut self) {
        // While our socket listens nobody replaces the name, so it is ours.
        if let Some(p) = &self.path {
            let _ = std::fs::remove_file(p);
        }
    }
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
