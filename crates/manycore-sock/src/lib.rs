//! manycore sockets over shared memory with buddy-managed buffers, after
//! rckSock (Carsten Clauss, *A Lightweight and Resource-aware Socket
//! Emulation Layer for the Intel SCC Processor*).
//!
//! A [`ShmListener`] and [`ShmStream`]s shaped like `std::net`, between
//! threads or processes of one machine, with no system call on the data
//! path:
//!
//! * every endpoint owns one buffer region (default 256 KiB, down to the
//!   paper's 8 KiB) divided among its connections by a buddy allocator: the
//!   first connection gets all of it, each new one splits a buddy, each close
//!   merges (section 3.4);
//! * each direction of a connection is a ring of fragments in its *sender's*
//!   region; every fragment header carries the sender's current chunk size, so
//!   a split or merge needs no extra message (section 3.5);
//! * connections are set up by a two-way handshake (section 3.2, Figure 4)
//!   over a Unix socket that also carries the regions' descriptors;
//! * waiting spins for a bounded budget and then sleeps on a process-shared
//!   futex doorbell, woken only if it announced itself ([`WaitMode`]);
//! * a dead peer (even SIGKILLed) is noticed within ~20 ms through the
//!   connection's Unix socket, which hangs up:
//!   reads return the remaining data and then `ConnectionReset` (or EOF if it
//!   had closed), writes return `BrokenPipe`;
//! * every region is a memfd sealed against resizing, and a peer's region is
//!   mapped only after its seals are checked, so no peer can make a mapping
//!   fault (SIGBUS) by shrinking it;
//! * everything read from shared memory is copied once, validated against
//!   private bookkeeping, and only then used: a hostile peer causes
//!   `InvalidData`, never a panic or an out-of-bounds access.
//!
//! * `connect` completes when the listener's backlog takes the connection,
//!   as with a kernel socket: one thread can connect and then accept;
//! * the surface and error kinds follow std's `UnixStream` on Linux
//!   (vectored I/O, `peek`, timeouts that expire with `WouldBlock`, ...);
//! * every stream and listener has a readiness descriptor (`AsFd`) for
//!   event loops; with the `tokio` feature, `AsyncShmStream` and
//!   `AsyncShmListener` are tokio's `AsyncRead + AsyncWrite` and an async
//!   listener.
//!
//! Addresses name a [`Namespace`] (a directory of rendezvous sockets, by
//! default `/dev/shm/manycore-<uid>/`, or a private namespace for one
//! process) and a port. The shared-memory layout, the handshake and the wait
//! protocol, with the reasoning behind them and the list of tests, are in
//! `src/README.md`; `examples/echo.rs` runs a server and a client in two
//! processes, `examples/tokio_echo.rs` (feature `tokio`) an async server
//! and its clients on one tokio thread.
//!
//! # Example
//!
//! ```
//! use manycore_sock::{Namespace, ShmListener, ShmStream};
//! use std::io::{Read, Write};
//!
//! let addr = Namespace::private().addr(7);
//! let listener = ShmListener::bind(&addr)?;
//! let t = std::thread::spawn(move || -> std::io::Result<()> {
//!     let (mut s, _peer) = listener.accept()?;
//!     let mut buf = [0u8; 5];
//!     s.read_exact(&mut buf)?;
//!     s.write_all(&buf)?; // echo
//!     Ok(())
//! });
//! let mut c = ShmStream::connect(&addr)?;
//! c.write_all(b"hello")?;
//! let mut back = [0u8; 5];
//! c.read_exact(&mut back)?;
//! assert_eq!(&back, b"hello");
//! t.join().unwrap()?;
//! # Ok::<(), std::io::Error>(())
//! ```

#![warn(missing_docs)]
#![cfg_attr(loom, allow(dead_code, unused_imports))]

mod buddy;
#[cfg(not(loom))]
mod config;
#[cfg(not(loom))]
mod endpoint;
#[cfg(not(loom))]
mod handshake;
mod layout;
#[cfg(not(loom))]
mod listener;
#[cfg(not(loom))]
mod namespace;
#[cfg(not(loom))]
mod raw;
#[cfg(not(loom))]
mod region;
mod ring;
#[cfg(not(loom))]
mod stream;

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(feature = "tokio", not(loom)))]
mod tokio;

#[cfg(all(feature = "tokio", not(loom)))]
pub use crate::tokio::{AsyncShmListener, AsyncShmStream};
#[cfg(not(loom))]
pub use config::{set_client_config, Config, WaitMode};
#[cfg(not(loom))]
pub use listener::{Incoming, ShmListener};
#[cfg(not(loom))]
pub use namespace::{Namespace, SockAddr};
#[cfg(not(loom))]
pub use stream::{PeerAddr, ShmStream};
