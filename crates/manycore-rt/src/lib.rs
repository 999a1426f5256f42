//! manycore cores, schedulers, cross-core invocations, futures.
