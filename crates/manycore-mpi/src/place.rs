//! `Place`: one core of one rank, and the typed active messages sent to it
//! (asynchronous and synchronous RPC of Rotta et al., section III.A, over
//! MPI; the typed stubs and bulk transfer of Barrelfish on the SCC,
//! sections 2.9-2.10).

use crate::codec::{encode_into, Bulk};
use crate::error::CallError;
use crate::function::{BulkFn, RemoteFn};
use crate::pending::Pending;
use crate::shared::{Shared, Target};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::sync::Arc;

/// A place: (rank, core). Cheap to clone.
#[derive(Clone)]
pub struct Place {
    pub(crate) shared: Arc<Shared>,
    pub(crate) rank: usize,
    pub(crate) core: usize,
}

impl std::fmt::Debug for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Place")
            .field("rank", &self.rank)
            .field("core", &self.core)
            .finish()
    }
}

impl Place {
    /// The core number of a rank's engine place
    /// ([`World::engine_place`](crate::World::engine_place)).
    pub const ENGINE: usize = crate::shared::ENGINE_CORE;

    /// The rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The core of that rank ([`Place::ENGINE`] for its engine place).
    pub fn core(&self) -> usize {
        self.core
    }

    /// Runs `f(a)` there and returns the caller's end of the call.
    /// A panic there comes back as [`CallError::Panicked`]; the job lives on.
    pub fn call<A: Serialize, R: DeserializeOwned>(&self, f: &RemoteFn<A, R>, a: A) -> Pending<R> {
        self.shared.call(
            Target::call(self.rank, self.core, f.id()),
            |out| encode_into(out, &a),
            None,
        )
    }

    /// Runs `f(a)` there, one-sided: nobody waits, and a failure there is
    /// dropped there. `Err` only for what is refused before sending.
    pub fn spawn<A: Serialize, R>(&self, f: &RemoteFn<A, R>, a: A) -> Result<(), CallError> {
        self.shared
            .invoke(
                Target::call(self.rank, self.core, f.id()),
                |out| encode_into(out, &a),
                None,
                true,
            )
            .map(|_| ())
    }

    /// Runs `f(a, bulk)` there. The bulk bytes travel as a message of their
    /// own, sent from `bulk`'s buffer and received into the vector the
    /// function gets: not encoded, not copied by this crate.
    pub fn call_bulk<A: Serialize, R: DeserializeOwned>(
        &self,
        f: &BulkFn<A, R>,
        a: A,
        bulk: impl Into<Bulk>,
    ) -> Pending<R> {
        self.shared.call(
            Target::call(self.rank, self.core, f.id()),
            |out| encode_into(out, &a),
            Some(bulk.into().0),
        )
    }

    /// Sends a call by raw function id with pre-encoded arguments: for
    /// tests of how a rank refuses what it does not know.
    #[doc(hidden)]
    pub fn call_raw(&self, func: u32, args: &[u8]) -> Pending<()> {
        self.shared.call(
            Target::call(self.rank, self.core, Ok(func)),
            |out| {
                out.extend_from_slice(args);
                Ok(())
            },
            None,
        )
    }
}
