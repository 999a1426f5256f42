//! Endpoint and waiting configuration: buffer size (rckSock's 8 KiB MPB up to
//! any power of two), minimum chunk (one cache line), backlog, and the wait
//! policy (spin, hybrid, sleep) of the manycore idle policies.

use crate::endpoint::EpParams;
use std::sync::Mutex;
use std::time::Duration;

/// How a blocked `read`/`write`/`accept` waits for its peer, and how long
/// an `AsyncShmStream` (feature `tokio`) polls before it waits on its
/// readiness descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// Busy-poll (lowest latency, burns a CPU). Still bounded: every 10 ms the
    /// spinner yields the CPU and checks peer liveness and timeouts.
    Spin,
    /// Spin for `spin`, then sleep on the futex doorbell (the default).
    Hybrid {
        /// The spin budget before sleeping: any `Duration`. `ZERO` sleeps at
        /// once, like `Sleep`; `MAX` spins until the peer acts (the
        /// adaptive budget of a stream tops out at about 4.3 s). A spin
        /// never outlasts a read or write timeout.
        spin: Duration,
    },
    /// Sleep on the futex doorbell at once.
    Sleep,
}

impl Default for WaitMode {
    fn default() -> Self {
        WaitMode::Hybrid {
            spin: Duration::from_micros(50),
        }
    }
}

/// Parameters of a listener's endpoint.
#[derive(Debug, Clone)]
pub struct Config {
    /// Buffer region shared by all connections of the endpoint, in bytes (a
    /// power of two, 8 KiB (the paper's MPB) up to 1 GiB). Default 256 KiB.
    pub buffer_size: usize,
    /// Smallest buddy (one cache line by default: 64 bytes). Power of two, >= 16.
    pub min_chunk: u32,
    /// Most simultaneous connections (bounded also by `buffer_size / min_chunk`).
    pub max_connections: u32,
    /// Connections that may wait for `accept` (the listen backlog: `connect`
    /// completes once the backlog holds its connection; the kernel queues
    /// exactly this many at the rendezvous socket, up to
    /// `net.core.somaxconn`, and refuses a connector beyond it with
    /// `ConnectionRefused`). Default 64.
    pub backlog: u32,
    /// Wait policy given to accepted streams and to `accept` itself (which
    /// spins per it, then sleeps in poll(2) on the rendezvous socket).
    pub wait_mode: WaitMode,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            buffer_size: 256 << 10,
            min_chunk: 64,
            max_connections: 256,
            backlog: 64,
            wait_mode: WaitMode::default(),
        }
    }
}

impl Config {
    pub(crate) fn params(&self) -> EpParams {
        EpParams {
            buffer: self.buffer_size,
            min_chunk: self.min_chunk,
            max_conns: self.max_connections,
        }
    }
}

static CLIENT: Mutex<Option<Config>> = Mutex::new(None);

/// Sets the configuration of client endpoints created from now on (each
/// process has one client endpoint per namespace, holding the sending rings of
/// its outgoing connections; it is created with its first connection and
/// removed with its last).
pub fn set_client_config(c: Config) {
    *CLIENT.lock().unwrap_or_else(|e| e.into_inner()) = Some(c);
}

pub(crate) fn client_params() -> EpParams {
    let c = CLIENT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_default();
    c.params()
}
