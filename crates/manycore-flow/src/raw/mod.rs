//! Every `unsafe` of the crate, each behind a safe function or type whose
//! contract the code around it keeps. One file per thing made safe:
//!
//! * `fd.rs`: file-descriptor system calls (pipes, eventfds, flags, reads
//!   and writes into owned buffers);
//! * `epoll.rs`: an epoll instance;
//! * `uring.rs`: an io_uring whose in-flight buffers it owns until the
//!   kernel is done with them;
//! * `owner_cell.rs`: a cell only the thread that owns it can reach (an
//!   instance's owner half, in the instance's one allocation);
//! * `slot_vec.rs`: input slots filled in any order, in a block of the
//!   free lists (one slot inline, with no block), that become the body's
//!   `Inputs` in place;
//! * `inputs.rs`: `Inputs`, the values a body receives, owning that block
//!   and giving it back to the free lists when dropped;
//! * `shared.rs`: a counted reference with one count (an instance's
//!   handles), whose first two references cost no read-modify-write;
//! * `slab.rs`: a thread's free lists of blocks by size class, which
//!   instances are allocated from and freed to.

pub(crate) mod epoll;
pub(crate) mod fd;
pub(crate) mod inputs;
pub(crate) mod owner_cell;
pub(crate) mod shared;
pub(crate) mod slab;
pub(crate) mod slot_vec;
pub(crate) mod uring;
