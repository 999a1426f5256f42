//! manycore fork-join: lazy on-stack execution with stealing on demand (MuSE).
