//! manycore: a message-passing runtime for multicore machines.
