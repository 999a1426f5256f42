//! Rayon's scopes (`scope`, `scope_fifo`, `in_place_scope`): the types live
//! in `raw::scope`, whose jobs borrow from the scope's owner; the entry
//! points in `api`.

pub use crate::raw::{Scope, ScopeFifo};
