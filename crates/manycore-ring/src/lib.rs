//! SPSC ring of cache-line slots: the message channel of manycore (Barrelfish UMP).
