//! Integration with `manycore-rt` cores (the seam: `pool::Host`). Filled in
//! once the runtime lands; until then threads bind only through `ThreadPool`.

/// Binds the calling thread if it is a core of an attached runtime.
pub(crate) fn attach_current_thread() {}
